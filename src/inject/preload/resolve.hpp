// Which driver entry points the program gets from dlsym and cuGetProcAddress: ours or the real
// ones. GPU-free and testable: the wrappers are opaque addresses here.
//
// Every real entry point the program looks up gets its own wrapper "slot", so the legacy and the
// per-thread-default-stream (_ptsz) variants, and any versioned variants the driver hands out,
// stay separate: a wrapper always calls exactly the pointer the program would have called.
#pragma once

#include <array>
#include <atomic>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace cco::preload {

/// The cuBLAS and cuBLASLt entry points the library wraps (blas.hpp): Sym::Blas<Id>, name.
#define CCO_BLAS_SYMS(X) \
  X(GemmEx, "cublasGemmEx") \
  X(GemmEx64, "cublasGemmEx_64") \
  X(GemmStridedBatchedEx, "cublasGemmStridedBatchedEx") \
  X(GemmStridedBatchedEx64, "cublasGemmStridedBatchedEx_64") \
  X(GemmBatchedEx, "cublasGemmBatchedEx") \
  X(GemmBatchedEx64, "cublasGemmBatchedEx_64") \
  X(Sgemm, "cublasSgemm_v2") \
  X(Sgemm64, "cublasSgemm_v2_64") \
  X(Dgemm, "cublasDgemm_v2") \
  X(Dgemm64, "cublasDgemm_v2_64") \
  X(Hgemm, "cublasHgemm") \
  X(Hgemm64, "cublasHgemm_64") \
  X(SgemmStridedBatched, "cublasSgemmStridedBatched") \
  X(SgemmStridedBatched64, "cublasSgemmStridedBatched_64") \
  X(DgemmStridedBatched, "cublasDgemmStridedBatched") \
  X(DgemmStridedBatched64, "cublasDgemmStridedBatched_64") \
  X(HgemmStridedBatched, "cublasHgemmStridedBatched") \
  X(HgemmStridedBatched64, "cublasHgemmStridedBatched_64") \
  X(SgemmEx, "cublasSgemmEx") \
  X(SgemmEx64, "cublasSgemmEx_64") \
  X(SetSmCountTarget, "cublasSetSmCountTarget") \
  X(GetSmCountTarget, "cublasGetSmCountTarget") \
  X(LtMatmul, "cublasLtMatmul") \
  X(LtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic") \
  /* end */

/// The entry points the library wraps, by ABI.
enum class Sym : int {
  LaunchKernel = 0,  ///< cuLaunchKernel, cuLaunchKernel_ptsz
  LaunchKernelEx,    ///< cuLaunchKernelEx, cuLaunchKernelEx_ptsz
  GetProcAddressV1,  ///< cuGetProcAddress (CUDA 11.3 ABI: 4 arguments)
  GetProcAddressV2,  ///< cuGetProcAddress_v2 (CUDA 12.0 ABI: 5 arguments)
  // The launch-order window (order_window.hpp).
  EventRecord,           ///< cuEventRecord, cuEventRecord_ptsz
  EventRecordWithFlags,  ///< cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz
  StreamWaitEvent,       ///< cuStreamWaitEvent, cuStreamWaitEvent_ptsz
  StreamSynchronize,     ///< cuStreamSynchronize, cuStreamSynchronize_ptsz
  EventSynchronize,      ///< cuEventSynchronize
  CtxSynchronize,        ///< cuCtxSynchronize (CUDA 2.0 ABI: no argument)
  CtxSynchronizeV2,      ///< cuCtxSynchronize_v2 (CUDA 13.0 ABI: a context)
  // Unloads: every cached kernel decision is forgotten (a handle may name another kernel next).
  ModuleUnload,   ///< cuModuleUnload
  LibraryUnload,  ///< cuLibraryUnload
  // cuBLAS and cuBLASLt (found by dlsym only).
#define CCO_BLAS_ENUM(id, name) Blas##id,
  CCO_BLAS_SYMS(CCO_BLAS_ENUM)
#undef CCO_BLAS_ENUM
  Count
};
/// The first cuBLAS/cuBLASLt entry (everything from there on is).
inline constexpr bool is_blas(Sym s) {
  return static_cast<int>(s) >= static_cast<int>(Sym::BlasGemmEx) && s != Sym::Count;
}
inline constexpr int kSymCount = static_cast<int>(Sym::Count);
/// Distinct real pointers per entry point (legacy, _ptsz, versions, several driver copies).
inline constexpr int kSlots = 8;
using WrapperSet = std::array<std::array<void*, kSlots>, kSymCount>;

/// The symbol names dlsym substitutes: cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz],
/// cuGetProcAddress (v1 ABI), cuGetProcAddress_v2, the window's cuEventRecord[WithFlags][_ptsz],
/// cuStreamWaitEvent[_ptsz], cuStreamSynchronize[_ptsz], cuEventSynchronize,
/// cuCtxSynchronize[_v2], cuModuleUnload, cuLibraryUnload, and the cuBLAS/cuBLASLt names of
/// CCO_BLAS_SYMS. nullopt for every other name.
std::optional<Sym> sym_for_dlsym(std::string_view name);

/// The names cuGetProcAddress substitutes: cuLaunchKernel, cuLaunchKernelEx (and their _ptsz
/// spellings, should the driver answer for them), and cuGetProcAddress itself, whose ABI is v2
/// when the caller asks for CUDA 12.0 or later and v1 before; the window's driver calls, where
/// cuCtxSynchronize has the v2 ABI (a context argument) for CUDA 13.0 or later requests; and
/// cuModuleUnload, cuLibraryUnload.
std::optional<Sym> sym_for_proc(std::string_view name, int cuda_version);

class SlotTable {
 public:
  /// `wrappers[s][i]` calls real(s, i). `own` are the library's exported functions: a lookup
  /// that returns one of them is already ours and is never wrapped again.
  explicit SlotTable(const WrapperSet& wrappers, std::initializer_list<const void*> own = {});

  /// The wrapper bound to `real` (the same wrapper for the same pointer, lock-free). Returns
  /// `real` itself when it is null, already one of ours, or every slot is taken.
  void* bind(Sym s, void* real);
  void* real(Sym s, int slot) const {
    return reals_[static_cast<int>(s)][slot].load(std::memory_order_acquire);
  }
  /// Any real pointer bound for `s` (for the library's own use), or null.
  void* any_real(Sym s) const;
  bool is_ours(const void* p) const;
  int used(Sym s) const;

 private:
  WrapperSet wrappers_;
  std::array<std::array<std::atomic<void*>, kSlots>, kSymCount> reals_{};
  std::array<const void*, 96> own_{};
};

/// What dlsym(handle, name) returns to the program, given what the real dlsym found.
void* substitute_dlsym(SlotTable& t, const char* name, void* real);
/// What cuGetProcAddress(name, ..., cuda_version, ...) stores for the program, given the
/// driver's answer.
void* substitute_proc(SlotTable& t, const char* name, void* real, int cuda_version);

}  // namespace cco::preload
