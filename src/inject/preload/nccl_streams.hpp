// Priority method "stream": each NCCL collective runs on a highest-priority companion of the
// stream the program gave it, with an event fork before and an event join after:
//
//   user stream S:  ... -> record(fork) ----------------------------> wait(join) -> ...
//   companion  C:            wait(fork) -> NCCL kernel -> record(join)
//
// One companion per (context, user stream), so NCCL work stays ordered exactly as on S and
// collectives of different streams never serialise against each other. Inside
// ncclGroupStart/End NCCL launches at the outermost ncclGroupEnd, so joins wait for it. A
// non-blocking communicator that answers ncclInProgress is polled to completion before the join.
// Any failure before the collective leaves it on S (fail-open). Works under graph capture
// (fork/join are captured like any cross-stream dependency); a companion is never created while
// S is capturing.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <functional>
#include <mutex>
#include <unordered_map>

#include "preload/driver_api.hpp"
#include "preload/stats.hpp"

namespace cco::preload {

/// The real NCCL entry points the wrapper needs besides the collective itself.
struct NcclReal {
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t comm, ncclResult_t* state) = nullptr;
};

class NcclStreams {
 public:
  /// `priority` gives the priority of companion streams (the device's greatest); it is called
  /// when the first companion is made, with a context current.
  NcclStreams(const DriverApi& api, Stats& stats, std::function<int()> priority);
  /// Frees the companions' bookkeeping; their driver streams and events are left to the driver
  /// (the library's own NcclStreams lives for the process).
  ~NcclStreams();
  NcclStreams(const NcclStreams&) = delete;
  NcclStreams& operator=(const NcclStreams&) = delete;

  /// Before a collective on `user`: the stream to hand NCCL (`user` when anything fails).
  CUstream fork(CUstream user);

  /// After it: joins `used` back into `user` now, or at the outermost group end. `result` is the
  /// collective's own result and is returned unchanged.
  ncclResult_t after(CUstream user, CUstream used, ncclComm_t comm, ncclResult_t result,
                     const NcclReal& real);

  /// ncclGroupStart: call before the real one.
  void group_start();
  /// ncclGroupEnd (or ncclGroupSimulateEnd): call after the real one with its result; joins
  /// what the outermost group forked. Returns `result`.
  ncclResult_t group_end(ncclResult_t result, const NcclReal& real);

  /// Companion streams created so far (tests and stats).
  std::size_t companions() const;

 private:
  struct Companion {
    CUstream stream = nullptr;
    CUevent fork_ev = nullptr;
    CUevent join_ev = nullptr;
    std::mutex mu;
  };
  struct Key {
    CUcontext ctx;
    CUstream user;
    std::size_t thread;  // for the per-thread default stream only
    bool operator==(const Key& o) const {
      return ctx == o.ctx && user == o.user && thread == o.thread;
    }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<void*>()(k.ctx) ^ (std::hash<void*>()(k.user) << 1) ^ k.thread;
    }
  };

  Companion* companion(CUstream user);
  bool join(CUstream user, Companion* c);
  void wait_done(ncclComm_t comm, const NcclReal& real);

  DriverApi api_;
  Stats& stats_;
  std::function<int()> priority_;
  mutable std::mutex mu_;
  std::unordered_map<Key, Companion*, KeyHash> map_;
  std::unordered_map<CUstream, Companion*> by_stream_;  // companion stream -> its record
};

}  // namespace cco::preload
