// GPU tests of the workload kernels: the built-in GEMM against its reference (and the reference
// against the host), shaped launches giving bitwise identical results, the fill/check pairs
// (including that a check can fail), and the memory-bound kernel.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "model/types.hpp"
#include "runtime/check.hpp"
#include "kernels/kernels.hpp"

namespace {

using cco::model::DType;
namespace wl = cco::wl;

std::size_t elem_size(DType t) { return t == DType::F32 ? 4 : 2; }
const char* name_of(DType t) {
  return t == DType::F32 ? "f32" : (t == DType::F16 ? "f16" : "bf16");
}
constexpr DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16};

/// Owned device allocation.
class DevBuf {
 public:
  explicit DevBuf(std::size_t bytes) : bytes_(bytes) {
    CCO_CUDA_CHECK(cudaMalloc(&p_, bytes == 0 ? 1 : bytes));
  }
  ~DevBuf() { cudaFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  template <class T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Host value of element i of a buffer of dtype t (raw bytes copied back).
float host_value(const std::vector<unsigned char>& raw, DType t, std::size_t i) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, raw.data() + 4 * i, 4);
    return f;
  }
  std::uint16_t b;
  std::memcpy(&b, raw.data() + 2 * i, 2);
  if (t == DType::BF16) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  __half_raw hr;
  hr.x = b;
  return __half2float(__half(hr));
}

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    CCO_CUDA_CHECK(cudaMalloc(&counter_, sizeof(unsigned long long)));
  }
  void TearDown() override {
    cudaFree(counter_);
    cudaStreamDestroy(s_);
  }
  void zero_counter() { CCO_CUDA_CHECK(cudaMemsetAsync(counter_, 0, sizeof(*counter_), s_)); }
  /// Synchronises the stream and returns the counter.
  unsigned long long read_counter() {
    unsigned long long v = 0;
    CCO_CUDA_CHECK(cudaMemcpyAsync(&v, counter_, sizeof(v), cudaMemcpyDeviceToHost, s_));
    CCO_CUDA_CHECK(cudaStreamSynchronize(s_));
    return v;
  }
  std::vector<unsigned char> to_host(const void* p, std::size_t bytes) {
    std::vector<unsigned char> h(bytes);
    CCO_CUDA_CHECK(cudaMemcpyAsync(h.data(), p, bytes, cudaMemcpyDeviceToHost, s_));
    CCO_CUDA_CHECK(cudaStreamSynchronize(s_));
    return h;
  }
  void poison(void* p, std::size_t bytes) {  // all-ones bytes: NaN in f32, f16 and bf16
    CCO_CUDA_CHECK(cudaMemsetAsync(p, 0xFF, bytes, s_));
  }

  cudaStream_t s_ = nullptr;
  unsigned long long* counter_ = nullptr;
};

// ---- the GEMMs ------------------------------------------------------------------------------

struct Dims {
  int M, N, K;
};

float rtol_for(DType t) {
  return t == DType::BF16 ? 2e-2f : (t == DType::F16 ? 5e-3f : 1e-4f);
}

TEST_F(Kernels, ReferenceGemmMatchesHost) {
  const int M = 37, N = 23, K = 45;
  for (DType t : kAllTypes) {
    SCOPED_TRACE(name_of(t));
    DevBuf A(M * K * elem_size(t)), B(K * N * elem_size(t)), C(M * N * sizeof(float));
    wl::fill_random(A.get(), t, M * K, 11, s_);
    wl::fill_random(B.get(), t, K * N, 12, s_);
    poison(C.get(), C.bytes());
    wl::reference_gemm(A.get(), B.get(), C.get<float>(), t, M, N, K, s_);
    const auto ha = to_host(A.get(), A.bytes());
    const auto hb = to_host(B.get(), B.bytes());
    const auto hc = to_host(C.get(), C.bytes());
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0;
        for (int k = 0; k < K; ++k)
          want += static_cast<double>(host_value(ha, t, static_cast<std::size_t>(i) * K + k)) *
                  host_value(hb, t, static_cast<std::size_t>(k) * N + j);
        const float got = host_value(hc, DType::F32, static_cast<std::size_t>(i) * N + j);
        ASSERT_NEAR(got, want, 1e-5 * K) << "at (" << i << "," << j << ")";
      }
  }
}

TEST_F(Kernels, BuiltinGemmMatchesReference) {
  const Dims dims[] = {{1, 1, 1},    {257, 129, 65}, {64, 64, 16},   {63, 65, 17},  {65, 63, 15},
                       {128, 256, 33}, {100, 36, 200}, {33, 1, 7},   {1, 300, 64},  {1024, 1024, 1024}};
  for (DType t : kAllTypes) {
    for (const Dims& d : dims) {
      SCOPED_TRACE(std::string(name_of(t)) + " M=" + std::to_string(d.M) + " N=" +
                   std::to_string(d.N) + " K=" + std::to_string(d.K));
      const std::size_t es = elem_size(t);
      const std::size_t mk = static_cast<std::size_t>(d.M) * d.K;
      const std::size_t kn = static_cast<std::size_t>(d.K) * d.N;
      const std::size_t mn = static_cast<std::size_t>(d.M) * d.N;
      DevBuf A(mk * es), B(kn * es), C(mn * es), R(mn * sizeof(float));
      wl::fill_random(A.get(), t, mk, 1000 + d.M, s_);
      wl::fill_random(B.get(), t, kn, 2000 + d.N, s_);
      poison(C.get(), C.bytes());
      poison(R.get(), R.bytes());
      wl::builtin_gemm(A.get(), B.get(), C.get(), t, d.M, d.N, d.K, 0, s_);
      wl::reference_gemm(A.get(), B.get(), R.get<float>(), t, d.M, d.N, d.K, s_);

      // Frobenius relative error and output magnitude on the host.
      const auto hc = to_host(C.get(), C.bytes());
      const auto hr = to_host(R.get(), R.bytes());
      double diff2 = 0, ref2 = 0;
      for (std::size_t i = 0; i < mn; ++i) {
        const double r = host_value(hr, DType::F32, i);
        const double o = host_value(hc, t, i);
        ASSERT_TRUE(std::isfinite(r)) << "reference element " << i << " not written";
        ASSERT_TRUE(std::isfinite(o)) << "output element " << i << " not written";
        diff2 += (o - r) * (o - r);
        ref2 += r * r;
      }
      ASSERT_GT(ref2, 0.0);
      const double rms = std::sqrt(ref2 / static_cast<double>(mn));
      const float rtol = rtol_for(t);
      EXPECT_LE(std::sqrt(diff2 / ref2), rtol / 4) << "Frobenius relative error";

      // Element-wise on the device: |out - ref| <= rtol * (rms + |ref|).
      zero_counter();
      wl::compare_to_ref(C.get(), t, R.get<float>(), mn, rtol, static_cast<float>(rtol * rms),
                         counter_, s_);
      EXPECT_EQ(read_counter(), 0u);
      if (t == DType::F32) {  // same fmaf order over k: bitwise identical
        zero_counter();
        wl::count_unequal(C.get(), R.get(), DType::F32, mn, counter_, s_);
        EXPECT_EQ(read_counter(), 0u);
      }
    }
  }
}

TEST_F(Kernels, BuiltinGemmMisalignedPointers) {
  // Offsets of one element break the vector paths' alignment: the scalar paths must agree.
  const int M = 70, N = 68, K = 36;
  for (DType t : kAllTypes) {
    SCOPED_TRACE(name_of(t));
    const std::size_t es = elem_size(t);
    DevBuf A((M * K + 1) * es), B((K * N + 1) * es), C((M * N + 1) * es), C0(M * N * es);
    void* a = A.get<char>() + es;
    void* b = B.get<char>() + es;
    void* c = C.get<char>() + es;
    wl::fill_random(a, t, M * K, 5, s_);
    wl::fill_random(b, t, K * N, 6, s_);
    poison(C.get(), C.bytes());
    poison(C0.get(), C0.bytes());
    wl::builtin_gemm(a, b, c, t, M, N, K, 0, s_);
    // The same inputs at aligned addresses.
    DevBuf A2(M * K * es), B2(K * N * es);
    CCO_CUDA_CHECK(cudaMemcpyAsync(A2.get(), a, M * K * es, cudaMemcpyDeviceToDevice, s_));
    CCO_CUDA_CHECK(cudaMemcpyAsync(B2.get(), b, K * N * es, cudaMemcpyDeviceToDevice, s_));
    wl::builtin_gemm(A2.get(), B2.get(), C0.get(), t, M, N, K, 0, s_);
    zero_counter();
    wl::count_unequal(c, C0.get(), t, M * N, counter_, s_);
    EXPECT_EQ(read_counter(), 0u);
    zero_counter();
    wl::check_pattern(C0.get(), t, M * N, 1.0, 0, 1, counter_, s_);  // outputs are not all ones
    EXPECT_GT(read_counter(), 0u);
  }
}

TEST_F(Kernels, BuiltinGemmKZeroWritesZeros) {
  DevBuf C(5 * 7 * sizeof(float)), Z(5 * 7 * sizeof(float));
  poison(C.get(), C.bytes());
  CCO_CUDA_CHECK(cudaMemsetAsync(Z.get(), 0, Z.bytes(), s_));
  wl::builtin_gemm(Z.get(), Z.get(), C.get(), DType::F32, 5, 7, 0, 0, s_);
  zero_counter();
  wl::count_unequal(C.get(), Z.get(), DType::F32, 35, counter_, s_);
  EXPECT_EQ(read_counter(), 0u);
}

TEST_F(Kernels, GridAndKernelQueries) {
  const dim3 g = wl::builtin_gemm_grid(257, 129);
  EXPECT_EQ(g.x, 3u);
  EXPECT_EQ(g.y, 5u);
  EXPECT_EQ(g.z, 1u);
  for (DType t : kAllTypes) {
    cudaFuncAttributes attr{};
    CCO_CUDA_CHECK(cudaFuncGetAttributes(&attr, wl::builtin_gemm_kernel(t)));
    EXPECT_GT(attr.sharedSizeBytes, 0u) << name_of(t);
    EXPECT_LE(attr.sharedSizeBytes, 48u * 1024u) << name_of(t);
    EXPECT_GE(attr.maxThreadsPerBlock, wl::kGemmThreads) << name_of(t);
  }
  cudaFuncAttributes attr{};
  CCO_CUDA_CHECK(cudaFuncGetAttributes(&attr, wl::membound_kernel()));
  EXPECT_GE(attr.maxThreadsPerBlock, wl::kMemThreads);
}

// ---- shaped launches --------------------------------------------------------------------------

TEST_F(Kernels, ShapedGemmIsBitwiseIdentical) {
  const int M = 300, N = 260, K = 130;
  const std::size_t extras[] = {0, 20000, 100000};
  for (DType t : kAllTypes) {
    SCOPED_TRACE(name_of(t));
    const std::size_t es = elem_size(t);
    DevBuf A(static_cast<std::size_t>(M) * K * es), B(static_cast<std::size_t>(K) * N * es);
    DevBuf C0(static_cast<std::size_t>(M) * N * es), C1(static_cast<std::size_t>(M) * N * es);
    wl::fill_random(A.get(), t, static_cast<std::size_t>(M) * K, 77, s_);
    wl::fill_random(B.get(), t, static_cast<std::size_t>(K) * N, 78, s_);
    poison(C0.get(), C0.bytes());
    wl::builtin_gemm(A.get(), B.get(), C0.get(), t, M, N, K, 0, s_);
    for (std::size_t extra : extras) {
      SCOPED_TRACE("extra_smem=" + std::to_string(extra));
      poison(C1.get(), C1.bytes());
      wl::builtin_gemm(A.get(), B.get(), C1.get(), t, M, N, K, extra, s_);
      zero_counter();
      wl::count_unequal(C0.get(), C1.get(), t, static_cast<std::size_t>(M) * N, counter_, s_);
      EXPECT_EQ(read_counter(), 0u);
    }
  }
  // Padding really shapes occupancy (the launcher raised the opt-in limit above).
  const void* k = wl::builtin_gemm_kernel(DType::F32);
  int occ0 = 0, occ_big = 0;
  CCO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ0, k, wl::kGemmThreads, 0));
  CCO_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_big, k, wl::kGemmThreads, 100000));
  EXPECT_GE(occ0, 2);
  EXPECT_GE(occ_big, 1);
  EXPECT_LT(occ_big, occ0);
}

TEST_F(Kernels, ShapedMemboundIsBitwiseIdentical) {
  const std::size_t n = (1u << 20) + 3;
  const float alpha = 0.75f;
  DevBuf x(n * 4), y(n * 4), z0(n * 4), z1(n * 4);
  wl::fill_random(x.get(), DType::F32, n, 1, s_);
  wl::fill_random(y.get(), DType::F32, n, 2, s_);
  poison(z0.get(), z0.bytes());
  wl::membound(x.get<float>(), y.get<float>(), z0.get<float>(), n, alpha, 0, s_);
  zero_counter();
  wl::check_membound(x.get<float>(), y.get<float>(), z0.get<float>(), n, alpha, counter_, s_);
  EXPECT_EQ(read_counter(), 0u);
  for (std::size_t extra : {std::size_t{0}, std::size_t{1024}, std::size_t{40000},
                            std::size_t{60000}, std::size_t{100000}, std::size_t{200000}}) {
    SCOPED_TRACE("extra_smem=" + std::to_string(extra));
    poison(z1.get(), z1.bytes());
    wl::membound(x.get<float>(), y.get<float>(), z1.get<float>(), n, alpha, extra, s_);
    zero_counter();
    wl::count_unequal(z0.get(), z1.get(), DType::F32, n, counter_, s_);
    EXPECT_EQ(read_counter(), 0u);
  }
  int occ0 = 0, occ_big = 0;
  CCO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ0, wl::membound_kernel(),
                                                               wl::kMemThreads, 0));
  CCO_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_big, wl::membound_kernel(),
                                                               wl::kMemThreads, 200000));
  EXPECT_EQ(occ_big, 1);
  EXPECT_GT(occ0, occ_big);
}

// ---- fills and checks -------------------------------------------------------------------------

TEST_F(Kernels, PatternRoundTripAndCorruption) {
  const std::size_t n = 100003;
  const double scale = 0.5;
  const std::uint64_t offset = 12345;
  const int mod = 97;  // values 0.5 .. 48.5: exact in every dtype
  for (DType t : kAllTypes) {
    SCOPED_TRACE(name_of(t));
    const std::size_t es = elem_size(t);
    DevBuf buf(n * es);
    poison(buf.get(), buf.bytes());
    wl::fill_pattern(buf.get(), t, n, scale, offset, mod, s_);
    zero_counter();
    wl::check_pattern(buf.get(), t, n, scale, offset, mod, counter_, s_);
    EXPECT_EQ(read_counter(), 0u);

    // Host view of a few values.
    const auto h = to_host(buf.get(), buf.bytes());
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{96}, n / 2, n - 1})
      EXPECT_EQ(host_value(h, t, i), scale * static_cast<double>((offset + i) % mod + 1)) << i;

    // Another offset or scale does not match.
    zero_counter();
    wl::check_pattern(buf.get(), t, n, scale, offset + 1, mod, counter_, s_);
    EXPECT_EQ(read_counter(), n);
    zero_counter();
    wl::check_pattern(buf.get(), t, n, 2 * scale, offset, mod, counter_, s_);
    EXPECT_EQ(read_counter(), n);

    // One corrupted element is counted exactly once, a NaN too.
    const std::size_t bad = 4242;
    const unsigned char minus_one_f32[4] = {0x00, 0x00, 0x80, 0xBF};  // -1.0f
    const unsigned char minus_one_16[2] = {static_cast<unsigned char>(t == DType::F16 ? 0x00 : 0x80),
                                           static_cast<unsigned char>(t == DType::F16 ? 0xBC : 0xBF)};
    CCO_CUDA_CHECK(cudaMemcpyAsync(buf.get<char>() + bad * es,
                                   t == DType::F32 ? minus_one_f32 : minus_one_16, es,
                                   cudaMemcpyHostToDevice, s_));
    zero_counter();
    wl::check_pattern(buf.get(), t, n, scale, offset, mod, counter_, s_);
    EXPECT_EQ(read_counter(), 1u);
    CCO_CUDA_CHECK(cudaMemsetAsync(buf.get<char>() + (n - 1) * es, 0xFF, es, s_));  // NaN
    zero_counter();
    wl::check_pattern(buf.get(), t, n, scale, offset, mod, counter_, s_);
    EXPECT_EQ(read_counter(), 2u);
  }
}

TEST_F(Kernels, PatternOverTwoToThe31Elements) {
  const std::size_t n = (std::size_t{1} << 31) + 5;  // 4 GiB of bf16: exercises size_t indices
  std::size_t free_b = 0, total_b = 0;
  CCO_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < 2 * n + (std::size_t{1} << 30)) GTEST_SKIP() << "needs ~5 GiB of free GPU memory";
  DevBuf buf(2 * n);
  wl::fill_pattern(buf.get(), DType::BF16, n, 1.0, 7, 200, s_);
  zero_counter();
  wl::check_pattern(buf.get(), DType::BF16, n, 1.0, 7, 200, counter_, s_);
  EXPECT_EQ(read_counter(), 0u);
  const auto tail = to_host(buf.get<char>() + 2 * (n - 4), 8);
  for (std::size_t j = 0; j < 4; ++j)
    EXPECT_EQ(host_value(tail, DType::BF16, j), static_cast<float>((7 + n - 4 + j) % 200 + 1));
  CCO_CUDA_CHECK(cudaMemsetAsync(buf.get<char>() + 2 * (n - 1), 0, 2, s_));  // last element: 0
  zero_counter();
  wl::check_pattern(buf.get(), DType::BF16, n, 1.0, 7, 200, counter_, s_);
  EXPECT_EQ(read_counter(), 1u);
}

TEST_F(Kernels, FillRandomIsDeterministicAndInRange) {
  const std::size_t n = 65537;
  for (DType t : kAllTypes) {
    SCOPED_TRACE(name_of(t));
    const std::size_t es = elem_size(t);
    DevBuf a(n * es), b(n * es);
    wl::fill_random(a.get(), t, n, 42, s_);
    wl::fill_random(b.get(), t, n, 42, s_);
    zero_counter();
    wl::count_unequal(a.get(), b.get(), t, n, counter_, s_);
    EXPECT_EQ(read_counter(), 0u);
    wl::fill_random(b.get(), t, n, 43, s_);
    zero_counter();
    wl::count_unequal(a.get(), b.get(), t, n, counter_, s_);
    EXPECT_GT(read_counter(), n / 2);
    const auto h = to_host(a.get(), a.bytes());
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float v = host_value(h, t, i);
      ASSERT_TRUE(v >= -1.0f && v < 1.0f && v != 0.0f) << "element " << i << " = " << v;
      sum += v;
    }
    EXPECT_LT(std::fabs(sum / static_cast<double>(n)), 0.02);  // roughly centred
  }
}

TEST_F(Kernels, CompareToRefCountsOutliersAndNaN) {
  const std::size_t n = 1000;
  DevBuf out(n * 4), ref(n * 4);
  wl::fill_random(ref.get(), DType::F32, n, 9, s_);
  CCO_CUDA_CHECK(cudaMemcpyAsync(out.get(), ref.get(), n * 4, cudaMemcpyDeviceToDevice, s_));
  zero_counter();
  wl::compare_to_ref(out.get(), DType::F32, ref.get<float>(), n, 0.0f, 0.0f, counter_, s_);
  EXPECT_EQ(read_counter(), 0u);
  const float big = 10.0f;
  CCO_CUDA_CHECK(cudaMemcpyAsync(out.get<float>() + 3, &big, 4, cudaMemcpyHostToDevice, s_));
  CCO_CUDA_CHECK(cudaMemsetAsync(out.get<float>() + 500, 0xFF, 4, s_));
  zero_counter();
  wl::compare_to_ref(out.get(), DType::F32, ref.get<float>(), n, 1e-3f, 1e-3f, counter_, s_);
  EXPECT_EQ(read_counter(), 2u);
  zero_counter();
  wl::count_unequal(out.get(), ref.get(), DType::F32, n, counter_, s_);
  EXPECT_EQ(read_counter(), 2u);
}

TEST_F(Kernels, CheckMemboundDetectsCorruption) {
  const float alpha = -1.5f;
  for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{1025}, std::size_t{300001}}) {
    for (std::size_t off : {std::size_t{0}, std::size_t{1}}) {  // off = 1: scalar path
      SCOPED_TRACE("n=" + std::to_string(n) + " offset=" + std::to_string(off));
      DevBuf x((n + 1) * 4), y((n + 1) * 4), z((n + 1) * 4);
      float* xp = x.get<float>() + off;
      float* yp = y.get<float>() + off;
      float* zp = z.get<float>() + off;
      wl::fill_random(xp, DType::F32, n, 3, s_);
      wl::fill_random(yp, DType::F32, n, 4, s_);
      poison(z.get(), z.bytes());
      wl::membound(xp, yp, zp, n, alpha, 0, s_);
      zero_counter();
      wl::check_membound(xp, yp, zp, n, alpha, counter_, s_);
      EXPECT_EQ(read_counter(), 0u);
      const float junk = 123.0f;
      CCO_CUDA_CHECK(cudaMemcpyAsync(zp + n / 2, &junk, 4, cudaMemcpyHostToDevice, s_));
      zero_counter();
      wl::check_membound(xp, yp, zp, n, alpha, counter_, s_);
      EXPECT_EQ(read_counter(), 1u);
    }
  }
}

TEST_F(Kernels, BadArgumentsThrow) {
  DevBuf b(64);
  EXPECT_THROW(wl::fill_pattern(b.get(), DType::F32, 4, 1.0, 0, 0, s_), std::invalid_argument);
  EXPECT_THROW(wl::check_pattern(b.get(), DType::F32, 4, 1.0, 0, 1, nullptr, s_),
               std::invalid_argument);
  EXPECT_THROW(wl::builtin_gemm(b.get(), b.get(), b.get(), DType::F32, -1, 2, 2, 0, s_),
               std::invalid_argument);
  int dev = 0, optin = 0;
  CCO_CUDA_CHECK(cudaGetDevice(&dev));
  CCO_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  EXPECT_THROW(wl::builtin_gemm(b.get(), b.get(), b.get(), DType::F32, 2, 2, 2,
                                static_cast<std::size_t>(optin) + 1, s_),
               cco::rt::Error);
  CCO_CUDA_CHECK(cudaStreamSynchronize(s_));
}

}  // namespace
