#include "preload/driver_api.hpp"

#include <type_traits>

namespace cco::preload {

bool load_driver_api(GetProcAddressV2Fn real_get_proc, DriverApi* api) {
  *api = DriverApi{};
  if (!real_get_proc) return false;
  // The ABIs of CUDA 12.4 (the signatures declared in DriverApi): a newer version could hand
  // out a _v2 with more arguments (cuStreamGetCtx, cuCtxGetDevice). Legacy default-stream
  // variants: stream 0 from NCCL's callers means the legacy stream.
  constexpr int kVersion = 12040;
  auto get = [&](const char* name, auto** out) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (real_get_proc(name, &p, kVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) == CUDA_SUCCESS &&
        st == CU_GET_PROC_ADDRESS_SUCCESS && p)
      *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(p);
  };
  get("cuCtxGetDevice", &api->ctxGetDevice);
  get("cuDeviceGetAttribute", &api->deviceGetAttribute);
  get("cuFuncGetName", &api->funcGetName);
  get("cuFuncGetAttribute", &api->funcGetAttribute);
  get("cuFuncSetAttribute", &api->funcSetAttribute);
  get("cuKernelGetName", &api->kernelGetName);
  get("cuKernelGetAttribute", &api->kernelGetAttribute);
  get("cuKernelSetAttribute", &api->kernelSetAttribute);
  get("cuOccupancyMaxActiveBlocksPerMultiprocessor",
      &api->occupancyMaxActiveBlocksPerMultiprocessor);
  get("cuCtxGetStreamPriorityRange", &api->ctxGetStreamPriorityRange);
  get("cuStreamGetPriority", &api->streamGetPriority);
  get("cuStreamGetCtx", &api->streamGetCtx);
  get("cuCtxPushCurrent", &api->ctxPushCurrent);
  get("cuCtxPopCurrent", &api->ctxPopCurrent);
  get("cuStreamCreateWithPriority", &api->streamCreateWithPriority);
  get("cuEventCreate", &api->eventCreate);
  get("cuEventRecord", &api->eventRecord);
  get("cuStreamWaitEvent", &api->streamWaitEvent);
  get("cuStreamIsCapturing", &api->streamIsCapturing);
  get("cuEventQuery", &api->eventQuery);
  get("cuEventElapsedTime", &api->eventElapsedTime);
  get("cuEventSynchronize", &api->eventSynchronize);
  get("cuDeviceGetName", &api->deviceGetName);
  get("cuDriverGetVersion", &api->driverGetVersion);
  get("cuMemcpyDtoDAsync", &api->memcpyDtoDAsync);
  get("cuMemsetD8Async", &api->memsetD8Async);
  get("cuMemAlloc", &api->memAlloc);
  return api->ctxGetDevice && api->deviceGetAttribute && (api->funcGetName || api->kernelGetName) &&
         (api->funcGetAttribute || api->kernelGetAttribute);
}

}  // namespace cco::preload
