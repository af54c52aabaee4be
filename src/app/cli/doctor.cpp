#include "cli/doctor.hpp"

#include <fmt/format.h>

#include <sstream>

#include "model/schema.hpp"

namespace cco::cli::doctor {
namespace {
std::string get(const boot::Env& env, const char* k) {
  auto it = env.find(k);
  return it == env.end() ? std::string() : it->second;
}
bool is_local(const std::string& addr) {
  return addr.empty() || addr == "localhost" || addr == "127.0.0.1" || addr == "::1" ||
         addr == "0.0.0.0";
}
}  // namespace

const char* to_string(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::Warn: return "warn";
    case Status::Fail: return "FAIL";
    case Status::Skip: return "skip";
  }
  return "?";
}

Check launcher(const boot::Env& env) {
  Check c{"launcher", Status::Ok, {}, {}};
  try {
    const auto le = boot::parse_launch_env(env);
    if (!le) {
      c.detail = "none: cco bench and cco tune run one thread per visible GPU";
      return c;
    }
    c.detail = fmt::format("{}: rank {} of {} (local rank {}); ccoverlap's rendezvous at {}:{}",
                           le->launcher, le->rank, le->world_size, le->local_rank,
                           le->master_addr.empty() ? "localhost" : le->master_addr, le->master_port);
  } catch (const std::exception& e) {
    c.status = Status::Fail;
    c.detail = e.what();
    c.fix = "set the launcher's variables consistently, or CCO_MASTER_PORT for ccoverlap's own "
            "rendezvous (docs/MULTINODE.md)";
  }
  return c;
}

Check rendezvous_port(const boot::Env& env, const std::function<bool(int)>& can_bind) {
  Check c{"rendezvous port", Status::Ok, {}, {}};
  std::optional<boot::LaunchEnv> le;
  try {
    le = boot::parse_launch_env(env);
  } catch (const std::exception&) {
    c.status = Status::Skip;
    c.detail = "the launcher's variables are not usable (above)";
    return c;
  }
  if (!le || le->world_size == 1) {
    c.status = Status::Skip;
    c.detail = "no multi-process job";
    return c;
  }
  if (le->store.port > 0) {
    // torchrun's store: rank 0 listens on a port the kernel picks and publishes it there;
    // MASTER_PORT + 1 is only the fallback where the store does not answer.
    c.detail = fmt::format("through torchrun's store at {}:{} (a free port; {} only if the store "
                           "does not answer)", le->store.addr, le->store.port, le->master_port);
    return c;
  }
  if (le->rank != 0 || !is_local(le->master_addr)) {
    c.status = Status::Skip;
    c.detail = fmt::format("rank {} connects to {}:{}; rank 0 listens there", le->rank,
                           le->master_addr, le->master_port);
    return c;
  }
  if (can_bind(le->master_port)) {
    c.detail = fmt::format("port {} is free here", le->master_port);
    return c;
  }
  c.status = Status::Fail;
  c.detail = fmt::format("port {} is taken here: ccoverlap's rendezvous could not listen", le->master_port);
  c.fix = "set CCO_MASTER_PORT to a free port (the same on every rank)";
  return c;
}

Check nvlink_multicast(const boot::Env& env) {
  Check c{"NVLink multicast", Status::Ok, {}, {}};
  const std::string v = get(env, "NCCL_NVLS_ENABLE");
  if (v == "0") {
    c.detail = "off (NCCL_NVLS_ENABLE=0)";
  } else if (v.empty()) {
    c.detail = "NCCL decides (NCCL_NVLS_ENABLE unset): NVLink SHARP multicast (NVLS) is used on "
               "NVSwitch systems that support it";
    c.fix = "if NCCL fails to start with an NVLS or multicast error (containers or virtual machines "
            "without the fabric manager's multicast), export NCCL_NVLS_ENABLE=0 for every "
            "process, the program's included";
    c.status = Status::Warn;
  } else {
    c.detail = "on (NCCL_NVLS_ENABLE=" + v + ")";
  }
  return c;
}

Check max_connections(const boot::Env& env) {
  Check c{"max connections", Status::Ok, {}, {}};
  const std::string v = get(env, "CUDA_DEVICE_MAX_CONNECTIONS");
  if (v.empty()) {
    c.detail = "CUDA_DEVICE_MAX_CONNECTIONS unset: CUDA's default, 8 hardware queues for this "
               "process's streams";
    return c;
  }
  int n = 0;
  if (std::sscanf(v.c_str(), "%d", &n) != 1 || n < 1 || n > 32) {
    c.status = Status::Warn;
    c.detail = "CUDA_DEVICE_MAX_CONNECTIONS='" + v + "' is not 1..32: CUDA ignores it";
    c.fix = "unset it, or give a number from 1 to 32";
    return c;
  }
  c.detail = "CUDA_DEVICE_MAX_CONNECTIONS=" + v + ": " + v + " hardware queue" + (n == 1 ? "" : "s") +
             " for this process's streams";
  if (n == 1) {
    c.status = Status::Warn;
    c.detail += ": every stream's kernels are issued in the order they are launched, so a "
                "collective launched after compute starts only once that compute has started, "
                "and stream priority has less to act on";
    c.fix = "Megatron-LM sets 1 on purpose (its tensor-parallel overlap relies on launch order); "
            "otherwise unset it, and compare both with `cco run --compare` on whole runs";
  }
  return c;
}

Check program_nccl(const std::string& cco_nccl, const std::string& program_nccl) {
  Check c{"program's NCCL", Status::Ok, {}, {}};
  if (program_nccl.empty()) {
    c.status = Status::Skip;
    c.detail = "unknown (no PyTorch found to ask)";
    return c;
  }
  if (cco_nccl.empty() || cco_nccl == program_nccl) {
    c.detail = "PyTorch loads NCCL " + program_nccl + (cco_nccl.empty() ? "" : ", as cco does");
    return c;
  }
  c.status = Status::Warn;
  c.detail = "PyTorch loads NCCL " + program_nccl + ", cco " + cco_nccl +
             ": cco bench and cco tune measure another NCCL than the program runs";
  c.fix = "point cco at the program's NCCL (LD_LIBRARY_PATH=<torch>/../nvidia/nccl/lib) before "
          "tuning, so a plan is made for the library the program loads";
  return c;
}

Check pytorch(const std::string& output, int rc, std::string* nccl_out) {
  Check c{"PyTorch", Status::Ok, {}, {}};
  if (rc == 124) {
    c.status = Status::Warn;
    c.detail = "python3 -c 'import torch' did not finish in time";
    return c;
  }
  std::string torch, cuda, nccl, gpus;
  std::istringstream in(output);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
    if (k == "torch") torch = v;
    else if (k == "cuda") cuda = v;
    else if (k == "nccl") nccl = v;
    else if (k == "gpus") gpus = v;
  }
  if (rc != 0 || torch.empty()) {
    c.status = Status::Skip;
    c.detail = "no PyTorch here (python3 -c 'import torch' failed); cco run works with any "
               "program, PyTorch's checks are skipped";
    return c;
  }
  c.detail = "torch " + torch + ", CUDA " + (cuda.empty() || cuda == "None" ? "none" : cuda) +
             ", NCCL " + (nccl.empty() ? "none" : nccl) + ", " + (gpus.empty() ? "?" : gpus) +
             " GPU(s) visible to it";
  if (cuda.empty() || cuda == "None") {
    c.status = Status::Warn;
    c.fix = "this PyTorch has no CUDA: install a CUDA build of PyTorch";
  }
  if (nccl_out && nccl != "none") *nccl_out = nccl;
  return c;
}

std::string format(const std::vector<Check>& checks) {
  std::string o;
  for (const auto& c : checks) {
    o += fmt::format("{:<5} {:<18} {}\n", to_string(c.status), c.name, c.detail);
    if (!c.fix.empty()) o += fmt::format("{:<5} {:<18} fix: {}\n", "", "", c.fix);
  }
  return o;
}

nlohmann::json to_json(const std::vector<Check>& checks) {
  nlohmann::json j;
  model::stamp_schema(j, model::kDoctorSchema);
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : checks)
    a.push_back({{"name", c.name}, {"status", to_string(c.status)}, {"detail", c.detail}, {"fix", c.fix}});
  j["checks"] = a;
  j["ok"] = exit_code(checks) == 0;
  return j;
}

int exit_code(const std::vector<Check>& checks) {
  for (const auto& c : checks)
    if (c.status == Status::Fail) return 1;
  return 0;
}

}  // namespace cco::cli::doctor
