// cco info: devices, their limits and versions. Without a GPU: says so, lists the built-in table.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "model/version.hpp"
#include "cli/parse.hpp"
#include "cli/commands.hpp"
#include "model/limits.hpp"
#include "model/schema.hpp"
#ifdef CCO_HAVE_CUDA
#include "runtime/device.hpp"
#endif

namespace cco::cli {
namespace {

nlohmann::json limits_json(const model::DeviceLimits& d) {
  return {{"name", d.name},
          {"arch", d.arch},
          {"sm_count", d.sm_count},
          {"warp_size", d.warp_size},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"regs_per_sm", d.regs_per_sm},
          {"regs_per_block", d.regs_per_block},
          {"max_regs_per_thread", d.max_regs_per_thread},
          {"reg_alloc_unit", d.reg_alloc_unit},
          {"smem_per_sm", d.smem_per_sm},
          {"smem_carveouts", d.smem_carveouts},
          {"smem_per_block_default", d.smem_per_block_default},
          {"smem_per_block_optin", d.smem_per_block_optin},
          {"smem_reserved_per_block", d.smem_reserved_per_block},
          {"smem_alloc_unit", d.smem_alloc_unit},
          {"from_device", d.from_device}};
}

std::string limits_text(const model::DeviceLimits& d) {
  std::string steps;
  for (auto s : d.smem_carveouts) steps += (steps.empty() ? "" : ",") + std::to_string(s / 1024);
  return fmt::format(
      "    {} SMs; per SM: {} threads, {} blocks, {} registers (unit {}), {} B shared memory "
      "(carveouts {} KB)\n"
      "    per block: {} threads, {} registers, {} B shared memory ({} B opt-in), {} B reserved, "
      "allocated in {} B units; {} registers per thread at most\n",
      d.sm_count, d.max_threads_per_sm, d.max_blocks_per_sm, d.regs_per_sm, d.reg_alloc_unit,
      d.smem_per_sm, steps, d.max_threads_per_block, d.regs_per_block, d.smem_per_block_default,
      d.smem_per_block_optin, d.smem_reserved_per_block, d.smem_alloc_unit, d.max_regs_per_thread);
}

}  // namespace

int info_main(const std::vector<std::string>& args) {
  CLI::App app{"cco info", "info"};
  app.set_help_flag();
  bool json = false;
  app.add_flag("--json", json);
  parse_cli(app, args);  // CLI11's errors in the wording every subcommand uses
  std::string why;
#ifdef CCO_HAVE_CUDA
  const int n = rt::device_count(&why);
  const auto v = rt::versions();
#else
  // A build without CUDA still describes the architectures it knows.
  const int n = 0;
  why = "this cco was built without CUDA";
  struct {
    std::string driver, runtime, nccl, cublas;
  } v;
#endif
  nlohmann::json j;
  model::stamp_schema(j, model::kInfoSchema);
  j["versions"] = {{"ccoverlap", model::kVersion}, {"cuda_driver", v.driver}, {"cuda_runtime", v.runtime},
                   {"nccl", v.nccl}, {"cublaslt", v.cublas}};
  j["devices"] = nlohmann::json::array();
  std::string out = fmt::format("ccoverlap {}: CUDA driver {}, runtime {}, cuBLASLt {}, NCCL {}\n",
                                model::kVersion, v.driver.empty() ? "none" : v.driver, v.runtime,
                                v.cublas.empty() ? "not found" : v.cublas,
                                v.nccl.empty() ? "not found" : v.nccl);
  if (n == 0) {
    j["no_gpu"] = why;
    out += "no CUDA GPU usable here (" + why + "); built-in architectures:\n";
    j["builtin"] = nlohmann::json::array();
    for (const auto& d : model::builtin_architectures()) {
      j["builtin"].push_back(limits_json(d));
      out += fmt::format("  {}  {}\n", d.arch, d.name) + limits_text(d);
    }
  }
#ifdef CCO_HAVE_CUDA
  for (int i = 0; i < n; ++i) {
    const auto info = rt::device_info(i);
    auto dj = limits_json(info.limits);
    dj["index"] = i;
    dj["pci_bus_id"] = info.pci_bus_id;
    dj["memory_bytes"] = info.total_mem;
    dj["stream_priority_least"] = info.least_priority;
    dj["stream_priority_greatest"] = info.greatest_priority;
    j["devices"].push_back(dj);
    out += fmt::format("device {}: {} [{}] {} ({:.1f} GiB), stream priorities {} (least) .. {} (greatest)\n",
                       i, info.name, info.pci_bus_id, info.limits.arch,
                       static_cast<double>(info.total_mem) / (1 << 30), info.least_priority,
                       info.greatest_priority) +
           limits_text(info.limits);
  }
#endif
  if (json) std::printf("%s\n", j.dump(2).c_str());
  else std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace cco::cli
