#include "preload/window.hpp"

#include "common/log.hpp"

namespace cco::preload {
namespace {

template <class F, class... A>
CUresult call(F* f, A... a) {
  return f ? f(a...) : CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

CommWindow::CommWindow(const DriverApi& api, Stats* stats, uint64_t recheck_ns)
    : api_(api), stats_(stats ? stats : &own_stats_), recheck_ns_(recheck_ns) {}

int CommWindow::count_open(const Dev& d) const {
  int n = 0;
  for (const auto& s : d.slots) n += s.done < s.recorded ? 1 : 0;
  return n;
}

void CommWindow::on_nccl_launch(int dev, CUstream stream) {
  if (dev < 0 || dev >= kMaxDevices) return;
  // A capturing stream: the collective runs when the graph is replayed, not now.
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  if (call(api_.streamIsCapturing, stream, &cap) == CUDA_SUCCESS &&
      cap != CU_STREAM_CAPTURE_STATUS_NONE) {
    bump(&Stats::window_captured);
    return;
  }
  Dev& d = devs_[dev];
  std::lock_guard<std::mutex> lock(d.mu);
  Slot* slot = nullptr;
  for (auto& s : d.slots)
    if (s.stream == stream) slot = &s;
  if (!slot) {
    if (d.slots.size() >= kMaxStreams) {
      // Recycle a finished slot's place (its event belongs to its stream's context: keep the
      // event only if the new stream is in the same context is not knowable cheaply; drop it).
      std::size_t i = 0;
      while (i < d.slots.size() && d.slots[i].done < d.slots[i].recorded) ++i;
      if (i == d.slots.size()) {
        bump(&Stats::window_failed);
        warn_once("window-streams", "more than " + std::to_string(kMaxStreams) +
                                        " NCCL streams busy on device " + std::to_string(dev) +
                                        "; collectives on further streams open no window");
        return;
      }
      d.slots.erase(d.slots.begin() + static_cast<std::ptrdiff_t>(i));  // its event leaks once
    }
    Slot s;
    s.stream = stream;
    const CUresult r = call(api_.eventCreate, &s.event, static_cast<unsigned>(CU_EVENT_DISABLE_TIMING));
    if (r != CUDA_SUCCESS) {
      bump(&Stats::window_failed);
      warn_once("window-event", "cannot create an event to follow NCCL work (" + cu_error_text(r) +
                                    "); compute launches are left as asked while it runs");
      return;
    }
    d.slots.push_back(s);
    slot = &d.slots.back();
  }
  const CUresult r = call(api_.eventRecord, slot->event, stream);
  if (r != CUDA_SUCCESS) {
    bump(&Stats::window_failed);
    warn_once("window-record", "cannot record an event behind NCCL work (" + cu_error_text(r) +
                                   "); compute launches are left as asked while it runs");
    return;
  }
  ++slot->recorded;
  bump(&Stats::window_recorded);
  const int before = d.open.load(std::memory_order_relaxed);
  const int now_open = count_open(d);
  d.open.store(now_open, std::memory_order_release);
  if (before == 0 && now_open > 0) {
    bump(&Stats::window_opened);
  }
}

bool CommWindow::pending(int dev, uint64_t now_ns) {
  if (!maybe_open(dev)) return false;
  Dev& d = devs_[dev];
  const uint64_t last = d.checked_ns.load(std::memory_order_relaxed);
  if (now_ns >= last && now_ns - last < recheck_ns_) return true;
  std::unique_lock<std::mutex> lock(d.mu, std::try_to_lock);
  if (!lock.owns_lock()) return true;  // another thread is checking (or recording): pending
  for (auto& s : d.slots) {
    if (s.done >= s.recorded) continue;
    bump(&Stats::window_queries);
    const CUresult r = call(api_.eventQuery, s.event);
    if (r == CUDA_SUCCESS) {
      s.done = s.recorded;
    } else if (r != CUDA_ERROR_NOT_READY) {
      s.done = s.recorded;  // fail open: a window we cannot see is closed
      warn_once("window-query", "cannot query an event behind NCCL work (" + cu_error_text(r) +
                                    "); that window is taken as closed");
    }
  }
  const int n = count_open(d);
  d.open.store(n, std::memory_order_release);
  d.checked_ns.store(now_ns, std::memory_order_relaxed);
  return n > 0;
}

CommWindow::Counts CommWindow::counts() const {
  Counts c;
  c.recorded = stats_->window_recorded.load(std::memory_order_relaxed);
  c.captured = stats_->window_captured.load(std::memory_order_relaxed);
  c.failed = stats_->window_failed.load(std::memory_order_relaxed);
  c.queries = stats_->window_queries.load(std::memory_order_relaxed);
  c.opened = stats_->window_opened.load(std::memory_order_relaxed);
  return c;
}

}  // namespace cco::preload
