#include "runtime/green.hpp"

#include <cuda.h>

#include "runtime/check.hpp"

namespace cco::rt {
namespace {

template <class F>
F entry(const char* name, unsigned version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult st{};
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &st) != cudaSuccess ||
      st != cudaDriverEntryPointSuccess || !p)
    throw Error(std::string("green contexts unavailable: the driver has no ") + name);
  return reinterpret_cast<F>(p);
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(std::string(what) + " failed (CUresult " + std::to_string(r) + ")");
}

}  // namespace

SmPartition::SmPartition(int device, int sms) {
  using GetRes = CUresult (*)(CUdevice, CUdevResource*, CUdevResourceType);
  using Split = CUresult (*)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned, unsigned);
  using Gen = CUresult (*)(CUdevResourceDesc*, CUdevResource*, unsigned);
  using Create = CUresult (*)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned);
  using StreamCreate = CUresult (*)(CUstream*, CUgreenCtx, unsigned, int);
  const auto get_res = entry<GetRes>("cuDeviceGetDevResource", 12040);
  const auto split = entry<Split>("cuDevSmResourceSplitByCount", 12040);
  const auto gen = entry<Gen>("cuDevResourceGenerateDesc", 12040);
  const auto create = entry<Create>("cuGreenCtxCreate", 12040);
  const auto stream_create = entry<StreamCreate>("cuGreenCtxStreamCreate", 12050);

  CCO_CUDA_CHECK(cudaSetDevice(device));
  CCO_CUDA_CHECK(cudaFree(nullptr));  // the primary context first (the driver advises it)
  CUdevResource all{}, part{}, rest{};
  check(get_res(static_cast<CUdevice>(device), &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  granularity_ = static_cast<int>(all.sm.smCoscheduledAlignment);
  if (sms < 1 || sms >= static_cast<int>(all.sm.smCount))
    throw Error("SM partition of " + std::to_string(sms) + " SMs: must be 1.." +
                std::to_string(all.sm.smCount - 1));
  unsigned groups = 1;
  check(split(&part, &groups, &all, &rest, 0, static_cast<unsigned>(sms)), "cuDevSmResourceSplitByCount");
  if (groups != 1) throw Error("cuDevSmResourceSplitByCount made no group of " + std::to_string(sms) + " SMs");
  sms_ = static_cast<int>(part.sm.smCount);
  CUdevResourceDesc desc{};
  check(gen(&desc, &part, 1), "cuDevResourceGenerateDesc");
  CUgreenCtx g = nullptr;
  check(create(&g, desc, static_cast<CUdevice>(device), CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  ctx_ = g;
  int least = 0, greatest = 0;
  CCO_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUstream lo = nullptr, hi = nullptr;
  check(stream_create(&lo, g, CU_STREAM_NON_BLOCKING, least), "cuGreenCtxStreamCreate");
  check(stream_create(&hi, g, CU_STREAM_NON_BLOCKING, greatest), "cuGreenCtxStreamCreate");
  low_ = reinterpret_cast<cudaStream_t>(lo);
  high_ = reinterpret_cast<cudaStream_t>(hi);
}

SmPartition::~SmPartition() {
  if (low_) cudaStreamDestroy(low_);
  if (high_) cudaStreamDestroy(high_);
  if (ctx_) {
    using Destroy = CUresult (*)(CUgreenCtx);
    try {
      entry<Destroy>("cuGreenCtxDestroy", 12040)(static_cast<CUgreenCtx>(ctx_));
    } catch (...) {
    }
  }
}

}  // namespace cco::rt
