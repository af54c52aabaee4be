// A fake libnccl.so.2 for GPU-free end-to-end tests of the preload library's NCCL entry points:
// pnccl* (what the preload library forwards to) and nccl* (what a program calls; the preload
// library's exports take their place when it is preloaded) on host memory standing in for device
// memory (ncclBcast calls ncclBroadcast by its exported name, as NCCL does). A real-looking answer that nocomm's fill cannot produce: AllReduce writes nranks x the
// input, AllGather writes slot j as the input + 100 j. fake_nccl_counts() reports the calls.
#include <nccl.h>

#include <cstdlib>
#include <cstring>

namespace {

int g_allreduce = 0, g_allgather = 0, g_other = 0;
size_t g_allreduce_count = 0;

int nranks() {
  const char* v = std::getenv("FAKE_NCCL_NRANKS");
  return v && *v ? std::atoi(v) : 2;
}

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT void fake_nccl_counts(int* allreduce, int* allgather, int* other,
                                  size_t* last_allreduce_count) {
  *allreduce = g_allreduce;
  *allgather = g_allgather;
  *other = g_other;
  *last_allreduce_count = g_allreduce_count;
}

FAKE_EXPORT ncclResult_t pncclAllReduce(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                        ncclRedOp_t, ncclComm_t, cudaStream_t) {
  ++g_allreduce;
  g_allreduce_count = n;
  if (t != ncclFloat32) return ncclInvalidArgument;
  for (size_t i = 0; i < n; ++i)
    static_cast<float*>(rb)[i] = static_cast<const float*>(sb)[i] * static_cast<float>(nranks());
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t pncclAllGather(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                        ncclComm_t, cudaStream_t) {
  ++g_allgather;
  if (t != ncclFloat32) return ncclInvalidArgument;
  for (int j = 0; j < nranks(); ++j)
    for (size_t i = 0; i < n; ++i)
      static_cast<float*>(rb)[static_cast<size_t>(j) * n + i] =
          static_cast<const float*>(sb)[i] + 100.0f * static_cast<float>(j);
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t pncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                                        cudaStream_t) {
  ++g_other;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclBroadcast(const void* sb, void* rb, size_t n, ncclDataType_t t, int root,
                                       ncclComm_t c, cudaStream_t s) {
  return pncclBroadcast(sb, rb, n, t, root, c, s);
}
// As NCCL does: ncclBcast is ncclBroadcast, called through its exported name (which a preloaded
// library's export takes over).
FAKE_EXPORT ncclResult_t pncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                    cudaStream_t s) {
  return ncclBroadcast(b, b, n, t, root, c, s);
}
FAKE_EXPORT ncclResult_t ncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                   cudaStream_t s) {
  return pncclBcast(b, n, t, root, c, s);
}
FAKE_EXPORT ncclResult_t pncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                            ncclComm_t, cudaStream_t) {
  ++g_other;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclGroupStart() {
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclGroupEnd() {
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t, ncclResult_t* r) {
  *r = ncclSuccess;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclCommCuDevice(ncclComm_t, int* dev) {
  *dev = 0;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclCommCount(ncclComm_t, int* n) {
  *n = nranks();
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclCommUserRank(ncclComm_t, int* r) {
  *r = 0;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t pncclGetVersion(int* v) {
  *v = 22809;
  return ncclSuccess;
}

// The names a program calls (NCCL defines both).
FAKE_EXPORT ncclResult_t ncclAllReduce(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                       ncclRedOp_t op, ncclComm_t c, cudaStream_t s) {
  return pncclAllReduce(sb, rb, n, t, op, c, s);
}
FAKE_EXPORT ncclResult_t ncclAllGather(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                       ncclComm_t c, cudaStream_t s) {
  return pncclAllGather(sb, rb, n, t, c, s);
}
