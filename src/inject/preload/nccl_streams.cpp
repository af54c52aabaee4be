#include "preload/nccl_streams.hpp"

#include <sched.h>

#include <functional>
#include <thread>
#include <vector>

#include "common/log.hpp"

namespace cco::preload {
namespace {

template <class F, class... A>
CUresult call(F* f, A... a) {
  return f ? f(a...) : CUDA_ERROR_NOT_SUPPORTED;
}

// What the calling thread's open NCCL group forked (NCCL groups are per thread).
struct GroupState {
  const void* owner = nullptr;
  int depth = 0;
  struct Pending {
    CUstream user;
    CUstream used;
  };
  std::vector<Pending> pending;
  std::vector<ncclComm_t> comms;
};
thread_local GroupState t_group;

GroupState& group_of(const void* owner) {
  if (t_group.owner != owner) t_group = GroupState{owner, 0, {}, {}};
  return t_group;
}

}  // namespace

NcclStreams::NcclStreams(const DriverApi& api, Stats& stats, std::function<int()> priority)
    : api_(api), stats_(stats), priority_(std::move(priority)) {}

std::size_t NcclStreams::companions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

NcclStreams::Companion* NcclStreams::companion(CUstream user) {
  CUcontext ctx = nullptr;
  CUresult r = call(api_.streamGetCtx, user, &ctx);
  if (r != CUDA_SUCCESS) {
    warn_once("nccl-stream-ctx", "cannot tell the context of an NCCL stream (" + cu_error_text(r) +
                                     "); collectives stay on their own streams");
    return nullptr;
  }
  const std::size_t thread =
      user == CU_STREAM_PER_THREAD ? std::hash<std::thread::id>()(std::this_thread::get_id()) : 0;
  const Key key{ctx, user, thread};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second;
  }
  // Creating streams and events while the user stream is being captured is not safe in every
  // capture mode: leave such a collective on its stream (it gets a companion next time).
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  if (call(api_.streamIsCapturing, user, &cap) != CUDA_SUCCESS ||
      cap != CU_STREAM_CAPTURE_STATUS_NONE)
    return nullptr;
  auto* c = new Companion();
  r = call(api_.ctxPushCurrent, ctx);
  if (r == CUDA_SUCCESS) {
    const int prio = priority_ ? priority_() : 0;
    CUresult rs = call(api_.streamCreateWithPriority, &c->stream,
                       static_cast<unsigned>(CU_STREAM_NON_BLOCKING), prio);
    CUresult re1 =
        call(api_.eventCreate, &c->fork_ev, static_cast<unsigned>(CU_EVENT_DISABLE_TIMING));
    CUresult re2 =
        call(api_.eventCreate, &c->join_ev, static_cast<unsigned>(CU_EVENT_DISABLE_TIMING));
    CUcontext popped = nullptr;
    call(api_.ctxPopCurrent, &popped);
    r = rs != CUDA_SUCCESS ? rs : re1 != CUDA_SUCCESS ? re1 : re2;
  }
  if (r != CUDA_SUCCESS) {
    warn_once("nccl-stream-create", "cannot create a high-priority companion stream (" +
                                        cu_error_text(r) +
                                        "); collectives stay on their own streams");
    delete c;  // a half-made companion leaks its driver objects: better than using it
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = map_.emplace(key, c);
  if (!inserted) {
    delete c;  // another thread made one first; ours stays unused (driver objects leak once)
    return it->second;
  }
  by_stream_[c->stream] = c;
  return c;
}

NcclStreams::~NcclStreams() {
  for (auto& [key, c] : map_) delete c;
}

CUstream NcclStreams::fork(CUstream user) {
  Companion* c = companion(user);
  if (!c) {
    stats_.collectives_direct.fetch_add(1, std::memory_order_relaxed);
    return user;
  }
  std::lock_guard<std::mutex> lock(c->mu);
  CUresult r = call(api_.eventRecord, c->fork_ev, user);
  if (r == CUDA_SUCCESS) r = call(api_.streamWaitEvent, c->stream, c->fork_ev, 0u);
  if (r != CUDA_SUCCESS) {
    warn_once("nccl-fork", "cannot order a companion stream after its NCCL stream (" +
                               cu_error_text(r) + "); that collective stays on its stream");
    stats_.collectives_direct.fetch_add(1, std::memory_order_relaxed);
    return user;
  }
  stats_.collectives_streamed.fetch_add(1, std::memory_order_relaxed);
  return c->stream;
}

bool NcclStreams::join(CUstream user, Companion* c) {
  std::lock_guard<std::mutex> lock(c->mu);
  CUresult r = call(api_.eventRecord, c->join_ev, c->stream);
  if (r == CUDA_SUCCESS) r = call(api_.streamWaitEvent, user, c->join_ev, 0u);
  if (r != CUDA_SUCCESS) {
    // Nothing safe is left to do without blocking the host: say so loudly.
    warn_once("nccl-join", "cannot order an NCCL stream after its companion (" + cu_error_text(r) +
                               "); later work on that stream may not wait for the collective");
    return false;
  }
  return true;
}

void NcclStreams::wait_done(ncclComm_t comm, const NcclReal& real) {
  if (!real.commGetAsyncError || !comm) return;
  ncclResult_t st = ncclInProgress;
  while (real.commGetAsyncError(comm, &st) == ncclSuccess && st == ncclInProgress) sched_yield();
}

ncclResult_t NcclStreams::after(CUstream user, CUstream used, ncclComm_t comm, ncclResult_t result,
                                const NcclReal& real) {
  if (used == user) return result;
  Companion* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_stream_.find(used);
    if (it != by_stream_.end()) c = it->second;
  }
  if (!c) return result;
  GroupState& g = group_of(this);
  if (g.depth > 0) {
    bool seen = false;
    for (const auto& p : g.pending) seen = seen || (p.user == user && p.used == used);
    if (!seen) g.pending.push_back({user, used});
    g.comms.push_back(comm);
    return result;
  }
  if (result == ncclInProgress) wait_done(comm, real);
  join(user, c);
  return result;
}

void NcclStreams::group_start() {
  ++group_of(this).depth;
}

ncclResult_t NcclStreams::group_end(ncclResult_t result, const NcclReal& real) {
  GroupState& g = group_of(this);
  if (g.depth > 0) --g.depth;
  if (g.depth > 0) return result;
  if (result == ncclInProgress)
    for (ncclComm_t comm : g.comms) wait_done(comm, real);
  for (const auto& p : g.pending) {
    Companion* c = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = by_stream_.find(p.used);
      if (it != by_stream_.end()) c = it->second;
    }
    if (c) join(p.user, c);
  }
  g.pending.clear();
  g.comms.clear();
  return result;
}

}  // namespace cco::preload
