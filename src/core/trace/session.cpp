// CUPTI is loaded with dlopen, so no binary depends on libcupti (or libcuda) to start; the
// headers give the types and the record layouts (CUpti_ActivityKernel10: versions 9 to 11 of the
// record share every field read here, and start() refuses a CUPTI older than 13.0).
#include "trace/session.hpp"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "trace/cupti_loader.hpp"
#include "trace/nvtx.hpp"
#include "trace/session_state.hpp"

// NVTX ranges are recorded by cco.trace and inside libcco_preload.so alike (its exit writer,
// src/inject/preload/trace_hook.cpp, moves a one-rank process's ranges to its rank with its kernels).
// CCO_NVTX=0 turns them off (a program whose NVTX use misbehaves under CUPTI's injection).
constexpr bool kNvtxRangesInThisBuild = true;

namespace cco::trace {

namespace {

// libcupti and libcuda: cupti_loader.hpp.
using detail::cupti_api;
using detail::driver_api;
using detail::load_cupti;
using detail::load_driver;
using detail::result_string;

// The library call in force on this thread (push_call/pop_call; 0: none), innermost last.
constexpr int kMaxCallDepth = 8;
thread_local uint64_t t_calls[kMaxCallDepth];
thread_local int t_call_depth = 0;

void CUPTIAPI api_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*);

// Library calls (Session::push_call): the launch calls whose callback notes the call in force on
// the launching thread, and at most how many distinct calls get a label. A callback on the
// launches only, not CUPTI's external correlation ids: those ride on API records, which CUPTI
// makes only with the RUNTIME and DRIVER kinds on, and those kinds slowed a host-bound PyTorch
// DDP step by about 30 ms (2x H100, 2026-11-27: every runtime call paid for them).
constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

uint64_t os_thread_id() {
  return static_cast<uint64_t>(::syscall(SYS_gettid));
}

// CUPTI's default thread id: pthread_self(), in a 32-bit field.
uint64_t pthread_thread_id() {
  return static_cast<uint32_t>(pthread_self());
}

}  // namespace

namespace detail {
constinit std::mutex g_mu;        // guards g_active and every State reachable from it
constinit std::mutex g_calls_mu;  // guards g_calls and every State's calls and labels
}  // namespace detail

namespace {

using detail::DeviceInfo;
using detail::g_calls_mu;
using detail::g_mu;
using detail::kMaxCallLabels;
using detail::RawCopy;
using detail::RawKernel;

constinit std::mutex g_start_mu;  // serializes start/stop (never taken by the callbacks)
constinit Session::State* g_active = nullptr;
constinit Session::State* g_calls = nullptr;  // the session noting library calls

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  std::size_t bytes = 1u << 20;
  {
    std::lock_guard lk(g_mu);
    if (auto* s = g_active) {
      if (s->opt.max_buffers > 0 && s->outstanding >= s->opt.max_buffers) {
        ++s->refused_buffers;  // CUPTI drops the records and counts them (dropped_records)
        return;
      }
      bytes = s->opt.buffer_bytes;
      ++s->outstanding;
    }
  }
  void* p = std::aligned_alloc(8, (bytes + 7) / 8 * 8);
  if (!p) {
    std::lock_guard lk(g_mu);
    if (auto* s = g_active) --s->outstanding;
    return;
  }
  *buffer = static_cast<uint8_t*>(p);
  *size = bytes;
}

// The fields both copy records have (CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4).
template <class Record>
RawCopy raw_copy(const Record& m) {
  RawCopy c;
  c.start = m.start;
  c.end = m.end;
  c.bytes = m.bytes;
  c.device = m.deviceId;
  c.context = m.contextId;
  c.stream = m.streamId;
  c.correlation = m.correlationId;
  return c;
}

void read_record(Session::State& s, const CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      RawKernel r;
      r.name = s.intern(k->name);
      r.start = k->start;
      r.end = k->end;
      r.queued = k->queued;
      r.submitted = k->submitted;
      r.device = k->deviceId;
      r.context = k->contextId;
      r.stream = k->streamId;
      r.correlation = k->correlationId;
      r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
      r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
      r.registers = k->registersPerThread;
      r.static_smem = k->staticSharedMemory;
      r.dynamic_smem = k->dynamicSharedMemory;
      s.context_device[r.context] = r.device;
      if (s.opt.max_kernels && s.kernels.size() >= s.opt.max_kernels) {
        ++s.dropped;  // over the cap: counted, the trace says it is incomplete
        break;
      }
      s.kernels.push_back(r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      RawCopy c = raw_copy(*m);
      c.kind = m->copyKind;
      s.copies.push_back(c);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {  // peer to peer
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec);
      RawCopy c = raw_copy(*m);
      c.kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
      c.src_device = static_cast<int32_t>(m->srcDeviceId);
      c.dst_device = static_cast<int32_t>(m->dstDeviceId);
      s.copies.push_back(c);
      break;
    }
    case CUPTI_ACTIVITY_KIND_STREAM: {
      const auto* st = reinterpret_cast<const CUpti_ActivityStream*>(rec);
      s.stream_priority[{st->contextId, st->streamId}] = static_cast<int32_t>(st->priority);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(rec);
      s.context_device[c->contextId] = c->deviceId;
      s.null_stream[c->contextId] = c->nullStreamId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      // NVTX: a range is a START record (name, domain) and an END record with the same id.
      // Instantaneous and synchronization markers are not ranges.
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(rec);
      const bool start = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0;
      const bool end = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0;
      if (start == end) break;
      // No timestamp: left out here, so its partner shows up as unmatched in the notes.
      if (m->timestamp == 0) break;
      trace::NvtxRecord x;
      x.kind = start ? trace::NvtxRecord::Kind::Start : trace::NvtxRecord::Kind::End;
      x.id = m->id;
      x.ts_ns = static_cast<int64_t>(m->timestamp);
      if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) x.thread = m->objectId.pt.threadId;
      if (start) {
        x.name = m->name ? m->name : "";
        x.domain = m->domain ? m->domain : "";
      }
      s.nvtx.add(x);
      break;
    }
    default:
      break;
  }
}

// CUPTI's own calls (the records walked, the drop count) are made before g_mu is taken: CUPTI
// may hold its internal lock when it asks for a buffer (buffer_requested takes g_mu), so calling
// into CUPTI under g_mu here could wait on it the other way round. A tuned 1.3B DDP program hung
// after about 30 traced steps, when buffers began to turn over (issue 43).
void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  std::vector<const CUpti_Activity*> recs;
  bool bad = false;
  CUpti_Activity* rec = nullptr;
  try {  // nothing may escape into CUPTI
    while (buffer && valid > 0) {
      const CUptiResult r = cupti_api().GetNextRecord(buffer, valid, &rec);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (r != CUPTI_SUCCESS) {
        bad = true;
        break;
      }
      recs.push_back(rec);
    }
  } catch (...) {
    bad = true;  // out of memory: the rest of this buffer is lost, and the trace says so
  }
  size_t dropped = 0;
  const bool counted = cupti_api().GetNumDropped(ctx, stream, &dropped) == CUPTI_SUCCESS;
  {
    std::lock_guard lk(g_mu);
    if (auto* s = g_active) {
      if (s->outstanding > 0) --s->outstanding;
      for (const CUpti_Activity* r : recs) read_record(*s, r);
      if (bad) ++s->bad_buffers;
      if (counted) s->dropped += dropped;
    }
  }
  std::free(buffer);
}

DeviceInfo query_device(int ordinal) {
  DeviceInfo d;
  load_driver();
  if (!driver_api().ok) return d;
  CUdevice dev = 0;
  if (driver_api().DeviceGet(&dev, ordinal) != CUDA_SUCCESS) return d;
  char name[256] = {};
  if (driver_api().DeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) d.name = name;
  int major = 0, minor = 0, sms = 0;
  driver_api().DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  driver_api().DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  driver_api().DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (major > 0) d.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  d.sm_count = sms;
  // Peak device-memory bandwidth (double data rate: twice the memory clock, in kHz).
  int mem_khz = 0, bus_bits = 0;
  if (driver_api().DeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) ==
          CUDA_SUCCESS &&
      driver_api().DeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) ==
          CUDA_SUCCESS &&
      mem_khz > 0 && bus_bits > 0)
    d.mem_bandwidth = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;
  return d;
}

// Whether NVTX would load the libcupti already loaded here from `path` (a path or a soname).
bool is_our_cupti(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return false;
  const bool same = h == cupti_api().handle;
  dlclose(h);  // drops only the reference RTLD_NOLOAD took
  return same;
}

// NVTX ranges through CUPTI (docs/TRACE.md, "NVTX ranges"). Called by start() under the start
// mutex, after the kernel kinds are on: nothing here can turn kernel tracing off.
void enable_nvtx_ranges(Session::State& s) {
  auto warn = [&](const std::string& w) {
    std::lock_guard lk(g_mu);
    s.warn(w);
  };
  const char* env = std::getenv("NVTX_INJECTION64_PATH");
  const std::string preset = env ? env : "";
  // CUPTI 13.0.0 as NVTX injection crashes in nvtxNameOsThreadA (NVIDIA/NVTX#125), which NCCL
  // calls for its proxy threads: never make it the injection ourselves. A choice, not a failure:
  // said in the trace's notes (cco report prints them), not as a warning.
  if (preset.empty() && cupti_api().version == 130000) {
    std::lock_guard lk(g_mu);
    const std::string f =
        "NVTX ranges not recorded: CUPTI API version 130000 (CUDA 13.0.0) can crash when it "
        "handles NVTX calls (NVIDIA/NVTX#125); use a newer CUPTI (CCO_CUPTI_LIB), or set "
        "NVTX_INJECTION64_PATH to it yourself";
    if (std::find(s.facts.begin(), s.facts.end(), f) == s.facts.end()) s.facts.push_back(f);
    return;
  }
  // Thread ids as the OS shows them (gettid), once per process; else CUPTI's pthread_self().
  if (!cupti_api().thread_id_type_tried) {
    cupti_api().thread_id_type_tried = true;
    cupti_api().system_thread_ids =
        cupti_api().SetThreadIdType &&
        cupti_api().SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS;
  }
  const CUptiResult r = cupti_api().Enable(CUPTI_ACTIVITY_KIND_MARKER);
  if (r != CUPTI_SUCCESS) {
    warn("NVTX ranges are off: cuptiActivityEnable(MARKER) failed: " + result_string(r) +
         "; kernels are traced");
    return;
  }
  s.enabled.push_back(CUPTI_ACTIVITY_KIND_MARKER);
  {
    std::lock_guard lk(g_mu);
    s.ranges_on = true;
  }
  if (preset.empty()) {
    // NVTX reads it at the process's first NVTX call; overwrite = 0 keeps a value set meanwhile.
    ::setenv("NVTX_INJECTION64_PATH", cupti_api().path.c_str(), 0);
  } else if (!is_our_cupti(preset)) {
    warn("NVTX_INJECTION64_PATH is '" + preset + "', not the libcupti this trace uses ('" +
         cupti_api().path + "'): NVTX ranges go to that library, not into this trace");
  }
}

// Library calls (Session::push_call; docs/TRACE.md, "Library calls"): a callback at each launch
// call. Called by start() under the start mutex, after the kernel kinds are on: a CUPTI that
// cannot only leaves kernels without their call.
void enable_library_calls(Session::State& s) {
  auto& c = cupti_api();
  int on = 0;
  if (c.EnableCallback) {
    for (auto cb : kRuntimeLaunches)
      on += c.EnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cb) == CUPTI_SUCCESS;
    for (auto cb : kDriverLaunches)
      on += c.EnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cb) == CUPTI_SUCCESS;
  }
  if (on == 0) {
    std::lock_guard lk(g_mu);
    s.facts.push_back("library calls not recorded: CUPTI gives no callback at kernel launches; "
                      "GEMM kernels are told apart by name and grid only");
    return;
  }
  {
    std::lock_guard lk(g_calls_mu);
    g_calls = &s;
  }
  s.calls_on.store(true, std::memory_order_release);
}

// Stops noting calls (the callbacks go with the subscriber, at stop()).
void disable_library_calls(Session::State& s) {
  s.calls_on.store(false, std::memory_order_release);
  std::lock_guard lk(g_calls_mu);
  if (g_calls == &s) g_calls = nullptr;
}

void CUPTIAPI api_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId,
                           const void* data) {
  if (t_call_depth <= 0 || !data) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d->callbackSite != CUPTI_API_ENTER) return;
  const uint64_t id = t_calls[std::min(t_call_depth, kMaxCallDepth) - 1];
  try {
    std::lock_guard lk(g_calls_mu);
    // At most as many as the kernels kept (a memory cap for long sessions).
    if (g_calls && (!g_calls->opt.max_kernels ||
                    g_calls->call_of_launch.size() < g_calls->opt.max_kernels))
      g_calls->call_of_launch.emplace_back(d->correlationId, id);
  } catch (...) {
    // Out of memory: this launch's kernel carries no call.
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------------

std::string cupti_library() {
  std::lock_guard lk(g_start_mu);
  if (!cupti_api().tried) return "";
  return cupti_api().ok ? cupti_api().path : cupti_api().error;
}

Session::Session(Options o) : s_(std::make_unique<State>()) {
  s_->opt = std::move(o);
}

Session::~Session() {
  stop();
}

bool Session::start() noexcept {
  try {
    std::lock_guard start_lock(g_start_mu);
    {
      std::lock_guard lk(g_mu);
      if (s_->active) return true;
      if (g_active) {
        s_->warn(
            "another trace session is active in this process (CUPTI allows one client); "
            "tracing disabled");
        return false;
      }
    }
    load_cupti(s_->opt.library);
    if (!cupti_api().ok) {
      std::lock_guard lk(g_mu);
      s_->warn("tracing disabled: " + cupti_api().error);
      return false;
    }
    // Claim CUPTI: fails when a profiler (Nsight Systems / Compute, cuda-gdb, ...) already has it.
    CUptiResult r;
    char other[128] = {};
    if (cupti_api().Subscribe_v2) {
      CUpti_SubscriberParams p{};
      p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
      p.subscriberName = "ccoverlap trace";
      p.oldSubscriberName = other;
      p.oldSubscriberSize = sizeof other;
      r = cupti_api().Subscribe_v2(&s_->subscriber, api_callback, nullptr, &p);
    } else {
      r = cupti_api().Subscribe(&s_->subscriber, api_callback, nullptr);
    }
    if (r != CUPTI_SUCCESS) {
      std::lock_guard lk(g_mu);
      s_->subscriber = nullptr;
      if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        s_->warn(std::string("CUPTI is already in use") +
                 (other[0] ? std::string(" by '") + other + "'" : std::string()) +
                 " (a profiler such as Nsight Systems or Nsight Compute?); tracing disabled, the "
                 "program runs on untraced");
      else
        s_->warn("tracing disabled: cuptiSubscribe failed: " + result_string(r));
      return false;
    }
    {
      std::lock_guard lk(g_mu);
      g_active = s_.get();
      s_->active = true;
    }
    auto fail = [&](const std::string& what, CUptiResult rr) {
      for (auto k : s_->enabled) cupti_api().Disable(k);
      s_->enabled.clear();
      disable_library_calls(*s_);
      cupti_api().FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      cupti_api().Unsubscribe(s_->subscriber);
      s_->subscriber = nullptr;
      std::lock_guard lk(g_mu);
      g_active = nullptr;
      s_->active = false;
      s_->warn("tracing disabled: " + what + " failed: " + result_string(rr));
      return false;
    };
    // The callbacks reach the active session through g_active: registered once per process.
    static bool registered = false;
    if (!registered) {
      if ((r = cupti_api().RegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        return fail("cuptiActivityRegisterCallbacks", r);
      registered = true;
    }
    if (s_->opt.launch_timestamps) {
      if (cupti_api().EnableLatency && cupti_api().EnableLatency(1) == CUPTI_SUCCESS) {
        s_->latency = true;
      } else {
        std::lock_guard lk(g_mu);
        s_->warn(
            "CUPTI launch timestamps unavailable: waits for SMs are estimated from stream "
            "gaps");
      }
    }
    // Contexts and streams that exist already are dumped (their priorities with them).
    for (auto kind : {CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_STREAM}) {
      r = cupti_api().EnableAndDump ? cupti_api().EnableAndDump(kind) : cupti_api().Enable(kind);
      if (r == CUPTI_SUCCESS) {
        s_->enabled.push_back(kind);
      } else {
        std::lock_guard lk(g_mu);
        s_->warn(std::string("CUPTI ") +
                 (kind == CUPTI_ACTIVITY_KIND_STREAM ? "stream" : "context") +
                 " records unavailable (" + result_string(r) +
                 "): stream priorities only for streams named with name_stream()");
      }
    }
    if ((r = cupti_api().Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
      return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    s_->enabled.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    // Copies: NCCL's collectives on the copy engines (CTA policy zero) are copies, not kernels.
    bool copies_refused = false;
    for (auto kind : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}) {
      if (cupti_api().Enable(kind) == CUPTI_SUCCESS)
        s_->enabled.push_back(kind);
      else
        copies_refused = true;
    }
    if (copies_refused) {
      std::lock_guard lk(g_mu);
      s_->facts.push_back("CUPTI memcpy records unavailable: collectives on the copy engines may "
                          "be missing from the trace");
    }
    if (s_->opt.nvtx_ranges && kNvtxRangesInThisBuild) enable_nvtx_ranges(*s_);
    if (s_->opt.library_calls) enable_library_calls(*s_);
    std::lock_guard lk(g_mu);
    s_->traced = true;
    return true;
  } catch (...) {
    // Out of memory and the like: tracing off, the program goes on.
    return false;
  }
}

void Session::stop() noexcept {
  try {
    std::lock_guard start_lock(g_start_mu);
    {
      std::lock_guard lk(g_mu);
      if (!s_->active) return;
    }
    disable_library_calls(*s_);
    for (auto k : s_->enabled) cupti_api().Disable(k);
    s_->enabled.clear();
    // Delivers every buffer through buffer_completed (on this thread); g_mu must not be held.
    cupti_api().FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    // Launch timestamps stay on: CUPTI asks that the setting not change within a process.
    size_t dropped = 0;
    const bool got = cupti_api().GetNumDropped(nullptr, 0, &dropped) == CUPTI_SUCCESS;
    cupti_api().Unsubscribe(s_->subscriber);
    s_->subscriber = nullptr;
    std::set<int> devs;
    {
      std::lock_guard lk(g_mu);
      if (got) s_->dropped += dropped;
      g_active = nullptr;
      s_->active = false;
      for (const auto& k : s_->kernels) devs.insert(static_cast<int>(k.device));
      for (const auto& l : s_->labels) devs.insert(static_cast<int>(l.device));
    }
    std::map<int, DeviceInfo> info;
    for (int d : devs) info[d] = query_device(d);
    std::lock_guard lk(g_mu);
    for (auto& [d, i] : info) s_->devices[d] = i;
    if (s_->dropped > 0)
      s_->warn(std::to_string(s_->dropped) +
               " kernel records were dropped (CUPTI buffers full): the trace is incomplete");
    if (s_->bad_buffers > 0)
      s_->warn(std::to_string(s_->bad_buffers) + " CUPTI buffers could not be read to the end");
  } catch (...) {
  }
}

bool Session::active() const noexcept {
  std::lock_guard lk(g_mu);
  return s_->active;
}

std::string Session::warning() const {
  std::lock_guard lk(g_mu);
  std::string w;
  for (const auto& x : s_->warnings) w += (w.empty() ? "" : "; ") + x;
  return w;
}

void Session::name_stream(CUstream stream, const std::string& label) noexcept {
  try {
    {
      std::lock_guard lk(g_mu);
      if (!s_->active) return;
    }
    load_driver();
    State::Label l;
    l.label = label;
    CUcontext ctx = nullptr;
    uint32_t id = 0, ctx_id = 0, dev = 0;
    if (!driver_api().ok || driver_api().StreamGetCtx(stream, &ctx) != CUDA_SUCCESS) return;
    if (cupti_api().GetStreamIdEx(ctx, stream, 0, &id) != CUPTI_SUCCESS) return;
    if (cupti_api().GetContextId(ctx, &ctx_id) != CUPTI_SUCCESS) return;
    if (cupti_api().GetDeviceId(ctx, &dev) != CUPTI_SUCCESS) return;
    int prio = 0;
    if (driver_api().StreamGetPriority(stream, &prio) == CUDA_SUCCESS) l.priority = prio;
    l.device = dev;
    l.context = ctx_id;
    l.stream = id;
    std::lock_guard lk(g_mu);
    if (l.priority) s_->stream_priority[{ctx_id, id}] = *l.priority;
    s_->context_device[ctx_id] = dev;
    s_->labels.push_back(std::move(l));
  } catch (...) {
  }
}

void Session::set_rank(int device, int rank) noexcept {
  try {
    const uint64_t tid = os_thread_id(), pt = pthread_thread_id();
    std::lock_guard lk(g_mu);
    s_->rank_of_device[device] = rank;
    s_->rank_of_tid[tid] = rank;
    s_->rank_of_pthread[pt] = rank;
  } catch (...) {
  }
}

uint64_t Session::dropped_records() const noexcept {
  std::lock_guard lk(g_mu);
  return s_->dropped;
}

std::size_t Session::kernel_count() const noexcept {
  std::lock_guard lk(g_mu);
  return s_->kernels.size();
}

std::size_t Session::range_count() const noexcept {
  std::lock_guard lk(g_mu);
  return s_->nvtx.ranges().size();
}

void Session::flush() noexcept {
  bool active = false;
  {
    std::lock_guard lk(g_mu);
    active = s_->active;
  }
  if (active) cupti_api().FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // g_mu must not be held
}

void Session::clear() noexcept {
  bool active = false;
  {
    std::lock_guard lk(g_mu);
    active = s_->active;
  }
  if (active) cupti_api().FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // g_mu must not be held
  {
    std::lock_guard lc(g_calls_mu);
    s_->call_of_launch.clear();  // the labels stay: a shape seen before keeps its id
  }
  std::lock_guard lk(g_mu);
  s_->kernels.clear();
  s_->copies.clear();
  s_->marks.clear();
  s_->nvtx.clear_closed();
}

void Session::mark(const std::string& name, int rank) noexcept {
  try {
    {
      std::lock_guard lk(g_mu);
      if (!s_->active || !cupti_api().GetTimestamp) return;
    }
    uint64_t ts = 0;
    if (cupti_api().GetTimestamp(&ts) != CUPTI_SUCCESS) return;
    std::lock_guard lk(g_mu);
    s_->marks.push_back({static_cast<int64_t>(ts), rank, name});
  } catch (...) {
  }
}

bool Session::push_call(uint64_t id, CallLabel label, const void* arg) noexcept {
  State& s = *s_;
  if (!s.calls_on.load(std::memory_order_acquire) || t_call_depth >= kMaxCallDepth) return false;
  try {
    bool known = false;
    {
      std::lock_guard lk(g_calls_mu);
      known = s.call_labels.count(id) > 0;
    }
    if (!known) {
      // Spelled outside the lock: a label that launched a kernel would reach api_callback.
      std::string text = label ? label(arg) : std::string();
      std::lock_guard lk(g_calls_mu);
      if (s.call_labels.size() < kMaxCallLabels)
        s.call_labels.emplace(id, std::move(text));
      else if (!s.call_labels.count(id))
        ++s.labels_refused;
    }
  } catch (...) {
    // Out of memory, or the label threw: the call is pushed all the same, unlabelled.
  }
  t_calls[t_call_depth++] = id;
  return true;
}

void Session::pop_call() noexcept {
  if (t_call_depth > 0) --t_call_depth;
}

bool Session::calls_on() const noexcept {
  return s_->calls_on.load(std::memory_order_acquire);
}

}  // namespace cco::trace
