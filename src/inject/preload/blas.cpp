#include "preload/blas.hpp"

#include <string>

#include "common/log.hpp"
#include "preload/order_window.hpp"

namespace cco::preload {

const char* to_string(GemmWhy w) {
  switch (w) {
    case GemmWhy::Off:
      return "off";
    case GemmWhy::Outside:
      return "outside-window";
    case GemmWhy::NoDevice:
      return "no-device";
    case GemmWhy::OutOfRange:
      return "out-of-range";
    case GemmWhy::ProgramStricter:
      return "program-stricter";
    case GemmWhy::Applied:
      return "applied";
  }
  return "?";
}

GemmDecision decide_gemm(const plan::Gemm& gemm, int sms, bool window_open, int program) {
  if (!gemm.active()) return {program, GemmWhy::Off};
  if (gemm.when == plan::When::Overlap && !window_open) return {program, GemmWhy::Outside};
  if (sms < 1) return {program, GemmWhy::NoDevice};
  const int t = gemm.target_for(sms);
  if (t == 0) return {program, GemmWhy::OutOfRange};
  if (program > 0 && program < t) return {program, GemmWhy::ProgramStricter};
  return {t, GemmWhy::Applied};
}

bool BlasCopy::accept(const void* object, const char* path) {
  if (!object) return false;
  const void* expected = nullptr;
  if (first_.compare_exchange_strong(expected, object, std::memory_order_acq_rel)) {
    path_.store(path, std::memory_order_release);
    return true;
  }
  if (expected == object) return true;
  warn_once(std::string("second-copy-") + what_,
            std::string("a second copy of ") + what_ + " is loaded" +
                (path && *path ? std::string(" (") + path + ")" : std::string()) +
                "; its calls are left alone");
  return false;
}

Blas::Blas(const BlasApi& api, const plan::Gemm& gemm, const OrderWindow* window, Stats& stats,
           std::size_t max_handles)
    : api_(api),
      gemm_(gemm),
      window_(window),
      stats_(&stats),
      active_(gemm.active()),
      max_handles_(max_handles) {}

Blas::Blas(const BlasApi& api, ControlFn current, std::size_t max_handles)
    : api_(api), current_(current), active_(current != nullptr), max_handles_(max_handles) {}

GemmControl Blas::control() const {
  if (current_) return current_();
  return GemmControl{&gemm_, stats_, window_};
}

int Blas::sms(int dev) {
  if (dev < 0 || dev >= kMaxDevices) return 0;
  int n = sms_[dev].load(std::memory_order_acquire);
  if (n != 0) return n;
  int v = 0;
  const CUresult r =
      api_.deviceGetAttribute
          ? api_.deviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
          : CUDA_ERROR_NOT_SUPPORTED;
  n = (r == CUDA_SUCCESS && v > 0) ? v : -1;
  if (n < 0)
    warn_once("gemm-sms", "cannot query the SM count of device " + std::to_string(dev) + " (" +
                              cu_error_text(r) + "); its GEMMs keep their SM target");
  sms_[dev].store(n, std::memory_order_release);
  return n;
}

GemmDecision Blas::decide(const GemmControl& c, int program) {
  static const plan::Gemm kNone{};
  const plan::Gemm& g = c.gemm ? *c.gemm : kNone;
  if (!g.active()) return decide_gemm(g, 0, false, program);  // no device query needed
  CUdevice dev = -1;
  if (!api_.ctxGetDevice || api_.ctxGetDevice(&dev) != CUDA_SUCCESS) dev = -1;
  const int n = dev >= 0 ? sms(dev) : 0;
  const bool open = g.when == plan::When::Always || (c.window && c.window->open(dev));
  const GemmDecision d = decide_gemm(g, n, open, program);
  if (d.why == GemmWhy::OutOfRange)
    warn_once("gemm-range-" + std::to_string(g.sm_target) + "-" + std::to_string(n),
              "gemm.sm_target " + std::to_string(g.sm_target) + " is out of range for a " +
                  std::to_string(n) + "-SM device (device " + std::to_string(dev) +
                  "); GEMMs there keep their SM target");
  if (d.why == GemmWhy::Applied && c.stats)
    c.stats->gemm_sm_targeted.fetch_add(1, std::memory_order_relaxed);
  return d;
}

void Blas::before_gemm(cublasHandle_t h) {
  const GemmControl c = control();
  if (c.stats) c.stats->gemm_calls.fetch_add(1, std::memory_order_relaxed);
  if (!active_ || !h || !api_.getSmCountTarget || !api_.setSmCountTarget) return;
  int cur = 0;
  if (api_.getSmCountTarget(h, &cur) != CUBLAS_STATUS_SUCCESS) return;  // the GEMM will say why
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(h);
  if (it == handles_.end()) {
    if (handles_.size() >= max_handles_) {
      warn_once("gemm-handles", "more than " + std::to_string(max_handles_) +
                                    " cuBLAS handles: GEMMs of later ones keep their SM target");
      return;
    }
    it = handles_.emplace(h, HandleState{cur, -1}).first;
  }
  HandleState& st = it->second;
  // The handle does not hold what the library set: the program changed it behind our back, or
  // this is a new handle at an old one's address. Either way it holds the program's own value.
  if (st.ours < 0 || cur != st.ours) {
    st.program = cur;
    st.ours = -1;
  }
  const GemmDecision d = decide(c, st.program);
  if (d.target == cur) return;
  if (api_.setSmCountTarget(h, d.target) != CUBLAS_STATUS_SUCCESS) {
    warn_once("gemm-set", "cublasSetSmCountTarget(" + std::to_string(d.target) +
                              ") failed; GEMMs keep their SM target");
    return;
  }
  st.ours = d.target == st.program ? -1 : d.target;
}

cublasStatus_t Blas::program_set(cublasHandle_t h, int target, SetSmCountTargetFn real) {
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t r = real(h, target);
  if (!active_ || r != CUBLAS_STATUS_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(h);
  if (it != handles_.end())
    it->second = HandleState{target, -1};
  else if (handles_.size() < max_handles_)
    handles_.emplace(h, HandleState{target, -1});
  return r;
}

cublasStatus_t Blas::program_get(cublasHandle_t h, int* target, GetSmCountTargetFn real) {
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t r = real(h, target);
  if (!active_ || r != CUBLAS_STATUS_SUCCESS || !target) return r;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(h);
  // Only while the handle holds exactly what the library set: anything else is the program's.
  if (it != handles_.end() && it->second.ours >= 0 && *target == it->second.ours)
    *target = it->second.program;
  return r;
}

std::size_t Blas::handles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return handles_.size();
}

bool Blas::lt_before(cublasLtMatmulDesc_t d, int32_t* own) {
  const GemmControl c = control();
  if (c.stats) c.stats->gemm_calls.fetch_add(1, std::memory_order_relaxed);
  if (!active_ || !d || !api_.ltDescGet || !api_.ltDescSet) return false;
  size_t written = 0;
  *own = 0;
  if (api_.ltDescGet(d, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, own, sizeof *own, &written) !=
          CUBLAS_STATUS_SUCCESS ||
      written != sizeof *own)
    return false;  // the call itself will report a bad descriptor
  const GemmDecision dec = decide(c, *own);
  if (dec.target == *own) return false;
  const int32_t v = dec.target;
  if (api_.ltDescSet(d, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &v, sizeof v) !=
      CUBLAS_STATUS_SUCCESS) {
    warn_once("gemm-lt-set",
              "cannot set CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET; cuBLASLt calls keep their target");
    return false;
  }
  return true;
}

void Blas::lt_after(cublasLtMatmulDesc_t d, int32_t own) {
  if (api_.ltDescSet(d, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &own, sizeof own) !=
      CUBLAS_STATUS_SUCCESS)
    warn_once("gemm-lt-restore",
              "cannot restore a matmul descriptor's CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET");
}

}  // namespace cco::preload
