// A fake libcupti.so.13 for GPU-free tests of CCO_TRACE in libcco_preload.so: the functions
// cco::trace::Session loads, and at the first cuptiActivityFlushAll one buffer of synthetic
// records (per device: a stream record of priority -5, a GEMM-named kernel on stream 7 and an
// NCCL kernel on stream 13 overlapping it). Chosen with environment variables:
//   FAKE_CUPTI=busy          cuptiSubscribe_v2 answers MULTIPLE_SUBSCRIBERS ("Nsight Systems")
//   FAKE_CUPTI=old           API version 120000 (refused: too old)
//   FAKE_CUPTI_DEVICES=0,1   devices with kernels (default 0)
//   FAKE_CUPTI_DROPPED=N     records reported dropped at the end
// Like the real CUPTI, cuptiSubscribe reaches the driver through dlsym("cuGetProcAddress_v2")
// and calls it: under libcco_preload.so that comes back into the library's dlsym and
// cuGetProcAddress wrappers while its trace session is starting (must not recurse or hang).
#include <cupti.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
bool g_delivered = false;
bool g_in_complete = false;
bool g_dropped_reported = false;
int g_subscriber = 0;

constexpr std::size_t kSlot = (sizeof(CUpti_ActivityKernel10) + 7) / 8 * 8;
static_assert(sizeof(CUpti_ActivityStream) <= kSlot);

std::string mode() {
  const char* m = std::getenv("FAKE_CUPTI");
  return m ? m : "";
}

std::vector<uint32_t> devices() {
  std::vector<uint32_t> d;
  const char* v = std::getenv("FAKE_CUPTI_DEVICES");
  std::string s = v && *v ? v : "0";
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    d.push_back(static_cast<uint32_t>(std::stoul(s.substr(at, comma - at))));
    at = comma + 1;
  }
  return d;
}

void kernel(uint8_t* slot, const char* name, uint32_t dev, uint32_t stream, uint64_t start,
            uint64_t end, uint32_t corr, int32_t grid, int32_t block, uint16_t regs) {
  auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(slot);
  std::memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->deviceId = dev;
  k->contextId = dev + 1;
  k->streamId = stream;
  k->start = start;
  k->end = end;
  k->queued = start - 2000;
  k->submitted = start - 1000;
  k->correlationId = corr;
  k->gridX = grid;
  k->gridY = k->gridZ = 1;
  k->blockX = block;
  k->blockY = k->blockZ = 1;
  k->registersPerThread = regs;
}

void deliver() {
  if (g_delivered || !g_request || !g_complete) return;
  g_delivered = true;
  uint8_t* buf = nullptr;
  size_t size = 0, max_records = 0;
  g_request(&buf, &size, &max_records);
  if (!buf) return;
  std::size_t used = 0;
  uint32_t corr = 1;
  auto next = [&]() -> uint8_t* {
    if (used + kSlot > size) return nullptr;
    uint8_t* p = buf + used;
    used += kSlot;
    return p;
  };
  for (uint32_t d : devices()) {
    const uint64_t t0 = 1'000'000'000ull + d * 100;
    if (uint8_t* p = next()) {
      auto* s = reinterpret_cast<CUpti_ActivityStream*>(p);
      std::memset(s, 0, sizeof *s);
      s->kind = CUPTI_ACTIVITY_KIND_STREAM;
      s->contextId = d + 1;
      s->streamId = 13;
      s->priority = static_cast<uint32_t>(-5);
    }
    if (uint8_t* p = next())
      kernel(p, "_Z9my_gemm_kPfS_i", d, 7, t0, t0 + 50'000, corr++, 10000, 256, 32);
    if (uint8_t* p = next())
      kernel(p, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", d, 13, t0 + 10'000, t0 + 70'000, corr++,
             24, 640, 96);
  }
  g_in_complete = true;
  g_complete(nullptr, 0, buf, size, used);
  g_in_complete = false;
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  *version = mode() == "old" ? 120000 : 130000;
  if (const char* v = std::getenv("FAKE_CUPTI_VERSION"); v && *v && mode() != "old")
    *version = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      break;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*) {
  if (mode() == "busy") return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    using Gpa = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    if (auto gpa = reinterpret_cast<Gpa>(dlsym(cuda, "cuGetProcAddress_v2"))) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult st{};
      if (gpa("cuLaunchKernel", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||
          !fn)
        return CUPTI_ERROR_UNKNOWN;
    }
    dlclose(cuda);
  }
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                       CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* params) {
  if (mode() == "busy") {
    if (params && params->oldSubscriberName && params->oldSubscriberSize > 0)
      std::strncpy(params->oldSubscriberName, "Nsight Systems", params->oldSubscriberSize - 1);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  return cuptiSubscribe(subscriber, callback, userdata);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind) {
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind) {
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind) {
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t) {
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  deliver();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                CUpti_Activity** record) {
  uint8_t* next = *record ? reinterpret_cast<uint8_t*>(*record) + kSlot : buffer;
  if (next + kSlot > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  // Reported once, at the end (stop() asks after its flush, outside the buffer callback).
  if (g_delivered && !g_in_complete && !g_dropped_reported) {
    g_dropped_reported = true;
    if (const char* v = std::getenv("FAKE_CUPTI_DROPPED")) *dropped = std::strtoul(v, nullptr, 10);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext, CUstream, uint8_t, uint32_t* id) {
  *id = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetContextId(CUcontext, uint32_t* id) {
  *id = 1;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext, uint32_t* id) {
  *id = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* ts) {
  *ts = 1'000'000'000ull;
  return CUPTI_SUCCESS;
}

}  // extern "C"
