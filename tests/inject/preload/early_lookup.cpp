// A library whose constructor reaches the driver the way some CUDA libraries do at load time:
// dlopen("libcuda.so.1") and dlsym("cuGetProcAddress_v2"). Linked into cco.test.fake_app_early,
// it runs before libcco_preload.so's own constructors (an LD_PRELOADed library is initialised
// after the program's other libraries), so the library's dlsym is entered before its globals are
// initialised. On H200 this order wiped the CUPTI session's function table that the lookup had
// just filled, and the traced program died at exit (docs/results/2026-11-22-h200x2-trace.md).
#include <dlfcn.h>

#include <cstdio>

namespace {

__attribute__((constructor)) void early_lookup() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) return;
  if (!dlsym(cuda, "cuGetProcAddress_v2")) std::fprintf(stderr, "early_lookup: no cuGetProcAddress_v2\n");
}

}  // namespace
