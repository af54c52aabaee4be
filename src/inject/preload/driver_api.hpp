// The CUDA driver calls the preload library makes, as a table of function pointers.
//
// The library never links libcuda: the table is filled through the driver's own cuGetProcAddress
// (load_driver_api), and tests fill it with fakes, so every decision and every failure path is
// exercised on machines without a GPU. A null entry is a driver without that call; the hook
// treats it like a call that failed (the launch is left unchanged).
#pragma once

#include <cuda.h>

namespace cco::preload {

/// The driver's cuGetProcAddress_v2 (CUDA 12.0+ ABI).
using GetProcAddressV2Fn = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult* status);
/// The driver's cuGetProcAddress (CUDA 11.3 ABI, no status argument).
using GetProcAddressV1Fn = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                        cuuint64_t flags);
using LaunchKernelFn = CUresult (*)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                    CUstream stream, void** params, void** extra);
using LaunchKernelExFn = CUresult (*)(const CUlaunchConfig* config, CUfunction f, void** params,
                                      void** extra);

struct DriverApi {
  // Kernel footprints and names (shaping). A handle may be a CUfunction or a CUkernel.
  CUresult (*ctxGetDevice)(CUdevice* dev) = nullptr;
  CUresult (*deviceGetAttribute)(int* value, CUdevice_attribute attr, CUdevice dev) = nullptr;
  CUresult (*funcGetName)(const char** name, CUfunction f) = nullptr;
  CUresult (*funcGetAttribute)(int* value, CUfunction_attribute attr, CUfunction f) = nullptr;
  CUresult (*funcSetAttribute)(CUfunction f, CUfunction_attribute attr, int value) = nullptr;
  CUresult (*kernelGetName)(const char** name, CUkernel k) = nullptr;
  CUresult (*kernelGetAttribute)(int* value, CUfunction_attribute attr, CUkernel k,
                                 CUdevice dev) = nullptr;
  CUresult (*kernelSetAttribute)(CUfunction_attribute attr, int value, CUkernel k,
                                 CUdevice dev) = nullptr;
  CUresult (*occupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, CUfunction f, int threads,
                                                        size_t dynamic_smem) = nullptr;
  // Priority.
  CUresult (*ctxGetStreamPriorityRange)(int* least, int* greatest) = nullptr;
  CUresult (*streamGetPriority)(CUstream s, int* priority) = nullptr;
  // Companion streams (priority method "stream").
  CUresult (*streamGetCtx)(CUstream s, CUcontext* ctx) = nullptr;
  CUresult (*ctxPushCurrent)(CUcontext ctx) = nullptr;
  CUresult (*ctxPopCurrent)(CUcontext* ctx) = nullptr;
  CUresult (*streamCreateWithPriority)(CUstream* s, unsigned int flags, int priority) = nullptr;
  CUresult (*eventCreate)(CUevent* e, unsigned int flags) = nullptr;
  CUresult (*eventRecord)(CUevent e, CUstream s) = nullptr;
  CUresult (*streamWaitEvent)(CUstream s, CUevent e, unsigned int flags) = nullptr;
  CUresult (*streamIsCapturing)(CUstream s, CUstreamCaptureStatus* status) = nullptr;
  // The communication window (window.hpp).
  CUresult (*eventQuery)(CUevent e) = nullptr;
  // Step timing (step_clock.hpp).
  CUresult (*eventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;
  // The online search (cco tune -- CMD): the decider drains a stage, and names its device.
  CUresult (*eventSynchronize)(CUevent e) = nullptr;
  CUresult (*deviceGetName)(char* name, int len, CUdevice dev) = nullptr;
  CUresult (*driverGetVersion)(int* version) = nullptr;
  // The measuring configuration nocomm (steps/nocomm.hpp): a skipped collective's output filled
  // on its stream, and the one-element buffer of the all-reduce that keeps ranks in step.
  CUresult (*memcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) = nullptr;
  CUresult (*memsetD8Async)(CUdeviceptr dst, unsigned char value, size_t n, CUstream s) = nullptr;
  CUresult (*memAlloc)(CUdeviceptr* p, size_t bytes) = nullptr;
};

/// Fills `api` through the driver's real cuGetProcAddress_v2 (legacy-stream variants). Entries
/// the driver lacks stay null. Returns false when the shaping essentials (ctxGetDevice,
/// deviceGetAttribute, and a name and attribute query) are missing.
bool load_driver_api(GetProcAddressV2Fn real_get_proc, DriverApi* api);

}  // namespace cco::preload
