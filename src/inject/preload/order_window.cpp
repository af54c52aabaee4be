#include "preload/order_window.hpp"

#include <string>
#include <vector>

#include "common/log.hpp"

namespace cco::preload {

OrderWindow::OrderWindow(std::size_t max_streams, std::size_t max_markers)
    : max_streams_(max_streams ? max_streams : 1), max_markers_(max_markers ? max_markers : 1) {}

void OrderWindow::publish() {
  streams_n_.store(open_streams_.size(), std::memory_order_release);
  markers_n_.store(markers_.size(), std::memory_order_release);
}

void OrderWindow::open_entry(StreamRef s, int dev, uint64_t seq, StreamRef origin) {
  auto it = open_streams_.find(s);
  if (it != open_streams_.end()) {
    if (seq > it->second.seq) it->second.seq = seq;
    return;
  }
  if (open_streams_.size() >= max_streams_) {
    // The stream opened longest ago goes (launch order decides, so every run drops the same).
    auto oldest = open_streams_.begin();
    for (auto i = open_streams_.begin(); i != open_streams_.end(); ++i)
      if (i->second.opened < oldest->second.opened) oldest = i;
    close_entry(oldest->first);
    evictions_.fetch_add(1, std::memory_order_relaxed);
    warn_once("order-window-streams",
              "more than " + std::to_string(max_streams_) +
                  " streams with pending NCCL work: the oldest is taken as joined");
  }
  open_streams_.emplace(s, Entry{dev, seq, ++tick_, origin});
  if (dev >= 0 && dev < kMaxDevices) open_[dev].fetch_add(1, std::memory_order_acq_rel);
}

void OrderWindow::close_entry(StreamRef s) {
  auto it = open_streams_.find(s);
  if (it == open_streams_.end()) return;
  const int dev = it->second.dev;
  open_streams_.erase(it);
  if (dev >= 0 && dev < kMaxDevices) open_[dev].fetch_sub(1, std::memory_order_acq_rel);
}

void OrderWindow::drop_markers_of_closed() {
  for (auto it = markers_.begin(); it != markers_.end();) {
    auto s = open_streams_.find(it->second.stream);
    if (s == open_streams_.end() || s->second.seq < it->second.seq)
      it = markers_.erase(it);
    else
      ++it;
  }
}

void OrderWindow::close_joined(StreamRef s, uint64_t seq) {
  auto it = open_streams_.find(s);
  if (it == open_streams_.end()) return;
  if (seq != 0 && it->second.seq != seq) return;  // a newer collective is still pending on s
  const uint64_t upto = it->second.seq;
  std::vector<StreamRef> gone{s};
  for (const auto& [ref, e] : open_streams_)
    if (!(ref == s) && e.origin == s && e.seq <= upto) gone.push_back(ref);
  for (const auto& ref : gone) close_entry(ref);
  drop_markers_of_closed();
}

void OrderWindow::collective(int dev, StreamRef s) {
  std::lock_guard<std::mutex> lock(mu_);
  collectives_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t seq = ++seq_;
  auto it = open_streams_.find(s);
  if (it != open_streams_.end()) {
    it->second.seq = seq;
    it->second.origin = s;  // its own collective now: it closes when it is joined itself
  } else {
    open_entry(s, dev, seq, s);
  }
  publish();
}

void OrderWindow::record(const void* event, StreamRef s) {
  if (!event) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_streams_.find(s);
  if (it == open_streams_.end()) {
    markers_.erase(event);
  } else {
    auto m = markers_.find(event);
    if (m == markers_.end() && markers_.size() >= max_markers_) {
      auto oldest = markers_.begin();
      for (auto i = markers_.begin(); i != markers_.end(); ++i)
        if (i->second.order < oldest->second.order) oldest = i;
      markers_.erase(oldest);
      evictions_.fetch_add(1, std::memory_order_relaxed);
      warn_once("order-window-markers",
                "more than " + std::to_string(max_markers_) +
                    " events mark pending NCCL work: the oldest is forgotten");
    }
    markers_[event] = Marker{s, it->second.seq, ++tick_};
  }
  publish();
}

void OrderWindow::wait(StreamRef w, const void* event, bool inside_nccl) {
  if (!event) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto m = markers_.find(event);
  if (m == markers_.end()) return;
  const Marker mk = m->second;
  auto s = open_streams_.find(mk.stream);
  if (s == open_streams_.end()) {  // its stream was closed since: the marker is spent
    markers_.erase(m);
    publish();
    return;
  }
  if (inside_nccl) {
    if (!(w == mk.stream)) open_entry(w, s->second.dev, mk.seq, s->second.origin);
  } else {
    close_joined(mk.stream, mk.seq);
  }
  publish();
}

void OrderWindow::stream_sync(StreamRef s) {
  std::lock_guard<std::mutex> lock(mu_);
  close_joined(s, 0);
  publish();
}

void OrderWindow::event_sync(const void* event) {
  if (!event) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto m = markers_.find(event);
  if (m == markers_.end()) return;
  const Marker mk = m->second;
  close_joined(mk.stream, mk.seq);
  markers_.erase(event);  // spent either way (closed, or a newer collective keeps it open)
  publish();
}

void OrderWindow::device_sync(int dev) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StreamRef> gone;
  for (const auto& [ref, e] : open_streams_)
    if (e.dev == dev) gone.push_back(ref);
  for (const auto& ref : gone) close_entry(ref);
  drop_markers_of_closed();
  publish();
}

bool OrderWindow::is_open(StreamRef s) const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_streams_.count(s) != 0;
}

bool OrderWindow::is_marker(const void* event) const {
  std::lock_guard<std::mutex> lock(mu_);
  return markers_.count(event) != 0;
}

std::size_t OrderWindow::streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_streams_.size();
}

std::size_t OrderWindow::markers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return markers_.size();
}

}  // namespace cco::preload
