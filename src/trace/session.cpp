// CUPTI is loaded with dlopen, so no binary depends on libcupti (or libcuda) to start; the
// headers give the types and the record layouts (CUpti_ActivityKernel10: versions 9 to 11 of the
// record share every field read here, and start() refuses a CUPTI older than 13.0).
#include "trace/session.hpp"

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#ifndef CCO_CUPTI_BUILD_DIR
#define CCO_CUPTI_BUILD_DIR ""
#endif

namespace cco::trace {

// ---------------------------------------------------------------------------------------------
// libcupti and libcuda, loaded once
// ---------------------------------------------------------------------------------------------

namespace {

struct CuptiApi {
  bool tried = false;
  bool ok = false;
  std::string path;   // where it was found
  std::string error;  // why not
  uint32_t version = 0;
  decltype(&cuptiGetVersion) GetVersion = nullptr;
  decltype(&cuptiGetResultString) GetResultString = nullptr;
  decltype(&cuptiSubscribe) Subscribe = nullptr;
  decltype(&cuptiSubscribe_v2) Subscribe_v2 = nullptr;  // optional (names the other tool)
  decltype(&cuptiUnsubscribe) Unsubscribe = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) RegisterCallbacks = nullptr;
  decltype(&cuptiActivityEnable) Enable = nullptr;
  decltype(&cuptiActivityEnableAndDump) EnableAndDump = nullptr;  // optional
  decltype(&cuptiActivityDisable) Disable = nullptr;
  decltype(&cuptiActivityFlushAll) FlushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) GetNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) GetNumDropped = nullptr;
  decltype(&cuptiActivityEnableLatencyTimestamps) EnableLatency = nullptr;  // optional
  decltype(&cuptiGetStreamIdEx) GetStreamIdEx = nullptr;
  decltype(&cuptiGetContextId) GetContextId = nullptr;
  decltype(&cuptiGetDeviceId) GetDeviceId = nullptr;
  decltype(&cuptiGetTimestamp) GetTimestamp = nullptr;  // optional (marks)
};

struct DriverApi {
  bool tried = false;
  bool ok = false;
  decltype(&cuDeviceGet) DeviceGet = nullptr;
  decltype(&cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&cuStreamGetPriority) StreamGetPriority = nullptr;
  decltype(&cuStreamGetCtx) StreamGetCtx = nullptr;
};

CuptiApi g_cupti;
DriverApi g_driver;

// Directories of the shared objects already loaded (libcudart, libcublas, libnccl, libcuda...):
// CUPTI usually sits beside them, or in a sibling of PyTorch's nvidia/<package>/lib layout.
int collect_dir(struct dl_phdr_info* info, size_t, void* data) {
  auto* dirs = static_cast<std::vector<std::string>*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  std::string p = info->dlpi_name;
  if (p.find("cu") == std::string::npos && p.find("nccl") == std::string::npos &&
      p.find("nvidia") == std::string::npos)
    return 0;
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return 0;
  dirs->push_back(p.substr(0, slash));
  return 0;
}

std::vector<std::string> cupti_candidates() {
  const char* so = "libcupti.so.13";
  std::vector<std::string> c = {so};
  if (*CCO_CUPTI_BUILD_DIR) c.push_back(std::string(CCO_CUPTI_BUILD_DIR) + "/" + so);
  for (const char* d : {"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64",
                        "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib"})
    c.push_back(std::string(d) + "/" + so);
  std::vector<std::string> dirs;
  dl_iterate_phdr(collect_dir, &dirs);
  for (const auto& d : dirs) {
    c.push_back(d + "/" + so);
    c.push_back(d + "/../../cuda_cupti/lib/" + so);
    c.push_back(d + "/../../cu13/lib/" + so);
  }
  const std::string venv = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/";
  c.push_back(venv + "cu13/lib/" + so);
  c.push_back(venv + "cuda_cupti/lib/" + so);
  c.push_back("libcupti.so");
  return c;
}

template <class F>
bool sym(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  return out != nullptr;
}

// Loads libcupti once per process. Called under the start mutex.
void load_cupti(const std::string& explicit_path) {
  if (g_cupti.tried) return;
  g_cupti.tried = true;
  std::vector<std::string> cands;
  std::string forced = explicit_path;
  if (forced.empty())
    if (const char* e = std::getenv("CCO_CUPTI_LIB"); e && *e) forced = e;
  if (!forced.empty())
    cands = {forced};
  else
    cands = cupti_candidates();
  void* h = nullptr;
  std::string first_error;
  for (const auto& p : cands) {
    h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      g_cupti.path = p;
      break;
    }
    if (first_error.empty()) {
      const char* e = dlerror();
      first_error = e ? e : p;
    }
  }
  if (!h) {
    g_cupti.error = forced.empty()
                        ? "libcupti.so.13 not found (tried LD_LIBRARY_PATH, the CUDA Toolkit and "
                          "the folders of the loaded CUDA libraries; set CCO_CUPTI_LIB=/path/to/"
                          "libcupti.so.13)"
                        : "cannot load CUPTI from '" + forced + "': " + first_error;
    return;
  }
  // Resolve the real path for messages.
  if (Dl_info info{}; dlsym(h, "cuptiGetVersion") &&
                      dladdr(reinterpret_cast<void*>(dlsym(h, "cuptiGetVersion")), &info) &&
                      info.dli_fname)
    g_cupti.path = info.dli_fname;
  auto& c = g_cupti;
  const bool all =
      sym(h, "cuptiGetVersion", c.GetVersion) &&
      sym(h, "cuptiGetResultString", c.GetResultString) && sym(h, "cuptiSubscribe", c.Subscribe) &&
      sym(h, "cuptiUnsubscribe", c.Unsubscribe) &&
      sym(h, "cuptiActivityRegisterCallbacks", c.RegisterCallbacks) &&
      sym(h, "cuptiActivityEnable", c.Enable) && sym(h, "cuptiActivityDisable", c.Disable) &&
      sym(h, "cuptiActivityFlushAll", c.FlushAll) &&
      sym(h, "cuptiActivityGetNextRecord", c.GetNextRecord) &&
      sym(h, "cuptiActivityGetNumDroppedRecords", c.GetNumDropped) &&
      sym(h, "cuptiGetStreamIdEx", c.GetStreamIdEx) &&
      sym(h, "cuptiGetContextId", c.GetContextId) && sym(h, "cuptiGetDeviceId", c.GetDeviceId);
  sym(h, "cuptiSubscribe_v2", c.Subscribe_v2);
  sym(h, "cuptiActivityEnableAndDump", c.EnableAndDump);
  sym(h, "cuptiActivityEnableLatencyTimestamps", c.EnableLatency);
  sym(h, "cuptiGetTimestamp", c.GetTimestamp);
  if (!all) {
    c.error = "CUPTI at '" + c.path + "' lacks a function ccoverlap needs (too old?)";
    return;
  }
  if (c.GetVersion(&c.version) != CUPTI_SUCCESS || c.version < 130000) {
    c.error = "CUPTI at '" + c.path + "' has API version " + std::to_string(c.version) +
              "; ccoverlap reads the records of CUPTI 13.0 or later (API version >= 130000)";
    return;
  }
  c.ok = true;
}

void load_driver() {
  if (g_driver.tried) return;
  g_driver.tried = true;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  auto& d = g_driver;
  d.ok = sym(h, "cuDeviceGet", d.DeviceGet) && sym(h, "cuDeviceGetName", d.DeviceGetName) &&
         sym(h, "cuDeviceGetAttribute", d.DeviceGetAttribute) &&
         sym(h, "cuStreamGetPriority", d.StreamGetPriority) &&
         sym(h, "cuStreamGetCtx", d.StreamGetCtx);
}

std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  if (g_cupti.GetResultString && g_cupti.GetResultString(r, &s) == CUPTI_SUCCESS && s)
    return std::string(s) + " (" + std::to_string(static_cast<int>(r)) + ")";
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

void CUPTIAPI no_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

std::string demangle(const std::string& n) {
  if (n.rfind("_Z", 0) != 0) return n;
  int status = 0;
  char* d = abi::__cxa_demangle(n.c_str(), nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? std::string(d) : n;
  std::free(d);
  return out;
}

struct RawKernel {
  uint32_t name = 0;  // index into State::names
  uint64_t start = 0, end = 0, queued = 0, submitted = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  int32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint16_t registers = 0;
  int32_t static_smem = 0, dynamic_smem = 0;
};

struct DeviceInfo {
  std::string name, arch;
  int sm_count = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// State: everything the callbacks touch, guarded by g_mu
// ---------------------------------------------------------------------------------------------

struct Session::State {
  Options opt;
  bool active = false;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::vector<std::string> warnings;
  std::vector<CUpti_ActivityKind> enabled;
  bool latency = false;
  bool traced = false;  // started successfully at least once

  std::size_t outstanding = 0;  // buffers handed to CUPTI and not yet returned
  uint64_t dropped = 0;
  uint64_t refused_buffers = 0;
  uint64_t bad_buffers = 0;

  std::vector<std::string> names;
  std::unordered_map<const char*, uint32_t> name_index;
  std::vector<RawKernel> kernels;
  std::vector<model::Mark> marks;
  std::map<std::pair<uint32_t, uint32_t>, int> stream_priority;  // (context, stream)
  std::map<uint32_t, uint32_t> context_device;
  std::map<uint32_t, uint32_t> null_stream;  // context -> stream id
  struct Label {
    uint32_t device, context, stream;
    std::optional<int> priority;
    std::string label;
  };
  std::vector<Label> labels;
  std::map<int, int> rank_of_device;
  std::map<int, DeviceInfo> devices;

  uint32_t intern(const char* n) {
    if (!n) n = "?";
    auto it = name_index.find(n);
    if (it != name_index.end() && names[it->second] == n) return it->second;
    const auto idx = static_cast<uint32_t>(names.size());
    names.emplace_back(n);
    name_index[n] = idx;
    return idx;
  }
  void warn(const std::string& w) {
    for (const auto& x : warnings)
      if (x == w) return;
    warnings.push_back(w);
    if (opt.print_warnings) std::fprintf(stderr, "cco trace: warning: %s\n", w.c_str());
  }
};

namespace {

std::mutex g_mu;        // guards g_active and every State reachable from it
std::mutex g_start_mu;  // serializes start/stop (never taken by the callbacks)
Session::State* g_active = nullptr;

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
      s.kernels.push_back(r);
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
    default:
      break;
  }
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  {
    std::lock_guard lk(g_mu);
    if (auto* s = g_active) {
      if (s->outstanding > 0) --s->outstanding;
      CUpti_Activity* rec = nullptr;
      while (buffer && valid > 0) {
        const CUptiResult r = g_cupti.GetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
        if (r != CUPTI_SUCCESS) {
          ++s->bad_buffers;
          break;
        }
        read_record(*s, rec);
      }
      size_t dropped = 0;
      if (g_cupti.GetNumDropped(ctx, stream, &dropped) == CUPTI_SUCCESS) s->dropped += dropped;
    }
  }
  std::free(buffer);
}

DeviceInfo query_device(int ordinal) {
  DeviceInfo d;
  load_driver();
  if (!g_driver.ok) return d;
  CUdevice dev = 0;
  if (g_driver.DeviceGet(&dev, ordinal) != CUDA_SUCCESS) return d;
  char name[256] = {};
  if (g_driver.DeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) d.name = name;
  int major = 0, minor = 0, sms = 0;
  g_driver.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  g_driver.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  g_driver.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (major > 0) d.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  d.sm_count = sms;
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------------

std::string cupti_library() {
  std::lock_guard lk(g_start_mu);
  if (!g_cupti.tried) return "";
  return g_cupti.ok ? g_cupti.path : g_cupti.error;
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
    if (!g_cupti.ok) {
      std::lock_guard lk(g_mu);
      s_->warn("tracing disabled: " + g_cupti.error);
      return false;
    }
    // Claim CUPTI: fails when a profiler (Nsight Systems / Compute, cuda-gdb, ...) already has it.
    CUptiResult r;
    char other[128] = {};
    if (g_cupti.Subscribe_v2) {
      CUpti_SubscriberParams p{};
      p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
      p.subscriberName = "ccoverlap trace";
      p.oldSubscriberName = other;
      p.oldSubscriberSize = sizeof other;
      r = g_cupti.Subscribe_v2(&s_->subscriber, no_callback, nullptr, &p);
    } else {
      r = g_cupti.Subscribe(&s_->subscriber, no_callback, nullptr);
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
      for (auto k : s_->enabled) g_cupti.Disable(k);
      s_->enabled.clear();
      g_cupti.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      g_cupti.Unsubscribe(s_->subscriber);
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
      if ((r = g_cupti.RegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        return fail("cuptiActivityRegisterCallbacks", r);
      registered = true;
    }
    if (s_->opt.launch_timestamps) {
      if (g_cupti.EnableLatency && g_cupti.EnableLatency(1) == CUPTI_SUCCESS) {
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
      r = g_cupti.EnableAndDump ? g_cupti.EnableAndDump(kind) : g_cupti.Enable(kind);
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
    if ((r = g_cupti.Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
      return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    s_->enabled.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
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
    for (auto k : s_->enabled) g_cupti.Disable(k);
    s_->enabled.clear();
    // Delivers every buffer through buffer_completed (on this thread); g_mu must not be held.
    g_cupti.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    // Launch timestamps stay on: CUPTI asks that the setting not change within a process.
    size_t dropped = 0;
    const bool got = g_cupti.GetNumDropped(nullptr, 0, &dropped) == CUPTI_SUCCESS;
    g_cupti.Unsubscribe(s_->subscriber);
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
    if (!g_driver.ok || g_driver.StreamGetCtx(stream, &ctx) != CUDA_SUCCESS) return;
    if (g_cupti.GetStreamIdEx(ctx, stream, 0, &id) != CUPTI_SUCCESS) return;
    if (g_cupti.GetContextId(ctx, &ctx_id) != CUPTI_SUCCESS) return;
    if (g_cupti.GetDeviceId(ctx, &dev) != CUPTI_SUCCESS) return;
    int prio = 0;
    if (g_driver.StreamGetPriority(stream, &prio) == CUDA_SUCCESS) l.priority = prio;
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
    std::lock_guard lk(g_mu);
    s_->rank_of_device[device] = rank;
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

void Session::clear() noexcept {
  bool active = false;
  {
    std::lock_guard lk(g_mu);
    active = s_->active;
  }
  if (active) g_cupti.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // g_mu must not be held
  std::lock_guard lk(g_mu);
  s_->kernels.clear();
  s_->marks.clear();
}

void Session::mark(const std::string& name, int rank) noexcept {
  try {
    {
      std::lock_guard lk(g_mu);
      if (!s_->active || !g_cupti.GetTimestamp) return;
    }
    uint64_t ts = 0;
    if (g_cupti.GetTimestamp(&ts) != CUPTI_SUCCESS) return;
    std::lock_guard lk(g_mu);
    s_->marks.push_back({static_cast<int64_t>(ts), rank, name});
  } catch (...) {
  }
}

model::Trace Session::trace(int rank) const {
  std::lock_guard lk(g_mu);
  const State& s = *s_;
  auto rank_of = [&](uint32_t device) {
    auto it = s.rank_of_device.find(static_cast<int>(device));
    return it != s.rank_of_device.end() ? it->second : static_cast<int>(device);
  };
  auto priority_of = [&](uint32_t ctx, uint32_t stream) -> std::optional<int> {
    if (auto it = s.stream_priority.find({ctx, stream}); it != s.stream_priority.end())
      return it->second;
    if (auto it = s.null_stream.find(ctx); it != s.null_stream.end() && it->second == stream)
      return 0;  // the NULL stream has the default priority
    return std::nullopt;
  };
  model::Trace t;
  std::vector<std::string> demangled(s.names.size());
  for (std::size_t i = 0; i < s.names.size(); ++i) demangled[i] = demangle(s.names[i]);
  std::set<int> devs;
  for (const auto& r : s.kernels) {
    const int rk = rank_of(r.device);
    if (rank >= 0 && rk != rank) continue;
    model::KernelEvent k;
    k.name = demangled[r.name];
    k.category = model::classify_kernel(s.names[r.name]);
    k.rank = rk;
    k.device = static_cast<int>(r.device);
    k.stream = r.stream;
    k.priority = priority_of(r.context, r.stream);
    k.start_ns = static_cast<int64_t>(r.start);
    k.end_ns = static_cast<int64_t>(std::max(r.end, r.start));
    k.queued_ns = static_cast<int64_t>(r.queued);
    k.submitted_ns = static_cast<int64_t>(r.submitted);
    k.grid = {r.grid[0], r.grid[1], r.grid[2]};
    k.block = {r.block[0], r.block[1], r.block[2]};
    k.registers = r.registers;
    k.static_smem = r.static_smem;
    k.dynamic_smem = r.dynamic_smem;
    k.correlation_id = r.correlation;
    t.kernels.push_back(std::move(k));
    devs.insert(static_cast<int>(r.device));
  }
  for (const auto& m : s.marks)
    if (rank < 0 || m.rank < 0 || m.rank == rank) t.marks.push_back(m);
  std::set<std::tuple<int, int, int64_t>> labelled;
  for (const auto& l : s.labels) {
    const int rk = rank_of(l.device);
    if (rank >= 0 && rk != rank) continue;
    model::StreamInfo si;
    si.rank = rk;
    si.device = static_cast<int>(l.device);
    si.stream = l.stream;
    si.priority = l.priority ? l.priority : priority_of(l.context, l.stream);
    si.label = l.label;
    if (labelled.insert({si.rank, si.device, si.stream}).second) t.streams.push_back(si);
    devs.insert(si.device);
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (int d : devs) {
    model::RankInfo ri;
    ri.rank = rank_of(static_cast<uint32_t>(d));
    ri.device = d;
    if (auto it = s.devices.find(d); it != s.devices.end()) {
      ri.device_name = it->second.name;
      ri.arch = it->second.arch;
      ri.sm_count = it->second.sm_count;
    }
    ri.host = host;
    ri.pid = getpid();
    bool dup = false;
    for (const auto& o : t.ranks) dup = dup || o.rank == ri.rank;
    if (!dup) t.ranks.push_back(ri);
  }
  t.dropped_records = s.dropped;
  t.notes = s.warnings;
  if (s.traced)
    t.notes.push_back("traced with CUPTI API " + std::to_string(g_cupti.version) + " from " +
                      g_cupti.path +
                      (s.latency ? "; launch timestamps on" : "; launch timestamps off"));
  t.source = "cupti";
  t.normalize();
  model::fill_blocks_per_sm(t);
  return t;
}

void Session::write(const std::string& path, int rank) const {
  model::write_trace_file(trace(rank), path);
}

}  // namespace cco::trace
