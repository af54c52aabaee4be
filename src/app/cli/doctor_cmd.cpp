// cco doctor: gathers what a run needs (devices, the libraries cco and the program load, the
// preload library and tuner plugin, the launcher's environment, PyTorch) and prints one line
// per check with what to fix (the decisions: doctor.hpp).
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/parse.hpp"
#include "cli/doctor.hpp"
#include "cli/run_cmd.hpp"
#include "cli/run_support.hpp"
#include "model/env_names.hpp"
#ifdef CCO_HAVE_CUDA
#include "runtime/device.hpp"
#include "runtime/lazy.hpp"
#include "trace/session.hpp"
#endif

namespace cco::cli {
namespace {

using doctor::Check;
using doctor::Status;

bool can_bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

/// PyTorch's versions, asked of python3 with a time limit; the output is read with a bound. The
/// current folder is taken off the module path first (issue 46): a ./torch.py there would run,
/// and stand for the real PyTorch in the verdict.
std::string ask_pytorch(int* rc) {
  const char* cmd =
      "timeout 60 python3 -c '"
      "import sys\n"
      "sys.path[:] = [p for p in sys.path if p not in (\"\", \".\")]\n"
      "import torch\n"
      "try:\n"
      "  v = torch.cuda.nccl.version()\n"
      "  v = \".\".join(map(str, v)) if isinstance(v, tuple) else str(v)\n"
      "except Exception:\n"
      "  v = \"none\"\n"
      "print(\"torch=%s cuda=%s nccl=%s gpus=%d\" % (torch.__version__, torch.version.cuda, v, "
      "torch.cuda.device_count()))"
      "' 2>/dev/null";
  FILE* p = ::popen(cmd, "r");
  if (!p) {
    *rc = 127;
    return {};
  }
  std::string out;
  char buf[512];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    if (out.size() < 4096) out.append(buf, n);
  const int st = ::pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  return out;
}

Check preload_check(std::string* lib_out) {
  Check c{"preload library", Status::Ok, {}, {}};
  try {
    const std::string lib = loadable_preload_library("");
    void* h = ::dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
    std::string missing;
    for (const char* s : {"cuLaunchKernel", "cuGetProcAddress_v2", "cublasGemmEx", "cco_api_version",
                          "cco_config_index"})
      if (!h || !::dlsym(h, s)) missing += std::string(missing.empty() ? "" : ", ") + s;
    if (h) ::dlclose(h);
    *lib_out = lib;
    c.detail = lib;
    if (!missing.empty()) {
      c.status = Status::Fail;
      c.detail += ": does not export " + missing;
      c.fix = "rebuild it (scripts/setup.sh); a stripped or foreign library cannot interpose";
    }
  } catch (const std::exception& e) {
    c.status = Status::Fail;
    c.detail = e.what();
    c.fix = "build it (scripts/setup.sh) or set CCO_PRELOAD_LIB; cco run needs it";
  }
  return c;
}

Check tuner_check(const std::string& preload) {
  Check c{"tuner plugin", Status::Ok, {}, {}};
  try {
    const std::string lib = find_tuner_library(preload, self_exe(), "", ::getenv(cco::env::kTunerLib));
    check_tuner_library(lib);
    c.detail = lib;
  } catch (const std::exception& e) {
    c.status = Status::Warn;
    c.detail = e.what();
    c.fix = "only plans with nccl.channels need it (cco run, cco tune); build it with scripts/setup.sh";
  }
  return c;
}

}  // namespace

int doctor_main(const std::vector<std::string>& args) {
  bool json = false, no_python = false;
  CLI::App app{"cco doctor", "doctor"};
  app.set_help_flag();  // help text comes from docs/cli/doctor.md, handled by the CLI
  app.add_flag("--json", json);
  app.add_flag("--no-python", no_python);
  parse_cli(app, args);
  const bool python = !no_python;
  std::vector<Check> checks;
  std::string cco_nccl;
#ifdef CCO_HAVE_CUDA
  {
    std::string why;
    const int n = rt::device_count(&why);
    const auto v = rt::versions();
    Check g{"GPUs", Status::Ok, {}, {}};
    if (n == 0) {
      g.status = Status::Fail;
      g.detail = "none usable (" + why + ")";
      g.fix = "run where a CUDA GPU and its driver are (cco plan, cco report and --validate need none)";
    } else {
      g.detail = std::to_string(n) + " x " + rt::device_info(0).name + ", driver for CUDA " + v.driver;
    }
    checks.push_back(g);
    checks.push_back({"CUDA runtime", Status::Ok, v.runtime, ""});
    cco_nccl = v.nccl;
    Check nc{"NCCL (cco's)", Status::Ok, v.nccl, ""};
    if (v.nccl.empty() || v.nccl == "unknown") {
      nc.status = Status::Fail;
      nc.detail = "not loaded: " + rt::load_error(rt::Lib::Nccl);
      nc.fix = "cco bench and tune need it: put the folder of libnccl.so.2 in LD_LIBRARY_PATH, or "
               "its path in CCO_NCCL_LIB";
    } else if (int major = 0, minor = 0; std::sscanf(v.nccl.c_str(), "%d.%d", &major, &minor) == 2 &&
                                         major * 100 + minor < 227) {
      nc.status = Status::Warn;
      nc.fix = "windows need NCCL 2.27, the zero-CTA policy and gather/scatter 2.28";
    }
    checks.push_back(nc);
    Check lt{"cuBLASLt", Status::Ok, v.cublas, ""};
    if (v.cublas.empty()) {
      lt.status = Status::Fail;
      lt.detail = "not loaded: " + rt::load_error(rt::Lib::CublasLt);
      lt.fix = "GEMM workloads need it: put the folder of " + rt::lib_file(rt::Lib::CublasLt) +
               " in LD_LIBRARY_PATH, or its path in CCO_CUBLASLT_LIB";
    }
    checks.push_back(lt);
    trace::Options to;
    to.nvtx_ranges = false;
    to.print_warnings = false;
    trace::Session s(to);
    Check cu{"CUPTI", Status::Ok, {}, {}};
    if (n == 0) {
      // Tracing needs a driver: without one, a missing driver would read as a missing CUPTI.
      cu.status = Status::Skip;
      cu.detail = "not checked: tracing needs a usable GPU and its driver (see GPUs)";
    } else if (s.start()) {
      cu.detail = trace::cupti_library();
      s.stop();
    } else {
      cu.status = Status::Warn;
      cu.detail = s.warning();
      cu.fix = "--trace needs CUPTI 13 (set CCO_CUPTI_LIB to its libcupti.so) and no other "
               "profiler tracing in the same process; the rest runs without";
    }
    checks.push_back(cu);
  }
#else
  checks.push_back({"GPUs", Status::Fail, "this cco was built without CUDA",
                    "build with the CUDA Toolkit (scripts/setup.sh)"});
#endif
  std::string preload;
  checks.push_back(preload_check(&preload));
  checks.push_back(tuner_check(preload));
  const auto env = boot::current_environment();
  checks.push_back(doctor::nvlink_multicast(env));
  checks.push_back(doctor::max_connections(env));
  checks.push_back(doctor::launcher(env));
  checks.push_back(doctor::rendezvous_port(env, can_bind));
  std::string torch_nccl;
  if (python) {
    int rc = 0;
    const std::string out = ask_pytorch(&rc);
    checks.push_back(doctor::pytorch(out, rc, &torch_nccl));
  } else {
    checks.push_back({"PyTorch", Status::Skip, "not asked (--no-python)", ""});
  }
  checks.push_back(doctor::program_nccl(cco_nccl, torch_nccl));
  if (json) std::printf("%s\n", doctor::to_json(checks).dump(2).c_str());
  else std::fputs(doctor::format(checks).c_str(), stdout);
  return doctor::exit_code(checks);
}

}  // namespace cco::cli
