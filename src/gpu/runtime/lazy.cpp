#include "runtime/lazy.hpp"

#include <cublasLt.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <nccl.h>

#include <cstdlib>
#include <mutex>

#include "model/env_names.hpp"
#include "model/read_file.hpp"
#include "runtime/check.hpp"

namespace cco::rt {
namespace {

struct Loaded {
  std::once_flag once;
  void* handle = nullptr;
  std::string why;  // empty when loaded
};

Loaded& slot(Lib lib) {
  static Loaded nccl, lt;
  return lib == Lib::Nccl ? nccl : lt;
}

const char* what(Lib lib) { return lib == Lib::Nccl ? "NCCL" : "cuBLASLt"; }

}  // namespace

std::string lib_file(Lib lib) {
  const char* env = std::getenv(lib == Lib::Nccl ? cco::env::kNcclLib : cco::env::kCublasltLib);
  if (env && *env) return env;
  return lib == Lib::Nccl ? "libnccl.so." + std::to_string(NCCL_MAJOR)
                          : "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
}

bool load(Lib lib) {
  Loaded& s = slot(lib);
  std::call_once(s.once, [&] {
    const std::string file = lib_file(lib);
    if (std::string bad = model::library_file_problem(file); !bad.empty()) {
      s.why = std::move(bad);  // a FIFO named in CCO_NCCL_LIB would block dlopen forever
      return;
    }
    // RTLD_GLOBAL: as a link would have; NCCL's newer calls are also looked up by name.
    s.handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!s.handle) {
      const char* e = ::dlerror();
      s.why = e ? e : file + ": cannot be loaded";
      // A name without '/' is looked up in the library path, as dlopen does, not in this folder:
      // a file of that name here reads as "No such file" otherwise (review).
      struct stat st {};
      if (file.find('/') == std::string::npos && ::stat(file.c_str(), &st) == 0)
        s.why += " (a name without '/' is looked up in the library path, not in this folder: "
                 "write ./" + file + " for the file here)";
    }
  });
  return s.handle != nullptr;
}

std::string load_error(Lib lib) {
  load(lib);
  return slot(lib).why;
}

void* lib_symbol(Lib lib, const char* name) {
  if (!load(lib)) return nullptr;
  return ::dlsym(slot(lib).handle, name);
}

void* lib_entry(Lib lib, const char* name, const void* self) {
  if (!load(lib)) return nullptr;
  void* p = ::dlsym(RTLD_DEFAULT, name);
  if (!p || p == self) p = ::dlsym(slot(lib).handle, name);
  return p == self ? nullptr : p;
}

void require(Lib lib, const std::string& who) {
  if (load(lib)) return;
  throw Error(who + " needs " + what(lib) + " (" + lib_file(lib) + "), which cannot be loaded: " +
              slot(lib).why + "; put its folder in LD_LIBRARY_PATH or name the file in " +
              (lib == Lib::Nccl ? cco::env::kNcclLib : cco::env::kCublasltLib));
}

}  // namespace cco::rt
