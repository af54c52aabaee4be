// A fake libcuda.so.1 for GPU-free end-to-end tests of libcco_preload.so: it answers
// cuGetProcAddress like the driver (legacy and per-thread variants are different functions) and
// records what its launch functions receive. cco_fake_last() reports the last launch.
#include <cuda.h>

#include <cstdlib>
#include <cstring>

#include "fake_driver.hpp"

using namespace cco::test;

namespace {

FakeDriver& drv() {
  static FakeDriver* d = [] {
    auto* f = new FakeDriver();
    f->add(H(0x10), "_Z9my_gemm_kPfS_i", 32, 0);
    f->add(H(0x20), "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL17ncclDevKernelArgs4K", 96, 0);
    f->add(H(0x50), "ctxless_kernel", 32, 0).kernel_handle = true;
    f->install();
    return f;
  }();
  return *d;
}

struct Last {
  int variant = -1;  // 0 cuLaunchKernel, 1 _ptsz, 2 cuLaunchKernelEx, 3 Ex _ptsz
  unsigned shmem = 0;
  int nattrs = 0;
  int priority = 1;  // 1: no priority attribute
} g_last;
int g_launches = 0;

CUresult record(int variant, unsigned shmem, const CUlaunchConfig* c) {
  g_last = Last{};
  g_last.variant = variant;
  g_last.shmem = shmem;
  if (c) {
    g_last.nattrs = static_cast<int>(c->numAttrs);
    for (unsigned i = 0; i < c->numAttrs; ++i)
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
        g_last.priority = c->attrs[i].value.priority;
  }
  ++g_launches;
  return CUDA_SUCCESS;
}

CUresult lk(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned shmem,
            CUstream, void**, void**) {
  return record(0, shmem, nullptr);
}
CUresult lk_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                 unsigned shmem, CUstream, void**, void**) {
  return record(1, shmem, nullptr);
}
CUresult lkx(const CUlaunchConfig* c, CUfunction, void**, void**) {
  return record(2, c->sharedMemBytes, c);
}
CUresult lkx_ptsz(const CUlaunchConfig* c, CUfunction, void**, void**) {
  return record(3, c->sharedMemBytes, c);
}

// Unloads that hand the freed handles out again, as a driver may: after cuModuleUnload the
// handle 0x10 (my_gemm_k) names an NCCL kernel, after cuLibraryUnload the CUkernel 0x50 does.
// A decision cached for the old kernel would shape the new one.
const char* const kReusedName = "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL17ncclDevKernelArgs4K";
CUresult module_unload(CUmodule) {
  std::lock_guard<std::mutex> lock(drv().mu);
  drv().add(H(0x10), kReusedName, 96, 0);
  return CUDA_SUCCESS;
}
CUresult library_unload(CUlibrary) {
  std::lock_guard<std::mutex> lock(drv().mu);
  drv().add(H(0x50), kReusedName, 96, 0).kernel_handle = true;
  return CUDA_SUCCESS;
}

// Memory is host memory here (the measuring configuration nocomm's fills: fake_nccl.cpp).
CUresult memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream) {
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult memset_d8(CUdeviceptr dst, unsigned char v, size_t n, CUstream) {
  std::memset(reinterpret_cast<void*>(dst), v, n);
  return CUDA_SUCCESS;
}
CUresult mem_alloc(CUdeviceptr* p, size_t n) {
  void* m = std::calloc(1, n);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}

}  // namespace

namespace {
CUresult gpa_v1(const char* sym, void** pfn, int ver, cuuint64_t flags);

// The implementations are internal: their addresses are this library's, whatever a preloaded
// library exports under the same names.
CUresult gpa_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                CUdriverProcAddressQueryResult* st) {
  drv();
  const bool ptsz = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  void* p = nullptr;
  const std::string s = sym;
  if (s == "cuLaunchKernel")
    p = reinterpret_cast<void*>(ptsz ? lk_ptsz : lk);
  else if (s == "cuLaunchKernelEx")
    p = reinterpret_cast<void*>(ptsz ? lkx_ptsz : lkx);
  else if (s == "cuModuleUnload")
    p = reinterpret_cast<void*>(module_unload);
  else if (s == "cuLibraryUnload")
    p = reinterpret_cast<void*>(library_unload);
  else if (s == "cuMemcpyDtoDAsync")
    p = reinterpret_cast<void*>(memcpy_dtod);
  else if (s == "cuMemsetD8Async")
    p = reinterpret_cast<void*>(memset_d8);
  else if (s == "cuMemAlloc")
    p = reinterpret_cast<void*>(mem_alloc);
  else if (s == "cuGetProcAddress")
    p = ver >= 12000 ? reinterpret_cast<void*>(gpa_v2) : reinterpret_cast<void*>(gpa_v1);
  else {
    const auto a = drv().api();
    struct {
      const char* n;
      void* f;
    } table[] = {
        {"cuCtxGetDevice", reinterpret_cast<void*>(a.ctxGetDevice)},
        {"cuDeviceGetAttribute", reinterpret_cast<void*>(a.deviceGetAttribute)},
        {"cuDeviceGetName", reinterpret_cast<void*>(a.deviceGetName)},
        {"cuDriverGetVersion", reinterpret_cast<void*>(a.driverGetVersion)},
        {"cuFuncGetName", reinterpret_cast<void*>(a.funcGetName)},
        {"cuFuncGetAttribute", reinterpret_cast<void*>(a.funcGetAttribute)},
        {"cuFuncSetAttribute", reinterpret_cast<void*>(a.funcSetAttribute)},
        {"cuKernelGetName", reinterpret_cast<void*>(a.kernelGetName)},
        {"cuKernelGetAttribute", reinterpret_cast<void*>(a.kernelGetAttribute)},
        {"cuKernelSetAttribute", reinterpret_cast<void*>(a.kernelSetAttribute)},
        {"cuOccupancyMaxActiveBlocksPerMultiprocessor",
         reinterpret_cast<void*>(a.occupancyMaxActiveBlocksPerMultiprocessor)},
        {"cuCtxGetStreamPriorityRange", reinterpret_cast<void*>(a.ctxGetStreamPriorityRange)},
        {"cuStreamGetPriority", reinterpret_cast<void*>(a.streamGetPriority)},
        // The communication window: events behind NCCL launches (never complete here).
        {"cuEventCreate", reinterpret_cast<void*>(a.eventCreate)},
        {"cuEventRecord", reinterpret_cast<void*>(a.eventRecord)},
        {"cuEventQuery", reinterpret_cast<void*>(a.eventQuery)},
        {"cuStreamIsCapturing", reinterpret_cast<void*>(a.streamIsCapturing)}};
    for (const auto& t : table)
      if (s == t.n) p = t.f;
  }
  if (st) *st = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!p) return CUDA_ERROR_NOT_FOUND;
  *pfn = p;
  return CUDA_SUCCESS;
}

CUresult gpa_v1(const char* sym, void** pfn, int ver, cuuint64_t flags) {
  return gpa_v2(sym, pfn, ver, flags, nullptr);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult fake_gpa_v2(
    const char* sym, void** pfn, int ver, cuuint64_t flags,
    CUdriverProcAddressQueryResult* st) __asm__("cuGetProcAddress_v2");
extern "C" __attribute__((visibility("default"))) CUresult fake_gpa_v1(
    const char* sym, void** pfn, int ver, cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult fake_gpa_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* st) {
  return gpa_v2(sym, pfn, ver, flags, st);
}
CUresult fake_gpa_v1(const char* sym, void** pfn, int ver, cuuint64_t flags) {
  return gpa_v1(sym, pfn, ver, flags);
}

// Direct exports, as libcuda has them.
extern "C" __attribute__((visibility("default"))) CUresult fake_direct_lk(
    CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
    void**, void**) __asm__("cuLaunchKernel");
CUresult fake_direct_lk(CUfunction f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                        unsigned g, unsigned shmem, CUstream s, void** p, void** x) {
  return lk(f, a, b, c, d, e, g, shmem, s, p, x);
}

extern "C" __attribute__((visibility("default"))) void cco_fake_last(int* variant, unsigned* shmem,
                                                                     int* nattrs, int* priority,
                                                                     int* launches) {
  *variant = g_last.variant;
  *shmem = g_last.shmem;
  *nattrs = g_last.nattrs;
  *priority = g_last.priority;
  *launches = g_launches;
}
