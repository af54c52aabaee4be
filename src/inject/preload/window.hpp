// The communication window, as the GPU sees it: is NCCL work pending on a device?
//
// Controls that only pay while a collective runs (occupancy shaping) act inside this window and
// nowhere else; outside it a launch goes exactly as the program asked ("when": "overlap" in a
// plan, `@overlap` in a policy; the default policy of `cco run`, priority, shapes nothing).
//
// How it is detected. Every NCCL kernel launch reaches the hook; right after it the window records
// an event behind it on the same stream (one reusable event per NCCL stream: NCCL work on a
// stream runs in order, so the latest record completing means all earlier work did). A device's
// window is open while any of its NCCL streams has a recorded event that is not known complete.
// A compute launch asks `pending(dev)`:
//   - nothing recorded since the last completion: one atomic load, false;
//   - otherwise the events are queried (cuEventQuery), at most once per `recheck_ns` per device
//     (launches in a burst reuse the answer), by one thread at a time (others take "pending").
// The answer depends on timing. That is fine for shaping (it never changes results), never for a
// control that may change rounding: the SM target's communication-aware form uses the
// launch-order window instead (order_window.hpp).
//
// Graph capture: an NCCL launch into a capturing stream records nothing (the graph replays later,
// at times the library does not see), so captured collectives open no window; the hook leaves
// compute launches that are being captured unshaped while a window is open for the same reason.
// Threads: any thread may call anything; per-device state is behind a mutex taken only on NCCL
// launches and on re-checks. Devices: one window per device ordinal (< kMaxDevices).
// Fail-open: an event that cannot be created, recorded or queried closes the window for it (the
// launches then go as the program asked) and warns once.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "preload/driver_api.hpp"
#include "preload/stats.hpp"

namespace cco::preload {

class CommWindow {
 public:
  static constexpr int kMaxDevices = 64;
  static constexpr std::size_t kMaxStreams = 64;  ///< NCCL streams tracked per device

  /// `recheck_ns`: how long a "pending" answer is reused before the events are queried again.
  /// `stats` (may be null) gets the window_* counters.
  explicit CommWindow(const DriverApi& api, Stats* stats = nullptr, uint64_t recheck_ns = 2000);
  CommWindow(const CommWindow&) = delete;
  CommWindow& operator=(const CommWindow&) = delete;

  /// Right after an NCCL kernel launch on `stream` of device `dev` succeeded, on the launching
  /// thread (its context current). Records the stream's event behind it, unless the stream is
  /// being captured.
  void on_nccl_launch(int dev, CUstream stream);

  /// True while NCCL work recorded on `dev` may not have finished. `now_ns` is a monotonic clock
  /// (read by the caller only when it needs it: `maybe_open(dev)` first).
  bool pending(int dev, uint64_t now_ns);

  /// The lock-free first check: false means certainly closed (nothing recorded and unfinished).
  bool maybe_open(int dev) const {
    return dev >= 0 && dev < kMaxDevices && devs_[dev].open.load(std::memory_order_acquire) > 0;
  }

  /// Counters for statistics (the window_* fields of the Stats given, or of its own).
  struct Counts {
    uint64_t recorded = 0;      ///< NCCL launches with an event recorded behind them
    uint64_t captured = 0;      ///< NCCL launches into a capturing stream (no window)
    uint64_t failed = 0;        ///< NCCL launches whose event could not be made or recorded
    uint64_t queries = 0;       ///< cuEventQuery calls
    uint64_t opened = 0;        ///< times a device's window went from closed to open
  };
  Counts counts() const;

 private:
  struct Slot {
    CUstream stream = nullptr;
    CUevent event = nullptr;
    uint64_t recorded = 0;  // records made
    uint64_t done = 0;      // records known complete
  };
  struct Dev {
    std::mutex mu;
    std::vector<Slot> slots;
    std::atomic<int> open{0};            // slots with done < recorded
    std::atomic<uint64_t> checked_ns{0};  // last query round
  };
  int count_open(const Dev& d) const;

  void bump(std::atomic<uint64_t> Stats::*field) {
    (stats_->*field).fetch_add(1, std::memory_order_relaxed);
  }

  DriverApi api_;
  Stats own_stats_;  // used when the caller gives none
  Stats* stats_;
  uint64_t recheck_ns_;
  std::array<Dev, kMaxDevices> devs_;
};

}  // namespace cco::preload
