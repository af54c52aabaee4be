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
// the first lookup of a wrapped driver entry point, or else at the first launch (trace_hook.cpp).
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "preload/config.hpp"
#include "preload/driver_api.hpp"
#include "preload/hook.hpp"
#include "preload/log.hpp"
#include "preload/nccl_streams.hpp"
#include "preload/resolve.hpp"
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
namespace plan = cco::plan;

namespace {

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

inline DlsymFn real_dlsym() {
  DlsymFn fn = g_real_dlsym.load(std::memory_order_acquire);
  return fn ? fn : init_real_dlsym();
}

// CCO_DISABLE, read once (an unclear value disables, like read_env()).
bool disabled() {
  static const bool d = [] {
    const auto f = parse_flag(std::getenv("CCO_DISABLE"));
    return !f || *f;
  }();
  return d;
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

}  // namespace

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

namespace {

SlotTable& table() {
  static SlotTable t(WrapperSet{slots_of<LaunchW>(std::make_index_sequence<kSlots>()),
                                slots_of<LaunchExW>(std::make_index_sequence<kSlots>()),
                                slots_of<GpaV1W>(std::make_index_sequence<kSlots>()),
                                slots_of<GpaV2W>(std::make_index_sequence<kSlots>())},
                     {reinterpret_cast<const void*>(&cco_cuLaunchKernel),
                      reinterpret_cast<const void*>(&cco_cuLaunchKernel_ptsz),
                      reinterpret_cast<const void*>(&cco_cuLaunchKernelEx),
                      reinterpret_cast<const void*>(&cco_cuLaunchKernelEx_ptsz),
                      reinterpret_cast<const void*>(&cco_cuGetProcAddress_v1),
                      reinterpret_cast<const void*>(&cco_cuGetProcAddress_v2)});
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

// ---- the hook, made at the first launch or collective ----------------------------------------
std::mutex g_init_mu;
std::atomic<bool> g_init_final{false};  // true: no hook for this process (disabled)
std::atomic<Hook*> g_hook{nullptr};
std::atomic<NcclStreams*> g_streams{nullptr};
std::atomic<int> g_stats_level{0};

// Called under g_init_mu. Makes the hook, or decides there is none (CCO_DISABLE), or -- when
// the driver is not loaded yet (an NCCL call before any CUDA call) -- leaves it for the next try.
void init_hook() {
  EnvConfig env = read_env([](const char* n) { return static_cast<const char*>(std::getenv(n)); });
  for (const auto& w : env.warnings) warn_once(w, w);
  g_stats_level.store(env.stats);
  if (env.disabled) {
    g_init_final.store(true, std::memory_order_release);
    return;
  }
  trace_start_once();  // the first launch or collective (never a lookup: trace_hook.hpp)
  const GetProcAddressV2Fn gpa = real_get_proc_v2();
  if (!gpa) return;
  std::vector<std::string> warns;
  plan::Plan p = resolve_plan(env, &warns);
  for (const auto& w : warns) warn_once(w, w);
  DriverApi api;
  if (!load_driver_api(gpa, &api))
    warn_once("driver-api",
              "the CUDA driver lacks calls the library needs (cuGetProcAddress, "
              "cuFuncGetName, cuFuncGetAttribute, ...); launches are left unchanged");
  const bool stream_method = p.priority.uses_stream();
  auto* h = new Hook(api, std::move(p), HookOptions{env.stats, env.verbose});  // never freed
  if (stream_method) {
    // The companion priority is the current context's greatest, read when the first companion
    // is made (a context exists by then).
    g_streams.store(new NcclStreams(api, h->stats(), [h] { return h->greatest_priority(); }));
  }
  g_hook.store(h, std::memory_order_release);
  // Registered after the CUDA runtime's own exit handler, so the trace is written before it.
  trace_register_late_exit();
}

Hook* hook() {
  if (Hook* h = g_hook.load(std::memory_order_acquire)) return h;
  if (g_init_final.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (Hook* h = g_hook.load(std::memory_order_acquire)) return h;
  if (!g_init_final.load(std::memory_order_acquire)) init_hook();
  return g_hook.load(std::memory_order_acquire);
}

NcclStreams* streams() {
  hook();
  return g_streams.load(std::memory_order_acquire);
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
    if (!l->l_name || !l->l_name[0]) continue;
    void* h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void* p = real_dlsym()(h, name);
    dlclose(h);
    if (!p) continue;
    Dl_info pi;
    struct link_map* owner = nullptr;
    if (dladdr1(p, &pi, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) && owner == l) return p;
  }
  return nullptr;
}

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
  NcclReal real;
};

int find_in_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<std::pair<const char*, void*>*>(data);
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  void* h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  q->second = real_dlsym()(h, q->first);
  dlclose(h);
  return q->second ? 1 : 0;
}

// NCCL's own entry point: its profiling alias pncclX, wherever NCCL was loaded (a library
// loaded with RTLD_LOCAL is not in RTLD_NEXT's reach).
void* nccl_symbol(const char* pname) {
  if (void* p = real_dlsym()(RTLD_NEXT, pname)) return p;
  for (const char* so : {"libnccl.so.2", "libnccl.so"}) {
    if (void* h = dlopen(so, RTLD_LAZY | RTLD_NOLOAD)) {
      void* p = real_dlsym()(h, pname);
      dlclose(h);
      if (p) return p;
    }
  }
  std::pair<const char*, void*> q{pname, nullptr};
  dl_iterate_phdr(find_in_object, &q);
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

template <class Call>
ncclResult_t with_priority(ncclComm_t comm, cudaStream_t stream, Call&& call) {
  NcclStreams* s = disabled() ? nullptr : streams();
  if (!s) return call(stream);
  const CUstream user = reinterpret_cast<CUstream>(stream);
  const CUstream used = s->fork(user);
  const ncclResult_t r = call(reinterpret_cast<cudaStream_t>(used));
  return s->after(user, used, comm, r, nccl().real);
}

void report_at_exit() {
  int level = g_stats_level.load();
  Hook* h = g_hook.load();
  if (!h) {
    // Nothing was launched; CCO_STATS=2 still asks for a line.
    const char* v = std::getenv("CCO_STATS");
    if (!v || std::strcmp(v, "2") != 0 || disabled()) return;
    log_line("stats pid=" + std::to_string(getpid()) +
             " seen=0 (no kernel launch reached the library)");
    return;
  }
  if (level <= 0 || (level == 1 && !h->stats().any())) return;
  log_line(
      h->stats().summary(h->plan().policy, plan::to_string(h->plan().priority.method), getpid()));
  if (level >= 2)
    for (const auto& line : h->kernel_report()) log_line(line);
}

}  // namespace

// ---- exported symbols ------------------------------------------------------------------------

CCO_EXPORT void* dlsym(void* handle, const char* name) {
  const DlsymFn real = real_dlsym();
  if (handle == RTLD_NEXT) {
    if (name[0] == 'c' && name[1] == 'u' && sym_for_dlsym(name) && !disabled()) {
      void* const caller = __builtin_return_address(0);
      return substitute_dlsym(table(), name, dlsym_next_after(caller, name));
    }
    // A sibling call: the real dlsym sees our caller's return address, so RTLD_NEXT keeps its
    // meaning for every other name (checked by tests/preload/test_preload_process.sh).
    return real(handle, name);
  }
  void* p = real(handle, name);
  if (!p || name[0] != 'c' || name[1] != 'u' || disabled()) return p;
  // Not the place to start CCO_TRACE's session: a library's constructor may look the driver up
  // before this library's own constructors have run (see trace_hook.hpp).
  return substitute_dlsym(table(), name, p);
}

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

CCO_EXPORT ncclResult_t ncclAllReduce(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().allReduce;
  if (!fn) return missing("ncclAllReduce");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, op, comm, s); });
}

CCO_EXPORT ncclResult_t ncclBroadcast(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                      int root, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().broadcast;
  if (!fn) return missing("ncclBroadcast");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                                  cudaStream_t st) {
  const auto fn = nccl().bcast;
  if (!fn) return missing("ncclBcast");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(b, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclReduce(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().reduce;
  if (!fn) return missing("ncclReduce");
  return with_priority(comm, st,
                       [&](cudaStream_t s) { return fn(sb, rb, n, t, op, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclAllGather(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                      ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().allGather;
  if (!fn) return missing("ncclAllGather");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, comm, s); });
}

CCO_EXPORT ncclResult_t ncclReduceScatter(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().reduceScatter;
  if (!fn) return missing("ncclReduceScatter");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, op, comm, s); });
}

CCO_EXPORT ncclResult_t ncclAlltoAll(const void* sb, void* rb, size_t n, ncclDataType_t t,
                                     ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().alltoAll;
  if (!fn) return missing("ncclAlltoAll");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, comm, s); });
}

CCO_EXPORT ncclResult_t ncclGather(const void* sb, void* rb, size_t n, ncclDataType_t t, int root,
                                   ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().gather;
  if (!fn) return missing("ncclGather");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclScatter(const void* sb, void* rb, size_t n, ncclDataType_t t, int root,
                                    ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().scatter;
  if (!fn) return missing("ncclScatter");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, rb, n, t, root, comm, s); });
}

CCO_EXPORT ncclResult_t ncclSend(const void* sb, size_t n, ncclDataType_t t, int peer,
                                 ncclComm_t comm, cudaStream_t st) {
  const auto fn = nccl().send;
  if (!fn) return missing("ncclSend");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(sb, n, t, peer, comm, s); });
}

CCO_EXPORT ncclResult_t ncclRecv(void* rb, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                                 cudaStream_t st) {
  const auto fn = nccl().recv;
  if (!fn) return missing("ncclRecv");
  return with_priority(comm, st, [&](cudaStream_t s) { return fn(rb, n, t, peer, comm, s); });
}

CCO_EXPORT ncclResult_t ncclGroupStart() {
  const auto fn = nccl().groupStart;
  if (!fn) return missing("ncclGroupStart");
  const ncclResult_t r = fn();
  if (r == ncclSuccess && !disabled())
    if (NcclStreams* s = streams()) s->group_start();
  return r;
}

CCO_EXPORT ncclResult_t ncclGroupEnd() {
  const auto fn = nccl().groupEnd;
  if (!fn) return missing("ncclGroupEnd");
  const ncclResult_t r = fn();
  if (!disabled())
    if (NcclStreams* s = streams()) return s->group_end(r, nccl().real);
  return r;
}

CCO_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* info) {
  const auto fn = nccl().groupSimulateEnd;
  if (!fn) return missing("ncclGroupSimulateEnd");
  const ncclResult_t r = fn(info);
  if (!disabled())
    if (NcclStreams* s = streams()) return s->group_end(r, nccl().real);
  return r;
}

// Statistics at exit (CCO_STATS). Only counters are read: no CUDA call, no stdio.
__attribute__((destructor)) static void cco_preload_fini() {
  report_at_exit();
}
