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

/// The entry points the library wraps, by ABI.
enum class Sym : int {
  LaunchKernel = 0,  ///< cuLaunchKernel, cuLaunchKernel_ptsz
  LaunchKernelEx,    ///< cuLaunchKernelEx, cuLaunchKernelEx_ptsz
  GetProcAddressV1,  ///< cuGetProcAddress (CUDA 11.3 ABI: 4 arguments)
  GetProcAddressV2,  ///< cuGetProcAddress_v2 (CUDA 12.0 ABI: 5 arguments)
  Count
};
inline constexpr int kSymCount = static_cast<int>(Sym::Count);
/// Distinct real pointers per entry point (legacy, _ptsz, versions, several driver copies).
inline constexpr int kSlots = 8;
using WrapperSet = std::array<std::array<void*, kSlots>, kSymCount>;

/// The symbol names dlsym substitutes: cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz],
/// cuGetProcAddress (v1 ABI), cuGetProcAddress_v2. nullopt for every other name.
std::optional<Sym> sym_for_dlsym(std::string_view name);

/// The names cuGetProcAddress substitutes: cuLaunchKernel, cuLaunchKernelEx (and their _ptsz
/// spellings, should the driver answer for them), and cuGetProcAddress itself, whose ABI is v2
/// when the caller asks for CUDA 12.0 or later and v1 before.
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
  std::array<const void*, 16> own_{};
};

/// What dlsym(handle, name) returns to the program, given what the real dlsym found.
void* substitute_dlsym(SlotTable& t, const char* name, void* real);
/// What cuGetProcAddress(name, ..., cuda_version, ...) stores for the program, given the
/// driver's answer.
void* substitute_proc(SlotTable& t, const char* name, void* real, int cuda_version);

}  // namespace cco::preload
