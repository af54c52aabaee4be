// libcupti and libcuda, loaded once (cupti_loader.hpp).
#include "trace/cupti_loader.hpp"

#include "model/env_names.hpp"
#include "model/read_file.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <vector>

#ifndef CCO_CUPTI_BUILD_DIR
#define CCO_CUPTI_BUILD_DIR ""
#endif

namespace cco::trace::detail {

// Never destroyed, and made at first use rather than by a static initialiser: inside
// libcco_preload.so a session may start before the library's own static initialisers have run
// (a library of the program can reach the driver from its constructor first), and an initialiser
// running after start() would wipe the function table CUPTI's callbacks use (the crash at exit
// of docs/PRELOAD.md). The library must have no dynamic initialiser of its own
// (cco.test.preload_process checks).
CuptiApi& cupti_api() {
  static CuptiApi* const a = new CuptiApi();
  return *a;
}
DriverApi& driver_api() {
  static DriverApi* const d = new DriverApi();
  return *d;
}

namespace {

// Directories of the shared objects already loaded (libcudart, libcublas, libnccl, libcuda...):
// CUPTI usually sits beside them, or in a sibling of PyTorch's nvidia/<package>/lib layout.
int collect_dir(struct dl_phdr_info* info, size_t, void* data) {
  auto* dirs = static_cast<std::vector<std::string>*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  std::string p = info->dlpi_name;
  if (p.find("cu") == std::string::npos && p.find("nccl") == std::string::npos &&
      p.find("nvidia") == std::string::npos)
    return 0;
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return 0;
  dirs->push_back(p.substr(0, slash));
  return 0;
}

std::vector<std::string> cupti_candidates() {
  const char* so = "libcupti.so.13";
  std::vector<std::string> c = {so};
  if (*CCO_CUPTI_BUILD_DIR) c.push_back(std::string(CCO_CUPTI_BUILD_DIR) + "/" + so);
  for (const char* d : {"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64",
                        "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib"})
    c.push_back(std::string(d) + "/" + so);
  std::vector<std::string> dirs;
  dl_iterate_phdr(collect_dir, &dirs);
  for (const auto& d : dirs) {
    c.push_back(d + "/" + so);
    c.push_back(d + "/../../cuda_cupti/lib/" + so);
    c.push_back(d + "/../../cu13/lib/" + so);
  }
  const std::string venv = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/";
  c.push_back(venv + "cu13/lib/" + so);
  c.push_back(venv + "cuda_cupti/lib/" + so);
  c.push_back("libcupti.so");
  return c;
}

template <class F>
bool sym(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  return out != nullptr;
}

}  // namespace

// Loads libcupti once per process. Called under the start mutex.
void load_cupti(const std::string& explicit_path) {
  if (cupti_api().tried) return;
  cupti_api().tried = true;
  std::vector<std::string> cands;
  std::string forced = explicit_path;
  if (forced.empty())
    if (const char* e = std::getenv(cco::env::kCuptiLib); e && *e) forced = e;
  if (!forced.empty())
    cands = {forced};
  else
    cands = cupti_candidates();
  void* h = nullptr;
  std::string first_error;
  for (const auto& p : cands) {
    if (std::string bad = model::library_file_problem(p); !bad.empty()) {
      if (first_error.empty()) first_error = bad;  // a FIFO would block dlopen forever
      continue;
    }
    h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      cupti_api().path = p;
      break;
    }
    if (first_error.empty()) {
      const char* e = dlerror();
      first_error = e ? e : p;
    }
  }
  if (!h) {
    cupti_api().error = forced.empty()
                        ? "libcupti.so.13 not found (tried LD_LIBRARY_PATH, the CUDA Toolkit and "
                          "the folders of the loaded CUDA libraries; set CCO_CUPTI_LIB=/path/to/"
                          "libcupti.so.13)"
                        : "cannot load CUPTI from '" + forced + "': " + first_error;
    return;
  }
  cupti_api().handle = h;
  // Resolve the real path for messages.
  if (Dl_info info{}; dlsym(h, "cuptiGetVersion") &&
                      dladdr(reinterpret_cast<void*>(dlsym(h, "cuptiGetVersion")), &info) &&
                      info.dli_fname)
    cupti_api().path = info.dli_fname;
  auto& c = cupti_api();
  const bool all =
      sym(h, "cuptiGetVersion", c.GetVersion) &&
      sym(h, "cuptiGetResultString", c.GetResultString) && sym(h, "cuptiSubscribe", c.Subscribe) &&
      sym(h, "cuptiUnsubscribe", c.Unsubscribe) &&
      sym(h, "cuptiActivityRegisterCallbacks", c.RegisterCallbacks) &&
      sym(h, "cuptiActivityEnable", c.Enable) && sym(h, "cuptiActivityDisable", c.Disable) &&
      sym(h, "cuptiActivityFlushAll", c.FlushAll) &&
      sym(h, "cuptiActivityGetNextRecord", c.GetNextRecord) &&
      sym(h, "cuptiActivityGetNumDroppedRecords", c.GetNumDropped) &&
      sym(h, "cuptiGetStreamIdEx", c.GetStreamIdEx) &&
      sym(h, "cuptiGetContextId", c.GetContextId) && sym(h, "cuptiGetDeviceId", c.GetDeviceId);
  sym(h, "cuptiSubscribe_v2", c.Subscribe_v2);
  sym(h, "cuptiActivityEnableAndDump", c.EnableAndDump);
  sym(h, "cuptiActivityEnableLatencyTimestamps", c.EnableLatency);
  sym(h, "cuptiGetTimestamp", c.GetTimestamp);
  sym(h, "cuptiSetThreadIdType", c.SetThreadIdType);
  sym(h, "cuptiEnableCallback", c.EnableCallback);
  if (!all) {
    c.error = "CUPTI at '" + c.path + "' lacks a function ccoverlap needs (too old?)";
    return;
  }
  if (c.GetVersion(&c.version) != CUPTI_SUCCESS || c.version < 130000) {
    c.error = "CUPTI at '" + c.path + "' has API version " + std::to_string(c.version) +
              "; ccoverlap reads the records of CUPTI 13.0 or later (API version >= 130000)";
    return;
  }
  c.ok = true;
}

void load_driver() {
  if (driver_api().tried) return;
  driver_api().tried = true;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  auto& d = driver_api();
  d.ok = sym(h, "cuDeviceGet", d.DeviceGet) && sym(h, "cuDeviceGetName", d.DeviceGetName) &&
         sym(h, "cuDeviceGetAttribute", d.DeviceGetAttribute) &&
         sym(h, "cuStreamGetPriority", d.StreamGetPriority) &&
         sym(h, "cuStreamGetCtx", d.StreamGetCtx);
}

std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  if (cupti_api().GetResultString && cupti_api().GetResultString(r, &s) == CUPTI_SUCCESS && s)
    return std::string(s) + " (" + std::to_string(static_cast<int>(r)) + ")";
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

}  // namespace cco::trace::detail
