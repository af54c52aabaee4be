// Calls NCCL 2.28 added (ncclAlltoAll, ncclGather, ncclScatter), looked up in the NCCL the
// process loaded, so cco still starts with an older NCCL: only these calls are refused then,
// with one clear error. CCO_NCCL_228(ncclAlltoAll)(args...) calls it.
#pragma once

#include <nccl.h>

#include <string>

#include "model/limits.hpp"
#include "runtime/lazy.hpp"

namespace cco::wl {

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
template <class Fn>
Fn nccl_228_call(const char* name) {
  auto* f = reinterpret_cast<Fn>(rt::lib_entry(rt::Lib::Nccl, name, nullptr));
  if (!f)
    throw model::Error(std::string(name) + " needs NCCL 2.28 or newer; the NCCL loaded has no such call");
  return f;
}
#define CCO_NCCL_228(name) ::cco::wl::nccl_228_call<decltype(&name)>(#name)
#else
#define CCO_NCCL_228(name)                                                                  \
  ([](auto&&...) -> ncclResult_t {                                                        \
    throw ::cco::model::Error(#name " needs NCCL 2.28 or newer; cco was built with older headers"); \
  })
#endif

}  // namespace cco::wl
