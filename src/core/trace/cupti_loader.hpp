// libcupti and libcuda, loaded with dlopen once per process for the CUPTI session (session.cpp):
// no binary depends on either to start. Internal to cco.trace.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <string>

namespace cco::trace::detail {

struct CuptiApi {
  bool tried = false;
  bool ok = false;
  void* handle = nullptr;
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
  decltype(&cuptiGetTimestamp) GetTimestamp = nullptr;        // optional (marks)
  decltype(&cuptiSetThreadIdType) SetThreadIdType = nullptr;  // optional (NVTX thread ids)
  // Optional (library calls: the kernels a cuBLAS GEMM launched carry its shape).
  decltype(&cuptiEnableCallback) EnableCallback = nullptr;
  // Thread ids of CUPTI's records are gettid() (set once per process), else pthread_self().
  bool system_thread_ids = false;
  bool thread_id_type_tried = false;
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

/// The tables, made at first use and never destroyed (see cupti_loader.cpp for why).
CuptiApi& cupti_api();
DriverApi& driver_api();
/// Loads libcupti once per process: `explicit_path`, else $CCO_CUPTI_LIB, else the usual
/// places; cupti_api().ok says whether it worked and .error why not. Called under the start mutex.
void load_cupti(const std::string& explicit_path);
/// Loads libcuda once (driver_api().ok).
void load_driver();
/// CUPTI's name for `r`, with its number.
std::string result_string(CUptiResult r);

}  // namespace cco::trace::detail
