// Prints what dlsym answers in a process where libcco_preload.so may be preloaded.
#include <dlfcn.h>

#include <cstdio>

extern "C" int cco_probe_next();

int main() {
  std::printf("rtld_next=%d\n", cco_probe_next());
  void* libc_malloc = dlsym(RTLD_DEFAULT, "malloc");
  std::printf("malloc=%d\n", libc_malloc != nullptr ? 1 : 0);
  // The preload library's own export is what RTLD_DEFAULT finds first; asked again with
  // RTLD_NEXT from the main program (which precedes it) it is found too.
  void* d = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
  void* n = dlsym(RTLD_NEXT, "cuLaunchKernel");
  std::printf("cuLaunchKernel default=%d next=%d same=%d\n", d != nullptr, n != nullptr, d == n);
  std::printf("missing=%d\n", dlsym(RTLD_DEFAULT, "cco_no_such_symbol") == nullptr ? 1 : 0);
  return 0;
}
