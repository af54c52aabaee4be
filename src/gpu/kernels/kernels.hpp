// Device kernels of the workloads: buffer fills and checks, the built-in GEMM (a launch we
// control, so its occupancy can be shaped), its naive reference, and a memory-bound kernel.
//
// Stream contract: every function here only enqueues work on the stream `s` it is given and
// returns without synchronising (no cudaDeviceSynchronize / cudaStreamSynchronize, no blocking
// copies, no allocation), so all of them may be recorded into a CUDA graph. Each launch is
// followed by CCO_CUDA_CHECK(cudaGetLastError()): a bad launch throws cco::rt::Error at once;
// faults inside a kernel surface at the caller's next synchronisation. Invalid arguments
// (negative sizes, mod <= 0, a null counter) throw std::invalid_argument before anything is
// enqueued. A count of 0 (or M == 0 / N == 0 for the GEMMs) enqueues nothing.
//
// Buffers are device pointers holding `count` elements of dtype t (F32 = float, F16 = __half,
// BF16 = __nv_bfloat16). Counters (`wrong`) are device pointers to one unsigned long long that
// the check kernels ADD to (atomically, at most one atomic per warp that saw a mismatch): zero
// it first (cudaMemsetAsync) and read it back after the stream has run.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "model/types.hpp"

namespace cco::wl {

using model::DType;

// ---- fills and checks (grid-stride loops, size_t indices: count may exceed 2^31) -------------

/// Fills buf[0, count) with pseudo-random values from a hash of (seed, index) only, so the
/// result is deterministic and independent of launch shape. Values are (2k + 1 - 2^b) / 2^b with
/// k uniform in [0, 2^b) and b = the dtype's significand bits (24 f32, 11 f16, 8 bf16): uniform
/// in [-1, 1), exactly representable in t (no rounding on conversion), never 0, never +-1.
void fill_random(void* buf, DType t, std::size_t count, std::uint64_t seed, cudaStream_t s);

/// buf[i] = scale * (((offset + i) % mod) + 1), computed in double and converted to t. Meant for
/// small integers times a power-of-two scale, which every dtype holds exactly (caller's duty:
/// f16 holds integers up to 2048, bf16 up to 256 exactly). mod must be >= 1.
void fill_pattern(void* buf, DType t, std::size_t count, double scale, std::uint64_t offset,
                  int mod, cudaStream_t s);

/// Adds to *wrong the number of elements of buf that differ from the fill_pattern value with the
/// same (scale, offset, mod), converted to t the same way. Exact value compare: NaN always
/// counts as wrong, +0 == -0.
void check_pattern(const void* buf, DType t, std::size_t count, double scale, std::uint64_t offset,
                   int mod, unsigned long long* wrong, cudaStream_t s);

/// Adds to *wrong the number of element positions i < count where a[i] and b[i] (dtype t) differ
/// bitwise (so NaN == NaN with the same bits, +0 != -0).
void count_unequal(const void* a, const void* b, DType t, std::size_t count,
                   unsigned long long* wrong, cudaStream_t s);

/// Adds to *wrong the number of i < count with NOT(|float(out[i]) - ref[i]| <= atol + rtol*|ref[i]|):
/// NaN in out or ref counts as wrong, and so does an infinity (inf - inf is NaN).
void compare_to_ref(const void* out, DType t, const float* ref, std::size_t count, float rtol,
                    float atol, unsigned long long* wrong, cudaStream_t s);

// ---- the built-in GEMM ------------------------------------------------------------------------

/// Threads per block of builtin_gemm (one-dimensional blocks).
constexpr int kGemmThreads = 256;
/// Output tile of one block (rows x cols) and the k step of its main loop.
constexpr int kGemmTileM = 64;
constexpr int kGemmTileN = 64;
constexpr int kGemmTileK = 16;

/// C[M x N] = A[M x K] * B[K x N], all row-major and densely packed (leading dimensions K, N, N),
/// inputs and output of dtype t, fp32 accumulation, output rounded to nearest once.
/// A shared-memory tiled SIMT kernel: one 64x64 output tile per block (grid builtin_gemm_grid),
/// BK = 16, 256 threads each holding a 4x4 register micro-tile, register-prefetched double
/// buffering in ~17 KB of STATIC shared memory (one __syncthreads per k step). Any M, N, K >= 0
/// (edges bounds-checked, K == 0 writes zeros); vector loads/stores are used where K resp. N is a
/// multiple of 4 and the pointer is aligned, scalar ones otherwise. Every output element is the
/// sequence acc = fmaf(a[k], b[k], acc) for k = 0..K-1 from acc = 0 — the same order as
/// reference_gemm, so for F32 the two agree bitwise. Deterministic: results never depend on
/// extra_smem, the stream or concurrent work.
///
/// extra_smem: DYNAMIC shared memory the launch asks for on top of the static part; the kernel
/// never touches it. It only lowers how many blocks fit on an SM ("occupancy shaping"). When
/// static + extra_smem exceeds 48 KB the launcher raises cudaFuncAttributeMaxDynamicSharedMemorySize
/// for this kernel on the current device (once per larger value, cached, thread-safe; never
/// lowered); a size above the device's opt-in maximum throws cco::rt::Error.
void builtin_gemm(const void* A, const void* B, void* C, DType t, int M, int N, int K,
                  std::size_t extra_smem, cudaStream_t s);

/// The __global__ function builtin_gemm launches for dtype t (one kernel per dtype), for
/// cudaFuncGetAttributes / cudaOccupancyMaxActiveBlocksPerMultiprocessor / footprints. Launched
/// with kGemmThreads threads and builtin_gemm_grid(M, N) blocks.
const void* builtin_gemm_kernel(DType t);

/// The grid of builtin_gemm: (ceil(N / 64), ceil(M / 64), 1); x runs along N. M must be below
/// 64 * 65535 (gridDim.y limit; builtin_gemm throws std::invalid_argument beyond).
dim3 builtin_gemm_grid(int M, int N);

/// Naive reference GEMM: one thread per output element (32x8-thread blocks), the same
/// fmaf order over k as builtin_gemm, fp32 output C[M x N] (row-major) with no final rounding to
/// t. Slow (no reuse); meant for checks at test sizes.
void reference_gemm(const void* A, const void* B, float* C, DType t, int M, int N, int K,
                    cudaStream_t s);

// ---- the memory-bound kernel ------------------------------------------------------------------

/// Threads per block of membound; each thread handles 4 consecutive elements.
constexpr int kMemThreads = 256;
constexpr int kMemPerThread = 4;

/// z[i] = __fmaf_rn(alpha, x[i], y[i]) for i < n. Not persistent: ceil(n / 1024) blocks of 256
/// threads, each thread 4 consecutive elements, one float4 load/store per operand when x, y and z
/// are all 16-byte aligned (scalar otherwise, and for the tail). x and y may alias each other but
/// not z. extra_smem as for builtin_gemm (never touched, shapes occupancy, opt-in raised above
/// 48 KB). n must keep the grid below 2^31 blocks.
void membound(const float* x, const float* y, float* z, std::size_t n, float alpha,
              std::size_t extra_smem, cudaStream_t s);

/// The __global__ function membound launches (kMemThreads threads per block).
const void* membound_kernel();

/// Adds to *wrong the number of i < n where NOT(z[i] == __fmaf_rn(alpha, x[i], y[i])) (NaN wrong).
void check_membound(const float* x, const float* y, const float* z, std::size_t n, float alpha,
                    unsigned long long* wrong, cudaStream_t s);

}  // namespace cco::wl
