// A program of steps of three collectives (an all-reduce of 4 floats, an all-gather of 2 per rank,
// a broadcast through ncclBcast)
// against the fake NCCL and the fake driver. Per step it prints the configuration in force (the
// preload library's cco_config_index, -1 without it), what reached NCCL and what the outputs
// hold, poisoned before each step:
//   step K config=C allreduce=N(count) allgather=M other=O out=a,b,c,d gathered=e,f,g,h
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" void fake_nccl_counts(int* allreduce, int* allgather, int* other,
                                 size_t* last_allreduce_count);

namespace {

std::string list(const float* v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(static_cast<int>(v[i]));
  return s;
}

}  // namespace

int main() {
  // The driver, loaded as a CUDA runtime loads it (the preload library asks it for its table).
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
    std::printf("no libcuda: %s\n", dlerror());
    return 1;
  }
  using IndexFn = int (*)();
  const auto config_index = reinterpret_cast<IndexFn>(dlsym(RTLD_DEFAULT, "cco_config_index"));
  const char* n_env = std::getenv("FAKE_NCCL_STEPS");
  const int steps = n_env ? std::atoi(n_env) : 24;
  const float in[4] = {1, 2, 3, 4};
  const float gin[2] = {5, 6};
  const auto comm = reinterpret_cast<ncclComm_t>(0x77);
  const auto stream = reinterpret_cast<cudaStream_t>(0x55);
  for (int k = 0; k < steps; ++k) {
    float out[4] = {-1, -1, -1, -1};
    float gout[4] = {-1, -1, -1, -1};
    float bc[2] = {1, 1};
    int ar0 = 0, ag0 = 0, o0 = 0, ar1 = 0, ag1 = 0, o1 = 0;
    size_t c0 = 0, c1 = 0;
    fake_nccl_counts(&ar0, &ag0, &o0, &c0);
    if (ncclAllReduce(in, out, 4, ncclFloat32, ncclSum, comm, stream) != ncclSuccess ||
        ncclAllGather(gin, gout, 2, ncclFloat32, comm, stream) != ncclSuccess ||
        ncclBcast(bc, 2, ncclFloat32, 0, comm, stream) != ncclSuccess) {
      std::printf("step %d: a collective failed\n", k);
      return 1;
    }
    fake_nccl_counts(&ar1, &ag1, &o1, &c1);
    std::printf("step %d config=%d allreduce=%d(%zu) allgather=%d other=%d out=%s gathered=%s\n", k,
                config_index ? config_index() : -1, ar1 - ar0, ar1 > ar0 ? c1 : 0, ag1 - ag0,
                o1 - o0, list(out, 4).c_str(), list(gout, 4).c_str());
  }
  return 0;
}
