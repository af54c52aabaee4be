// `cco doctor`: what a run needs, checked one line each with what to fix. The decisions are
// GPU-free functions of what was found (tested in CI with made-up findings); doctor_cmd.cpp
// gathers the findings (devices, libraries, the environment, PyTorch) and prints them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bootstrap/bootstrap.hpp"

namespace cco::cli::doctor {

enum class Status { Ok, Warn, Fail, Skip };
const char* to_string(Status s);  ///< "ok", "warn", "FAIL", "skip"

struct Check {
  std::string name;    ///< "GPUs", "NCCL", "launcher", ...
  Status status = Status::Ok;
  std::string detail;  ///< what was found
  std::string fix;     ///< what to do (empty when nothing)
};

/// The launcher's variables (torchrun, Slurm, Open MPI, CCO_*): none (threads mode), a job
/// cco can join (rank, world size, where its rendezvous listens), or why it cannot.
Check launcher(const boot::Env& env);
/// The port ccoverlap's rendezvous would listen on, on the rank that listens (rank 0 of a job
/// whose master is this host); `can_bind(port)` tries to bind it. Skip when no job or another rank.
Check rendezvous_port(const boot::Env& env, const std::function<bool(int)>& can_bind);
/// NCCL_NVLS_ENABLE: NVLink multicast (NVLS) used or not, and when to turn it off.
Check nvlink_multicast(const boot::Env& env);
/// CUDA_DEVICE_MAX_CONNECTIONS: how many hardware queues the GPU gives this process's streams.
/// Unset is CUDA's default (8); 1 (Megatron-LM sets it) issues every stream's kernels in launch
/// order, so overlap follows the order the program launches in and stream priority acts less.
Check max_connections(const boot::Env& env);
/// The NCCL the program loads (PyTorch's, "" when unknown) against the one cco loads: a plan's
/// made_for and the tuner plugin were measured with cco's.
Check program_nccl(const std::string& cco_nccl, const std::string& program_nccl);
/// PyTorch's line from `python3 -c ...` (doctor_cmd.cpp's probe prints
/// "torch=V cuda=V nccl=V gpus=N"); rc: the probe's exit status (124: timed out).
Check pytorch(const std::string& output, int rc, std::string* nccl_out);

/// The table: "ok   NAME  detail" and "     fix: ..." lines.
std::string format(const std::vector<Check>& checks);
nlohmann::json to_json(const std::vector<Check>& checks);
/// 1 when any check failed, else 0.
int exit_code(const std::vector<Check>& checks);

}  // namespace cco::cli::doctor
