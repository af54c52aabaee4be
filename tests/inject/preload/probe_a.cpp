// dlsym(RTLD_NEXT) from a library loaded after libcco_preload.so must find the definition
// after *this* library (probe_b's), not the one after the preload library (this one's own).
#include <dlfcn.h>

extern "C" int cco_probe() {
  return 1;
}
extern "C" int cco_probe_next() {
  auto f = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "cco_probe"));
  return f ? f() : -1;
}
