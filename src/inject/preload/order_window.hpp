// The launch-order communication window: which (device, stream) pairs have an NCCL collective
// the program has not joined back yet, known from the ORDER of API calls alone -- never from
// timing, so a decision made with it (the GEMM SM target of `gemm.when: overlap`) is the same in
// every run with the same plan, inputs and launch order.
//
// Pure bookkeeping over opaque stream and event handles; no driver call. The entry points feed it
// (driver_calls.cpp, nccl_entry.cpp):
//   collective(dev, s)        an NCCL collective enqueued on s (the nccl* wrappers; the device
//                             from ncclCommCuDevice) opens (dev, s);
//   record(e, s)              cuEventRecord[WithFlags]: on an open stream e becomes a marker of
//                             that stream's latest collective; anywhere else e stops being one;
//   wait(w, e, inside_nccl)   cuStreamWaitEvent on a marker: inside an NCCL call (NCCL's own
//                             joins) w becomes open too, a *follower* of the marker's stream (the
//                             collective's work moved onto w); outside NCCL the program joined the
//                             communication back: the marked stream closes, with its followers,
//                             unless a newer collective was enqueued on it since the marker;
//   stream_sync(s)            cuStreamSynchronize closes s (and its followers);
//   event_sync(e)             cuEventSynchronize on a marker closes like a join outside NCCL;
//   device_sync(dev)          cuCtxSynchronize closes every stream of the device.
// open(dev) is one atomic load (the GEMM wrappers ask it per call).
//
// Limits: a program that joins by polling (cuEventQuery, cuStreamQuery) keeps the window open
// until it synchronizes or joins; collectives enqueued while their stream is being captured do
// not open it (the entry points do not report them) and graph replays are not seen; a destroyed
// stream or event whose handle is reused inherits its entry. Memory is bounded: at most
// `max_streams` open streams and `max_markers` markers; beyond that the oldest entry is dropped
// (deterministically, by launch order) and one warning is printed.
//
// Streams are identified by handle. The per-context and per-thread default streams share their
// handles between devices and threads: driver_calls.cpp gives those a device (and a thread) in
// StreamRef so they stay apart; ordinary handles are unique and carry dev = -1, thread = 0.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace cco::preload {

struct StreamRef {
  const void* handle = nullptr;
  int dev = -1;         ///< only for the legacy / per-thread default streams
  uint64_t thread = 0;  ///< only for the per-thread default stream
  bool operator==(const StreamRef& o) const {
    return handle == o.handle && dev == o.dev && thread == o.thread;
  }
};

class OrderWindow {
 public:
  static constexpr int kMaxDevices = 64;
  explicit OrderWindow(std::size_t max_streams = 1024, std::size_t max_markers = 4096);
  OrderWindow(const OrderWindow&) = delete;
  OrderWindow& operator=(const OrderWindow&) = delete;

  void collective(int dev, StreamRef s);
  void record(const void* event, StreamRef s);
  void wait(StreamRef w, const void* event, bool inside_nccl);
  void stream_sync(StreamRef s);
  void event_sync(const void* event);
  void device_sync(int dev);

  /// Any open stream on `dev` (lock-free).
  bool open(int dev) const {
    return dev >= 0 && dev < kMaxDevices && open_[dev].load(std::memory_order_acquire) > 0;
  }
  /// Nothing open and no marker: record/wait/sync have nothing to do (lock-free, for the fast
  /// path of the driver wrappers).
  bool idle() const {
    return streams_n_.load(std::memory_order_acquire) == 0 &&
           markers_n_.load(std::memory_order_acquire) == 0;
  }
  bool is_open(StreamRef s) const;
  bool is_marker(const void* event) const;
  std::size_t streams() const;
  std::size_t markers() const;
  /// Collectives seen (opened a stream) and joins that closed a stream (tests, stats).
  uint64_t collectives() const { return collectives_.load(std::memory_order_relaxed); }
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  struct Hash {
    std::size_t operator()(const StreamRef& r) const {
      return std::hash<const void*>()(r.handle) ^ (static_cast<std::size_t>(r.dev + 1) << 7) ^
             (r.thread * 0x9e3779b97f4a7c15ULL);
    }
  };
  struct Entry {
    int dev = 0;
    uint64_t seq = 0;      ///< the latest collective that reached this stream
    uint64_t opened = 0;   ///< when it was (re)opened: eviction order
    StreamRef origin;      ///< the stream whose collective opened it (itself, or a follower's)
  };
  struct Marker {
    StreamRef stream;
    uint64_t seq = 0;
    uint64_t order = 0;  ///< eviction order
  };

  // All under mu_.
  void open_entry(StreamRef s, int dev, uint64_t seq, StreamRef origin);
  void close_entry(StreamRef s);
  // Closes `s` and its followers when its latest collective is `seq` (or any, seq == 0).
  void close_joined(StreamRef s, uint64_t seq);
  void drop_markers_of_closed();
  void publish();

  std::size_t max_streams_, max_markers_;
  mutable std::mutex mu_;
  std::unordered_map<StreamRef, Entry, Hash> open_streams_;
  std::unordered_map<const void*, Marker> markers_;
  uint64_t seq_ = 0, tick_ = 0;
  std::array<std::atomic<int>, kMaxDevices> open_{};
  std::atomic<std::size_t> streams_n_{0}, markers_n_{0};
  std::atomic<uint64_t> collectives_{0}, evictions_{0};
};

}  // namespace cco::preload
