// ccoverlap's version: the project version of the top-level CMakeLists.txt, the only place it is
// written (cco.core defines CCO_VERSION for everything that links it).
#pragma once

#ifndef CCO_VERSION
#error "CCO_VERSION comes from the build: link cco.core (CMakeLists.txt's project version)"
#endif

namespace cco::model {
inline constexpr const char* kVersion = CCO_VERSION;
}  // namespace cco::model
