// The NCCL entry points (exports.map): every collective passes through here to NCCL's pnccl*
// entry point; on its way the step clock sees it (a step boundary switches the configuration
// first), the launch-order window opens on its stream, and with the priority method "stream" it
// moves to a high-priority companion stream (nccl_streams.hpp). Under the measuring
// configuration nocomm (steps/nocomm.hpp) it does not reach NCCL: its output is filled from the
// rank's own data on its stream, and the step's first collective becomes a one-element
// all-reduce that keeps the ranks in step.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/types.hpp"
#include "preload/entry.hpp"
#include "common/log.hpp"
#include "steps/nocomm.hpp"
#include "steps/period.hpp"
#include "trace/slowdown.hpp"
#include "preload/trace_hook.hpp"

#define CCO_EXPORT extern "C" __attribute__((visibility("default")))

using namespace cco::preload;
using namespace cco::preload::entry;

namespace cco::preload::entry {

// ---- NCCL ------------------------------------------------------------------------------------
struct NcclFns {
  decltype(&::pncclAllReduce) allReduce = nullptr;
  decltype(&::pncclBroadcast) broadcast = nullptr;
  decltype(&::pncclBcast) bcast = nullptr;
  decltype(&::pncclReduce) reduce = nullptr;
  decltype(&::pncclAllGather) allGather = nullptr;
  decltype(&::pncclReduceScatter) reduceScatter = nullptr;
  decltype(&::pncclAlltoAll) alltoAll = nullptr;
  decltype(&::pncclGather) gather = nullptr;
  decltype(&::pncclScatter) scatter = nullptr;
  decltype(&::pncclSend) send = nullptr;
  decltype(&::pncclRecv) recv = nullptr;
  decltype(&::pncclGroupStart) groupStart = nullptr;
  decltype(&::pncclGroupEnd) groupEnd = nullptr;
  decltype(&::pncclGroupSimulateEnd) groupSimulateEnd = nullptr;
  decltype(&::pncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&::pncclCommCuDevice) commCuDevice = nullptr;
  decltype(&::pncclCommCount) commCount = nullptr;
  decltype(&::pncclCommUserRank) commUserRank = nullptr;
  decltype(&::pncclGetVersion) getVersion = nullptr;
  NcclReal real;
};

// NCCL's own entry point: its profiling alias pncclX, wherever NCCL was loaded (a library
// loaded with RTLD_LOCAL is not in RTLD_NEXT's reach).
void* nccl_symbol(const char* pname) {
  if (void* p = real_dlsym()(RTLD_NEXT, pname)) return p;
  for (const char* so : {"libnccl.so.2", "libnccl.so"})
    if (void* p = sym_in_object(so, pname)) return p;
  std::pair<const char*, void*> q{pname, nullptr};
  dl_iterate_phdr(find_other_definition, &q);  // pnccl* is never ours
  return q.second;
}

const NcclFns& nccl() {
  static const NcclFns f = [] {
    NcclFns n;
    auto get = [](const char* pname, auto* out) {
      *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(nccl_symbol(pname));
    };
    get("pncclAllReduce", &n.allReduce);
    get("pncclBroadcast", &n.broadcast);
    get("pncclBcast", &n.bcast);
    get("pncclReduce", &n.reduce);
    get("pncclAllGather", &n.allGather);
    get("pncclReduceScatter", &n.reduceScatter);
    get("pncclAlltoAll", &n.alltoAll);
    get("pncclGather", &n.gather);
    get("pncclScatter", &n.scatter);
    get("pncclSend", &n.send);
    get("pncclRecv", &n.recv);
    get("pncclGroupStart", &n.groupStart);
    get("pncclGroupEnd", &n.groupEnd);
    get("pncclGroupSimulateEnd", &n.groupSimulateEnd);
    get("pncclCommGetAsyncError", &n.commGetAsyncError);
    get("pncclCommCuDevice", &n.commCuDevice);
    get("pncclCommCount", &n.commCount);
    get("pncclCommUserRank", &n.commUserRank);
    get("pncclGetVersion", &n.getVersion);
    n.real.groupStart = n.groupStart;
    n.real.groupEnd = n.groupEnd;
    n.real.commGetAsyncError = n.commGetAsyncError;
    return n;
  }();
  return f;
}

ncclResult_t missing(const char* name) {
  warn_once(std::string("nccl:") + name,
            std::string("cannot find NCCL's ") + name + " (is NCCL loaded?); returning an error");
  return ncclInternalError;
}

// Marks the calling thread as inside NCCL: NCCL's own event joins open the window's streams.
struct InsideNccl {
  InsideNccl() { ++t_nccl_depth; }
  ~InsideNccl() { --t_nccl_depth; }
  InsideNccl(const InsideNccl&) = delete;
  InsideNccl& operator=(const InsideNccl&) = delete;
};

// The communicator's device, or -1 when NCCL cannot tell.
int comm_device(ncclComm_t comm) {
  int dev = -1;
  if (!nccl().commCuDevice || nccl().commCuDevice(comm, &dev) != ncclSuccess || dev < 0) return -1;
  return dev;
}

// True while `s` is being captured (a status that cannot be read counts as captured). Without
// the query (an old driver) nothing is.
bool is_capturing(CUstream s) {
  if (!g_wapi.streamIsCapturing) return false;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  return g_wapi.streamIsCapturing(s, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

// What identifies a collective in a rank's sequence (steps/period.hpp), and its buffers (what
// nocomm fills).
using cco::steps::CollKind;
struct Coll {
  CollKind kind;
  size_t count;
  int dtype;
  int op = -1;    // reduction, -1: none
  int peer = -1;  // root or peer, -1: none
  const void* send = nullptr;
  void* recv = nullptr;
  const char* name() const { return cco::steps::to_string(kind); }
};

// The communicator's index in order of first use: stable between runs, unlike its address.
int comm_index(ncclComm_t comm) {
  static std::mutex mu;
  static std::vector<ncclComm_t>* seen = new std::vector<ncclComm_t>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  for (std::size_t i = 0; i < seen->size(); ++i)
    if ((*seen)[i] == comm) return static_cast<int>(i);
  if (seen->size() >= 4096) return 4096;  // bounded: later communicators share one index
  seen->push_back(comm);
  return static_cast<int>(seen->size() - 1);
}

// A collective about to be enqueued on `stream`: tells the step clock first (a step boundary
// switches the configuration, so the collective runs under the new one), then opens the
// launch-order window on the stream (not while it is being captured: a graph's collectives run
// when it is replayed, which the library does not see). The device and the capture status are
// asked once, and only when either needs them.
struct Noted {
  bool first = false;      // the first collective of a step (StepClock::collective)
  bool capturing = false;  // its stream is being captured
  int dev = -1;
};

Noted note_collective(const Coll& c, ncclComm_t comm, cudaStream_t stream) {
  StepClock* clock = disabled() ? nullptr : g_clock.load(std::memory_order_acquire);
  OrderWindow* w = g_order.load(std::memory_order_acquire);
  Noted n;
  if (!clock && !w) return n;
  n.dev = comm_device(comm);
  const auto s = reinterpret_cast<CUstream>(stream);
  n.capturing = n.dev >= 0 && is_capturing(s);
  if (clock && n.dev >= 0)
    n.first = clock->collective(
        cco::steps::signature(c.name(), c.count, c.dtype, c.op, c.peer, comm_index(comm)), n.dev,
        s, n.capturing);
  if (!w) return n;
  if (n.dev < 0) {
    warn_once("window-nccl-device", "cannot tell the device of an NCCL communicator; its "
                                    "collectives do not open the launch-order window");
    return n;
  }
  if (!n.capturing) w->collective(n.dev, stream_ref(s, n.dev));
  return n;
}

// ---- the measuring configuration nocomm (steps/nocomm.hpp) -----------------------------------

// Bytes per element of an NCCL type; 0 for one this library does not know.
std::size_t type_bytes(int t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return t == 10 || t == 11 ? 1 : 0;  // the fp8 types of NCCL 2.24+
  }
}

// The one-element buffer of device `dev` that the step's first collective all-reduces (zeroed
// on `s` when made); 0 when it cannot be made.
CUdeviceptr sync_buffer(int dev, CUstream s) {
  static std::mutex mu;
  static std::array<CUdeviceptr, 64> bufs{};  // never freed
  if (dev < 0 || dev >= static_cast<int>(bufs.size())) return 0;
  std::lock_guard<std::mutex> lock(mu);
  CUdeviceptr& b = bufs[static_cast<std::size_t>(dev)];
  if (b) return b;
  CUdeviceptr p = 0;
  if (!g_wapi.memAlloc || !g_wapi.memsetD8Async || g_wapi.memAlloc(&p, 256) != CUDA_SUCCESS ||
      g_wapi.memsetD8Async(p, 0, 256, s) != CUDA_SUCCESS)
    return 0;
  b = p;
  return b;
}

// The collective as nocomm sees it, or nullopt (and *why) when its layout cannot be known.
std::optional<cco::steps::CollCall> nocomm_call(const Coll& c, ncclComm_t comm, std::string* why) {
  cco::steps::CollCall cc;
  cc.kind = c.kind;
  cc.send = reinterpret_cast<uintptr_t>(c.send);
  cc.recv = reinterpret_cast<uintptr_t>(c.recv);
  cc.count = c.count;
  cc.elem = type_bytes(c.dtype);
  cc.root = c.peer;
  if (cc.elem == 0) {
    *why = "an NCCL data type it does not know (" + std::to_string(c.dtype) + ")";
    return std::nullopt;
  }
  if (!nccl().commCount || !nccl().commUserRank || nccl().commCount(comm, &cc.nranks) != ncclSuccess ||
      nccl().commUserRank(comm, &cc.rank) != ncclSuccess) {
    *why = "NCCL cannot tell the communicator's size and rank";
    return std::nullopt;
  }
  return cc;
}

// A collective under nocomm: the step's first becomes the one-element all-reduce that keeps the
// ranks in step, and the output is filled as nocomm_fill says. A collective that cannot be
// skipped safely (captured into a graph, an unknown layout, a driver without the copies) goes to
// NCCL as asked, with one warning: the run still measures, less of the price.
template <class Call>
ncclResult_t nocomm_collective(const Coll& c, const Noted& n, ncclComm_t comm, cudaStream_t stream,
                               Call&& call) {
  const auto s = reinterpret_cast<CUstream>(stream);
  std::string why;
  std::optional<cco::steps::CollCall> cc;
  if (n.capturing)
    why = "a collective captured into a CUDA graph (its replays are not seen)";
  else if (!g_wapi.memcpyDtoDAsync || !g_wapi.memsetD8Async)
    why = "the driver lacks cuMemcpyDtoDAsync or cuMemsetD8Async";
  else
    cc = nocomm_call(c, comm, &why);
  std::vector<cco::steps::FillOp> ops;
  if (cc) ops = cco::steps::nocomm_fill(*cc, &why);
  if (!why.empty()) {
    warn_once(std::string("nocomm-pass-") + c.name(),
              std::string("nocomm: an ") + c.name() + " ran for real in a nocomm step: " + why +
                  "; the price measured leaves it out");
    InsideNccl inside;
    return call(stream);
  }
  if (n.first) {
    const CUdeviceptr one = sync_buffer(n.dev, s);
    if (!one) {
      warn_once("nocomm-sync", "nocomm: cannot allocate the one-element buffer that keeps the "
                               "ranks in step; the step's first collective runs for real");
      InsideNccl inside;
      return call(stream);
    }
    InsideNccl inside;
    const auto p = reinterpret_cast<void*>(one);
    if (const ncclResult_t r = nccl().allReduce(p, p, 1, ncclFloat32, ncclSum, comm, stream);
        r != ncclSuccess)
      return r;
  }
  for (const auto& op : ops) {
    const CUresult r = op.what == cco::steps::FillOp::What::Copy
                           ? g_wapi.memcpyDtoDAsync(op.dst, op.src, op.bytes, s)
                           : g_wapi.memsetD8Async(op.dst, 0, op.bytes, s);
    if (r != CUDA_SUCCESS) {
      warn_once("nocomm-copy", "nocomm: a device copy standing in for a collective failed (CUDA "
                               "error " + std::to_string(static_cast<int>(r)) + ")");
      return ncclUnhandledCudaError;
    }
  }
  return ncclSuccess;
}

// ---- the collective's size in a trace (trace/slowdown.hpp) ------------------------------------

// An NCCL type as a call label spells it (trace::collective_call_label), "" for one not known.
const char* type_label(int t) {
  switch (t) {
    case ncclInt8: return "i8";
    case ncclUint8: return "u8";
    case ncclInt32: return "i32";
    case ncclUint32: return "u32";
    case ncclInt64: return "i64";
    case ncclUint64: return "u64";
    case ncclFloat16: return "f16";
    case ncclFloat32: return "f32";
    case ncclFloat64: return "f64";
    case ncclBfloat16: return "bf16";
    default: return t == 10 ? "f8e4m3" : t == 11 ? "f8e5m2" : "";  // NCCL 2.24+
  }
}

struct CollLabel {
  const Coll* c;
  int nranks;
};
std::string coll_label(const void* a) {
  const auto* l = static_cast<const CollLabel*>(a);
  return cco::trace::collective_call_label(l->c->name(), type_label(l->c->dtype), l->c->count,
                                           l->nranks);
}

// While a trace records library calls, the kernels a collective launches in its call carry its
// size (kind, type, count, ranks): the memory share of compute slowed in the diagnosis. Kernels
// NCCL launches later (at a group's end) carry none.
class TracedColl {
 public:
  TracedColl(const Coll& c, ncclComm_t comm) {
    if (!trace_calls_on() || !*type_label(c.dtype)) return;
    int n = 0;
    if (!nccl().commCount || nccl().commCount(comm, &n) != ncclSuccess || n < 1) return;
    const CollLabel l{&c, n};
    // One label per distinct size (FNV-1a of its fields, tagged apart from the GEMM calls' ids).
    uint64_t h = 1469598103934665603ull ^ 0x6e63636cull;  // "nccl"
    for (const uint64_t v : {static_cast<uint64_t>(c.kind), static_cast<uint64_t>(c.dtype),
                             static_cast<uint64_t>(c.count), static_cast<uint64_t>(n)}) {
      h ^= v;
      h *= 1099511628211ull;
    }
    pushed_ = trace_push_call(h, coll_label, &l);
  }
  ~TracedColl() {
    if (pushed_) trace_pop_call();
  }
  TracedColl(const TracedColl&) = delete;
  TracedColl& operator=(const TracedColl&) = delete;

 private:
  bool pushed_ = false;
};

// The plan's made_for against the NCCL the program loaded (not cco's), once: after the hooks
// exist, at the first collective.
void check_program_nccl() {
  static std::atomic<bool> done{false};
  // A read on every collective after the first (no shared write on the hot path).
  if (done.load(std::memory_order_relaxed) || done.exchange(true, std::memory_order_acq_rel)) return;
  int v = 0;
  if (nccl().getVersion && nccl().getVersion(&v) == ncclSuccess)
    check_made_for_library("nccl", "NCCL", cco::model::version_from_code(v));
}

template <class Call>
ncclResult_t with_priority(const Coll& info, ncclComm_t comm, cudaStream_t stream, Call&& call) {
  // A collective NCCL calls itself (ncclBcast is ncclBroadcast inside NCCL, through its exported
  // name, which is ours) is part of the program's call: counted, forked and skipped once, there.
  if (t_nccl_depth > 0) return call(stream);
  NcclStreams* s = disabled() ? nullptr : streams();  // makes the hook and the window first
  if (!disabled()) check_program_nccl();
  const Noted noted = note_collective(info, comm, stream);
  if (!disabled() && nocomm_active()) return nocomm_collective(info, noted, comm, stream, call);
  const TracedColl traced(info, comm);
  InsideNccl inside;
  if (!s) return call(stream);
  const CUstream user = reinterpret_cast<CUstream>(stream);
  const CUstream used = s->fork(user);
  const ncclResult_t r = call(reinterpret_cast<cudaStream_t>(used));
  return s->after(user, used, comm, r, nccl().real);
}

}  // namespace cco::preload::entry

CCO_EXPORT ncclResult_t ncclAllReduce(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().allReduce;
  if (!fn) return missing("ncclAllReduce");
  return with_priority(Coll{CollKind::AllReduce, n, static_cast<int>(t), static_cast<int>(op), -1, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, op, comm, s); });
}

CCO_EXPORT ncclResult_t ncclBroadcast(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                      int root, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().broadcast;
  if (!fn) return missing("ncclBroadcast");
  return with_priority(Coll{CollKind::Broadcast, n, static_cast<int>(t), -1, root, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                                  cudaStream_t st) {
  const auto fn = nccl().bcast;
  if (!fn) return missing("ncclBcast");
  return with_priority(Coll{CollKind::Broadcast, n, static_cast<int>(t), -1, root, b, b}, comm, st, [&](cudaStream_t s) { return fn(b, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclReduce(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().reduce;
  if (!fn) return missing("ncclReduce");
  return with_priority(Coll{CollKind::Reduce, n, static_cast<int>(t), static_cast<int>(op), root, sb, rb}, comm, st,
                       [&](cudaStream_t s) { return fn(sb, rb, n, t, op, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclAllGather(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                      ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().allGather;
  if (!fn) return missing("ncclAllGather");
  return with_priority(Coll{CollKind::AllGather, n, static_cast<int>(t), -1, -1, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, comm, s); });
}

CCO_EXPORT ncclResult_t ncclReduceScatter(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().reduceScatter;
  if (!fn) return missing("ncclReduceScatter");
  return with_priority(Coll{CollKind::ReduceScatter, n, static_cast<int>(t), static_cast<int>(op), -1, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, op, comm, s); });
}

CCO_EXPORT ncclResult_t ncclAlltoAll(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                     ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().alltoAll;
  if (!fn) return missing("ncclAlltoAll");
  return with_priority(Coll{CollKind::AlltoAll, n, static_cast<int>(t), -1, -1, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, comm, s); });
}

CCO_EXPORT ncclResult_t ncclGather(const void* sb, void* rb, size_t n, ncclDataType_t t, int root,
                                   ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().gather;
  if (!fn) return missing("ncclGather");
  return with_priority(Coll{CollKind::Gather, n, static_cast<int>(t), -1, root, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclScatter(const void* sb, void* rb, size_t n, ncclDataType_t t, int root,
                                    ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().scatter;
  if (!fn) return missing("ncclScatter");
  return with_priority(Coll{CollKind::Scatter, n, static_cast<int>(t), -1, root, sb, rb}, comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclSend(const void* sb, size_t n, ncclDataType_t t, int peer,
                                 ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().send;
  if (!fn) return missing("ncclSend");
  return with_priority(Coll{CollKind::Send, n, static_cast<int>(t), -1, peer, sb, nullptr}, comm, st, [&](cudaStream_t s) { return fn(sb, n, t, peer, comm, s); });
}

CCO_EXPORT ncclResult_t ncclRecv(void* rb, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                                 cudaStream_t st) {
  const auto fn = nccl().recv;
  if (!fn) return missing("ncclRecv");
  return with_priority(Coll{CollKind::Recv, n, static_cast<int>(t), -1, peer, nullptr, rb}, comm, st, [&](cudaStream_t s) { return fn(rb, n, t, peer, comm, s); });
}

CCO_EXPORT ncclResult_t ncclGroupStart() {
  const auto fn = nccl().groupStart;
  if (!fn) return missing("ncclGroupStart");
  const ncclResult_t r = [&] {
    InsideNccl inside;
    return fn();
  }();
  if (r == ncclSuccess && !disabled())
    if (NcclStreams* s = streams()) s->group_start();
  return r;
}

CCO_EXPORT ncclResult_t ncclGroupEnd() {
  const auto fn = nccl().groupEnd;
  if (!fn) return missing("ncclGroupEnd");
  const ncclResult_t r = [&] {
    InsideNccl inside;
    return fn();
  }();
  if (!disabled())
    if (NcclStreams* s = streams()) return s->group_end(r, nccl().real);
  return r;
}

CCO_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* info) {
  const auto fn = nccl().groupSimulateEnd;
  if (!fn) return missing("ncclGroupSimulateEnd");
  const ncclResult_t r = [&] {
    InsideNccl inside;
    return fn(info);
  }();
  if (!disabled())
    if (NcclStreams* s = streams()) return s->group_end(r, nccl().real);
  return r;
}
