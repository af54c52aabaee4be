#include <cublasLt.h>

#include <cmath>

#include "runtime/check.hpp"
#include "runtime/lazy.hpp"
#include "runtime/device.hpp"
#include "kernels/kernels.hpp"
#include "kernels/workload.hpp"

namespace cco::wl {

namespace {

/// Device buffer owned by RAII.
struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) { CCO_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

/// Common part of the two GEMMs: A, B, C, the snapshot and the fp32 reference.
class GemmBase : public ComputeOp {
 public:
  explicit GemmBase(const ComputeSpec& s)
      : spec_(s),
        esz_(model::dtype_size(s.dtype)),
        a_(static_cast<size_t>(s.m * s.k) * esz_),
        b_(static_cast<size_t>(s.k * s.n) * esz_),
        c_(static_cast<size_t>(s.m * s.n) * esz_),
        snap_(static_cast<size_t>(s.m * s.n) * esz_) {
    fill_random(a_.p, s.dtype, static_cast<size_t>(s.m * s.k), s.seed, nullptr);
    fill_random(b_.p, s.dtype, static_cast<size_t>(s.k * s.n), s.seed + 1, nullptr);
    CCO_CUDA_CHECK(cudaDeviceSynchronize());
  }
  double flops() const override { return model::gemm_flops(spec_.m, spec_.n, spec_.k, spec_.count); }
  double bytes() const override {
    return static_cast<double>((spec_.m * spec_.k + spec_.k * spec_.n + spec_.m * spec_.n) * esz_) *
           spec_.count;
  }
  void poison(cudaStream_t s) override {
    CCO_CUDA_CHECK(cudaMemsetAsync(c_.p, 0xff, static_cast<size_t>(spec_.m * spec_.n) * esz_, s));
  }
  void snapshot(cudaStream_t s) override {
    CCO_CUDA_CHECK(cudaMemcpyAsync(snap_.p, c_.p, static_cast<size_t>(spec_.m * spec_.n) * esz_,
                                   cudaMemcpyDeviceToDevice, s));
  }
  void verify(unsigned long long* wrong, bool reference, cudaStream_t s) override {
    const auto n = static_cast<size_t>(spec_.m * spec_.n);
    count_unequal(c_.p, snap_.p, spec_.dtype, n, wrong, s);
    if (!reference) return;
    if (!ref_) {
      ref_ = std::make_unique<DevBuf>(n * sizeof(float));
      reference_gemm(a_.p, b_.p, static_cast<float*>(ref_->p), spec_.dtype, static_cast<int>(spec_.m),
                     static_cast<int>(spec_.n), static_cast<int>(spec_.k), s);
    }
    // Inputs are uniform in [-1, 1): |C| grows like sqrt(K); the tolerance is relative to that
    // scale (atol) plus the element (rtol), loose enough for bf16 rounding of the output.
    const float scale = std::sqrt(static_cast<float>(spec_.k) / 3.0f);
    const float rtol = spec_.dtype == DType::BF16 ? 1.6e-2f : spec_.dtype == DType::F16 ? 2e-3f : 1e-4f;
    compare_to_ref(c_.p, spec_.dtype, static_cast<const float*>(ref_->p), n, rtol, rtol * scale, wrong, s);
  }

 protected:
  ComputeSpec spec_;
  size_t esz_;
  DevBuf a_, b_, c_, snap_;
  std::unique_ptr<DevBuf> ref_;
};

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

/// cuBLASLt GEMM. Row-major C = A B is computed as column-major C^T = B^T A^T. The algorithm is
/// chosen once by the heuristic and reused, so every run computes the same way.
class LtGemm final : public GemmBase {
 public:
  explicit LtGemm(const ComputeSpec& s) : GemmBase(s), ws_(kWorkspace) {
    rt::require(rt::Lib::CublasLt, "a cuBLASLt GEMM");
    CCO_CUBLAS_CHECK(cublasLtCreate(&lt_));
    CCO_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t no = CUBLAS_OP_N;
    CCO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &no, sizeof no));
    CCO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof no));
    if (s.sm_count_target > 0) {
      const int32_t sms = s.sm_count_target;
      CCO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                                      &sms, sizeof sms));
    }
    const auto t = lt_type(s.dtype);
    // Column-major views: B^T is N x K (ld N), A^T is K x M (ld K), C^T is N x M (ld N).
    CCO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la_, t, s.n, s.k, s.n));
    CCO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb_, t, s.k, s.m, s.k));
    CCO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc_, t, s.n, s.m, s.n));
    cublasLtMatmulPreference_t pref = nullptr;
    CCO_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kWorkspace;
    CCO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int found = 0;
    cublasLtMatmulHeuristicResult_t res{};
    const auto st = cublasLtMatmulAlgoGetHeuristic(lt_, desc_, la_, lb_, lc_, lc_, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    CCO_CUBLAS_CHECK(st);
    if (found < 1) throw rt::Error("cuBLASLt found no algorithm for " + describe());
    algo_ = res.algo;
  }
  ~LtGemm() override {
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatmulDescDestroy(desc_);
    cublasLtDestroy(lt_);
  }
  std::string describe() const override {
    std::string d = "cublaslt " + std::string(model::to_string(spec_.dtype)) + " " +
                    std::to_string(spec_.m) + "x" + std::to_string(spec_.n) + "x" +
                    std::to_string(spec_.k) + " x" + std::to_string(spec_.count);
    if (spec_.sm_count_target > 0) d += " sms=" + std::to_string(spec_.sm_count_target);
    return d;
  }
  void enqueue(cudaStream_t s) override {
    const float alpha = 1.0f, beta = 0.0f;
    for (int i = 0; i < spec_.count; ++i)
      CCO_CUBLAS_CHECK(cublasLtMatmul(lt_, desc_, &alpha, b_.p, la_, a_.p, lb_, &beta, c_.p, lc_,
                                      c_.p, lc_, &algo_, ws_.p, kWorkspace, s));
  }
  bool shapeable() const override { return false; }
  const void* kernel() const override { return nullptr; }
  model::Footprint footprint() const override { return {}; }
  void set_extra_smem(int64_t bytes) override {
    if (bytes != 0)
      throw model::Error("cuBLASLt launches are not ours: padding them needs `cco run` (preload)");
  }

 private:
  static constexpr size_t kWorkspace = size_t{32} << 20;
  DevBuf ws_;
  cublasLtHandle_t lt_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

/// The built-in tiled GEMM: a launch we control, so shaping needs no interposer.
class BuiltinGemm final : public GemmBase {
 public:
  explicit BuiltinGemm(const ComputeSpec& s) : GemmBase(s) {}
  std::string describe() const override {
    return "builtin " + std::string(model::to_string(spec_.dtype)) + " " + std::to_string(spec_.m) +
           "x" + std::to_string(spec_.n) + "x" + std::to_string(spec_.k) + " x" +
           std::to_string(spec_.count);
  }
  void enqueue(cudaStream_t s) override {
    for (int i = 0; i < spec_.count; ++i)
      builtin_gemm(a_.p, b_.p, c_.p, spec_.dtype, static_cast<int>(spec_.m), static_cast<int>(spec_.n),
                   static_cast<int>(spec_.k), static_cast<size_t>(extra_), s);
  }
  bool shapeable() const override { return true; }
  const void* kernel() const override { return builtin_gemm_kernel(spec_.dtype); }
  model::Footprint footprint() const override {
    return rt::footprint_of(builtin_gemm_kernel(spec_.dtype), kGemmThreads, extra_);
  }
  void set_extra_smem(int64_t bytes) override {
    rt::allow_dynamic_smem(builtin_gemm_kernel(spec_.dtype), bytes);
    extra_ = bytes;
  }

 private:
  int64_t extra_ = 0;
};

/// z = alpha x + y over mem_bytes per array, `count` passes.
class MemBound final : public ComputeOp {
 public:
  explicit MemBound(const ComputeSpec& s)
      : spec_(s),
        n_(static_cast<size_t>(s.mem_bytes) / sizeof(float)),
        x_(n_ * sizeof(float)),
        y_(n_ * sizeof(float)),
        z_(n_ * sizeof(float)) {
    fill_random(x_.p, DType::F32, n_, s.seed, nullptr);
    fill_random(y_.p, DType::F32, n_, s.seed + 1, nullptr);
    CCO_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::string describe() const override {
    return "membound " + model::format_bytes(spec_.mem_bytes) + " x" + std::to_string(spec_.count);
  }
  void enqueue(cudaStream_t s) override {
    for (int i = 0; i < spec_.count; ++i)
      membound(static_cast<const float*>(x_.p), static_cast<const float*>(y_.p),
               static_cast<float*>(z_.p), n_, kAlpha, static_cast<size_t>(extra_), s);
  }
  double flops() const override { return 0; }
  double bytes() const override { return 3.0 * static_cast<double>(n_ * sizeof(float)) * spec_.count; }
  bool shapeable() const override { return true; }
  const void* kernel() const override { return membound_kernel(); }
  model::Footprint footprint() const override {
    return rt::footprint_of(membound_kernel(), kMemThreads, extra_);
  }
  void set_extra_smem(int64_t bytes) override {
    rt::allow_dynamic_smem(membound_kernel(), bytes);
    extra_ = bytes;
  }
  void poison(cudaStream_t s) override {
    CCO_CUDA_CHECK(cudaMemsetAsync(z_.p, 0xff, n_ * sizeof(float), s));
  }
  void snapshot(cudaStream_t) override {}  // the answer is recomputed exactly by the check
  void verify(unsigned long long* wrong, bool, cudaStream_t s) override {
    check_membound(static_cast<const float*>(x_.p), static_cast<const float*>(y_.p),
                   static_cast<const float*>(z_.p), n_, kAlpha, wrong, s);
  }

 private:
  static constexpr float kAlpha = 1.5f;
  ComputeSpec spec_;
  size_t n_;
  DevBuf x_, y_, z_;
  int64_t extra_ = 0;
};

}  // namespace

std::unique_ptr<ComputeOp> make_compute(const ComputeSpec& s) {
  if (s.kind == ComputeKind::MemBound) return std::make_unique<MemBound>(s);
  if (s.kind == ComputeKind::Builtin) return std::make_unique<BuiltinGemm>(s);
  return std::make_unique<LtGemm>(s);
}

}  // namespace cco::wl
