// The launch hook: what happens to every cuLaunchKernel / cuLaunchKernelEx the program makes.
//
// For each launch the hook finds the kernel's cached entry (name, registers, static shared
// memory, whether it is NCCL's), decides with decide.hpp, and calls the real launch:
//   - NCCL kernels are never padded; with the launch-attr priority method their
//     cuLaunchKernelEx gets CU_LAUNCH_ATTRIBUTE_PRIORITY = the device's greatest priority;
//   - cooperative, cluster and denylisted launches, and kernels the plan does not shape, go
//     through exactly as asked;
//   - a shaped launch gets more dynamic shared memory (never less than asked, never a different
//     grid or block); MAX_DYNAMIC_SHARED_SIZE_BYTES is raised first when needed.
// Fail-open: a failing driver query leaves the launch as asked (the reason is counted, a warning
// is printed once per kind), and a changed launch the driver rejects is retried unchanged.
// Communication-aware ("when": "overlap"): a compute launch is shaped only while NCCL work is
// pending on its device (window.hpp); outside that window it goes exactly as asked.
// Thread-safe: entries are cached per (handle, device) in a map behind a shared mutex, and in a
// small per-thread cache in front of it, so the steady state takes no lock.
//
// The hook owns no global state: configs.cpp creates one per configuration; tests create their own
// with a fake DriverApi.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/limits.hpp"
#include "plan/plan.hpp"
#include "preload/decide.hpp"
#include "preload/driver_api.hpp"
#include "preload/stats.hpp"
#include "preload/window.hpp"

namespace cco::preload {

class CommWindow;
struct HookOptions {
  int stats = 0;         ///< CCO_STATS: time the hook when > 0
  bool verbose = false;  ///< CCO_VERBOSE: one line per decision
  /// A window shared by several hooks (cco run --compare: one hook per configuration, switched
  /// at step boundaries; every hook must see every NCCL launch). Null: the hook makes its own
  /// when its plan acts inside the window. Must outlive the hook.
  CommWindow* shared_window = nullptr;
};

class Hook {
 public:
  Hook(const DriverApi& api, plan::Plan plan, HookOptions opts = {});
  /// Frees what the hook allocated (the library's own hooks live for the process; tests make and
  /// drop them).
  ~Hook();
  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;

  /// cuLaunchKernel (either stream variant: `real` is the variant the caller asked for).
  CUresult launch(LaunchKernelFn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                  unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                  void** params, void** extra);

  /// cuLaunchKernelEx (either stream variant). `config` is never written; a changed launch
  /// uses a copy.
  CUresult launch_ex(LaunchKernelExFn real, const CUlaunchConfig* config, CUfunction f,
                     void** params, void** extra);

  const plan::Plan& plan() const { return plan_; }
  Stats& stats() { return stats_; }
  const Stats& stats() const { return stats_; }

  /// The greatest (highest) stream priority of the current context, queried once; 0 if unknown.
  int greatest_priority();

  /// The communication window (null unless a control acts only inside it).
  CommWindow* window() { return window_; }

  /// Forgets every cached kernel entry (a module or library was unloaded: its handles may be
  /// reused by other kernels). Entries stay allocated (a racing launch may still hold one).
  void invalidate();

  /// Per-kernel lines for CCO_STATS=2: launches, shaped, decision, name. At most `max` lines,
  /// most launched first.
  std::vector<std::string> kernel_report(std::size_t max = 40) const;

 private:
  struct Shape {  // one cached decision per launch shape
    int threads;
    unsigned shmem;
    Decision d;
  };
  struct Entry {
    Reason fail = Reason::Shaped;        // != Shaped: the entry is unusable, pass with this reason
    std::atomic<bool> is_kernel{false};  // the handle is a CUkernel (cuKernel* calls)
    bool nccl = false;
    bool denied = false;
    const plan::Rule* rule = nullptr;
    KernelInfo info;
    std::mutex mu;
    std::vector<Shape> shapes;
    std::atomic<uint64_t> launches{0};
    std::atomic<uint64_t> shaped{0};
    // MAX_DYNAMIC_SHARED_SIZE_BYTES as last set or read by us (-1: unknown). A program may lower
    // it between launches: the shaped launch then fails, and the hook raises it again and retries.
    std::atomic<int64_t> maxdyn_known{-1};
  };
  struct Key {
    void* handle;
    int dev;
    bool operator==(const Key& o) const { return handle == o.handle && dev == o.dev; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<void*>()(k.handle) ^
             (static_cast<std::size_t>(k.dev) * 0x9e3779b97f4a7c15ULL);
    }
  };

  Entry* entry(CUfunction f, int dev);
  std::unique_ptr<Entry> make_entry(CUfunction f, int dev);
  const model::DeviceLimits* limits(int dev);
  // The decision for this entry and launch shape (cached; verified once against the driver).
  Decision shape_decision(Entry& e, CUfunction f, int dev, const model::DeviceLimits& lim,
                          int threads, unsigned shmem);
  // Raises MAX_DYNAMIC_SHARED_SIZE_BYTES to `dyn` when it is lower. Reason::Shaped on success.
  Reason allow_dynamic(Entry& e, CUfunction f, int dev, int64_t dyn);
  CUresult get_attr(Entry& e, CUfunction f, int dev, CUfunction_attribute a, int* v);
  // What prepare() found out for the launch.
  struct Prep {
    Entry* e = nullptr;
    int dev = -1;
    unsigned dyn = 0;     // the dynamic shared memory to launch with
    bool optin = false;   // dyn needs MAX_DYNAMIC_SHARED_SIZE_BYTES raised
  };
  // Everything before the real launch: the decision, or why not.
  Reason prepare(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, unsigned shmem, CUstream stream, bool coop, bool cluster, Prep* p);
  // A shaped launch failed: when it needed the opt-in, raise the attribute again (the program may
  // have lowered it) and say whether a retry may succeed.
  bool reraise(const Prep& p, CUfunction f);
  // The shaped launch (`shaped()`), once more after reraise() when that may help; if it still
  // fails, the launch as asked (`original()`), counted and warned once. Both launch paths end here.
  template <class Shaped, class Original>
  CUresult launch_shaped(const Prep& p, CUfunction f, Shaped shaped, Original original);
  void add_time(uint64_t t0);

  DriverApi api_;
  plan::Plan plan_;
  HookOptions opts_;
  bool shaping_ = false;
  bool prio_attr_ = false;
  bool overlap_ = false;  // shaping only inside the communication window
  std::unique_ptr<CommWindow> own_window_;
  CommWindow* window_ = nullptr;  // own_window_, or HookOptions::shared_window
  uint64_t id_;                    // tells this hook's entries apart in per-thread caches
  std::atomic<uint64_t> gen_{0};   // bumped by invalidate()
  std::vector<std::unique_ptr<Entry>> graveyard_;  // entries forgotten by invalidate()
  Stats stats_;
  mutable std::shared_mutex map_mu_;
  std::unordered_map<Key, std::unique_ptr<Entry>, KeyHash> map_;
  static constexpr int kMaxDevices = 64;
  std::array<std::atomic<model::DeviceLimits*>, kMaxDevices> limits_{};
  std::array<std::atomic<bool>, kMaxDevices> limits_failed_{};
  std::atomic<int> greatest_{1};  // 1: not queried yet (priorities are <= 0)
};

/// Nanoseconds of a monotonic clock.
uint64_t now_ns();

}  // namespace cco::preload
