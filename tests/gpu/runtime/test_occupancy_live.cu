// The occupancy model against the driver, on kernels compiled into this file.
//
// Issue: "the model agrees with cudaOccupancyMaxActiveBlocksPerMultiprocessor on at least 50 real
// kernel footprints with and without padding". A family of real __global__ kernels with different
// register counts (per-thread arrays kept live, with and without __launch_bounds__) and static
// shared memory is swept over block sizes and dynamic shared memory sizes; for every footprint the
// model's blocks per SM must equal the driver's. The padding planner is checked at every boundary
// k against the driver (its padding caps at k and one byte less does not) and against
// cudaOccupancyAvailableDynamicSMemPerBlock. The live limits table must match the built-in one.
// main() comes from gpu_main.cpp (skips without a GPU).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/limits.hpp"
#include "model/occupancy.hpp"
#include "runtime/check.hpp"
#include "runtime/device.hpp"

namespace {

// ---- kernels -------------------------------------------------------------------------------
//
// kStatic: bytes of static shared memory; kRegs: floats per thread kept live across a runtime
// loop (so the compiler needs about kRegs registers, or spills under a launch bound). The work is
// meaningless but every value reaches `out`, so nothing is optimised away.

template <int kStatic, int kRegs>
__device__ __forceinline__ void body(const float* __restrict__ in, float* __restrict__ out,
                                     int n_in, int n_out, int iters, int dyn_floats) {
  extern __shared__ float dyn[];
  const int tid = static_cast<int>(threadIdx.x);
  const int gid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);

  float v[kRegs];
#pragma unroll
  for (int i = 0; i < kRegs; ++i) v[i] = in[(gid + i * 7) % n_in] + static_cast<float>(i);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kRegs; ++i) v[i] = fmaf(v[i], v[(i + 1) % kRegs], 0.5f);
  }
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < kRegs; ++i) acc += v[i] * static_cast<float>(i + 1);

  if constexpr (kStatic > 0) {
    constexpr int kN = kStatic / static_cast<int>(sizeof(float));
    __shared__ float stat[kN];
    for (int i = tid; i < kN; i += static_cast<int>(blockDim.x)) stat[i] = acc + static_cast<float>(i);
    __syncthreads();
    acc += stat[(tid * 13 + 1) % kN];
    __syncthreads();
  }
  if (dyn_floats > 0) {
    for (int i = tid; i < dyn_floats; i += static_cast<int>(blockDim.x)) dyn[i] = acc * 0.25f;
    __syncthreads();
    acc += dyn[(tid * 5 + 3) % dyn_floats];
  }
  if (gid < n_out) out[gid] = acc;
}

#define CCO_OCC_PARAMS const float* in, float* out, int n_in, int n_out, int iters, int dyn_floats
#define CCO_OCC_ARGS in, out, n_in, n_out, iters, dyn_floats

template <int S, int R>
__global__ void k_free(CCO_OCC_PARAMS) { body<S, R>(CCO_OCC_ARGS); }

template <int S, int R>
__global__ void __launch_bounds__(1024) k_lb1024(CCO_OCC_PARAMS) { body<S, R>(CCO_OCC_ARGS); }

template <int S, int R>
__global__ void __launch_bounds__(256, 4) k_lb256x4(CCO_OCC_PARAMS) { body<S, R>(CCO_OCC_ARGS); }

template <int S, int R>
__global__ void __launch_bounds__(384, 2) k_lb384x2(CCO_OCC_PARAMS) { body<S, R>(CCO_OCC_ARGS); }

using KernelFn = void (*)(const float*, float*, int, int, int, int);

struct Kernel {
  const char* name;
  KernelFn fn;
  const void* ptr() const { return reinterpret_cast<const void*>(fn); }
};

#define CCO_K(tmpl, s, r) Kernel{#tmpl "<" #s "," #r ">", &tmpl<s, r>}

const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> all = {
      CCO_K(k_free, 0, 4),          CCO_K(k_free, 0, 32),         CCO_K(k_free, 0, 96),
      CCO_K(k_free, 0, 200),        CCO_K(k_free, 1024, 4),       CCO_K(k_free, 1024, 96),
      CCO_K(k_free, 6144, 32),      CCO_K(k_free, 6144, 200),     CCO_K(k_free, 24576, 4),
      CCO_K(k_free, 24576, 96),     CCO_K(k_free, 40960, 32),     CCO_K(k_free, 40960, 96),
      CCO_K(k_lb1024, 0, 96),       CCO_K(k_lb1024, 6144, 32),    CCO_K(k_lb1024, 24576, 96),
      CCO_K(k_lb256x4, 0, 96),      CCO_K(k_lb256x4, 1024, 32),   CCO_K(k_lb256x4, 40960, 96),
      CCO_K(k_lb384x2, 0, 200),     CCO_K(k_lb384x2, 6144, 96),   CCO_K(k_free, 0, 12),
      CCO_K(k_free, 1024, 56),
  };
  return all;
}

constexpr int kBlockSizes[] = {32, 64, 96, 100, 128, 160, 256, 384, 512, 768, 1024};
constexpr int64_t kDynSizes[] = {0,         1,         1000,       4096,      16 * 1024 + 3,
                                 40 * 1024, 60 * 1024, 100 * 1024, 200 * 1024};

cudaFuncAttributes attributes(const Kernel& k) {
  cudaFuncAttributes a{};
  CCO_CUDA_CHECK(cudaFuncGetAttributes(&a, k.ptr()));
  return a;
}

/// Dynamic sizes to sweep for a kernel: the fixed list within the opt-in maximum left beside the
/// static size, plus that maximum itself.
std::vector<int64_t> dyn_sizes(const cco::model::DeviceLimits& lim, int64_t static_smem) {
  const int64_t max_dyn = lim.smem_per_block_optin - static_smem;
  std::vector<int64_t> out;
  for (int64_t d : kDynSizes)
    if (d <= max_dyn) out.push_back(d);
  if (max_dyn >= 0 && std::find(out.begin(), out.end(), max_dyn) == out.end()) out.push_back(max_dyn);
  return out;
}

std::string describe(const Kernel& k, const cco::model::Footprint& fp) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s regs=%d static=%lld threads=%d dyn=%lld", k.name, fp.regs,
                static_cast<long long>(fp.static_smem), fp.threads,
                static_cast<long long>(fp.dynamic_smem));
  return buf;
}

/// Sets the kernel's dynamic shared memory attribute to the largest the device allows, so that
/// cudaOccupancyAvailableDynamicSMemPerBlock is not capped by an earlier, smaller setting.
void raise_to_max(const Kernel& k, const cco::model::DeviceLimits& lim, int64_t static_smem) {
  CCO_CUDA_CHECK(cudaFuncSetAttribute(k.ptr(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(lim.smem_per_block_optin - static_smem)));
}

// Totals shared by the tests, for the summary line.
int g_footprints = 0;
int g_boundaries = 0;

// ---- tests ---------------------------------------------------------------------------------

TEST(OccupancyLive, KernelsRun) {
  CCO_CUDA_CHECK(cudaSetDevice(0));
  const auto lim = cco::rt::query_limits(0);
  constexpr int kIn = 4096;
  const int threads = 256, blocks = 2 * std::max(1, lim.sm_count);
  const int n_out = threads * blocks;
  float* in = nullptr;
  float* out = nullptr;
  CCO_CUDA_CHECK(cudaMalloc(&in, kIn * sizeof(float)));
  CCO_CUDA_CHECK(cudaMalloc(&out, static_cast<size_t>(n_out) * sizeof(float)));
  std::vector<float> h_in(kIn);
  for (int i = 0; i < kIn; ++i) h_in[i] = 1.0f / static_cast<float>(1 + i % 17);
  CCO_CUDA_CHECK(cudaMemcpy(in, h_in.data(), kIn * sizeof(float), cudaMemcpyHostToDevice));

  struct Launch {
    const Kernel* k;
    int64_t dyn;
  };
  const auto& ks = kernels();
  const Launch launches[] = {{&ks[0], 0},            // k_free<0,4>
                             {&ks[3], 0},            // k_free<0,200>
                             {&ks[11], 4096},        // k_free<40960,96> with dynamic
                             {&ks[6], 100 * 1024},   // k_free<6144,32>, opt-in dynamic
                             {&ks[16], 16 * 1024}};  // k_lb256x4<1024,32>
  std::vector<float> h_out(static_cast<size_t>(n_out));
  for (const auto& l : launches) {
    const auto attr = attributes(*l.k);
    const int t = std::min(threads, attr.maxThreadsPerBlock);
    cco::rt::allow_dynamic_smem(l.k->ptr(), l.dyn);
    CCO_CUDA_CHECK(cudaMemset(out, 0xFF, static_cast<size_t>(n_out) * sizeof(float)));  // NaN
    const int dyn_floats = static_cast<int>(l.dyn / static_cast<int64_t>(sizeof(float)));
    l.k->fn<<<blocks, t, static_cast<size_t>(l.dyn)>>>(in, out, kIn, t * blocks, 3, dyn_floats);
    CCO_CUDA_CHECK(cudaGetLastError());
    CCO_CUDA_CHECK(cudaDeviceSynchronize());
    CCO_CUDA_CHECK(cudaMemcpy(h_out.data(), out, h_out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    int written = 0;
    for (int i = 0; i < t * blocks; ++i) written += std::isnan(h_out[static_cast<size_t>(i)]) ? 0 : 1;
    EXPECT_EQ(written, t * blocks) << l.k->name << " with " << t << " threads, dyn " << l.dyn
                                   << ": not every thread wrote its output";
    std::printf("launched %s: %d blocks x %d threads, dyn %lld B, regs %d, static %zu B\n",
                l.k->name, blocks, t, static_cast<long long>(l.dyn), attr.numRegs,
                attr.sharedSizeBytes);
  }
  CCO_CUDA_CHECK(cudaFree(in));
  CCO_CUDA_CHECK(cudaFree(out));
}

TEST(OccupancyLive, ModelMatchesDriver) {
  CCO_CUDA_CHECK(cudaSetDevice(0));
  const auto lim = cco::rt::query_limits(0);
  int compared = 0, disagree = 0, padded = 0;
  std::vector<int> regs_seen;
  for (const auto& k : kernels()) {
    const auto attr = attributes(k);
    regs_seen.push_back(attr.numRegs);
    std::printf("kernel %-22s regs %3d static %6zu B local %5zu B maxThreadsPerBlock %4d\n", k.name,
                attr.numRegs, attr.sharedSizeBytes, attr.localSizeBytes, attr.maxThreadsPerBlock);
    for (int threads : kBlockSizes) {
      if (threads > attr.maxThreadsPerBlock) continue;
      for (int64_t dyn : dyn_sizes(lim, static_cast<int64_t>(attr.sharedSizeBytes))) {
        cco::rt::allow_dynamic_smem(k.ptr(), dyn);
        const int driver = cco::rt::driver_occupancy(k.ptr(), threads, dyn);
        const auto fp = cco::rt::footprint_of(k.ptr(), threads, dyn);
        ++compared;
        if (dyn > 0) ++padded;
        try {
          const auto o = cco::model::occupancy(lim, fp);
          if (o.blocks_per_sm != driver) {
            ++disagree;
            std::printf("DISAGREE %s: model %d (limiter %s; warps %d blocks %d regs %d smem %d, "
                        "smem/block %lld) driver %d\n",
                        describe(k, fp).c_str(), o.blocks_per_sm, cco::model::to_string(o.limiter),
                        o.by_warps, o.by_blocks, o.by_regs, o.by_smem,
                        static_cast<long long>(o.smem_per_block), driver);
          }
        } catch (const cco::model::Error& e) {
          ++disagree;
          std::printf("DISAGREE %s: model rejected the footprint (%s), driver %d\n",
                      describe(k, fp).c_str(), e.what(), driver);
        }
      }
    }
  }
  std::sort(regs_seen.begin(), regs_seen.end());
  regs_seen.erase(std::unique(regs_seen.begin(), regs_seen.end()), regs_seen.end());
  std::printf("occupancy sweep: %d footprints (%d with dynamic shared memory), %zu distinct register "
              "counts, %d disagreements\n",
              compared, padded, regs_seen.size(), disagree);
  g_footprints += compared;
  EXPECT_GE(regs_seen.size(), 4u) << "the kernel family should span several register counts";
  ASSERT_GE(compared, 50);
  ASSERT_EQ(disagree, 0) << "the model disagrees with the driver on " << disagree << " of "
                         << compared << " footprints (listed above)";
}

TEST(OccupancyLive, PlannerMatchesDriver) {
  CCO_CUDA_CHECK(cudaSetDevice(0));
  const auto lim = cco::rt::query_limits(0);
  int checked = 0, failures = 0, exact_avail = 0, avail_minus_reserved = 0, unreachable = 0;
  for (const auto& k : kernels()) {
    const auto attr = attributes(k);
    const int64_t static_smem = static_cast<int64_t>(attr.sharedSizeBytes);
    for (int threads : kBlockSizes) {
      if (threads > attr.maxThreadsPerBlock) continue;
      for (int64_t own : {int64_t{0}, int64_t{1000}}) {  // without and with the launch's own dynamic
        if (static_smem + own > lim.smem_per_block_optin) continue;
        cco::rt::allow_dynamic_smem(k.ptr(), own);
        const int top = cco::rt::driver_occupancy(k.ptr(), threads, own);
        const auto fp = cco::rt::footprint_of(k.ptr(), threads, own);
        for (int target = top - 1; target >= 1; --target) {
          const auto p = cco::model::plan_padding(lim, fp, target);
          const std::string where = describe(k, fp) + " k=" + std::to_string(target);
          if (!p.reachable) {
            // The planner says no size caps at k: the driver must agree at the largest size.
            ++unreachable;
            cco::rt::allow_dynamic_smem(k.ptr(), p.dynamic_smem);
            const int at_max = cco::rt::driver_occupancy(k.ptr(), threads, p.dynamic_smem);
            if (at_max <= target) {
              ++failures;
              std::printf("PLANNER %s: unreachable (%s) but the driver gives %d at dyn %lld\n",
                          where.c_str(), p.note.c_str(), at_max,
                          static_cast<long long>(p.dynamic_smem));
            }
            continue;
          }
          ++checked;
          if (p.already || p.dynamic_smem <= fp.dynamic_smem) {
            ++failures;
            std::printf("PLANNER %s: says already at %d blocks (dyn %lld) but the driver gives %d\n",
                        where.c_str(), p.blocks_per_sm, static_cast<long long>(p.dynamic_smem), top);
            continue;
          }
          cco::rt::allow_dynamic_smem(k.ptr(), p.dynamic_smem);
          const int at = cco::rt::driver_occupancy(k.ptr(), threads, p.dynamic_smem);
          cco::rt::allow_dynamic_smem(k.ptr(), p.dynamic_smem - 1);
          const int below = cco::rt::driver_occupancy(k.ptr(), threads, p.dynamic_smem - 1);

          raise_to_max(k, lim, static_smem);
          size_t avail = 0;
          CCO_CUDA_CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, k.ptr(), target + 1, threads));
          const auto a = static_cast<int64_t>(avail);

          // The occupancy API is the ground truth: the padding caps at k and is the smallest
          // that does. cudaOccupancyAvailableDynamicSMemPerBlock is only recorded: measured on
          // H200 (driver 580, CUDA 13) it leaves out the 1 KB reserved per block, so its
          // boundary sits exactly `reserved` bytes above the occupancy API's.
          const bool ok = at <= target && below > target;
          const int64_t reserved = lim.smem_reserved_per_block;
          if (p.dynamic_smem == a + 1) ++exact_avail;
          if (p.dynamic_smem == a - reserved + 1) ++avail_minus_reserved;
          if (!ok) {
            std::printf("PLANNER %s: padding %lld B (model %d blocks) driver %d at it, %d one byte "
                        "below; AvailableDynamicSMemPerBlock(k+1) = %lld B\n",
                        where.c_str(), static_cast<long long>(p.dynamic_smem), p.blocks_per_sm, at,
                        below, static_cast<long long>(a));
          }
          if (!ok) ++failures;
        }
      }
    }
  }
  std::printf("planner: %d boundaries checked against the driver's occupancy; padding equal to "
              "AvailableDynamicSMemPerBlock(k+1) + 1 in %d, to AvailableDynamicSMemPerBlock(k+1) - "
              "reserved + 1 in %d; %d unreachable targets confirmed, %d failures\n",
              checked, exact_avail, avail_minus_reserved, unreachable, failures);
  g_boundaries += checked;
  ASSERT_GT(checked, 0);
  ASSERT_EQ(failures, 0) << "planner boundaries that disagree with the driver are listed above";
}

TEST(OccupancyLive, LiveLimitsMatchTable) {
  const auto live = cco::rt::query_limits(0);
  const std::string arch = "sm_" + std::to_string(live.cc_major) + std::to_string(live.cc_minor);
  if (arch != "sm_80" && arch != "sm_86" && arch != "sm_90")
    GTEST_SKIP() << "no built-in table entry for " << arch << " (" << live.name << ")";
  const auto& table = cco::model::find_architecture(arch);
  int mismatches = 0;
  auto cmp = [&](const char* field, long long a, long long b) {
    if (a == b) return;
    ++mismatches;
    std::printf("LIMITS %s: live %lld, table %lld\n", field, a, b);
  };
#define CCO_CMP(f) cmp(#f, static_cast<long long>(live.f), static_cast<long long>(table.f))
  CCO_CMP(cc_major);
  CCO_CMP(cc_minor);
  CCO_CMP(warp_size);
  CCO_CMP(max_threads_per_block);
  CCO_CMP(max_threads_per_sm);
  CCO_CMP(max_blocks_per_sm);
  CCO_CMP(regs_per_sm);
  CCO_CMP(regs_per_block);
  CCO_CMP(max_regs_per_thread);
  CCO_CMP(reg_alloc_unit);
  CCO_CMP(reg_sub_partitions);
  CCO_CMP(smem_per_sm);
  CCO_CMP(smem_per_block_default);
  CCO_CMP(smem_per_block_optin);
  CCO_CMP(smem_reserved_per_block);
  CCO_CMP(smem_alloc_unit);
#undef CCO_CMP
  if (live.arch != table.arch) {
    ++mismatches;
    std::printf("LIMITS arch: live %s, table %s\n", live.arch.c_str(), table.arch.c_str());
  }
  if (live.smem_carveouts != table.smem_carveouts) {
    ++mismatches;
    std::string l, t;
    for (auto c : live.smem_carveouts) l += std::to_string(c) + " ";
    for (auto c : table.smem_carveouts) t += std::to_string(c) + " ";
    std::printf("LIMITS smem_carveouts: live [%s], table [%s]\n", l.c_str(), t.c_str());
  }
  EXPECT_TRUE(live.from_device);
  std::printf("limits: %s (%d SMs) vs table %s: %d per-SM fields differ\n", live.name.c_str(),
              live.sm_count, table.name.c_str(), mismatches);
  EXPECT_EQ(mismatches, 0) << "the live limits differ from the built-in " << arch << " entry";
}

// Runs last (tests run in definition order): the line recorded in the docs, and a check that the
// comparisons above really ran (a filter or a loop that compares nothing must not pass quietly).
TEST(OccupancyLive, Summary) {
  EXPECT_GT(g_footprints, 0) << "no footprint was compared against the driver";
  EXPECT_GT(g_boundaries, 0) << "no planner boundary was checked";
  std::printf("occupancy: %d footprints compared, %d planner boundaries checked, %s\n", g_footprints,
              g_boundaries,
              ::testing::UnitTest::GetInstance()->failed_test_count() == 0 ? "all agree"
                                                                            : "SOME DISAGREE (see above)");
}

}  // namespace
