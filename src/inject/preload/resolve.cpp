#include "preload/resolve.hpp"

#include <string>

#include "common/log.hpp"

namespace cco::preload {

namespace {
// The window's driver calls whose name is the same for every ABI (with or without _ptsz), and the
// unloads.
std::optional<Sym> window_sym(std::string_view name) {
  if (name.size() > 5 && name.substr(name.size() - 5) == "_ptsz") name.remove_suffix(5);
  if (name == "cuEventRecord") return Sym::EventRecord;
  if (name == "cuEventRecordWithFlags") return Sym::EventRecordWithFlags;
  if (name == "cuStreamWaitEvent") return Sym::StreamWaitEvent;
  if (name == "cuStreamSynchronize") return Sym::StreamSynchronize;
  if (name == "cuEventSynchronize") return Sym::EventSynchronize;
  if (name == "cuModuleUnload") return Sym::ModuleUnload;
  if (name == "cuLibraryUnload") return Sym::LibraryUnload;
  return std::nullopt;
}
}  // namespace

std::optional<Sym> sym_for_dlsym(std::string_view name) {
  if (name.substr(0, 2) != "cu") return std::nullopt;  // the fast path for every other dlsym
  if (name == "cuLaunchKernel" || name == "cuLaunchKernel_ptsz") return Sym::LaunchKernel;
  if (name == "cuLaunchKernelEx" || name == "cuLaunchKernelEx_ptsz") return Sym::LaunchKernelEx;
  if (name == "cuGetProcAddress") return Sym::GetProcAddressV1;
  if (name == "cuGetProcAddress_v2") return Sym::GetProcAddressV2;
  if (name == "cuCtxSynchronize") return Sym::CtxSynchronize;
  if (name == "cuCtxSynchronize_v2") return Sym::CtxSynchronizeV2;
  if (auto s = window_sym(name)) return s;
  if (name.substr(0, 6) == "cublas") {
#define CCO_BLAS_NAME(id, str) \
  if (name == str) return Sym::Blas##id;
    CCO_BLAS_SYMS(CCO_BLAS_NAME)
#undef CCO_BLAS_NAME
  }
  return std::nullopt;
}

std::optional<Sym> sym_for_proc(std::string_view name, int cuda_version) {
  // Base names are what the driver expects; a _ptsz name is taken too, should a caller ask for
  // one and the driver answer.
  if (name == "cuLaunchKernel" || name == "cuLaunchKernel_ptsz") return Sym::LaunchKernel;
  if (name == "cuLaunchKernelEx" || name == "cuLaunchKernelEx_ptsz") return Sym::LaunchKernelEx;
  if (name == "cuGetProcAddress")
    return cuda_version >= 12000 ? Sym::GetProcAddressV2 : Sym::GetProcAddressV1;
  if (name == "cuGetProcAddress_v2") return Sym::GetProcAddressV2;
  if (name == "cuCtxSynchronize")
    return cuda_version >= 13000 ? Sym::CtxSynchronizeV2 : Sym::CtxSynchronize;
  if (name == "cuCtxSynchronize_v2") return Sym::CtxSynchronizeV2;
  if (auto s = window_sym(name)) return s;
  return std::nullopt;
}

SlotTable::SlotTable(const WrapperSet& wrappers, std::initializer_list<const void*> own)
    : wrappers_(wrappers) {
  std::size_t i = 0;
  for (const void* p : own)
    if (i < own_.size()) own_[i++] = p;
}

bool SlotTable::is_ours(const void* p) const {
  if (!p) return false;
  for (const auto& row : wrappers_)
    for (void* w : row)
      if (w == p) return true;
  for (const void* o : own_)
    if (o == p) return true;
  return false;
}

void* SlotTable::bind(Sym s, void* real) {
  if (!real || is_ours(real)) return real;
  const int row = static_cast<int>(s);
  for (int i = 0; i < kSlots; ++i) {
    void* cur = reals_[row][i].load(std::memory_order_acquire);
    if (cur == nullptr) {
      if (reals_[row][i].compare_exchange_strong(cur, real, std::memory_order_acq_rel))
        return wrappers_[row][i];
      // Another thread took the slot: `cur` now holds its pointer.
    }
    if (cur == real) return wrappers_[row][i];
  }
  warn_once("slots" + std::to_string(row),
            "more than " + std::to_string(kSlots) +
                " distinct driver entry points of one kind; the rest are not hooked");
  return real;
}

void* SlotTable::any_real(Sym s) const {
  for (int i = 0; i < kSlots; ++i)
    if (void* p = real(s, i)) return p;
  return nullptr;
}

int SlotTable::used(Sym s) const {
  int n = 0;
  for (int i = 0; i < kSlots; ++i) n += real(s, i) != nullptr;
  return n;
}

void* substitute_dlsym(SlotTable& t, const char* name, void* real) {
  if (!name || !real) return real;
  const auto s = sym_for_dlsym(name);
  return s ? t.bind(*s, real) : real;
}

void* substitute_proc(SlotTable& t, const char* name, void* real, int cuda_version) {
  if (!name || !real) return real;
  const auto s = sym_for_proc(name, cuda_version);
  return s ? t.bind(*s, real) : real;
}

}  // namespace cco::preload
