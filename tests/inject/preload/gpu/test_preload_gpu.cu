// GPU tests for libcco_preload.so. Run plainly they check results only (and print what they
// measure); CTest also runs them under the library (cco.test.gpu_preload_shaped, _priority,
// _window), as do `scripts/gpu.sh preload` and `scripts/gpu.sh window`, where these variables
// turn on the checks of what the library must change:
//   CCO_TEST_EXPECT_BLOCKS=K    the test kernel is held at <= K resident blocks per SM, with
//                               dynamic shared memory > 0, in direct launches and graph replays
//   CCO_TEST_EXPECT_PRIORITY=1  a kernel named like NCCL's (and a real NCCL all-reduce on 2 GPUs)
//                               overtakes the queued blocks of a saturating kernel on a stream of
//                               the same priority
// Every line of measurement starts with "cco-probe:".
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/check.hpp"

namespace {

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned dynamic_smem_size() {
  unsigned r;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

// y = 3x + 1. Block 0 reports the dynamic shared memory it was launched with; every block counts
// itself resident on its SM while it runs (peak[] keeps the most seen at once).
__global__ void __launch_bounds__(256) work_kernel(const int* x, int* y, int n, unsigned* meta,
                                                   int* live, int* peak, unsigned spin_ns) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) meta[0] = dynamic_smem_size();
    const unsigned sm = smid();
    const int now = atomicAdd(&live[sm], 1) + 1;
    atomicMax(&peak[sm], now);
  }
  __syncthreads();
  if (spin_ns) {
    const unsigned long long t0 = gtime();
    while (gtime() - t0 < spin_ns) {
    }
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = 3 * x[i] + 1;
  __syncthreads();
  if (threadIdx.x == 0) atomicSub(&live[smid()], 1);
}


// Each block spins spin_ns; times[0] = start of block 0, times[1] = the latest block end.
__global__ void __launch_bounds__(1024, 2)
    filler_kernel(unsigned long long* times, unsigned spin_ns) {
  const unsigned long long t0 = gtime();
  if (blockIdx.x == 0 && threadIdx.x == 0) times[0] = t0;
  while (gtime() - t0 < spin_ns) {
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&times[1], gtime());
}

}  // namespace

// Named like NCCL's kernels (the library's "*nccl*" pattern): never padded, prioritised.
extern "C" __global__ void ncclDevKernel_ccoProbe(unsigned long long* t) {
  if (threadIdx.x == 0) t[0] = gtime();
}

// An "NCCL" kernel that holds one SM for spin_ns: the communication window stays open meanwhile.
extern "C" __global__ void ncclDevKernel_ccoHold(unsigned long long* t, unsigned spin_ns) {
  const unsigned long long t0 = gtime();
  while (gtime() - t0 < spin_ns) {
  }
  if (threadIdx.x == 0) t[0] = gtime();
}

namespace {

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

int sm_count(int dev = 0) {
  int n = 0;
  CCO_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

template <class T>
struct Buf {
  T* p = nullptr;
  std::size_t n = 0;
  explicit Buf(std::size_t count) : n(count) {
    CCO_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    CCO_CUDA_CHECK(cudaMemset(p, 0, count * sizeof(T)));
  }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  std::vector<T> host() const {
    std::vector<T> h(n);
    CCO_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

struct Probe {
  Buf<unsigned> meta{1};
  Buf<int> live{1024};
  Buf<int> peak{1024};
  int max_peak() const {
    const auto h = peak.host();
    return *std::max_element(h.begin(), h.end());
  }
  void reset() {
    CCO_CUDA_CHECK(cudaMemset(meta.p, 0xff, sizeof(unsigned)));
    CCO_CUDA_CHECK(cudaMemset(peak.p, 0, 1024 * sizeof(int)));
  }
};

void fill_input(Buf<int>& x, int seed) {
  std::vector<int> h(x.n);
  for (std::size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<int>((i * 2654435761u + seed) % 100003);
  CCO_CUDA_CHECK(cudaMemcpy(x.p, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
}

bool check_output(const Buf<int>& x, const Buf<int>& y) {
  const auto hx = x.host(), hy = y.host();
  for (std::size_t i = 0; i < hx.size(); ++i)
    if (hy[i] != 3 * hx[i] + 1) return false;
  return true;
}

void expect_shaped(const char* what, unsigned dyn, int peak) {
  const int k = env_int("CCO_TEST_EXPECT_BLOCKS", 0);
  if (k <= 0) return;
  EXPECT_GT(dyn, 0u) << what << ": the launch was not given padding";
  EXPECT_LE(peak, k) << what << ": more blocks per SM than the target";
}

TEST(PreloadGpu, DirectLaunchResultsAndResidency) {
  const int n = 1 << 22;
  Buf<int> x(n), y(n);
  fill_input(x, 1);
  Probe pr;
  pr.reset();
  const int grid = sm_count() * 8 * 4;  // four waves at the kernel's own 8 blocks per SM
  work_kernel<<<grid, 256>>>(x.p, y.p, n, pr.meta.p, pr.live.p, pr.peak.p, 20000);
  CCO_CUDA_CHECK(cudaGetLastError());
  CCO_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(check_output(x, y));
  const unsigned dyn = pr.meta.host()[0];
  const int peak = pr.max_peak();
  std::printf("cco-probe: direct launch: dynamic_smem=%u peak_blocks_per_sm=%d results=%s\n", dyn,
              peak, check_output(x, y) ? "ok" : "WRONG");
  expect_shaped("direct launch", dyn, peak);
}

// Under an @overlap policy (shape+priority:model@overlap), a compute launch is shaped while NCCL work
// is pending on its device and goes as asked otherwise. It needs the library: CTest runs it as
// cco.test.gpu_preload_window under `cco run` with CCO_TEST_REQUIRE_WINDOW=1, where a missing
// library or policy fails; in the plain binary it skips, saying so.
TEST(PreloadGpu, CommunicationWindow) {
  const char* pol = std::getenv("CCO_POLICY");
  const char* pre = std::getenv("LD_PRELOAD");
  const bool overlap = pol && std::strstr(pol, "@overlap") && pre && std::strstr(pre, "cco_preload");
  if (!overlap) {
    if (env_int("CCO_TEST_REQUIRE_WINDOW", 0))
      FAIL() << "not under libcco_preload.so with an @overlap policy (CCO_POLICY="
             << (pol ? pol : "") << ")";
    GTEST_SKIP() << "needs cco run with an @overlap policy: cco.test.gpu_preload_window runs it";
  }
  const int n = 1 << 22;
  Buf<int> x(n), y(n);
  fill_input(x, 3);
  Buf<unsigned long long> t(1);
  Probe pr;
  cudaStream_t comm, comp;
  CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  const int grid = sm_count() * 8 * 4;
  // 1. No communication: as asked.
  pr.reset();
  work_kernel<<<grid, 256, 0, comp>>>(x.p, y.p, n, pr.meta.p, pr.live.p, pr.peak.p, 0);
  CCO_CUDA_CHECK(cudaStreamSynchronize(comp));
  const unsigned before = pr.meta.host()[0];
  const bool ok1 = check_output(x, y);
  // 2. An NCCL-named kernel holds one SM for 50 ms: compute launched meanwhile is shaped.
  ncclDevKernel_ccoHold<<<1, 32, 0, comm>>>(t.p, 50000000u);
  CCO_CUDA_CHECK(cudaGetLastError());
  pr.reset();
  CCO_CUDA_CHECK(cudaMemsetAsync(y.p, 0, n * sizeof(int), comp));
  work_kernel<<<grid, 256, 0, comp>>>(x.p, y.p, n, pr.meta.p, pr.live.p, pr.peak.p, 0);
  CCO_CUDA_CHECK(cudaStreamSynchronize(comp));
  const unsigned during = pr.meta.host()[0];
  const bool ok2 = check_output(x, y);
  // 3. It finished: as asked again.
  CCO_CUDA_CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  pr.reset();
  CCO_CUDA_CHECK(cudaMemsetAsync(y.p, 0, n * sizeof(int), comp));
  work_kernel<<<grid, 256, 0, comp>>>(x.p, y.p, n, pr.meta.p, pr.live.p, pr.peak.p, 0);
  CCO_CUDA_CHECK(cudaStreamSynchronize(comp));
  const unsigned after = pr.meta.host()[0];
  const bool ok3 = check_output(x, y);
  std::printf(
      "cco-probe: window: dynamic_smem before=%u during=%u after=%u results=%s (policy %s)\n",
      before, during, after, ok1 && ok2 && ok3 ? "ok" : "WRONG", pol);
  EXPECT_TRUE(ok1 && ok2 && ok3);
  EXPECT_EQ(before, 0u) << "shaped with no communication pending";
  EXPECT_GT(during, 0u) << "not shaped while an NCCL kernel ran";
  EXPECT_EQ(after, 0u) << "still shaped after the NCCL kernel finished";
  cudaStreamDestroy(comm);
  cudaStreamDestroy(comp);
}

TEST(PreloadGpu, GraphCaptureAndReplay) {
  const int n = 1 << 20;
  Buf<int> x(n), y(n), z(n);
  fill_input(x, 7);
  Probe pr;
  cudaStream_t s;
  CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int grid = sm_count() * 8 * 2;
  cudaGraph_t g;
  CCO_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  work_kernel<<<grid, 256, 0, s>>>(x.p, y.p, n, pr.meta.p, pr.live.p, pr.peak.p, 10000);
  work_kernel<<<grid, 256, 0, s>>>(y.p, z.p, n, pr.meta.p, pr.live.p, pr.peak.p, 10000);
  CCO_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge;
  CCO_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  bool ok = true;
  for (int r = 0; r < 5; ++r) {
    pr.reset();
    CCO_CUDA_CHECK(cudaMemsetAsync(y.p, 0, n * sizeof(int), s));
    CCO_CUDA_CHECK(cudaMemsetAsync(z.p, 0, n * sizeof(int), s));
    CCO_CUDA_CHECK(cudaGraphLaunch(ge, s));
    CCO_CUDA_CHECK(cudaStreamSynchronize(s));
    ok = ok && check_output(x, y) && check_output(y, z);
  }
  EXPECT_TRUE(ok) << "graph replays gave wrong results";
  const unsigned dyn = pr.meta.host()[0];
  const int peak = pr.max_peak();
  std::printf(
      "cco-probe: graph: 5 replays of 2 captured kernels results=%s dynamic_smem=%u "
      "peak_blocks_per_sm=%d\n",
      ok ? "ok" : "WRONG", dyn, peak);
  expect_shaped("graph replay", dyn, peak);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(PreloadGpu, ManyThreadsAndDevices) {
  int ndev = 0;
  CCO_CUDA_CHECK(cudaGetDeviceCount(&ndev));
  ndev = std::min(ndev, 2);
  std::vector<std::thread> ts;
  std::vector<int> bad(ndev * 4, 0);
  for (int t = 0; t < ndev * 4; ++t)
    ts.emplace_back([t, ndev, &bad] {
      CCO_CUDA_CHECK(cudaSetDevice(t % ndev));
      cudaStream_t s;
      CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      const int n = 1 << 18;
      Buf<int> x(n), y(n);
      Probe pr;
      fill_input(x, t);
      for (int i = 0; i < 40; ++i) {
        const int threads = 64 << (i % 3);  // 64, 128, 256: one decision per shape
        CCO_CUDA_CHECK(cudaMemsetAsync(y.p, 0, n * sizeof(int), s));
        work_kernel<<<512 + 64 * (i % 5), threads, 0, s>>>(x.p, y.p, n, pr.meta.p, pr.live.p,
                                                           pr.peak.p, 0);
        CCO_CUDA_CHECK(cudaStreamSynchronize(s));
        if (!check_output(x, y)) ++bad[t];
      }
      cudaStreamDestroy(s);
    });
  for (auto& th : ts) th.join();
  int wrong = 0;
  for (int b : bad) wrong += b;
  std::printf("cco-probe: threads: %d threads on %d GPU(s), 40 launches each, wrong=%d\n", ndev * 4,
              ndev, wrong);
  EXPECT_EQ(wrong, 0);
}

// A kernel that fills every SM's thread slots (2 x 1024 threads), then a one-block kernel on
// another stream: how long after the filler starts does it run?
double probe_start_fraction(cudaStream_t filler_stream, cudaStream_t probe_stream) {
  const int waves = 40;
  const unsigned spin_ns = 25000;
  Buf<unsigned long long> times(2), t(1);
  CCO_CUDA_CHECK(cudaDeviceSynchronize());
  filler_kernel<<<sm_count() * 2 * waves, 1024, 0, filler_stream>>>(times.p, spin_ns);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(32);
  cfg.stream = probe_stream;
  CCO_CUDA_CHECK(cudaLaunchKernelEx(&cfg, ncclDevKernel_ccoProbe, t.p));
  CCO_CUDA_CHECK(cudaDeviceSynchronize());
  const auto ft = times.host();
  const auto pt = t.host();
  return static_cast<double>(pt[0] - ft[0]) / static_cast<double>(ft[1] - ft[0]);
}

TEST(PreloadGpu, PriorityOfNcclNamedKernel) {
  int least = 0, greatest = 0;
  CCO_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t fill, same, high;
  CCO_CUDA_CHECK(cudaStreamCreateWithPriority(&fill, cudaStreamNonBlocking, least));
  CCO_CUDA_CHECK(cudaStreamCreateWithPriority(&same, cudaStreamNonBlocking, least));
  CCO_CUDA_CHECK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  probe_start_fraction(fill, same);  // warm-up
  const double f_same = probe_start_fraction(fill, same);
  const double f_high = probe_start_fraction(fill, high);
  std::printf(
      "cco-probe: priority: an ncclDevKernel_* launch on a stream of the filler's priority "
      "starts at %.2f of the filler's span; on a greatest-priority stream (reference) at "
      "%.2f\n",
      f_same, f_high);
  if (env_int("CCO_TEST_EXPECT_PRIORITY", 0)) {
    EXPECT_LT(f_high, 0.5) << "stream priority itself did not let the probe overtake";
    EXPECT_LT(f_same, 0.5) << "the library did not prioritise the NCCL-named launch";
  }
  cudaStreamDestroy(fill);
  cudaStreamDestroy(same);
  cudaStreamDestroy(high);
}

TEST(PreloadGpu, PriorityOfNcclAllReduce) {
  int ndev = 0;
  CCO_CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 2) GTEST_SKIP() << "needs 2 GPUs";
  const int devs[2] = {0, 1};
  ncclComm_t comms[2];
  // Two GPUs are here: a broken NCCL is a failure, not a skip.
  const ncclResult_t init = ncclCommInitAll(comms, 2, devs);
  ASSERT_EQ(init, ncclSuccess) << "NCCL init failed on a machine with 2 GPUs: "
                               << ncclGetErrorString(init);
  const size_t count = 1 << 20;  // 4 MB of floats
  const int waves = 20;
  const unsigned spin_ns = 50000;
  const int pad = 150 * 1024;  // one filler block per SM: an SM empties when its block ends
  struct Side {
    cudaStream_t fill, comm;
    float* buf;
    unsigned long long* times;
    cudaEvent_t e0, e1, e2;
  } side[2];
  for (int d = 0; d < 2; ++d) {
    CCO_CUDA_CHECK(cudaSetDevice(d));
    CCO_CUDA_CHECK(
        cudaFuncSetAttribute(filler_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, pad));
    CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&side[d].fill, cudaStreamNonBlocking));
    CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&side[d].comm, cudaStreamNonBlocking));
    CCO_CUDA_CHECK(cudaMalloc(&side[d].buf, count * sizeof(float)));
    CCO_CUDA_CHECK(cudaMalloc(&side[d].times, 2 * sizeof(unsigned long long)));
    CCO_CUDA_CHECK(cudaEventCreate(&side[d].e0));
    CCO_CUDA_CHECK(cudaEventCreate(&side[d].e1));
    CCO_CUDA_CHECK(cudaEventCreate(&side[d].e2));
  }
  double worst_ratio = 0;
  bool correct = true;
  for (int rep = 0; rep < 3; ++rep) {
    for (int d = 0; d < 2; ++d) {
      CCO_CUDA_CHECK(cudaSetDevice(d));
      std::vector<float> h(count, static_cast<float>(d + 1));
      CCO_CUDA_CHECK(
          cudaMemcpy(side[d].buf, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
      CCO_CUDA_CHECK(cudaMemset(side[d].times, 0, 2 * sizeof(unsigned long long)));
      CCO_CUDA_CHECK(cudaDeviceSynchronize());
    }
    for (int d = 0; d < 2; ++d) {
      CCO_CUDA_CHECK(cudaSetDevice(d));
      CCO_CUDA_CHECK(cudaEventRecord(side[d].e0, side[d].fill));
      filler_kernel<<<sm_count(d) * waves, 1024, pad, side[d].fill>>>(side[d].times, spin_ns);
      CCO_CUDA_CHECK(cudaGetLastError());
      CCO_CUDA_CHECK(cudaEventRecord(side[d].e1, side[d].fill));
    }
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int d = 0; d < 2; ++d) {
      CCO_CUDA_CHECK(cudaSetDevice(d));
      ASSERT_EQ(ncclAllReduce(side[d].buf, side[d].buf, count, ncclFloat, ncclSum, comms[d],
                              side[d].comm),
                ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int d = 0; d < 2; ++d) {
      CCO_CUDA_CHECK(cudaSetDevice(d));
      CCO_CUDA_CHECK(cudaEventRecord(side[d].e2, side[d].comm));
    }
    for (int d = 0; d < 2; ++d) {
      CCO_CUDA_CHECK(cudaSetDevice(d));
      CCO_CUDA_CHECK(cudaDeviceSynchronize());
      float t_fill = 0, t_ar = 0;
      CCO_CUDA_CHECK(cudaEventElapsedTime(&t_fill, side[d].e0, side[d].e1));
      CCO_CUDA_CHECK(cudaEventElapsedTime(&t_ar, side[d].e0, side[d].e2));
      std::vector<float> h(count);
      CCO_CUDA_CHECK(
          cudaMemcpy(h.data(), side[d].buf, count * sizeof(float), cudaMemcpyDeviceToHost));
      for (float v : h) correct = correct && v == 3.0f;
      if (rep > 0) {
        std::printf(
            "cco-probe: nccl: rank %d all-reduce done at %.3f ms, the filler at %.3f ms "
            "(ratio %.2f)\n",
            d, t_ar, t_fill, t_ar / t_fill);
        worst_ratio = std::max(worst_ratio, static_cast<double>(t_ar / t_fill));
      }
    }
  }
  EXPECT_TRUE(correct) << "all-reduce results are wrong";
  std::printf(
      "cco-probe: nccl: worst all-reduce/filler ratio %.2f (about 1: waited for the "
      "filler; well below 1: overtook it), results %s\n",
      worst_ratio, correct ? "ok" : "WRONG");
  if (env_int("CCO_TEST_EXPECT_PRIORITY", 0))
    EXPECT_LT(worst_ratio, 0.5) << "the NCCL kernel did not overtake the filler";
  for (int d = 0; d < 2; ++d) {
    CCO_CUDA_CHECK(cudaSetDevice(d));
    ncclCommDestroy(comms[d]);
    cudaFree(side[d].buf);
    cudaFree(side[d].times);
    cudaStreamDestroy(side[d].fill);
    cudaStreamDestroy(side[d].comm);
  }
}

}  // namespace
