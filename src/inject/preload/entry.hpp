// The preload library's entry points share this state and these helpers across their files
// (internal to libcco_preload.so; namespace cco::preload::entry):
//   interpose.cpp     dlsym, the wrapper slots, libcuda, launches, cuBLAS/cuBLASLt, the exported
//                     driver calls -- and disabled(), the real dlsym, the real cuGetProcAddress
//   driver_calls.cpp  the launch-order window's driver calls, unloads, the current device
//   nccl_entry.cpp    the NCCL entry points: the step clock's collectives, the window, priority
//   configs.cpp       the configurations: hooks made at the first launch or collective, their
//                     switch (rotation, ccoverlap.policy()), the step clock, the GEMM controls'
//                     state, statistics at exit, the C API and the NVTX injection
// Globals are written once (under g_init_mu, before what publishes them) and never freed: the
// library may be called from any thread until the process ends, destructors included.
#pragma once

#include <cuda.h>
#include <link.h>

#include <array>
#include <atomic>

#include "preload/driver_api.hpp"
#include "preload/hook.hpp"
#include "preload/nccl_streams.hpp"
#include "preload/order_window.hpp"
#include "preload/step_clock.hpp"

namespace cco::preload::entry {

// ---- interpose.cpp ----------------------------------------------------------------------------
using DlsymFn = void* (*)(void*, const char*);
/// glibc's dlsym (ours interposes it).
DlsymFn real_dlsym();
/// A child forked after the library started: it passes everything through untouched.
extern std::atomic<bool> g_forked_child;
void on_fork_child();
/// CCO_DISABLE (read once) or a forked child.
bool disabled();
/// The driver's cuGetProcAddress_v2 (the program's lookups first, else libcuda's).
GetProcAddressV2Fn real_get_proc_v2();
/// `name` in the loaded object `path` (never loading one); null when absent or not loaded.
void* sym_in_object(const char* path, const char* name);
/// dl_iterate_phdr's callback: the first loaded object other than this library that defines
/// q->first (data: std::pair<const char*, void*>*), into q->second.
int find_other_definition(struct dl_phdr_info* info, size_t size, void* data);

// ---- configs.cpp ------------------------------------------------------------------------------
constexpr int kMaxHooks = 16;
/// The hook in force (one of g_hooks); null until the first launch or collective made them.
extern std::atomic<Hook*> g_hook;
/// Its index in g_hooks (cco_config_index).
extern std::atomic<int> g_hook_index;
/// Every configuration's hook (a rotation, ccoverlap.policy()); slots written once.
extern std::array<std::atomic<Hook*>, kMaxHooks> g_hooks;
extern std::atomic<int> g_nhooks;
extern std::atomic<StepClock*> g_clock;
/// The launch-order window: only once a plan has `gemm.when: overlap`.
extern std::atomic<OrderWindow*> g_order;
/// Some configuration has an SM target (until then the cuBLAS wrappers forward at once).
extern std::atomic<bool> g_gemm_any;
/// The driver as the window, the step clock and the GEMM decisions need it.
extern DriverApi g_wapi;
/// Makes the hooks (or decides there are none); the hook in force or null.
Hook* make_hooks();
inline Hook* hook() {
  if (Hook* h = g_hook.load(std::memory_order_acquire)) return h;
  return make_hooks();
}
/// The NCCL companion streams (priority method "stream"), or null.
NcclStreams* streams();
/// The index of the measuring configuration nocomm among the hooks (-1: none; steps/nocomm.hpp).
extern std::atomic<int> g_nocomm_index;
/// The configuration in force is nocomm: collectives move no data.
inline bool nocomm_active() {
  const int i = g_nocomm_index.load(std::memory_order_acquire);
  return i >= 0 && g_hook_index.load(std::memory_order_acquire) == i;
}
/// A library the program loaded, at its version ("2.28.9"; `key` "nccl" or "cublaslt"), against
/// the made_for of every configuration's plan: one warning per library where they differ.
void check_made_for_library(const char* key, const char* what, const std::string& loaded);

// ---- driver_calls.cpp -------------------------------------------------------------------------
/// > 0 inside an NCCL call (its own event records and waits are not the program's joins).
extern thread_local constinit int t_nccl_depth;
int current_device();
/// The window's name for a stream (the device, and the thread for the per-thread default
/// stream, where handles are shared). `dev` < 0: the current device.
StreamRef stream_ref(CUstream s, int dev = -1);
using EventRecordFn = CUresult (*)(CUevent, CUstream);
using EventRecordWithFlagsFn = CUresult (*)(CUevent, CUstream, unsigned);
using StreamWaitEventFn = CUresult (*)(CUstream, CUevent, unsigned);
using StreamSynchronizeFn = CUresult (*)(CUstream);
using EventSynchronizeFn = CUresult (*)(CUevent);
using CtxSynchronizeFn = CUresult (*)();
using CtxSynchronizeV2Fn = CUresult (*)(CUcontext);
CUresult event_record_entry(EventRecordFn real, CUevent e, CUstream s);
CUresult event_record_flags_entry(EventRecordWithFlagsFn real, CUevent e, CUstream s, unsigned f);
CUresult stream_wait_entry(StreamWaitEventFn real, CUstream s, CUevent e, unsigned f);
CUresult stream_sync_entry(StreamSynchronizeFn real, CUstream s);
CUresult event_sync_entry(EventSynchronizeFn real, CUevent e);
CUresult ctx_sync_entry(CtxSynchronizeFn real);
CUresult ctx_sync_v2_entry(CtxSynchronizeV2Fn real, CUcontext ctx);
// Unloads: the handles of the unloaded code may name other kernels later.
using ModuleUnloadFn = CUresult (*)(CUmodule);
using LibraryUnloadFn = CUresult (*)(CUlibrary);
CUresult module_unload_entry(ModuleUnloadFn real, CUmodule m);
CUresult library_unload_entry(LibraryUnloadFn real, CUlibrary l);

// ---- nccl_entry.cpp ---------------------------------------------------------------------------
/// True while `s` is being captured into a graph (or its status cannot be read).
bool is_capturing(CUstream s);

}  // namespace cco::preload::entry
