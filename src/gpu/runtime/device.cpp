#include "runtime/device.hpp"

#include <cublasLt.h>
#include <nccl.h>

#include <dlfcn.h>

#include <utility>

#include "model/types.hpp"
#include "runtime/check.hpp"

namespace cco::rt {

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    // Without libcuda the runtime reports "driver version is insufficient", which misleads.
    void* drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (why) *why = drv ? cudaGetErrorString(e) : "no CUDA driver installed: libcuda.so.1 not found";
    if (drv) dlclose(drv);
    cudaGetLastError();  // clear the sticky-free error so later calls are not confused
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device found";
  return n;
}

model::DeviceLimits query_limits(int dev) {
  cudaDeviceProp p{};
  CCO_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  // Start from the built-in table for the architecture (carveout steps, allocation units and
  // sub-partitions are not queryable) and overwrite everything the device reports.
  model::DeviceLimits d;
  const std::string arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  for (const auto& b : model::builtin_architectures())
    if (b.arch == arch) d = b;
  if (d.arch.empty()) {
    d = model::find_architecture(p.major >= 9 ? "sm_90" : "sm_80");  // closest known rules
    d.smem_carveouts.clear();
  }
  d.name = p.name;
  d.arch = arch;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.warp_size = p.warpSize;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.regs_per_block = p.regsPerBlock;
  d.smem_per_sm = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  d.smem_per_block_default = static_cast<int64_t>(p.sharedMemPerBlock);
  d.smem_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  d.smem_reserved_per_block = static_cast<int64_t>(p.reservedSharedMemPerBlock);
  if (d.smem_carveouts.empty() || d.smem_carveouts.back() != d.smem_per_sm)
    d.smem_carveouts.push_back(d.smem_per_sm);
  // Peak DRAM bandwidth: the memory clock (kHz; not among CUDA 13's properties) is the data
  // rate's half (double data rate).
  int mem_khz = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
      mem_khz > 0 && p.memoryBusWidth > 0)
    d.mem_bandwidth = 2.0 * mem_khz * 1e3 * p.memoryBusWidth / 8.0;
  if (p.l2CacheSize > 0) d.l2_bytes = p.l2CacheSize;
  d.from_device = true;
  return d;
}

Versions versions() {
  Versions v;
  int x = 0;
  if (cudaDriverGetVersion(&x) == cudaSuccess) v.driver = model::cuda_version_from_code(x);
  if (cudaRuntimeGetVersion(&x) == cudaSuccess) v.runtime = model::cuda_version_from_code(x);
  if (ncclGetVersion(&x) == ncclSuccess) v.nccl = model::version_from_code(x);
  v.cublas = model::version_from_code(static_cast<long long>(cublasLtGetVersion()));
  return v;
}

DeviceInfo device_info(int dev) {
  DeviceInfo i;
  i.index = dev;
  cudaDeviceProp p{};
  CCO_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  i.name = p.name;
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) == cudaSuccess) i.pci_bus_id = bus;
  i.total_mem = static_cast<int64_t>(p.totalGlobalMem);
  int cur = 0;
  CCO_CUDA_CHECK(cudaGetDevice(&cur));
  CCO_CUDA_CHECK(cudaSetDevice(dev));
  CCO_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&i.least_priority, &i.greatest_priority));
  CCO_CUDA_CHECK(cudaSetDevice(cur));
  i.limits = query_limits(dev);
  return i;
}

Stream::Stream(Priority p) {
  int least = 0, greatest = 0;
  CCO_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  prio_ = p == Priority::High ? greatest : p == Priority::Low ? least : 0;
  CCO_CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, prio_));
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}
Stream::Stream(Stream&& o) noexcept
    : s_(std::exchange(o.s_, nullptr)), prio_(o.prio_) {}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_) cudaStreamDestroy(s_);
    s_ = std::exchange(o.s_, nullptr);
    prio_ = o.prio_;
  }
  return *this;
}

Event::Event() { CCO_CUDA_CHECK(cudaEventCreate(&e_)); }
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}
Event::Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_) cudaEventDestroy(e_);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}
void Event::record(cudaStream_t s) { CCO_CUDA_CHECK(cudaEventRecord(e_, s)); }
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  CCO_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms;
}
void Event::synchronize() const { CCO_CUDA_CHECK(cudaEventSynchronize(e_)); }

model::Footprint footprint_of(const void* kernel, int threads, int64_t dynamic_smem) {
  cudaFuncAttributes a{};
  CCO_CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  model::Footprint f;
  f.threads = threads;
  f.regs = a.numRegs;
  f.static_smem = static_cast<int64_t>(a.sharedSizeBytes);
  f.dynamic_smem = dynamic_smem;
  return f;
}

void allow_dynamic_smem(const void* kernel, int64_t dynamic_smem) {
  cudaFuncAttributes a{};
  CCO_CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  if (dynamic_smem > a.maxDynamicSharedSizeBytes)
    CCO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(dynamic_smem)));
}

int driver_occupancy(const void* kernel, int threads, int64_t dynamic_smem) {
  int blocks = 0;
  CCO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads,
                                                               static_cast<size_t>(dynamic_smem)));
  return blocks;
}

}  // namespace cco::rt
