// The compute SM budget of the program's cuBLAS and cuBLASLt GEMMs (plan.gemm; docs/PRELOAD.md,
// "The compute SM budget").
//
// The decision is pure (decide_gemm): the plan's gemm section, the device's SM count, whether the
// launch-order window is open on the device (order_window.hpp) and the program's own target give
// the SM-count target a GEMM runs with. The vendor calls go through BlasApi, a table of function
// pointers (tests fill it with fakes, interpose.cpp with the program's cuBLAS and cuBLASLt):
//   cuBLAS     before each GEMM the handle's target (cublasSetSmCountTarget) is made the decided
//              one, only when it differs from what the handle has. The program's own value -- read
//              from the handle the first time, or set through the interposed
//              cublasSetSmCountTarget -- is what cublasGetSmCountTarget reports to it, and what the
//              handle gets back once the decision says so (the window closed);
//   cuBLASLt   cublasLtMatmul and cublasLtMatmulAlgoGetHeuristic run with the caller's descriptor's
//              CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET set to the decided value; the caller's own
//              value is read first and written back right after the call.
// Nothing is changed unless the plan asks for an SM target: another target may make cuBLAS choose
// another algorithm and so change rounding (reproducibly: same plan, inputs and launch order, same
// decisions).
//
// The gemm section is read at each call, from the control in force: one plan's (the single-plan
// constructor), or whichever configuration a rotation or ccoverlap.policy() has switched to (the
// ControlFn constructor). So the SM budget switches between steps like shaping does: the handle's
// target follows the configuration in force, and the program's own value comes back under one
// without an SM target.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "plan/plan.hpp"
#include "preload/stats.hpp"

namespace cco::preload {

class OrderWindow;

enum class GemmWhy {
  Off,              ///< no gemm section (or policy off): the program's own target
  Outside,          ///< when: overlap, and the window is closed on the device
  NoDevice,         ///< the device or its SM count is unknown
  OutOfRange,       ///< the plan's target is < 1 or > the device's SMs after carveout
  ProgramStricter,  ///< the program's own target is smaller: kept
  Applied,          ///< the plan's target
};
const char* to_string(GemmWhy w);

struct GemmDecision {
  int target = 0;  ///< the SM-count target to run with (0: the device's count, cuBLAS's default)
  GemmWhy why = GemmWhy::Off;
};

/// Pure: the target a GEMM runs with. `program` is the program's own target (0: none).
GemmDecision decide_gemm(const plan::Gemm& gemm, int sms, bool window_open, int program);

using SetSmCountTargetFn = cublasStatus_t (*)(cublasHandle_t, int);
using GetSmCountTargetFn = cublasStatus_t (*)(cublasHandle_t, int*);
using LtDescGetFn = cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void*,
                                       size_t, size_t*);
using LtDescSetFn = cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                       const void*, size_t);

struct BlasApi {
  // cuBLAS (the copy the library acts on).
  SetSmCountTargetFn setSmCountTarget = nullptr;
  GetSmCountTargetFn getSmCountTarget = nullptr;
  // cuBLASLt.
  LtDescGetFn ltDescGet = nullptr;
  LtDescSetFn ltDescSet = nullptr;
  // The driver: the current device and its SM count.
  CUresult (*ctxGetDevice)(CUdevice* dev) = nullptr;
  CUresult (*deviceGetAttribute)(int* value, CUdevice_attribute attr, CUdevice dev) = nullptr;
};

/// Which copy of a vendor library the library acts on: the first one seen. A second, different
/// copy (another cuBLAS in the same process) is left alone, with one warning.
class BlasCopy {
 public:
  constexpr explicit BlasCopy(const char* what) : what_(what) {}
  /// True for the copy loaded at `object` (its base address) when it is the first one seen.
  bool accept(const void* object, const char* path = nullptr);
  const void* first() const { return first_.load(std::memory_order_acquire); }
  /// The first copy's file (as the dynamic linker named it), or null.
  const char* path() const { return path_.load(std::memory_order_acquire); }

 private:
  const char* what_;
  std::atomic<const void*> first_{nullptr};
  std::atomic<const char*> path_{nullptr};
};

/// The control in force for one call: its gemm section, the statistics it counts in and the
/// launch-order window (null: none; only asked under `when: overlap`).
struct GemmControl {
  const plan::Gemm* gemm = nullptr;  ///< null: no SM target
  Stats* stats = nullptr;            ///< null: not counted
  const OrderWindow* window = nullptr;
};
using ControlFn = GemmControl (*)();

class Blas {
 public:
  /// One plan's control. `window` may be null (no `when: overlap`: it is never asked). `stats`
  /// counts gemm_*.
  Blas(const BlasApi& api, const plan::Gemm& gemm, const OrderWindow* window, Stats& stats,
       std::size_t max_handles = 65536);
  /// The control in force is asked of `current` at every call (a rotation between
  /// configurations); always active: a configuration without an SM target gives the handle the
  /// program's own value back.
  Blas(const BlasApi& api, ControlFn current, std::size_t max_handles = 65536);
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  /// False when the plan has no SM target: the wrappers forward at once.
  bool active() const { return active_; }

  /// Before a cuBLAS GEMM on `h` (the current device is the handle's, as cuBLAS requires).
  void before_gemm(cublasHandle_t h);
  /// The program's cublasSetSmCountTarget through `real`: remembered as its own value.
  cublasStatus_t program_set(cublasHandle_t h, int target, SetSmCountTargetFn real);
  /// The program's cublasGetSmCountTarget through `real`: its own value, whatever the library
  /// set on the handle meanwhile.
  cublasStatus_t program_get(cublasHandle_t h, int* target, GetSmCountTargetFn real);

  /// A cuBLASLt call on descriptor `d`: `call()` runs with the decided target on `d`, whose own
  /// value is restored right after. Returns call()'s result.
  template <class Call>
  cublasStatus_t lt_call(cublasLtMatmulDesc_t d, Call&& call) {
    int32_t own = 0;
    if (!lt_before(d, &own)) return call();
    const cublasStatus_t r = call();
    lt_after(d, own);
    return r;
  }

  /// Handles the library keeps the program's target of (tests).
  std::size_t handles() const;

 private:
  struct HandleState {
    int program = 0;  ///< the program's own target
    int ours = -1;    ///< what the library set on the handle (-1: it holds the program's)
  };
  GemmControl control() const;
  // The decision for the current device under control `c`.
  GemmDecision decide(const GemmControl& c, int program);
  int sms(int dev);
  bool lt_before(cublasLtMatmulDesc_t d, int32_t* own);
  void lt_after(cublasLtMatmulDesc_t d, int32_t own);

  BlasApi api_;
  plan::Gemm gemm_;  // the single-plan control (current_ null)
  const OrderWindow* window_ = nullptr;
  Stats* stats_ = nullptr;
  ControlFn current_ = nullptr;
  bool active_;
  std::size_t max_handles_;
  mutable std::mutex mu_;
  std::unordered_map<cublasHandle_t, HandleState> handles_;
  static constexpr int kMaxDevices = 64;
  std::array<std::atomic<int>, kMaxDevices> sms_{};  // 0 unknown, -1 query failed
};

}  // namespace cco::preload
