// The NCCL calls cco makes, forwarded to the NCCL loaded on first use (runtime/lazy.hpp).
// NCCL 2.28's calls (ncclAlltoAll, ncclGather, ncclScatter) are looked up by
// kernels/nccl228.hpp instead, so a build against older headers still compiles.
#include <nccl.h>

#include <string>

#include "runtime/lazy.hpp"

namespace {

using cco::rt::Lib;

// Why the last call on this thread failed inside the forwarder (a call the loaded NCCL lacks);
// the next ncclGetErrorString(ncclInvalidUsage) gives it, once.
thread_local std::string t_missing;

void* nccl_fn(const char* name, const void* self = nullptr) {
  return cco::rt::lib_entry(Lib::Nccl, name, self);
}

ncclResult_t missing(const char* name) {
  if (!cco::rt::load(Lib::Nccl)) return ncclSystemError;
  int v = 0;
  using GetVersion = ncclResult_t (*)(int*);
  if (auto* gv = reinterpret_cast<GetVersion>(cco::rt::lib_symbol(Lib::Nccl, "ncclGetVersion"))) gv(&v);
  t_missing = std::string(name) + " is not in the NCCL loaded (" + cco::rt::lib_file(Lib::Nccl) +
              ", version code " + std::to_string(v) + "): a newer NCCL is needed";
  return ncclInvalidUsage;
}

}  // namespace

// Each forwarder looks its target up once; the definition takes C linkage from nccl.h.
#define CCO_NCCL_FORWARD(name, params, args)                                      \
  ncclResult_t name params {                                                      \
    static const auto real = reinterpret_cast<decltype(&name)>(                   \
        nccl_fn(#name, reinterpret_cast<const void*>(&name)));                    \
    if (!real) return missing(#name);                                             \
    return real args;                                                             \
  }

extern "C" {

CCO_NCCL_FORWARD(ncclGetVersion, (int* version), (version))
CCO_NCCL_FORWARD(ncclGetUniqueId, (ncclUniqueId * id), (id))
CCO_NCCL_FORWARD(ncclCommInitRankConfig,
                 (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config),
                 (comm, nranks, id, rank, config))
CCO_NCCL_FORWARD(ncclCommInitAll, (ncclComm_t * comms, int ndev, const int* devlist),
                 (comms, ndev, devlist))
CCO_NCCL_FORWARD(ncclCommDestroy, (ncclComm_t comm), (comm))
CCO_NCCL_FORWARD(ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle),
                 (comm, buff, size, handle))
CCO_NCCL_FORWARD(ncclCommDeregister, (const ncclComm_t comm, void* handle), (comm, handle))
CCO_NCCL_FORWARD(ncclCommWindowRegister,
                 (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int flags),
                 (comm, buff, size, win, flags))
CCO_NCCL_FORWARD(ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win))
CCO_NCCL_FORWARD(ncclMemAlloc, (void** ptr, size_t size), (ptr, size))
CCO_NCCL_FORWARD(ncclMemFree, (void* ptr), (ptr))
CCO_NCCL_FORWARD(ncclGroupStart, (), ())
CCO_NCCL_FORWARD(ncclGroupEnd, (), ())
CCO_NCCL_FORWARD(ncclGroupSimulateEnd, (ncclSimInfo_t * info), (info))
CCO_NCCL_FORWARD(ncclAllReduce,
                 (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                  ncclComm_t comm, cudaStream_t stream),
                 (send, recv, count, type, op, comm, stream))
CCO_NCCL_FORWARD(ncclReduceScatter,
                 (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                  ncclComm_t comm, cudaStream_t stream),
                 (send, recv, count, type, op, comm, stream))
CCO_NCCL_FORWARD(ncclAllGather,
                 (const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                  cudaStream_t stream),
                 (send, recv, count, type, comm, stream))
CCO_NCCL_FORWARD(ncclReduce,
                 (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                  int root, ncclComm_t comm, cudaStream_t stream),
                 (send, recv, count, type, op, root, comm, stream))
CCO_NCCL_FORWARD(ncclBroadcast,
                 (const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                  ncclComm_t comm, cudaStream_t stream),
                 (send, recv, count, type, root, comm, stream))
CCO_NCCL_FORWARD(ncclBcast,
                 (void* buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                  cudaStream_t stream),
                 (buff, count, type, root, comm, stream))
CCO_NCCL_FORWARD(ncclSend,
                 (const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                  cudaStream_t stream),
                 (send, count, type, peer, comm, stream))
CCO_NCCL_FORWARD(ncclRecv,
                 (void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                  cudaStream_t stream),
                 (recv, count, type, peer, comm, stream))

const char* ncclGetErrorString(ncclResult_t result) {
  if (!cco::rt::load(Lib::Nccl)) {
    static const std::string why = "NCCL (" + cco::rt::lib_file(Lib::Nccl) +
                                   ") cannot be loaded: " + cco::rt::load_error(Lib::Nccl);
    return why.c_str();
  }
  if (result == ncclInvalidUsage && !t_missing.empty()) {
    // Said once: a later ncclInvalidUsage of another cause gets NCCL's own text.
    thread_local std::string said;
    said = std::move(t_missing);
    t_missing.clear();
    return said.c_str();
  }
  static const auto real = reinterpret_cast<decltype(&ncclGetErrorString)>(
      nccl_fn("ncclGetErrorString", reinterpret_cast<const void*>(&ncclGetErrorString)));
  return real ? real(result) : "unknown NCCL error";
}

}  // extern "C"
