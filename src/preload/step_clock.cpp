#include "preload/step_clock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "steps/schedule.hpp"

namespace cco::preload {

StepClock::StepClock(const DriverApi& api, StepClockOptions o, std::function<void(int)> switch_to,
                     std::function<uint64_t()> now)
    : api_(api), o_(std::move(o)), switch_to_(std::move(switch_to)), now_(std::move(now)),
      det_(o_.period) {
  if (o_.configs.empty()) o_.configs = {"(one)"};
}

int StepClock::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

void StepClock::set_active(int c) {
  if (c == active_) return;
  active_ = c;
  if (switch_to_) switch_to_(c);
}

void StepClock::restart() {
  // A new period (or the first mark): earlier steps were of another unit; start again.
  steps_.clear();
  dropped_ = 0;
  started_ = false;
  step_ = 0;
  for (const auto& p : pending_) free_.push_back(p.ev);
  pending_.clear();
}

CUevent StepClock::take_event() {
  if (!free_.empty()) {
    CUevent e = free_.back();
    free_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (!api_.eventCreate || api_.eventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  return e;
}

void StepClock::resolve() {
  // pending_[i] starts step pending_[i].step; step s's GPU time needs the events of s and s + 1.
  if (!api_.eventQuery || !api_.eventElapsedTime) return;
  std::size_t done = 0;
  while (done + 1 < pending_.size()) {
    const Pending& a = pending_[done];
    const Pending& b = pending_[done + 1];
    if (api_.eventQuery(b.ev) != CUDA_SUCCESS) break;  // later ones are not complete either
    float ms = 0;
    if (b.step == a.step + 1 && api_.eventElapsedTime(&ms, a.ev, b.ev) == CUDA_SUCCESS) {
      // steps_ holds the steps in order from index 0; a step beyond max_steps is not kept.
      if (a.step < steps_.size() && steps_[a.step].step == a.step)
        steps_[a.step].gpu_ms = static_cast<double>(ms);
    }
    free_.push_back(a.ev);
    ++done;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
}

void StepClock::boundary(bool ends_step, bool regular, CUstream stream, bool capturing) {
  const uint64_t t = now_();
  if (ends_step && started_) {
    if (steps_.size() < o_.max_steps) {
      steps::StepTime s;
      s.step = step_;
      s.config = active_;
      s.host_ms = static_cast<double>(t - t_start_) / 1e6;
      s.regular = regular;
      steps_.push_back(s);
    } else {
      ++dropped_;
    }
    ++step_;
  }
  started_ = true;
  t_start_ = t;
  // The event that starts step_ (and ends the previous one).
  if (!capturing && api_.eventRecord && !event_failed_) {
    if (CUevent e = take_event()) {
      if (api_.eventRecord(e, stream) == CUDA_SUCCESS) {
        if (!pending_.empty() && pending_.back().step + 1 != step_) {
          // A gap (a step without an event): the older events can no longer pair.
          for (const auto& p : pending_) free_.push_back(p.ev);
          pending_.clear();
        }
        pending_.push_back({step_, e});
      } else {
        free_.push_back(e);
        event_failed_ = true;  // e.g. a stream of another context: host times only
      }
    }
  }
  if (pending_.size() > 64) {  // never unbounded, even if the GPU lags far behind
    free_.push_back(pending_.front().ev);
    pending_.erase(pending_.begin());
  }
  resolve();
  // The configuration of the step that starts now.
  const int n = static_cast<int>(o_.configs.size());
  set_active(steps::config_of_step(step_, n, o_.warmup));
  if (!o_.path.empty() && o_.flush_ns > 0 && t - last_flush_ >= o_.flush_ns) {
    last_flush_ = t;
    write_locked("running", nullptr);
  }
}

void StepClock::collective(uint64_t signature, int dev, CUstream stream, bool capturing) {
  std::lock_guard<std::mutex> lock(mu_);
  if (source_ == "marker") return;
  if (device_ < 0) device_ = dev;
  if (dev != device_) return;
  const steps::Feed f = det_.feed(signature);
  if (f.boundary) boundary(f.ends_step, f.prev_regular, stream, capturing);
  if (f.relocked) {
    source_ = "collectives";
    restart();
    set_active(0);  // until the new period's first boundary (a relock is a new warm-up)
  }
}

void StepClock::mark(int dev, CUstream stream, bool capturing) {
  std::lock_guard<std::mutex> lock(mu_);
  if (source_ != "marker") {
    source_ = "marker";
    device_ = dev;
    restart();
  }
  boundary(true, true, stream, capturing);
}

steps::StepFile StepClock::build_locked(const char* ended) {
  resolve();
  steps::StepFile f;
  f.pid = static_cast<int>(::getpid());
  f.rank = o_.rank;
  if (device_ >= 0) f.device = device_;
  f.source = source_;
  f.period = source_ == "collectives" ? det_.period() : 0;
  f.collectives = det_.fed();
  f.locks = det_.locks();
  f.mismatches = det_.mismatches();
  f.configs = o_.configs;
  f.warmup = o_.warmup;
  f.ended = ended;
  f.steps = steps_;
  if (dropped_) f.note = std::to_string(dropped_) + " later steps were counted but not kept";
  return f;
}

steps::StepFile StepClock::snapshot(const char* ended) {
  std::lock_guard<std::mutex> lock(mu_);
  return build_locked(ended);
}

bool StepClock::write_locked(const char* ended, std::string* error) {
  const steps::StepFile f = build_locked(ended);
  const std::string text = steps::to_json(f);
  const std::string tmp = o_.path + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  auto fail = [&](const char* what) {
    if (error) *error = o_.path + ": " + what + ": " + std::strerror(errno);
    return false;
  };
  if (fd < 0) return fail("cannot create");
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail("cannot write");
    }
    off += static_cast<std::size_t>(w);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), o_.path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return fail("cannot rename");
  }
  return true;
}

bool StepClock::write(const char* ended, std::string* error) {
  if (o_.path.empty()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return write_locked(ended, error);
}

}  // namespace cco::preload
