// NCCL and cuBLASLt, loaded when first needed instead of when cco starts.
//
// cco does not link libnccl.so.2 or libcublasLt.so.N: lazy_nccl.cpp and lazy_cublaslt.cpp
// define the calls cco makes, and the first of them dlopen()s the library (RTLD_GLOBAL, as a
// link would have; calls bind as a link would have bound them, see lib_entry). So `cco plan`, `cco report`, `cco doctor` and `--help` start on a machine
// without them, and a command that needs one says so in one line. Where a library cannot be
// loaded its calls fail with the library's own error code (ncclSystemError,
// CUBLAS_STATUS_NOT_INITIALIZED), and ncclGetErrorString / cublas_status_text name why.
//
// Which file: CCO_NCCL_LIB / CCO_CUBLASLT_LIB when set (a path or a name), else the soname of
// the major version cco was built against (libnccl.so.2, libcublasLt.so.13), searched as the
// loader searches (LD_LIBRARY_PATH, the cache).
#pragma once

#include <string>

namespace cco::rt {

enum class Lib { Nccl, CublasLt };

/// Loads `lib` once (thread-safe); true when it is loaded.
bool load(Lib lib);

/// Why `lib` could not be loaded ("libnccl.so.2: cannot open shared object file: ..."); empty
/// when it is loaded. Loads it first if no call has tried yet.
std::string load_error(Lib lib);

/// The file asked for: the environment override or the built-in soname.
std::string lib_file(Lib lib);

/// A symbol of the loaded library; nullptr when the library is not loaded or lacks it.
void* lib_symbol(Lib lib, const char* name);

/// What a call to `name` binds to once `lib` is loaded, as the dynamic linker would have bound
/// it: the first definition in the process's global scope (so a preloaded library that wraps
/// it, such as libcco_preload.so, still sees the call), else the library's own. Never `self`
/// (the forwarder itself, should the executable export it). nullptr when neither has it.
void* lib_entry(Lib lib, const char* name, const void* self);

/// Throws rt::Error "`who` needs NCCL (libnccl.so.2): <why>; ..." when NCCL cannot be loaded.
void require(Lib lib, const std::string& who);

}  // namespace cco::rt
