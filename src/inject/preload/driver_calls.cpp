// The launch-order window's driver calls (order_window.hpp; entry.hpp): each forwards first,
// then -- only when the window exists and holds anything -- tells it; and unloads, after which
// every hook forgets its cached kernel entries.
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "preload/entry.hpp"
#include "common/log.hpp"

using namespace cco::preload;

namespace cco::preload::entry {

// ---- the launch-order window's driver calls ---------------------------------------------------
// Each forwards first; then, only when the window exists and holds anything, tells it.
thread_local constinit int t_nccl_depth = 0;  // > 0 inside an NCCL call (its own record/wait joins)
thread_local char t_thread_tag;     // its address names the thread

int current_device() {
  CUdevice d = -1;
  if (!g_wapi.ctxGetDevice || g_wapi.ctxGetDevice(&d) != CUDA_SUCCESS) return -1;
  return d;
}

// The window's name for a stream: the handle, plus the device (and the thread) for the default
// streams, whose handles every device (and thread) shares. `dev` < 0: the current device.
StreamRef stream_ref(CUstream s, int dev) {
  const auto v = reinterpret_cast<uintptr_t>(s);
  if (v > 2) return StreamRef{s, -1, 0};
  return StreamRef{s, dev >= 0 ? dev : current_device(),
                   v == 2 ? reinterpret_cast<uint64_t>(&t_thread_tag) : 0};
}

inline OrderWindow* busy_window() {
  if (g_forked_child.load(std::memory_order_relaxed)) return nullptr;
  OrderWindow* w = g_order.load(std::memory_order_acquire);
  return w && !w->idle() ? w : nullptr;
}

CUresult event_record_entry(EventRecordFn real, CUevent e, CUstream s) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(e, s);
  if (r == CUDA_SUCCESS)
    if (OrderWindow* w = busy_window()) w->record(e, stream_ref(s));
  return r;
}

CUresult event_record_flags_entry(EventRecordWithFlagsFn real, CUevent e, CUstream s,
                                  unsigned f) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(e, s, f);
  if (r == CUDA_SUCCESS)
    if (OrderWindow* w = busy_window()) w->record(e, stream_ref(s));
  return r;
}

CUresult stream_wait_entry(StreamWaitEventFn real, CUstream s, CUevent e, unsigned f) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(s, e, f);
  if (r == CUDA_SUCCESS)
    if (OrderWindow* w = busy_window()) w->wait(stream_ref(s), e, t_nccl_depth > 0);
  return r;
}

CUresult stream_sync_entry(StreamSynchronizeFn real, CUstream s) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(s);
  if (r == CUDA_SUCCESS)
    if (OrderWindow* w = busy_window()) w->stream_sync(stream_ref(s));
  return r;
}

CUresult event_sync_entry(EventSynchronizeFn real, CUevent e) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(e);
  if (r == CUDA_SUCCESS)
    if (OrderWindow* w = busy_window()) w->event_sync(e);
  return r;
}

CUresult ctx_sync_entry(CtxSynchronizeFn real) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real();
  if (r == CUDA_SUCCESS)
    if (OrderWindow* w = busy_window()) w->device_sync(current_device());
  return r;
}

CUresult ctx_sync_v2_entry(CtxSynchronizeV2Fn real, CUcontext ctx) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(ctx);
  if (r != CUDA_SUCCESS) return r;
  OrderWindow* w = busy_window();
  if (!w) return r;
  int dev = -1;
  if (!ctx) {
    dev = current_device();
  } else if (g_wapi.ctxPushCurrent && g_wapi.ctxPopCurrent &&
             g_wapi.ctxPushCurrent(ctx) == CUDA_SUCCESS) {
    dev = current_device();
    CUcontext popped = nullptr;
    g_wapi.ctxPopCurrent(&popped);
  }
  if (dev >= 0) w->device_sync(dev);
  return r;
}

// ---- unloads ---------------------------------------------------------------------------------
// A module or library unloaded: its function handles may be handed out again for other kernels,
// so every hook forgets its cached kernel entries (and their decisions). Done after the real call
// returns and before the program can load anything else, so a reused handle is always looked up
// afresh. Not in a forked child or a disabled process (no hook there).
void forget_kernels() {
  if (disabled()) return;
  const int n = g_nhooks.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (Hook* h = g_hooks[static_cast<std::size_t>(i)].load(std::memory_order_acquire))
      h->invalidate();
}

CUresult module_unload_entry(ModuleUnloadFn real, CUmodule m) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(m);
  forget_kernels();
  return r;
}

CUresult library_unload_entry(LibraryUnloadFn real, CUlibrary l) {
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = real(l);
  forget_kernels();
  return r;
}

}  // namespace cco::preload::entry
