// Device kernels of the workloads (see kernels.hpp for the contracts).
#include "kernels/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "runtime/check.hpp"

namespace cco::wl {
namespace {

// ---- element access ---------------------------------------------------------------------------

template <class T>
struct Elem;

template <>
struct Elem<float> {
  using Bits = unsigned int;
  static constexpr int kSignificand = 24;
  __device__ static float to_float(float v) { return v; }
  __device__ static float from_float(float v) { return v; }
  __device__ static float from_double(double v) { return static_cast<float>(v); }
  __device__ static Bits bits(float v) { return __float_as_uint(v); }
};

template <>
struct Elem<__half> {
  using Bits = unsigned short;
  static constexpr int kSignificand = 11;
  __device__ static float to_float(__half v) { return __half2float(v); }
  __device__ static __half from_float(float v) { return __float2half_rn(v); }
  __device__ static __half from_double(double v) { return __float2half_rn(static_cast<float>(v)); }
  __device__ static Bits bits(__half v) { return __half_as_ushort(v); }
};

template <>
struct Elem<__nv_bfloat16> {
  using Bits = unsigned short;
  static constexpr int kSignificand = 8;
  __device__ static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  __device__ static __nv_bfloat16 from_double(double v) {
    return __float2bfloat16_rn(static_cast<float>(v));
  }
  __device__ static Bits bits(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }
};

template <class T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) with T the storage type of t.
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(TypeTag<float>{});
    case DType::F16: return f(TypeTag<__half>{});
    case DType::BF16: return f(TypeTag<__nv_bfloat16>{});
  }
  throw std::invalid_argument("cco::wl: unknown DType " + std::to_string(static_cast<int>(t)));
}

// ---- launch helpers ---------------------------------------------------------------------------

constexpr int kFillThreads = 256;
constexpr std::size_t kMaxFillBlocks = 4096;  // grid-stride beyond 1M threads

unsigned int fill_blocks(std::size_t count) {
  std::size_t b = (count + kFillThreads - 1) / kFillThreads;
  return static_cast<unsigned int>(std::min(b, kMaxFillBlocks));
}

void require_counter(const unsigned long long* wrong, const char* who) {
  if (wrong == nullptr) throw std::invalid_argument(std::string(who) + ": null counter");
}

/// Raises cudaFuncAttributeMaxDynamicSharedMemorySize of `func` on the current device when
/// static + extra exceeds the default 48 KB per block. Monotonic (never lowered, so a concurrent
/// launch with a larger size on another thread stays valid), cached per (device, kernel).
void ensure_dynamic_smem(const void* func, std::size_t extra) {
  if (extra == 0) return;
  if (extra > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument("cco::wl: extra_smem " + std::to_string(extra) + " too large");
  struct State {
    std::size_t static_smem = 0;
    std::size_t raised = 0;  // dynamic size the attribute allows (0: default)
    bool known = false;
  };
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, State> cache;
  int dev = 0;
  CCO_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  State& st = cache[{dev, func}];
  if (!st.known) {
    cudaFuncAttributes attr{};
    CCO_CUDA_CHECK(cudaFuncGetAttributes(&attr, func));
    st.static_smem = attr.sharedSizeBytes;
    st.known = true;
  }
  constexpr std::size_t kDefaultLimit = 48 * 1024;
  if (st.static_smem + extra <= kDefaultLimit || extra <= st.raised) return;
  const cudaError_t e = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(extra));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, or the next launch check would report it again
    rt::throw_error(__FILE__, __LINE__, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)",
                    std::string(cudaGetErrorString(e)) + " (static " +
                        std::to_string(st.static_smem) + " + extra_smem " + std::to_string(extra) +
                        " bytes per block; over the device's opt-in maximum?)");
  }
  st.raised = extra;
}

// ---- counting -------------------------------------------------------------------------------

/// Warp-level sum of `local`; lane 0 adds it to *wrong when non-zero. All 32 lanes must call.
__device__ __forceinline__ void add_count(unsigned long long local, unsigned long long* wrong) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xffffffffu, local, o);
  if ((threadIdx.x & 31) == 0 && local != 0) atomicAdd(wrong, local);
}

__device__ __forceinline__ std::size_t grid_start() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// ---- fills and checks -----------------------------------------------------------------------

__host__ __device__ __forceinline__ std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void __launch_bounds__(kFillThreads)
    fill_random_kernel(T* __restrict__ buf, std::size_t count, std::uint64_t seed_mixed) {
  constexpr int b = Elem<T>::kSignificand;
  const float inv = 1.0f / static_cast<float>(1u << b);
  for (std::size_t i = grid_start(); i < count; i += grid_stride()) {
    // SplitMix64's i-th output for this seed.
    const std::uint64_t h = mix64(seed_mixed + (i + 1) * 0x9E3779B97F4A7C15ull);
    const long long k = static_cast<long long>(h >> (64 - b));
    const float v = static_cast<float>(2 * k + 1 - (1ll << b)) * inv;  // exact
    buf[i] = Elem<T>::from_float(v);
  }
}

/// The pattern value for residue r (0 <= r < mod).
template <class T>
__device__ __forceinline__ T pattern_value(double scale, std::uint64_t r) {
  return Elem<T>::from_double(scale * static_cast<double>(r + 1));
}

template <class T>
__global__ void __launch_bounds__(kFillThreads)
    fill_pattern_kernel(T* __restrict__ buf, std::size_t count, double scale, std::uint64_t offset,
                        std::uint64_t mod) {
  std::size_t i = grid_start();
  if (i >= count) return;
  const std::uint64_t step = grid_stride() % mod;
  std::uint64_t r = (offset % mod + i % mod) % mod;
  for (; i < count; i += grid_stride()) {
    buf[i] = pattern_value<T>(scale, r);
    r += step;
    if (r >= mod) r -= mod;
  }
}

template <class T>
__global__ void __launch_bounds__(kFillThreads)
    check_pattern_kernel(const T* __restrict__ buf, std::size_t count, double scale,
                         std::uint64_t offset, std::uint64_t mod, unsigned long long* wrong) {
  unsigned long long bad = 0;
  std::size_t i = grid_start();
  const std::uint64_t step = grid_stride() % mod;
  std::uint64_t r = (offset % mod + i % mod) % mod;
  for (; i < count; i += grid_stride()) {
    const float want = Elem<T>::to_float(pattern_value<T>(scale, r));
    const float got = Elem<T>::to_float(buf[i]);
    bad += (got == want) ? 0u : 1u;  // NaN: wrong
    r += step;
    if (r >= mod) r -= mod;
  }
  add_count(bad, wrong);
}

template <class T>
__global__ void __launch_bounds__(kFillThreads)
    count_unequal_kernel(const T* __restrict__ a, const T* __restrict__ b, std::size_t count,
                         unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::size_t i = grid_start(); i < count; i += grid_stride())
    bad += (Elem<T>::bits(a[i]) == Elem<T>::bits(b[i])) ? 0u : 1u;
  add_count(bad, wrong);
}

template <class T>
__global__ void __launch_bounds__(kFillThreads)
    compare_to_ref_kernel(const T* __restrict__ out, const float* __restrict__ ref,
                          std::size_t count, float rtol, float atol, unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::size_t i = grid_start(); i < count; i += grid_stride()) {
    const float o = Elem<T>::to_float(out[i]);
    const float r = ref[i];
    bad += (fabsf(o - r) <= atol + rtol * fabsf(r)) ? 0u : 1u;  // NaN: wrong
  }
  add_count(bad, wrong);
}

// ---- the built-in GEMM ------------------------------------------------------------------------

constexpr int BM = kGemmTileM;
constexpr int BN = kGemmTileN;
constexpr int BK = kGemmTileK;
constexpr int kAsLd = BM + 4;  // padded: the transposed A stores hit at most 2 ways per bank
constexpr int kFlagVecA = 1, kFlagVecB = 2, kFlagVecC = 4;
static_assert(BM * BK == 4 * kGemmThreads && BN * BK == 4 * kGemmThreads,
              "each thread loads 4 elements of A and 4 of B per k step");
static_assert(BM == 16 * 4 && BN == 16 * 4, "16x16 threads with 4x4 micro-tiles");

/// Four consecutive elements as raw bits (converted to float only when stored to shared memory,
/// so the global loads stay in flight across the compute of the current tile).
template <class T>
struct Raw4 {
  using Bits = typename Elem<T>::Bits;
  Bits v[4];
};

template <class T>
__device__ __forceinline__ Raw4<T> load4(const T* p, int n, bool vec) {
  using Bits = typename Elem<T>::Bits;
  Raw4<T> r;
  const Bits* q = reinterpret_cast<const Bits*>(p);
  if (vec && n >= 4) {
    if constexpr (sizeof(Bits) == 4) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(q));
      r.v[0] = u.x; r.v[1] = u.y; r.v[2] = u.z; r.v[3] = u.w;
    } else {
      const uint2 u = __ldg(reinterpret_cast<const uint2*>(q));
      r.v[0] = static_cast<Bits>(u.x & 0xffffu); r.v[1] = static_cast<Bits>(u.x >> 16);
      r.v[2] = static_cast<Bits>(u.y & 0xffffu); r.v[3] = static_cast<Bits>(u.y >> 16);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) r.v[j] = (j < n) ? __ldg(q + j) : Bits(0);  // 0 bits == +0.0
  }
  return r;
}

template <class T>
__device__ __forceinline__ float raw_to_float(typename Elem<T>::Bits b) {
  if constexpr (std::is_same_v<T, float>) {
    return __uint_as_float(b);
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(__ushort_as_half(b));
  } else {
    return __uint_as_float(static_cast<unsigned int>(b) << 16);
  }
}

template <class T>
__device__ __forceinline__ void store4(T* p, const float (&v)[4], int n, bool vec) {
  if (vec && n >= 4) {
    if constexpr (std::is_same_v<T, float>) {
      *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      using Bits = typename Elem<T>::Bits;
      uint2 u;
      u.x = static_cast<unsigned int>(Elem<T>::bits(Elem<T>::from_float(v[0]))) |
            (static_cast<unsigned int>(Elem<T>::bits(Elem<T>::from_float(v[1]))) << 16);
      u.y = static_cast<unsigned int>(Elem<T>::bits(Elem<T>::from_float(v[2]))) |
            (static_cast<unsigned int>(Elem<T>::bits(Elem<T>::from_float(v[3]))) << 16);
      static_assert(sizeof(Bits) == 2);
      *reinterpret_cast<uint2*>(p) = u;
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < n) p[j] = Elem<T>::from_float(v[j]);
  }
}

__device__ __forceinline__ int clamp4(long long left) {
  return left <= 0 ? 0 : (left >= 4 ? 4 : static_cast<int>(left));
}

/// See builtin_gemm in kernels.hpp. Thread layout: warp w covers output rows ty in
/// [(w/2)*4, +4) x cols tx in [(w%2)*8, +8) of the 16x16 grid of 4x4 micro-tiles, so one k step
/// of a warp reads 4 distinct float4 of A and 8 of B from shared memory (2 wavefronts for 16 FMAs).
template <class T>
__global__ void __launch_bounds__(kGemmThreads, 4)  // <= 64 regs: 4 blocks (32 warps) per SM
    gemm_kernel(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N,
                int K, int flags) {
  __shared__ __align__(16) float As[2][BK][kAsLd];  // A tile transposed: As[k][row]
  __shared__ __align__(16) float Bs[2][BK][BN];     // B tile as is:      Bs[k][col]

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int tx = (warp & 1) * 8 + (lane & 7);
  const int ty = (warp >> 1) * 4 + (lane >> 3);
  const int row0 = static_cast<int>(blockIdx.y) * BM;
  const int col0 = static_cast<int>(blockIdx.x) * BN;
  const bool vecA = (flags & kFlagVecA) != 0;
  const bool vecB = (flags & kFlagVecB) != 0;
  const bool vecC = (flags & kFlagVecC) != 0;

  // Loader coordinates: A tile 64 rows x 16 k (4 consecutive k per thread, 4 threads per row:
  // a warp reads 8 rows x 64 contiguous bytes for f32); B tile 16 k x 64 cols (4 consecutive
  // cols per thread, 16 threads per k row).
  const int a_r = tid >> 2, a_k = (tid & 3) * 4;
  const int b_k = tid >> 4, b_n = (tid & 15) * 4;
  const int a_row = row0 + a_r;
  const int b_col = col0 + b_n;
  const bool a_row_ok = a_row < M;
  const int b_cols = clamp4(static_cast<long long>(N) - b_col);
  const T* a_base = A + static_cast<std::size_t>(a_row_ok ? a_row : 0) * K + a_k;
  const T* b_base = B + b_k * static_cast<std::size_t>(N) + (b_cols > 0 ? b_col : 0);

  auto load_a = [&](int k0) {
    const int n = a_row_ok ? clamp4(static_cast<long long>(K) - (k0 + a_k)) : 0;
    return load4<T>(a_base + k0, n, vecA);
  };
  auto load_b = [&](int k0) {
    const int n = (k0 + b_k < K) ? b_cols : 0;
    return load4<T>(b_base + static_cast<std::size_t>(k0) * N, n, vecB);
  };
  auto stash = [&](int buf, const Raw4<T>& ra, const Raw4<T>& rb) {
#pragma unroll
    for (int j = 0; j < 4; ++j) As[buf][a_k + j][a_r] = raw_to_float<T>(ra.v[j]);
    *reinterpret_cast<float4*>(&Bs[buf][b_k][b_n]) =
        make_float4(raw_to_float<T>(rb.v[0]), raw_to_float<T>(rb.v[1]), raw_to_float<T>(rb.v[2]),
                    raw_to_float<T>(rb.v[3]));
  };

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

  const int tiles = (K + BK - 1) / BK;
  if (tiles > 0) {
    stash(0, load_a(0), load_b(0));
    __syncthreads();
  }
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < tiles;
    Raw4<T> ra{}, rb{};
    if (more) {  // issue the next tile's global loads before computing this one
      ra = load_a((t + 1) * BK);
      rb = load_b((t + 1) * BK);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __fmaf_rn(av[i], bv[j], acc[i][j]);
    }
    if (more) stash(cur ^ 1, ra, rb);  // the other buffer was last read before the previous sync
    __syncthreads();
  }

  const int col = col0 + tx * 4;
  const int ncols = clamp4(static_cast<long long>(N) - col);
  if (ncols == 0) return;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    if (row < M) store4<T>(C + static_cast<std::size_t>(row) * N + col, acc[i], ncols, vecC);
  }
}

template <class T>
__global__ void __launch_bounds__(256)
    reference_gemm_kernel(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                          int M, int N, int K) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (row >= M || col >= N) return;
  const T* a = A + static_cast<std::size_t>(row) * K;
  const T* b = B + col;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k)
    acc = __fmaf_rn(Elem<T>::to_float(a[k]), Elem<T>::to_float(b[static_cast<std::size_t>(k) * N]),
                    acc);
  C[static_cast<std::size_t>(row) * N + col] = acc;
}

// ---- the memory-bound kernel ------------------------------------------------------------------

constexpr int kMemPerBlock = kMemThreads * kMemPerThread;

__global__ void __launch_bounds__(kMemThreads)
    membound_kernel_impl(const float* __restrict__ x, const float* __restrict__ y,
                         float* __restrict__ z, std::size_t n, float alpha, int vec) {
  const std::size_t i =
      (static_cast<std::size_t>(blockIdx.x) * kMemThreads + threadIdx.x) * kMemPerThread;
  if (i >= n) return;
  if (vec != 0 && i + kMemPerThread <= n) {
    const float4 a = *reinterpret_cast<const float4*>(x + i);
    const float4 b = *reinterpret_cast<const float4*>(y + i);
    float4 r;
    r.x = __fmaf_rn(alpha, a.x, b.x);
    r.y = __fmaf_rn(alpha, a.y, b.y);
    r.z = __fmaf_rn(alpha, a.z, b.z);
    r.w = __fmaf_rn(alpha, a.w, b.w);
    *reinterpret_cast<float4*>(z + i) = r;
  } else {
#pragma unroll
    for (int j = 0; j < kMemPerThread; ++j)
      if (i + j < n) z[i + j] = __fmaf_rn(alpha, x[i + j], y[i + j]);
  }
}

__global__ void __launch_bounds__(kFillThreads)
    check_membound_kernel(const float* __restrict__ x, const float* __restrict__ y,
                          const float* __restrict__ z, std::size_t n, float alpha,
                          unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::size_t i = grid_start(); i < n; i += grid_stride())
    bad += (z[i] == __fmaf_rn(alpha, x[i], y[i])) ? 0u : 1u;  // NaN: wrong
  add_count(bad, wrong);
}

bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

void check_dims(const char* who, int M, int N, int K) {
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument(std::string(who) + ": negative size M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

}  // namespace

// ---- host API -----------------------------------------------------------------------------------

void fill_random(void* buf, DType t, std::size_t count, std::uint64_t seed, cudaStream_t s) {
  if (count == 0) return;
  const std::uint64_t seed_mixed = mix64(seed ^ 0x5DEECE66Dull);
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_random_kernel<T><<<fill_blocks(count), kFillThreads, 0, s>>>(static_cast<T*>(buf), count,
                                                                      seed_mixed);
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

void fill_pattern(void* buf, DType t, std::size_t count, double scale, std::uint64_t offset,
                  int mod, cudaStream_t s) {
  if (mod < 1) throw std::invalid_argument("fill_pattern: mod must be >= 1, got " + std::to_string(mod));
  if (count == 0) return;
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_pattern_kernel<T><<<fill_blocks(count), kFillThreads, 0, s>>>(
        static_cast<T*>(buf), count, scale, offset, static_cast<std::uint64_t>(mod));
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

void check_pattern(const void* buf, DType t, std::size_t count, double scale, std::uint64_t offset,
                   int mod, unsigned long long* wrong, cudaStream_t s) {
  if (mod < 1) throw std::invalid_argument("check_pattern: mod must be >= 1, got " + std::to_string(mod));
  require_counter(wrong, "check_pattern");
  if (count == 0) return;
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    check_pattern_kernel<T><<<fill_blocks(count), kFillThreads, 0, s>>>(
        static_cast<const T*>(buf), count, scale, offset, static_cast<std::uint64_t>(mod), wrong);
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

void count_unequal(const void* a, const void* b, DType t, std::size_t count,
                   unsigned long long* wrong, cudaStream_t s) {
  require_counter(wrong, "count_unequal");
  if (count == 0) return;
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    count_unequal_kernel<T><<<fill_blocks(count), kFillThreads, 0, s>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), count, wrong);
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

void compare_to_ref(const void* out, DType t, const float* ref, std::size_t count, float rtol,
                    float atol, unsigned long long* wrong, cudaStream_t s) {
  require_counter(wrong, "compare_to_ref");
  if (count == 0) return;
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    compare_to_ref_kernel<T><<<fill_blocks(count), kFillThreads, 0, s>>>(
        static_cast<const T*>(out), ref, count, rtol, atol, wrong);
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

dim3 builtin_gemm_grid(int M, int N) {
  return dim3(static_cast<unsigned int>((static_cast<long long>(N) + BN - 1) / BN),
              static_cast<unsigned int>((static_cast<long long>(M) + BM - 1) / BM), 1u);
}

const void* builtin_gemm_kernel(DType t) {
  return dispatch(t, [](auto tag) -> const void* {
    using T = typename decltype(tag)::type;
    return reinterpret_cast<const void*>(&gemm_kernel<T>);
  });
}

void builtin_gemm(const void* A, const void* B, void* C, DType t, int M, int N, int K,
                  std::size_t extra_smem, cudaStream_t s) {
  check_dims("builtin_gemm", M, N, K);
  if ((static_cast<long long>(M) + BM - 1) / BM > 65535)
    throw std::invalid_argument("builtin_gemm: M=" + std::to_string(M) + " exceeds the grid's y limit");
  if (M == 0 || N == 0) return;
  const void* func = builtin_gemm_kernel(t);
  ensure_dynamic_smem(func, extra_smem);
  const std::size_t vbytes = 4 * (t == DType::F32 ? 4u : 2u);
  int flags = 0;
  if (K % 4 == 0 && aligned(A, vbytes)) flags |= kFlagVecA;
  if (N % 4 == 0 && aligned(B, vbytes)) flags |= kFlagVecB;
  if (N % 4 == 0 && aligned(C, vbytes)) flags |= kFlagVecC;
  const dim3 grid = builtin_gemm_grid(M, N);
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_kernel<T><<<grid, kGemmThreads, extra_smem, s>>>(
        static_cast<const T*>(A), static_cast<const T*>(B), static_cast<T*>(C), M, N, K, flags);
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

void reference_gemm(const void* A, const void* B, float* C, DType t, int M, int N, int K,
                    cudaStream_t s) {
  check_dims("reference_gemm", M, N, K);
  if ((static_cast<long long>(M) + 7) / 8 > 65535)
    throw std::invalid_argument("reference_gemm: M=" + std::to_string(M) + " too large");
  if (M == 0 || N == 0) return;
  const dim3 block(32, 8, 1);
  const dim3 grid(static_cast<unsigned int>((N + 31) / 32), static_cast<unsigned int>((M + 7) / 8), 1u);
  dispatch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference_gemm_kernel<T><<<grid, block, 0, s>>>(static_cast<const T*>(A),
                                                    static_cast<const T*>(B), C, M, N, K);
  });
  CCO_CUDA_CHECK(cudaGetLastError());
}

const void* membound_kernel() { return reinterpret_cast<const void*>(&membound_kernel_impl); }

void membound(const float* x, const float* y, float* z, std::size_t n, float alpha,
              std::size_t extra_smem, cudaStream_t s) {
  if (n == 0) return;
  const std::size_t blocks = (n + kMemPerBlock - 1) / kMemPerBlock;
  if (blocks > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument("membound: n=" + std::to_string(n) + " exceeds the grid limit");
  const void* func = membound_kernel();
  ensure_dynamic_smem(func, extra_smem);
  const int vec = (aligned(x, 16) && aligned(y, 16) && aligned(z, 16)) ? 1 : 0;
  membound_kernel_impl<<<static_cast<unsigned int>(blocks), kMemThreads, extra_smem, s>>>(
      x, y, z, n, alpha, vec);
  CCO_CUDA_CHECK(cudaGetLastError());
}

void check_membound(const float* x, const float* y, const float* z, std::size_t n, float alpha,
                    unsigned long long* wrong, cudaStream_t s) {
  require_counter(wrong, "check_membound");
  if (n == 0) return;
  check_membound_kernel<<<fill_blocks(n), kFillThreads, 0, s>>>(x, y, z, n, alpha, wrong);
  CCO_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cco::wl
