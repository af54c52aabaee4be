// A fake CUDA driver for the preload library's GPU-free tests: a DriverApi whose entries answer
// from a table of fake kernels and devices (an H100/H200-like sm_90 device), record every call,
// and can be told to fail any call. One FakeDriver is current at a time (g_fake).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "model/limits.hpp"
#include "model/occupancy.hpp"
#include "preload/driver_api.hpp"
#include "common/log.hpp"

namespace cco::test {

struct FakeKernel {
  std::string name;
  int regs = 32;
  int static_smem = 0;
  int max_threads = 1024;
  int max_dynamic = 48 * 1024;  // the driver's default MAX_DYNAMIC_SHARED_SIZE_BYTES
  int cluster_width = 0;        // REQUIRED_CLUSTER_WIDTH
  bool kernel_handle = false;   // a CUkernel: only the cuKernel* calls know it
};

struct Launch {
  bool ex = false;
  CUfunction f = nullptr;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned shmem = 0;
  CUstream stream = nullptr;
  const CUlaunchConfig* config = nullptr;  // what the hook passed (Ex)
  std::vector<CUlaunchAttribute> attrs;    // its attributes, copied at the call
};

struct FakeDriver {
  std::map<void*, FakeKernel> kernels;
  model::DeviceLimits dev = model::find_architecture("h100");
  int current_device = 0;

  // Results to return (CUDA_SUCCESS unless a test says otherwise).
  CUresult ctx_device_result = CUDA_SUCCESS;
  CUresult device_attr_result = CUDA_SUCCESS;
  CUresult func_name_result = CUDA_SUCCESS;
  CUresult kernel_name_result = CUDA_SUCCESS;
  CUresult attr_result = CUDA_SUCCESS;
  CUresult maxdyn_query_result = CUDA_SUCCESS;
  CUresult set_result = CUDA_SUCCESS;
  CUresult occupancy_result = CUDA_SUCCESS;
  int occupancy_override = -1;           // >= 0: the occupancy call answers this
  std::vector<CUresult> launch_results;  // popped front per launch; empty: success

  // Calls seen.
  std::mutex mu;
  std::vector<Launch> launches;
  std::vector<std::pair<void*, int>> sets;  // MAX_DYNAMIC_SHARED_SIZE_BYTES raised to
  std::vector<int> set_devices;             // device of each cuKernelSetAttribute
  std::atomic<int> name_calls{0}, attr_calls{0}, occupancy_calls{0}, device_attr_calls{0};

  // Streams and events (NCCL companion streams).
  int greatest_priority = -5;
  CUresult stream_create_result = CUDA_SUCCESS;
  CUresult event_record_result = CUDA_SUCCESS;
  CUresult wait_result = CUDA_SUCCESS;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  std::map<CUstream, CUcontext> stream_ctx;  // unknown streams belong to ctx 0x100
  std::vector<std::string> log;              // "record E S", "wait S E", "create S prio"
  std::vector<CUcontext> ctx_stack;
  int next_handle = 0x1000;
  // Events: recorded -> not done until the test completes them (the communication window).
  std::map<CUevent, bool> event_done;
  CUresult event_query_result = CUDA_SUCCESS;  // != SUCCESS: queries fail with it
  int event_creates = 0, event_queries = 0, event_syncs = 0;
  double gpu_ms = 0;                   // the fake GPU clock: an event recorded now gets this time
  std::map<CUevent, double> event_ms;  // when each event was (last) recorded
  void complete_events() {
    for (auto& [e, done] : event_done) done = true;
  }

  FakeKernel& add(void* handle, const std::string& name, int regs = 32, int smem = 0) {
    FakeKernel& k = kernels[handle];
    k.name = name;
    k.regs = regs;
    k.static_smem = smem;
    k.max_dynamic = static_cast<int>(dev.smem_per_block_default) - smem;
    return k;
  }
  preload::DriverApi api() const;
  void install();  // makes this the current fake
};

inline FakeDriver* g_fake = nullptr;

inline void* H(uintptr_t v) {
  return reinterpret_cast<void*>(v);
}
inline CUfunction F(uintptr_t v) {
  return reinterpret_cast<CUfunction>(v);
}
inline CUstream S(uintptr_t v) {
  return reinterpret_cast<CUstream>(v);
}

namespace fake {

inline CUresult ctxGetDevice(CUdevice* d) {
  if (g_fake->ctx_device_result != CUDA_SUCCESS) return g_fake->ctx_device_result;
  *d = g_fake->current_device;
  return CUDA_SUCCESS;
}

inline CUresult deviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  ++g_fake->device_attr_calls;
  if (g_fake->device_attr_result != CUDA_SUCCESS) return g_fake->device_attr_result;
  const auto& d = g_fake->dev;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = d.cc_major;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = d.cc_minor;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = d.sm_count;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *v = d.warp_size;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = d.max_threads_per_block;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = d.max_threads_per_sm;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *v = d.max_blocks_per_sm;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *v = d.regs_per_sm;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      *v = d.regs_per_block;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *v = static_cast<int>(d.smem_per_sm);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *v = static_cast<int>(d.smem_per_block_default);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = static_cast<int>(d.smem_per_block_optin);
      break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
      *v = static_cast<int>(d.smem_reserved_per_block);
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

inline FakeKernel* find(void* h, bool as_kernel) {
  auto it = g_fake->kernels.find(h);
  if (it == g_fake->kernels.end()) return nullptr;
  if (it->second.kernel_handle != as_kernel) return nullptr;
  return &it->second;
}

inline CUresult name_of(const char** n, void* h, bool as_kernel, CUresult forced) {
  ++g_fake->name_calls;
  if (forced != CUDA_SUCCESS) return forced;
  FakeKernel* k = find(h, as_kernel);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  *n = k->name.c_str();
  return CUDA_SUCCESS;
}
inline CUresult funcGetName(const char** n, CUfunction f) {
  return name_of(n, f, false, g_fake->func_name_result);
}
inline CUresult kernelGetName(const char** n, CUkernel k) {
  return name_of(n, k, true, g_fake->kernel_name_result);
}

inline CUresult attr_of(int* v, CUfunction_attribute a, void* h, bool as_kernel) {
  ++g_fake->attr_calls;
  FakeKernel* k = find(h, as_kernel);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (g_fake->maxdyn_query_result != CUDA_SUCCESS) return g_fake->maxdyn_query_result;
    *v = k->max_dynamic;
    return CUDA_SUCCESS;
  }
  if (g_fake->attr_result != CUDA_SUCCESS) return g_fake->attr_result;
  switch (a) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *v = k->regs;
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *v = k->static_smem;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = k->max_threads;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      *v = k->cluster_width;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      *v = k->cluster_width ? 1 : 0;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *v = k->cluster_width ? 1 : 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
inline CUresult funcGetAttribute(int* v, CUfunction_attribute a, CUfunction f) {
  return attr_of(v, a, f, false);
}
inline CUresult kernelGetAttribute(int* v, CUfunction_attribute a, CUkernel k, CUdevice) {
  return attr_of(v, a, k, true);
}

inline CUresult set_of(void* h, bool as_kernel, CUfunction_attribute a, int v) {
  if (g_fake->set_result != CUDA_SUCCESS) return g_fake->set_result;
  FakeKernel* k = find(h, as_kernel);
  if (!k || a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (v + k->static_smem > g_fake->dev.smem_per_block_optin) return CUDA_ERROR_INVALID_VALUE;
  k->max_dynamic = v;
  std::lock_guard<std::mutex> lock(g_fake->mu);
  g_fake->sets.emplace_back(h, v);
  return CUDA_SUCCESS;
}
inline CUresult funcSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  return set_of(f, false, a, v);
}
inline CUresult kernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) {
  {
    std::lock_guard<std::mutex> lock(g_fake->mu);
    g_fake->set_devices.push_back(d);
  }
  return set_of(k, true, a, v);
}

// Answers like the driver would, from the model (which the GPU tests check against the real
// driver), unless told otherwise. Like the driver, a size above the function's current
// MAX_DYNAMIC_SHARED_SIZE_BYTES cannot launch.
inline CUresult occupancy(int* n, CUfunction f, int threads, size_t dyn) {
  ++g_fake->occupancy_calls;
  if (g_fake->occupancy_result != CUDA_SUCCESS) return g_fake->occupancy_result;
  if (g_fake->occupancy_override >= 0) {
    *n = g_fake->occupancy_override;
    return CUDA_SUCCESS;
  }
  auto it = g_fake->kernels.find(f);
  if (it == g_fake->kernels.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (static_cast<int64_t>(dyn) > it->second.max_dynamic) {
    *n = 0;
    return CUDA_SUCCESS;
  }
  model::Footprint fp;
  fp.threads = threads;
  fp.regs = it->second.regs;
  fp.static_smem = it->second.static_smem;
  fp.dynamic_smem = static_cast<int64_t>(dyn);
  *n = model::occupancy(g_fake->dev, fp).blocks_per_sm;
  return CUDA_SUCCESS;
}

inline CUresult priorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = g_fake->greatest_priority;
  return CUDA_SUCCESS;
}
inline CUresult streamGetPriority(CUstream s, int* p) {
  *p = reinterpret_cast<uintptr_t>(s) >= 0x1000 ? g_fake->greatest_priority : 0;
  return CUDA_SUCCESS;
}

inline std::string hex(const void* p) {
  char b[32];
  std::snprintf(b, sizeof b, "%lx", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  return b;
}

inline CUresult streamGetCtx(CUstream s, CUcontext* c) {
  auto it = g_fake->stream_ctx.find(s);
  *c = it == g_fake->stream_ctx.end() ? reinterpret_cast<CUcontext>(0x100) : it->second;
  return CUDA_SUCCESS;
}
inline CUresult ctxPush(CUcontext c) {
  g_fake->ctx_stack.push_back(c);
  g_fake->log.push_back("push " + hex(c));
  return CUDA_SUCCESS;
}
inline CUresult ctxPop(CUcontext* c) {
  *c = g_fake->ctx_stack.empty() ? nullptr : g_fake->ctx_stack.back();
  if (!g_fake->ctx_stack.empty()) g_fake->ctx_stack.pop_back();
  g_fake->log.push_back("pop");
  return CUDA_SUCCESS;
}
inline CUresult streamCreate(CUstream* s, unsigned, int prio) {
  if (g_fake->stream_create_result != CUDA_SUCCESS) return g_fake->stream_create_result;
  *s = reinterpret_cast<CUstream>(static_cast<uintptr_t>(g_fake->next_handle++));
  g_fake->log.push_back("create " + hex(*s) + " prio " + std::to_string(prio));
  return CUDA_SUCCESS;
}
inline CUresult eventCreate(CUevent* e, unsigned) {
  *e = reinterpret_cast<CUevent>(static_cast<uintptr_t>(g_fake->next_handle++));
  ++g_fake->event_creates;
  return CUDA_SUCCESS;
}
inline CUresult eventRecord(CUevent e, CUstream s) {
  if (g_fake->event_record_result != CUDA_SUCCESS) return g_fake->event_record_result;
  g_fake->log.push_back("record " + hex(e) + " on " + hex(s));
  g_fake->event_done[e] = false;
  g_fake->event_ms[e] = g_fake->gpu_ms;
  return CUDA_SUCCESS;
}
inline CUresult eventElapsedTime(float* ms, CUevent a, CUevent b) {
  auto da = g_fake->event_done.find(a), db = g_fake->event_done.find(b);
  if (da == g_fake->event_done.end() || db == g_fake->event_done.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!da->second || !db->second) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(g_fake->event_ms[b] - g_fake->event_ms[a]);
  return CUDA_SUCCESS;
}
inline CUresult eventQuery(CUevent e) {
  ++g_fake->event_queries;
  if (g_fake->event_query_result != CUDA_SUCCESS) return g_fake->event_query_result;
  auto it = g_fake->event_done.find(e);
  if (it == g_fake->event_done.end()) return CUDA_SUCCESS;  // never recorded: complete
  return it->second ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
// The GPU runs in order: waiting for one event completes every event recorded so far.
inline CUresult eventSynchronize(CUevent) {
  ++g_fake->event_syncs;
  g_fake->complete_events();
  return CUDA_SUCCESS;
}
inline CUresult deviceGetName(char* name, int len, CUdevice) {
  std::snprintf(name, static_cast<std::size_t>(len), "%s", "Fake H100");
  return CUDA_SUCCESS;
}
inline CUresult driverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
inline CUresult streamWaitEvent(CUstream s, CUevent e, unsigned) {
  if (g_fake->wait_result != CUDA_SUCCESS) return g_fake->wait_result;
  g_fake->log.push_back("wait " + hex(s) + " for " + hex(e));
  return CUDA_SUCCESS;
}
inline CUresult isCapturing(CUstream, CUstreamCaptureStatus* st) {
  *st = g_fake->capture;
  return CUDA_SUCCESS;
}

// Like the driver: a dynamic size above the function's MAX_DYNAMIC_SHARED_SIZE_BYTES cannot launch.
inline bool too_much_smem(CUfunction f, unsigned shmem) {
  auto it = g_fake->kernels.find(f);
  return it != g_fake->kernels.end() && static_cast<int64_t>(shmem) > it->second.max_dynamic;
}

// The real launches the hook calls.
inline CUresult next_launch_result() {
  std::lock_guard<std::mutex> lock(g_fake->mu);
  if (g_fake->launch_results.empty()) return CUDA_SUCCESS;
  const CUresult r = g_fake->launch_results.front();
  g_fake->launch_results.erase(g_fake->launch_results.begin());
  return r;
}

inline CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void**, void**) {
  Launch l;
  l.f = f;
  l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz;
  l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
  l.shmem = shmem;
  l.stream = s;
  if (too_much_smem(f, shmem)) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_fake->mu);
    g_fake->launches.push_back(l);
  }
  return next_launch_result();
}

inline CUresult launch_ex(const CUlaunchConfig* c, CUfunction f, void**, void**) {
  Launch l;
  l.ex = true;
  l.f = f;
  l.config = c;
  l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
  l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
  l.shmem = c->sharedMemBytes;
  l.stream = c->hStream;
  for (unsigned i = 0; i < c->numAttrs; ++i) l.attrs.push_back(c->attrs[i]);
  if (too_much_smem(f, c->sharedMemBytes)) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_fake->mu);
    g_fake->launches.push_back(l);
  }
  return next_launch_result();
}

}  // namespace fake

inline preload::DriverApi FakeDriver::api() const {
  preload::DriverApi a;
  a.ctxGetDevice = fake::ctxGetDevice;
  a.deviceGetAttribute = fake::deviceGetAttribute;
  a.funcGetName = fake::funcGetName;
  a.funcGetAttribute = fake::funcGetAttribute;
  a.funcSetAttribute = fake::funcSetAttribute;
  a.kernelGetName = fake::kernelGetName;
  a.kernelGetAttribute = fake::kernelGetAttribute;
  a.kernelSetAttribute = fake::kernelSetAttribute;
  a.occupancyMaxActiveBlocksPerMultiprocessor = fake::occupancy;
  a.ctxGetStreamPriorityRange = fake::priorityRange;
  a.streamGetPriority = fake::streamGetPriority;
  a.streamGetCtx = fake::streamGetCtx;
  a.ctxPushCurrent = fake::ctxPush;
  a.ctxPopCurrent = fake::ctxPop;
  a.streamCreateWithPriority = fake::streamCreate;
  a.eventCreate = fake::eventCreate;
  a.eventRecord = fake::eventRecord;
  a.streamWaitEvent = fake::streamWaitEvent;
  a.streamIsCapturing = fake::isCapturing;
  a.eventQuery = fake::eventQuery;
  a.eventElapsedTime = fake::eventElapsedTime;
  a.eventSynchronize = fake::eventSynchronize;
  a.deviceGetName = fake::deviceGetName;
  a.driverGetVersion = fake::driverGetVersion;
  return a;
}

inline void FakeDriver::install() {
  g_fake = this;
}

// Keeps the library's log lines for a test.
inline std::vector<std::string>& captured_log() {
  static std::vector<std::string> lines;
  return lines;
}
inline void capture_sink(const std::string& line) {
  captured_log().push_back(line);
}
inline void start_capture() {
  captured_log().clear();
  preload::reset_warnings();
  preload::set_log_sink(capture_sink);
}

}  // namespace cco::test
