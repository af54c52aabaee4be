// Reaches the (fake) driver the way a CUDA runtime does: dlopen("libcuda.so.1"),
// dlsym("cuGetProcAddress_v2"), then cuGetProcAddress for each entry point, and launches through
// what it got. Prints one line per launch ("NAME variant=V shmem=S attrs=N priority=P") so the
// test script can compare runs with and without libcco_preload.so.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "preload/driver_api.hpp"

using cco::preload::GetProcAddressV2Fn;
using cco::preload::LaunchKernelExFn;
using cco::preload::LaunchKernelFn;

namespace {

using LastFn = void (*)(int*, unsigned*, int*, int*, int*);
LastFn g_last = nullptr;

void report(const char* what) {
  int variant = 0, nattrs = 0, prio = 0, n = 0;
  unsigned shmem = 0;
  g_last(&variant, &shmem, &nattrs, &prio, &n);
  std::printf("%s variant=%d shmem=%u attrs=%d priority=%d launches=%d\n", what, variant, shmem,
              nattrs, prio, n);
}

CUfunction F(uintptr_t v) {
  return reinterpret_cast<CUfunction>(v);
}

// 1 when the function lives in libcco_preload.so (one of its wrappers or exports).
int ours(void* fn) {
  Dl_info info;
  return dladdr(fn, &info) && info.dli_fname && std::strstr(info.dli_fname, "cco_preload") ? 1 : 0;
}

}  // namespace

int main() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    std::printf("no libcuda: %s\n", dlerror());
    return 1;
  }
  auto gpa = reinterpret_cast<GetProcAddressV2Fn>(dlsym(cuda, "cuGetProcAddress_v2"));
  g_last = reinterpret_cast<LastFn>(dlsym(cuda, "cco_fake_last"));
  if (!gpa || !g_last) return 1;
  std::printf("gpa ours=%d\n", ours(reinterpret_cast<void*>(gpa)));

  CUdriverProcAddressQueryResult st{};
  void *lk = nullptr, *lk_ptsz = nullptr, *lkx = nullptr, *lkx_ptsz = nullptr, *gpa2 = nullptr;
  gpa("cuLaunchKernel", &lk, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  gpa("cuLaunchKernel", &lk_ptsz, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
  gpa("cuLaunchKernelEx", &lkx, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  gpa("cuLaunchKernelEx", &lkx_ptsz, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
  gpa("cuGetProcAddress", &gpa2, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  std::printf("gpa-of-gpa ours=%d\n", ours(gpa2));
  std::printf("launch ours=%d\n", ours(lk));
  void* lk_again = nullptr;
  reinterpret_cast<GetProcAddressV2Fn>(gpa2)("cuLaunchKernel", &lk_again, 12000,
                                             CU_GET_PROC_ADDRESS_DEFAULT, &st);
  std::printf("same-wrapper=%d\n", lk_again == lk ? 1 : 0);
  // What a CUDA runtime does first: the CUDA 11.3 ABI of cuGetProcAddress, then lookups through it.
  void *gpa1 = nullptr, *lk_v1 = nullptr;
  gpa("cuGetProcAddress", &gpa1, 11030, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  using GetProcAddressV1Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  reinterpret_cast<GetProcAddressV1Fn>(gpa1)("cuLaunchKernel", &lk_v1, 4000,
                                             CU_GET_PROC_ADDRESS_DEFAULT);
  std::printf("v1 gpa ours=%d launch ours=%d same=%d\n", ours(gpa1), ours(lk_v1),
              lk_v1 == lk ? 1 : 0);

  reinterpret_cast<LaunchKernelFn>(lk)(F(0x10), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                                       nullptr);
  report("gemm-legacy");
  reinterpret_cast<LaunchKernelFn>(lk_ptsz)(F(0x10), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                                            nullptr);
  report("gemm-ptsz");
  reinterpret_cast<LaunchKernelFn>(lk)(F(0x50), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                                       nullptr);
  report("ctxless-legacy");
  reinterpret_cast<LaunchKernelFn>(lk)(F(0x10), 100, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr);
  report("gemm-small-grid");

  CUlaunchConfig c = {};
  c.gridDimX = 10000;
  c.gridDimY = c.gridDimZ = c.blockDimY = c.blockDimZ = 1;
  c.blockDimX = 256;
  reinterpret_cast<LaunchKernelExFn>(lkx)(&c, F(0x10), nullptr, nullptr);
  report("gemm-ex");
  reinterpret_cast<LaunchKernelExFn>(lkx_ptsz)(&c, F(0x10), nullptr, nullptr);
  report("gemm-ex-ptsz");
  CUlaunchAttribute coop = {};
  coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  coop.value.cooperative = 1;
  c.attrs = &coop;
  c.numAttrs = 1;
  reinterpret_cast<LaunchKernelExFn>(lkx)(&c, F(0x10), nullptr, nullptr);
  report("gemm-ex-cooperative");
  c.attrs = nullptr;
  c.numAttrs = 0;
  c.gridDimX = 24;
  c.blockDimX = 640;
  reinterpret_cast<LaunchKernelExFn>(lkx)(&c, F(0x20), nullptr, nullptr);
  report("nccl-ex");

  // A program linked against libcuda calls the exported symbol itself.
  auto direct = reinterpret_cast<LaunchKernelFn>(dlsym(RTLD_DEFAULT, "cuLaunchKernel"));
  if (!direct) direct = reinterpret_cast<LaunchKernelFn>(dlsym(cuda, "cuLaunchKernel"));
  direct(F(0x10), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr);
  report("gemm-direct");
  // A module and a library unloaded, their handles reused for an NCCL kernel (fake_cuda.cpp): the
  // same handles must get fresh decisions, never the cached ones of the kernels unloaded.
  if (std::getenv("FAKE_APP_UNLOAD")) {
    void *mu = nullptr, *lu = nullptr;
    gpa("cuModuleUnload", &mu, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    gpa("cuLibraryUnload", &lu, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    std::printf("unload ours=%d %d\n", ours(mu), ours(lu));
    const CUresult rm = reinterpret_cast<CUresult (*)(CUmodule)>(mu)(reinterpret_cast<CUmodule>(0x7));
    reinterpret_cast<LaunchKernelFn>(lk)(F(0x10), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                                         nullptr);
    std::printf("module-unload=%d ", static_cast<int>(rm));
    report("reused-function");
    const CUresult rl =
        reinterpret_cast<CUresult (*)(CUlibrary)>(lu)(reinterpret_cast<CUlibrary>(0x8));
    reinterpret_cast<LaunchKernelFn>(lk)(F(0x50), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                                         nullptr);
    std::printf("library-unload=%d ", static_cast<int>(rl));
    report("reused-kernel");
  }
  // A child forked after the library started (a data-loader worker, say): it must not hang on
  // the library's locks, its launches pass untouched, and it reports none of the parent's counts.
  if (std::getenv("FAKE_APP_FORK")) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      reinterpret_cast<LaunchKernelFn>(lk)(F(0x10), 10000, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                                           nullptr);
      report("child-gemm");
      std::fflush(stdout);
      std::exit(0);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    std::printf("child exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  // The exit status the test asks for: tracing at exit must never change it.
  if (const char* e = std::getenv("FAKE_APP_EXIT")) return std::atoi(e);
  return 0;
}
