// libcco_preload.so: the symbols the dynamic linker sees. Everything else in the library is
// hidden (-fvisibility=hidden and exports.map); the logic lives in hook.cpp, nccl_streams.cpp
// and resolve.cpp, which tests drive with a fake driver.
//
// How launches reach the hook. cuBLAS, cuBLASLt, NCCL and PyTorch carry their own CUDA runtime,
// which dlopen()s libcuda and reaches every driver call through dlsym("cuGetProcAddress*") and
// then cuGetProcAddress. So:
//   dlsym              is interposed; for the cuGetProcAddress and cuLaunchKernel* names it
//                      returns a wrapper bound to what the real dlsym found;
//   cuGetProcAddress*  wrappers call the real lookup with the caller's exact version and flags,
//                      then swap cuLaunchKernel / cuLaunchKernelEx (whichever variant the driver
//                      handed out) for a wrapper bound to it, and cuGetProcAddress for ours;
//   cuLaunchKernel*    are also exported directly, for programs linked against libcuda;
//   nccl<Collective>   and ncclGroupStart/End are exported to run collectives on high-priority
//                      companion streams when the plan's priority method is "stream"; otherwise
//                      they only forward to NCCL's pnccl* entry points.
// Nothing calls CUDA before the first launch (no constructor does), libcuda is never linked,
// and CCO_DISABLE=1 hands out the real pointers untouched. CCO_TRACE starts a CUPTI trace at
// the first launch, NCCL call or GEMM that reaches the hook, never at a lookup (trace_hook.cpp).
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/env_names.hpp"
#include "model/types.hpp"
#include "preload/blas.hpp"
#include "preload/blas_call.hpp"
#include "preload/blas_list.hpp"
#include "preload/cco_api.h"
#include "common/config.hpp"
#include "preload/driver_api.hpp"
#include "preload/entry.hpp"
#include "preload/hook.hpp"
#include "common/log.hpp"
#include "preload/nccl_streams.hpp"
#include "preload/nvtx_steps.hpp"
#include "preload/order_window.hpp"
#include "preload/resolve.hpp"
#include "preload/step_clock.hpp"
#include "preload/window.hpp"
#include "steps/period.hpp"
#include "preload/trace_hook.hpp"

#define CCO_EXPORT extern "C" __attribute__((visibility("default")))

#if defined(__x86_64__)
#define CCO_GLIBC_DLSYM_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define CCO_GLIBC_DLSYM_VERSION "GLIBC_2.17"
#else
#define CCO_GLIBC_DLSYM_VERSION "GLIBC_2.34"
#endif

using namespace cco::preload;
using namespace cco::preload::entry;
namespace plan = cco::plan;

namespace cco::preload::entry {

using DlsymFn = void* (*)(void*, const char*);

// ---- the real dlsym -------------------------------------------------------------------------
std::atomic<DlsymFn> g_real_dlsym{nullptr};

DlsymFn init_real_dlsym() {
  void* p = dlvsym(RTLD_NEXT, "dlsym", CCO_GLIBC_DLSYM_VERSION);
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  auto fn = reinterpret_cast<DlsymFn>(p);
  g_real_dlsym.store(fn, std::memory_order_release);
  return fn;
}

DlsymFn real_dlsym() {
  DlsymFn fn = g_real_dlsym.load(std::memory_order_acquire);
  return fn ? fn : init_real_dlsym();
}

// A child forked after the library started: CUDA cannot be used there, and a lock another
// thread of the parent held at the fork would never be released. The child passes everything
// through untouched, takes no lock of ours, and reports none of the parent's counts.
std::atomic<bool> g_forked_child{false};
void on_fork_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
}

// CCO_DISABLE, read once (an unclear value disables, like read_env()); and forked children.
bool disabled() {
  static const bool d = [] {
    const auto f = parse_flag(std::getenv(cco::env::kDisable));
    return !f || *f;
  }();
  return d || g_forked_child.load(std::memory_order_relaxed);
}

// ---- wrapper slots ------------------------------------------------------------------------
SlotTable& table();

CUresult launch_entry(LaunchKernelFn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                      void** params, void** extra);
CUresult launch_ex_entry(LaunchKernelExFn real, const CUlaunchConfig* c, CUfunction f,
                         void** params, void** extra);

template <int I>
CUresult launch_slot(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  auto real = reinterpret_cast<LaunchKernelFn>(table().real(Sym::LaunchKernel, I));
  return launch_entry(real, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

template <int I>
CUresult launch_ex_slot(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  auto real = reinterpret_cast<LaunchKernelExFn>(table().real(Sym::LaunchKernelEx, I));
  return launch_ex_entry(real, c, f, params, extra);
}

CUresult gpa_v2_impl(GetProcAddressV2Fn real, const char* sym, void** pfn, int ver,
                     cuuint64_t flags, CUdriverProcAddressQueryResult* st) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(sym, pfn, ver, flags, st);
  if (r == CUDA_SUCCESS && pfn && *pfn && (!st || *st == CU_GET_PROC_ADDRESS_SUCCESS) &&
      !disabled())
    *pfn = substitute_proc(table(), sym, *pfn, ver);
  return r;
}

CUresult gpa_v1_impl(GetProcAddressV1Fn real, const char* sym, void** pfn, int ver,
                     cuuint64_t flags) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(sym, pfn, ver, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn && !disabled())
    *pfn = substitute_proc(table(), sym, *pfn, ver);
  return r;
}

template <int I>
CUresult gpa_v2_slot(const char* sym, void** pfn, int ver, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* st) {
  return gpa_v2_impl(reinterpret_cast<GetProcAddressV2Fn>(table().real(Sym::GetProcAddressV2, I)),
                     sym, pfn, ver, flags, st);
}

template <int I>
CUresult gpa_v1_slot(const char* sym, void** pfn, int ver, cuuint64_t flags) {
  return gpa_v1_impl(reinterpret_cast<GetProcAddressV1Fn>(table().real(Sym::GetProcAddressV1, I)),
                     sym, pfn, ver, flags);
}

// The launch-order window's driver calls and unloads are in driver_calls.cpp (entry.hpp).

// One slot wrapper per window entry point: W<Sym, Fn, entry>::At<I>::fn calls entry(real, ...).
template <Sym S, class F, auto Entry>
struct WindowSlot;
template <Sym S, class... A, auto Entry>
struct WindowSlot<S, CUresult (*)(A...), Entry> {
  template <int I>
  static CUresult call(A... a) {
    return Entry(reinterpret_cast<CUresult (*)(A...)>(table().real(S, I)), a...);
  }
  template <int I>
  struct At {
    static constexpr auto fn = &WindowSlot::template call<I>;
  };
};

enum class BK { Gemm, Set, Get, Lt };
template <Sym S, BK K, class R, class First, class... A>
R blas_apply(R (*real)(First, A...), bool ours, First first, A... a);

// One slot wrapper per cuBLAS entry point found by dlsym (only the first copy's are bound).
template <Sym S, BK K, class F>
struct BlasSlot;
template <Sym S, BK K, class R, class First, class... A>
struct BlasSlot<S, K, R (*)(First, A...)> {
  template <int I>
  static R call(First f, A... a) {
    return blas_apply<S, K>(reinterpret_cast<R (*)(First, A...)>(table().real(S, I)), true, f,
                            a...);
  }
  template <int I>
  struct At {
    static constexpr auto fn = &BlasSlot::template call<I>;
  };
};

template <template <int> class W, std::size_t... I>
std::array<void*, kSlots> slots_of(std::index_sequence<I...>) {
  return {reinterpret_cast<void*>(W<static_cast<int>(I)>::fn)...};
}
template <int I>
struct LaunchW {
  static constexpr auto fn = &launch_slot<I>;
};
template <int I>
struct LaunchExW {
  static constexpr auto fn = &launch_ex_slot<I>;
};
template <int I>
struct GpaV1W {
  static constexpr auto fn = &gpa_v1_slot<I>;
};
template <int I>
struct GpaV2W {
  static constexpr auto fn = &gpa_v2_slot<I>;
};

}  // namespace cco::preload::entry

// The directly exported driver entry points (defined below; declared here for the table).
CCO_EXPORT CUresult cco_cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                       unsigned, unsigned, CUstream, void**,
                                       void**) __asm__("cuLaunchKernel");
CCO_EXPORT CUresult cco_cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                            unsigned, unsigned, unsigned, CUstream, void**,
                                            void**) __asm__("cuLaunchKernel_ptsz");
CCO_EXPORT CUresult cco_cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**,
                                         void**) __asm__("cuLaunchKernelEx");
CCO_EXPORT CUresult cco_cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**,
                                              void**) __asm__("cuLaunchKernelEx_ptsz");
CCO_EXPORT CUresult cco_cuGetProcAddress_v1(const char*, void**, int,
                                            cuuint64_t) __asm__("cuGetProcAddress");
CCO_EXPORT CUresult
cco_cuGetProcAddress_v2(const char*, void**, int, cuuint64_t,
                        CUdriverProcAddressQueryResult*) __asm__("cuGetProcAddress_v2");

// The window's driver calls, exported for programs linked against libcuda.
CCO_EXPORT CUresult cco_cuEventRecord(CUevent, CUstream) __asm__("cuEventRecord");
CCO_EXPORT CUresult cco_cuEventRecord_ptsz(CUevent, CUstream) __asm__("cuEventRecord_ptsz");
CCO_EXPORT CUresult cco_cuEventRecordWithFlags(CUevent, CUstream,
                                               unsigned) __asm__("cuEventRecordWithFlags");
CCO_EXPORT CUresult cco_cuEventRecordWithFlags_ptsz(CUevent, CUstream, unsigned) __asm__(
    "cuEventRecordWithFlags_ptsz");
CCO_EXPORT CUresult cco_cuStreamWaitEvent(CUstream, CUevent, unsigned) __asm__("cuStreamWaitEvent");
CCO_EXPORT CUresult cco_cuStreamWaitEvent_ptsz(CUstream, CUevent,
                                               unsigned) __asm__("cuStreamWaitEvent_ptsz");
CCO_EXPORT CUresult cco_cuStreamSynchronize(CUstream) __asm__("cuStreamSynchronize");
CCO_EXPORT CUresult cco_cuStreamSynchronize_ptsz(CUstream) __asm__("cuStreamSynchronize_ptsz");
CCO_EXPORT CUresult cco_cuEventSynchronize(CUevent) __asm__("cuEventSynchronize");
CCO_EXPORT CUresult cco_cuCtxSynchronize() __asm__("cuCtxSynchronize");
CCO_EXPORT CUresult cco_cuModuleUnload(CUmodule) __asm__("cuModuleUnload");
CCO_EXPORT CUresult cco_cuLibraryUnload(CUlibrary) __asm__("cuLibraryUnload");

// The cuBLAS and cuBLASLt entry points: CCO_BLAS_LIST (blas_list.hpp).
#define CCO_BLAS_DECLARE(id, name, kind, params, args) \
  CCO_EXPORT cublasStatus_t cco_##name params __asm__(#name);
CCO_BLAS_LIST(CCO_BLAS_DECLARE)
#undef CCO_BLAS_DECLARE

namespace cco::preload::entry {

constexpr int row(Sym s) {
  return static_cast<int>(s);
}

WrapperSet make_wrappers() {
  constexpr auto seq = std::make_index_sequence<kSlots>();
  WrapperSet w{};
  w[row(Sym::LaunchKernel)] = slots_of<LaunchW>(seq);
  w[row(Sym::LaunchKernelEx)] = slots_of<LaunchExW>(seq);
  w[row(Sym::GetProcAddressV1)] = slots_of<GpaV1W>(seq);
  w[row(Sym::GetProcAddressV2)] = slots_of<GpaV2W>(seq);
  w[row(Sym::EventRecord)] =
      slots_of<WindowSlot<Sym::EventRecord, EventRecordFn, &event_record_entry>::At>(seq);
  w[row(Sym::EventRecordWithFlags)] =
      slots_of<WindowSlot<Sym::EventRecordWithFlags, EventRecordWithFlagsFn,
                          &event_record_flags_entry>::At>(seq);
  w[row(Sym::StreamWaitEvent)] =
      slots_of<WindowSlot<Sym::StreamWaitEvent, StreamWaitEventFn, &stream_wait_entry>::At>(seq);
  w[row(Sym::StreamSynchronize)] =
      slots_of<WindowSlot<Sym::StreamSynchronize, StreamSynchronizeFn, &stream_sync_entry>::At>(
          seq);
  w[row(Sym::EventSynchronize)] =
      slots_of<WindowSlot<Sym::EventSynchronize, EventSynchronizeFn, &event_sync_entry>::At>(seq);
  w[row(Sym::CtxSynchronize)] =
      slots_of<WindowSlot<Sym::CtxSynchronize, CtxSynchronizeFn, &ctx_sync_entry>::At>(seq);
  w[row(Sym::CtxSynchronizeV2)] =
      slots_of<WindowSlot<Sym::CtxSynchronizeV2, CtxSynchronizeV2Fn, &ctx_sync_v2_entry>::At>(seq);
  w[row(Sym::ModuleUnload)] =
      slots_of<WindowSlot<Sym::ModuleUnload, ModuleUnloadFn, &module_unload_entry>::At>(seq);
  w[row(Sym::LibraryUnload)] =
      slots_of<WindowSlot<Sym::LibraryUnload, LibraryUnloadFn, &library_unload_entry>::At>(seq);
#define CCO_BLAS_ROW(id, name, kind, params, args) \
  w[row(Sym::Blas##id)] =                          \
      slots_of<BlasSlot<Sym::Blas##id, BK::kind, decltype(&cco_##name)>::template At>(seq);
  CCO_BLAS_LIST(CCO_BLAS_ROW)
#undef CCO_BLAS_ROW
  return w;
}

SlotTable& table() {
#define CCO_BLAS_OWN(id, name, kind, params, args) reinterpret_cast<const void*>(&cco_##name),
  static SlotTable t(make_wrappers(),
                     {reinterpret_cast<const void*>(&cco_cuLaunchKernel),
                      reinterpret_cast<const void*>(&cco_cuLaunchKernel_ptsz),
                      reinterpret_cast<const void*>(&cco_cuLaunchKernelEx),
                      reinterpret_cast<const void*>(&cco_cuLaunchKernelEx_ptsz),
                      reinterpret_cast<const void*>(&cco_cuGetProcAddress_v1),
                      reinterpret_cast<const void*>(&cco_cuGetProcAddress_v2),
                      reinterpret_cast<const void*>(&cco_cuEventRecord),
                      reinterpret_cast<const void*>(&cco_cuEventRecord_ptsz),
                      reinterpret_cast<const void*>(&cco_cuEventRecordWithFlags),
                      reinterpret_cast<const void*>(&cco_cuEventRecordWithFlags_ptsz),
                      reinterpret_cast<const void*>(&cco_cuStreamWaitEvent),
                      reinterpret_cast<const void*>(&cco_cuStreamWaitEvent_ptsz),
                      reinterpret_cast<const void*>(&cco_cuStreamSynchronize),
                      reinterpret_cast<const void*>(&cco_cuStreamSynchronize_ptsz),
                      reinterpret_cast<const void*>(&cco_cuEventSynchronize),
                      reinterpret_cast<const void*>(&cco_cuCtxSynchronize),
                      reinterpret_cast<const void*>(&cco_cuModuleUnload),
                      reinterpret_cast<const void*>(&cco_cuLibraryUnload),
                      CCO_BLAS_LIST(CCO_BLAS_OWN)});
#undef CCO_BLAS_OWN
  return t;
}

// ---- libcuda, found without linking it -------------------------------------------------------
// Only once the program has loaded it (never loaded by us); not cached while absent.
void* libcuda_handle() {
  static std::atomic<void*> cached{nullptr};
  if (void* h = cached.load(std::memory_order_acquire)) return h;
  void* p = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!p) p = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD);
  if (p) cached.store(p, std::memory_order_release);  // a reference kept for the process
  return p;
}

// A driver symbol the program did not hand us: the next definition after this library, else
// libcuda's own.
void* driver_symbol(const char* name) {
  if (void* p = real_dlsym()(RTLD_NEXT, name)) return p;
  if (void* h = libcuda_handle()) return real_dlsym()(h, name);
  return nullptr;
}

GetProcAddressV2Fn real_get_proc_v2() {
  if (void* p = table().any_real(Sym::GetProcAddressV2))
    return reinterpret_cast<GetProcAddressV2Fn>(p);
  return reinterpret_cast<GetProcAddressV2Fn>(driver_symbol("cuGetProcAddress_v2"));
}

CUresult launch_entry(LaunchKernelFn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                      void** params, void** extra) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  Hook* h = disabled() ? nullptr : hook();
  if (!h) return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
  return h->launch(real, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult launch_ex_entry(LaunchKernelExFn real, const CUlaunchConfig* c, CUfunction f,
                         void** params, void** extra) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  Hook* h = disabled() ? nullptr : hook();
  if (!h) return real(c, f, params, extra);
  return h->launch_ex(real, c, f, params, extra);
}

// ---- cuBLAS and cuBLASLt ---------------------------------------------------------------------
// The library acts on the first copy of each it sees; calls of a second copy go to that copy
// untouched (one warning). An exported wrapper forwards each call to the function its caller
// would have reached (the caller's own dependencies first), cached per call site.
constinit BlasCopy g_cublas_copy("cuBLAS");
constinit BlasCopy g_cublaslt_copy("cuBLASLt");
std::mutex g_blas_mu;
std::atomic<Blas*> g_blas[2] = {nullptr, nullptr};  // [0] cuBLAS, [1] cuBLASLt
thread_local int t_in_blas = 0;  // > 0 inside a cuBLAS call (its own cuBLASLt calls pass)

const void* self_base() {
  static std::atomic<const void*> base{nullptr};
  const void* b = base.load(std::memory_order_acquire);
  if (!b) {
    Dl_info i;
    if (dladdr(reinterpret_cast<const void*>(&self_base), &i)) b = i.dli_fbase;
    base.store(b, std::memory_order_release);
  }
  return b;
}

bool is_self(const void* p) {
  Dl_info i;
  return p && dladdr(p, &i) && i.dli_fbase == self_base();
}

bool is_lt(Sym s) {
  return s == Sym::BlasLtMatmul || s == Sym::BlasLtMatmulAlgoGetHeuristic;
}

// True when `p` (a cuBLAS/cuBLASLt function) belongs to the copy the library acts on.
bool blas_copy_ok(Sym s, const void* p) {
  Dl_info i;
  if (!p || !dladdr(p, &i)) return false;
  return (is_lt(s) ? g_cublaslt_copy : g_cublas_copy).accept(i.dli_fbase, i.dli_fname);
}

// `name` in a loaded object (never loading one); null when absent or not loaded.
void* sym_in_object(const char* path, const char* name) {
  if (!path || !path[0]) return nullptr;
  void* h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* p = real_dlsym()(h, name);
  dlclose(h);
  return p;
}

// dl_iterate_phdr: the first loaded object other than this library that defines q->first.
int find_other_definition(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<std::pair<const char*, void*>*>(data);
  void* p = sym_in_object(info->dlpi_name, q->first);
  if (!p || is_self(p)) return 0;
  q->second = p;
  return 1;
}

// What a call of `name` from `ra` would have reached without this library.
void* resolve_for_caller(const char* name, const void* ra) {
  void* p = nullptr;
  Dl_info info;
  struct link_map* lm = nullptr;
  if (ra && dladdr1(ra, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) && lm)
    p = sym_in_object(lm->l_name, name);  // the caller and its dependencies
  if (p && is_self(p)) p = nullptr;
  if (!p) p = real_dlsym()(RTLD_NEXT, name);
  if (!p) {
    std::pair<const char*, void*> q{name, nullptr};
    dl_iterate_phdr(find_other_definition, &q);
    p = q.second;
  }
  return p;
}

struct Site {
  std::atomic<const void*> ra{nullptr};
  std::atomic<void*> fn{nullptr};
  std::atomic<bool> ours{false};
};
constexpr int kSites = 64;

template <Sym S>
void* site_real(const char* name, const void* ra, bool* ours) {
  static std::array<Site, kSites> sites;
  const std::size_t h =
      static_cast<std::size_t>((reinterpret_cast<uintptr_t>(ra) * 0x9e3779b97f4a7c15ULL) >> 58);
  for (std::size_t i = 0; i < 8; ++i) {
    Site& e = sites[(h + i) % kSites];
    const void* k = e.ra.load(std::memory_order_acquire);
    if (k == ra) {
      if (void* f = e.fn.load(std::memory_order_acquire)) {
        *ours = e.ours.load(std::memory_order_relaxed);
        return f;
      }
      break;  // being filled by another thread
    }
    if (k == nullptr) {
      void* f = resolve_for_caller(name, ra);
      const bool ok = f && !disabled() && blas_copy_ok(S, f);
      if (f && e.ra.compare_exchange_strong(k, ra, std::memory_order_acq_rel)) {
        e.ours.store(ok, std::memory_order_relaxed);
        e.fn.store(f, std::memory_order_release);
      }
      *ours = ok;
      return f;
    }
  }
  void* f = resolve_for_caller(name, ra);
  *ours = f && !disabled() && blas_copy_ok(S, f);
  return f;
}

// The control in force for a GEMM: the gemm section of the configuration in force (g_hook).
GemmControl gemm_control() {
  Hook* h = g_hook.load(std::memory_order_acquire);
  if (!h) return {};
  return GemmControl{&h->plan().gemm, &h->stats(), g_order.load(std::memory_order_acquire)};
}

// The cuBLAS ([0]) or cuBLASLt ([1]) control, made at the first call once some configuration has
// an SM target; null before that (the wrappers forward at once).
Blas* blas_for(int which) {
  if (disabled()) return nullptr;
  if (!g_gemm_any.load(std::memory_order_acquire)) {
    // A GEMM before the first launch makes the hooks (what hook() does at a launch).
    if (g_hook.load(std::memory_order_acquire) || !hook()) return nullptr;
    if (!g_gemm_any.load(std::memory_order_acquire)) return nullptr;
  }
  if (Blas* b = g_blas[which].load(std::memory_order_acquire)) return b;
  std::lock_guard<std::mutex> lock(g_blas_mu);
  if (Blas* b = g_blas[which].load(std::memory_order_acquire)) return b;
  BlasApi api;
  api.ctxGetDevice = g_wapi.ctxGetDevice;
  api.deviceGetAttribute = g_wapi.deviceGetAttribute;
  const char* path = (which ? g_cublaslt_copy : g_cublas_copy).path();
  if (!path) return nullptr;  // not accepted yet: the next call again
  if (which) {
    // The plan's made_for against the cuBLASLt the program loaded (not cco's).
    using LtVersionFn = size_t (*)();
    if (auto* ver = reinterpret_cast<LtVersionFn>(sym_in_object(path, "cublasLtGetVersion")))
      check_made_for_library("cublaslt", "cuBLASLt",
                             cco::model::version_from_code(static_cast<long long>(ver())));
    api.ltDescGet =
        reinterpret_cast<LtDescGetFn>(sym_in_object(path, "cublasLtMatmulDescGetAttribute"));
    api.ltDescSet =
        reinterpret_cast<LtDescSetFn>(sym_in_object(path, "cublasLtMatmulDescSetAttribute"));
  } else {
    api.setSmCountTarget =
        reinterpret_cast<SetSmCountTargetFn>(sym_in_object(path, "cublasSetSmCountTarget"));
    api.getSmCountTarget =
        reinterpret_cast<GetSmCountTargetFn>(sym_in_object(path, "cublasGetSmCountTarget"));
  }
  if (!api.ltDescGet && !api.setSmCountTarget)
    warn_once(which ? "gemm-lt-api" : "gemm-api",
              std::string("cannot find the SM-count target calls of ") + path +
                  "; its GEMMs keep their SM target");
  auto* b = new Blas(api, gemm_control);
  g_blas[which].store(b, std::memory_order_release);  // never freed
  return b;
}

// The cuBLAS name of a wrapped entry point.
constexpr const char* blas_name(Sym s) {
#define CCO_BLAS_NAME(id, name) \
  if (s == Sym::Blas##id) return name;
  CCO_BLAS_SYMS(CCO_BLAS_NAME)
#undef CCO_BLAS_NAME
  return "";
}

// cuBLASLt's attribute readers for the trace's call labels, from the accepted copy (null: none).
LtShapeApi lt_shape_api() {
  static std::atomic<bool> done{false};
  static LtShapeApi api;
  static std::mutex mu;
  if (done.load(std::memory_order_acquire)) return api;
  std::lock_guard<std::mutex> lock(mu);
  if (done.load(std::memory_order_relaxed)) return api;
  const char* path = g_cublaslt_copy.path();
  if (!path) return {};  // not accepted yet: asked again next time
  api.descGet = reinterpret_cast<LtDescAttrFn>(sym_in_object(path, "cublasLtMatmulDescGetAttribute"));
  api.layoutGet =
      reinterpret_cast<LtLayoutAttrFn>(sym_in_object(path, "cublasLtMatrixLayoutGetAttribute"));
  done.store(true, std::memory_order_release);
  return api;
}

std::string gemm_call_label(const void* c) {
  return call_label(*static_cast<const GemmCall*>(c));
}

// Where a classic batched call's batchCount is among its arguments after the handle (blas_list.hpp;
// -1: not batched).
constexpr int batch_index(Sym s) {
  switch (s) {
    case Sym::BlasGemmStridedBatchedEx:
    case Sym::BlasGemmStridedBatchedEx64:
      return 19;
    case Sym::BlasGemmBatchedEx:
    case Sym::BlasGemmBatchedEx64:
    case Sym::BlasSgemmStridedBatched:
    case Sym::BlasSgemmStridedBatched64:
    case Sym::BlasDgemmStridedBatched:
    case Sym::BlasDgemmStridedBatched64:
    case Sym::BlasHgemmStridedBatched:
    case Sym::BlasHgemmStridedBatched64:
      return 16;
    default:
      return -1;
  }
}

// The call a GEMM wrapper was given, for the trace: the classic calls' (transa, transb, m, n, k,
// ..., A's type for the *Ex ones, batchCount for the batched ones) after the handle;
// cublasLtMatmul's from its descriptors.
template <Sym S, BK K, class... A>
std::optional<GemmCall> gemm_call_of(A... a) {
  const auto args = std::forward_as_tuple(a...);
  using Args = std::tuple<std::decay_t<A>...>;
  if constexpr (K == BK::Gemm) {
    static_assert(std::is_same_v<std::tuple_element_t<0, Args>, cublasOperation_t> &&
                      std::is_same_v<std::tuple_element_t<1, Args>, cublasOperation_t> &&
                      std::is_integral_v<std::tuple_element_t<2, Args>> &&
                      std::is_integral_v<std::tuple_element_t<4, Args>>,
                  "a GEMM's arguments after the handle start transa, transb, m, n, k");
    GemmCall c;
    c.function = blas_name(S);
    c.op_a = op_letter(static_cast<int>(std::get<0>(args)));
    c.op_b = op_letter(static_cast<int>(std::get<1>(args)));
    c.m = static_cast<int64_t>(std::get<2>(args));
    c.n = static_cast<int64_t>(std::get<3>(args));
    c.k = static_cast<int64_t>(std::get<4>(args));
    constexpr bool ex = std::string_view(blas_name(S)).find("Ex") != std::string_view::npos;
    if constexpr (ex) {
      static_assert(std::is_same_v<std::tuple_element_t<7, Args>, cudaDataType>,
                    "an *Ex GEMM's eighth argument after the handle is A's type");
      c.type = static_cast<int>(std::get<7>(args));
    }
    constexpr int b = batch_index(S);
    if constexpr (b >= 0) {
      static_assert(std::is_integral_v<std::tuple_element_t<static_cast<std::size_t>(b), Args>>,
                    "batch_index names the batchCount argument");
      c.batch = static_cast<int64_t>(std::get<static_cast<std::size_t>(b)>(args));
      if (c.batch < 1) c.batch = 1;
    }
    return c;
  } else if constexpr (K == BK::Lt && S == Sym::BlasLtMatmul) {
    // (computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, ...)
    return lt_gemm_call(lt_shape_api(), std::get<0>(args), std::get<3>(args), std::get<10>(args));
  } else {
    return std::nullopt;
  }
}

thread_local int t_in_traced_call = 0;  // > 0 inside a GEMM whose call the trace records

template <Sym S, BK K, class R, class First, class... A>
R blas_control(R (*real)(First, A...), First first, A... a);

template <Sym S, BK K, class R, class First, class... A>
R blas_apply(R (*real)(First, A...), bool ours, First first, A... a) {
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!ours) return real(first, a...);
  // While a trace records library calls, the kernels of a GEMM carry its call (cuBLAS's own
  // cuBLASLt calls inside one are the same GEMM: not pushed again).
  if constexpr (K == BK::Gemm || (K == BK::Lt && S == Sym::BlasLtMatmul)) {
    if (t_in_traced_call == 0 && trace_calls_on()) {
      if (const std::optional<GemmCall> c = gemm_call_of<S, K>(a...)) {
        if (trace_push_call(call_id(*c), gemm_call_label, &*c)) {
          // Popped however the call ends (an exception must not leave the label on the thread).
          struct Popped {
            Popped() { ++t_in_traced_call; }
            ~Popped() {
              --t_in_traced_call;
              trace_pop_call();
            }
            Popped(const Popped&) = delete;
            Popped& operator=(const Popped&) = delete;
          } popped;
          return blas_control<S, K>(real, first, a...);
        }
      }
    }
  }
  return blas_control<S, K>(real, first, a...);
}

// The SM budget of a call of the copy the library acts on.
template <Sym S, BK K, class R, class First, class... A>
R blas_control(R (*real)(First, A...), First first, A... a) {
  if constexpr (K == BK::Lt) {
    if (t_in_blas > 0) return real(first, a...);  // cuBLAS's own: its handle has the target
    Blas* b = blas_for(1);
    if (!b) return real(first, a...);
    auto desc = std::get<0>(std::forward_as_tuple(a...));
    return b->lt_call(desc, [&] { return real(first, a...); });
  } else {
    Blas* b = blas_for(0);
    if (!b) return real(first, a...);
    if constexpr (K == BK::Set) {
      return b->program_set(first, a..., real);
    } else if constexpr (K == BK::Get) {
      return b->program_get(first, a..., real);
    } else {
      b->before_gemm(first);
      ++t_in_blas;
      const R r = real(first, a...);
      --t_in_blas;
      return r;
    }
  }
}

// The library's answer to a lookup of `name` that found `p`: a wrapper bound to it, or `p`.
void* substitute_lookup(const char* name, void* p) {
  const auto s = sym_for_dlsym(name);
  if (!s || !p || table().is_ours(p)) return p;
  if (is_blas(*s) && !blas_copy_ok(*s, p)) return p;  // a second copy: left alone
  return table().bind(*s, p);
}

// A directly exported driver function's real counterpart, looked up once.
template <class Fn>
Fn direct_real(std::atomic<void*>& cache, const char* name) {
  void* p = cache.load(std::memory_order_acquire);
  if (!p) {
    p = driver_symbol(name);
    cache.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

// RTLD_NEXT for a driver name we wrap: the next definition after the caller's object, found by
// walking the link map (the real dlsym would search after *this* library instead).
void* dlsym_next_after(const void* caller, const char* name) {
  Dl_info info;
  struct link_map* self = nullptr;
  if (!dladdr1(caller, &info, reinterpret_cast<void**>(&self), RTLD_DL_LINKMAP) || !self)
    return real_dlsym()(RTLD_NEXT, name);
  for (struct link_map* l = self->l_next; l; l = l->l_next) {
    void* p = sym_in_object(l->l_name, name);
    if (!p) continue;
    Dl_info pi;
    struct link_map* owner = nullptr;
    if (dladdr1(p, &pi, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) && owner == l) return p;
  }
  return nullptr;
}

}  // namespace cco::preload::entry

// ---- exported symbols ------------------------------------------------------------------------

// dlsym. RTLD_NEXT means "the next definition after the *caller's* object", and the real dlsym
// finds the caller from its own return address. So for RTLD_NEXT the real dlsym must be entered
// with the program's return address: on x86-64 a few instructions of assembly (below) jump to
// it with the caller's frame untouched, whatever the compiler and build type (Debug included);
// elsewhere a sibling call from C++, which interpose.cpp is always compiled to make (-O2,
// src/inject/preload/CMakeLists.txt). The names the library wraps are looked up after the caller's
// object by walking the link map (dlsym_next_after), then wrapped.
//   cco_dlsym_other(handle, name)          every handle but RTLD_NEXT
//   cco_dlsym_route(name)                  RTLD_NEXT: where to jump with (handle, name, caller)
//   cco_dlsym_next_wrapped(h, name, caller) RTLD_NEXT for a name the library wraps
extern "C" __attribute__((visibility("hidden"), used)) void* cco_dlsym_other(void* handle,
                                                                              const char* name) {
  void* p = real_dlsym()(handle, name);
  if (!p || !name || name[0] != 'c' || name[1] != 'u' || disabled()) return p;
  // Not the place to start CCO_TRACE's session: a library's constructor may look the driver up
  // before this library's own constructors have run (see trace_hook.hpp).
  return substitute_lookup(name, p);
}

extern "C" __attribute__((visibility("hidden"), used)) void* cco_dlsym_next_wrapped(
    void*, const char* name, void* caller) {
  return substitute_lookup(name, dlsym_next_after(caller, name));
}

namespace cco::preload::entry {
bool wrapped_next(const char* name) {
  return name && name[0] == 'c' && name[1] == 'u' && sym_for_dlsym(name) && !disabled();
}
}  // namespace cco::preload::entry

#if defined(__x86_64__) && defined(__ELF__)
extern "C" __attribute__((visibility("hidden"), used)) void* cco_dlsym_route(const char* name) {
  if (wrapped_next(name)) return reinterpret_cast<void*>(&cco_dlsym_next_wrapped);
  return reinterpret_cast<void*>(real_dlsym());  // entered with the program's return address
}

// dlsym(handle, name): handle != RTLD_NEXT ((void*)-1) -> cco_dlsym_other. Otherwise
// cco_dlsym_route(name) picks the target, the arguments and the stack are restored, the caller's
// return address goes in as a third argument (the real dlsym ignores it), and the target is
// entered by a jump: it returns straight to the program.
__asm__(R"(
    .text
    .globl dlsym
    .type dlsym, @function
    .p2align 4
dlsym:
    .cfi_startproc
    endbr64
    cmpq $-1, %rdi
    jne cco_dlsym_other
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    movq %rsi, %rdi
    call cco_dlsym_route
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    movq (%rsp), %rdx
    jmp *%rax
    .cfi_endproc
    .size dlsym, .-dlsym
)");
#else
CCO_EXPORT void* dlsym(void* handle, const char* name) {
  if (handle == RTLD_NEXT) {
    if (wrapped_next(name)) return cco_dlsym_next_wrapped(handle, name, __builtin_return_address(0));
    // A sibling call: the real dlsym sees our caller's return address.
    return real_dlsym()(handle, name);
  }
  return cco_dlsym_other(handle, name);
}
#endif

CUresult cco_cuGetProcAddress_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult* st) {
  static std::atomic<void*> cache{nullptr};
  return gpa_v2_impl(direct_real<GetProcAddressV2Fn>(cache, "cuGetProcAddress_v2"), sym, pfn, ver,
                     flags, st);
}

CUresult cco_cuGetProcAddress_v1(const char* sym, void** pfn, int ver, cuuint64_t flags) {
  static std::atomic<void*> cache{nullptr};
  return gpa_v1_impl(direct_real<GetProcAddressV1Fn>(cache, "cuGetProcAddress"), sym, pfn, ver,
                     flags);
}

CUresult cco_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params,
                            void** extra) {
  static std::atomic<void*> cache{nullptr};
  return launch_entry(direct_real<LaunchKernelFn>(cache, "cuLaunchKernel"), f, gx, gy, gz, bx, by,
                      bz, shmem, s, params, extra);
}

CUresult cco_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shmem, CUstream s,
                                 void** params, void** extra) {
  static std::atomic<void*> cache{nullptr};
  return launch_entry(direct_real<LaunchKernelFn>(cache, "cuLaunchKernel_ptsz"), f, gx, gy, gz, bx,
                      by, bz, shmem, s, params, extra);
}

CUresult cco_cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  static std::atomic<void*> cache{nullptr};
  return launch_ex_entry(direct_real<LaunchKernelExFn>(cache, "cuLaunchKernelEx"), c, f, params,
                         extra);
}

CUresult cco_cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params,
                                   void** extra) {
  static std::atomic<void*> cache{nullptr};
  return launch_ex_entry(direct_real<LaunchKernelExFn>(cache, "cuLaunchKernelEx_ptsz"), c, f,
                         params, extra);
}

CUresult cco_cuEventRecord(CUevent e, CUstream s) {
  static std::atomic<void*> cache{nullptr};
  return event_record_entry(direct_real<EventRecordFn>(cache, "cuEventRecord"), e, s);
}

CUresult cco_cuEventRecord_ptsz(CUevent e, CUstream s) {
  static std::atomic<void*> cache{nullptr};
  return event_record_entry(direct_real<EventRecordFn>(cache, "cuEventRecord_ptsz"), e, s);
}

CUresult cco_cuEventRecordWithFlags(CUevent e, CUstream s, unsigned f) {
  static std::atomic<void*> cache{nullptr};
  return event_record_flags_entry(
      direct_real<EventRecordWithFlagsFn>(cache, "cuEventRecordWithFlags"), e, s, f);
}

CUresult cco_cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned f) {
  static std::atomic<void*> cache{nullptr};
  return event_record_flags_entry(
      direct_real<EventRecordWithFlagsFn>(cache, "cuEventRecordWithFlags_ptsz"), e, s, f);
}

CUresult cco_cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) {
  static std::atomic<void*> cache{nullptr};
  return stream_wait_entry(direct_real<StreamWaitEventFn>(cache, "cuStreamWaitEvent"), s, e, f);
}

CUresult cco_cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned f) {
  static std::atomic<void*> cache{nullptr};
  return stream_wait_entry(direct_real<StreamWaitEventFn>(cache, "cuStreamWaitEvent_ptsz"), s, e,
                           f);
}

CUresult cco_cuStreamSynchronize(CUstream s) {
  static std::atomic<void*> cache{nullptr};
  return stream_sync_entry(direct_real<StreamSynchronizeFn>(cache, "cuStreamSynchronize"), s);
}

CUresult cco_cuStreamSynchronize_ptsz(CUstream s) {
  static std::atomic<void*> cache{nullptr};
  return stream_sync_entry(direct_real<StreamSynchronizeFn>(cache, "cuStreamSynchronize_ptsz"),
                           s);
}

CUresult cco_cuEventSynchronize(CUevent e) {
  static std::atomic<void*> cache{nullptr};
  return event_sync_entry(direct_real<EventSynchronizeFn>(cache, "cuEventSynchronize"), e);
}

CUresult cco_cuCtxSynchronize() {
  static std::atomic<void*> cache{nullptr};
  return ctx_sync_entry(direct_real<CtxSynchronizeFn>(cache, "cuCtxSynchronize"));
}

CUresult cco_cuModuleUnload(CUmodule m) {
  static std::atomic<void*> cache{nullptr};
  return module_unload_entry(direct_real<ModuleUnloadFn>(cache, "cuModuleUnload"), m);
}

CUresult cco_cuLibraryUnload(CUlibrary l) {
  static std::atomic<void*> cache{nullptr};
  return library_unload_entry(direct_real<LibraryUnloadFn>(cache, "cuLibraryUnload"), l);
}

// cuBLAS and cuBLASLt: forwarded to what the caller would have reached; the SM budget applied
// when that is the copy the library acts on.
#define CCO_ID(...) __VA_ARGS__
#define CCO_BLAS_DEFINE(id, name, kind, params, args)                                    \
  cublasStatus_t cco_##name params {                                                    \
    bool ours = false;                                                                  \
    auto real = reinterpret_cast<decltype(&cco_##name)>(                                \
        site_real<Sym::Blas##id>(#name, __builtin_return_address(0), &ours));            \
    return blas_apply<Sym::Blas##id, BK::kind>(real, ours, CCO_ID args);                 \
  }
CCO_BLAS_LIST(CCO_BLAS_DEFINE)
#undef CCO_BLAS_DEFINE
