// cco plan: occupancy and padding of a kernel footprint, from the model (no GPU needed).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/parse.hpp"
#include "cli/commands.hpp"
#include "model/schema.hpp"
#include "model/occupancy.hpp"

#ifdef CCO_HAVE_CUDA
#include "runtime/device.hpp"
#endif

namespace cco::cli {
namespace {

model::DeviceLimits resolve_arch(const std::string& arch) {
  if (arch == "live") {
#ifdef CCO_HAVE_CUDA
    std::string why;
    if (rt::device_count(&why) == 0)
      throw Usage("--arch live needs a CUDA GPU and none is usable here (" + why + ")");
    return rt::query_limits(0);
#else
    throw Usage("--arch live needs a cco built with CUDA");
#endif
  }
  try {
    return model::find_architecture(arch);
  } catch (const model::Error& e) {
    throw Usage(std::string("--arch: ") + e.what());
  }
}

int64_t size_arg(const std::string& s, const char* flag) {
  try {
    return model::parse_bytes(s);
  } catch (const model::Error& e) {
    throw Usage(std::string(flag) + ": " + e.what());
  }
}

nlohmann::json plan_json(const model::PaddingPlan& p) {
  return {{"target_blocks_per_sm", p.target}, {"reachable", p.reachable},
          {"already", p.already},             {"dynamic_smem", p.dynamic_smem},
          {"extra", p.extra},                 {"needs_optin", p.needs_optin},
          {"blocks_per_sm", p.blocks_per_sm}, {"note", p.note}};
}

}  // namespace

int plan_main(const std::vector<std::string>& args) {
  CLI::App app{"cco plan", "plan"};
  app.set_help_flag();
  std::string arch, smem = "0", dyn = "0";
  int threads = 0, regs = 0, k = 0;
  bool json = false;
  app.add_option("--arch", arch);  // required, checked after the parse: an unknown option is
  app.add_option("--threads", threads);  // named first (CLI11 checks requirements before extras)
  app.add_option("--regs", regs);
  app.add_option("--smem", smem);
  app.add_option("--dyn-smem", dyn);
  app.add_option("--blocks-per-sm", k);
  app.add_flag("--json", json);
  parse_cli(app, args);  // CLI11's errors in the wording every subcommand uses
  for (const char* name : {"--arch", "--threads"})
    if (!app.count(name)) throw Usage(std::string(name) + " is required");
  if (app.count("--blocks-per-sm") && k < 1)
    throw Usage("--blocks-per-sm: must be at least 1, got " + std::to_string(k));

  const auto dev = resolve_arch(arch);
  model::Footprint fp;
  fp.threads = threads;
  fp.regs = regs;
  fp.static_smem = size_arg(smem, "--smem");
  fp.dynamic_smem = size_arg(dyn, "--dyn-smem");
  model::Occupancy occ;
  try {
    occ = model::occupancy(dev, fp);
  } catch (const model::Error& e) {
    throw Usage(e.what());
  }
  std::vector<model::PaddingPlan> plans;
  if (k > 0) plans.push_back(model::plan_padding(dev, fp, k));
  else if (occ.blocks_per_sm > 1)
    for (int t = occ.blocks_per_sm - 1; t >= 1; --t) plans.push_back(model::plan_padding(dev, fp, t));

  if (json) {
    nlohmann::json j;
    model::stamp_schema(j, model::kFootprintSchema);  // "ccoverlap.plan" before: a run plan's name
    j["arch"] = dev.arch;
    j["device"] = dev.name;
    j["sm_count"] = dev.sm_count;
    j["footprint"] = {{"threads", fp.threads}, {"regs", fp.regs}, {"static_smem", fp.static_smem},
                      {"dynamic_smem", fp.dynamic_smem}};
    j["occupancy"] = {{"blocks_per_sm", occ.blocks_per_sm},
                      {"limiter", model::to_string(occ.limiter)},
                      {"by_warps", occ.by_warps},
                      {"by_blocks", occ.by_blocks},
                      {"by_regs", occ.by_regs},
                      {"by_smem", occ.by_smem},
                      {"smem_per_block", occ.smem_per_block},
                      {"carveout", occ.carveout},
                      {"warps_per_sm", occ.warps_per_sm},
                      {"occupancy", occ.occupancy}};
    j["plans"] = nlohmann::json::array();
    for (const auto& p : plans) j["plans"].push_back(plan_json(p));
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  std::string out;
  out += fmt::format("# arch: {} ({}), {} SMs{}\n", dev.arch, dev.name, dev.sm_count,
                     dev.from_device ? ", live device 0" : "");
  out += fmt::format("# footprint: {} threads, {} registers, {} B static, {} B dynamic shared memory\n",
                     fp.threads, fp.regs, fp.static_smem, fp.dynamic_smem);
  out += fmt::format("blocks per SM: {} (limited by {}; bounds: warps {}, blocks {}, registers {}, "
                     "shared memory {})\n",
                     occ.blocks_per_sm, model::to_string(occ.limiter), occ.by_warps, occ.by_blocks,
                     occ.by_regs, occ.by_smem);
  if (occ.blocks_per_sm == 0) out += "cannot launch: " + occ.why_zero + "\n";
  out += fmt::format("occupancy: {:.0f}% ({} of {} warps), shared memory per block {} B as allocated, "
                     "carveout {} B\n",
                     100 * occ.occupancy, occ.warps_per_sm, dev.max_warps_per_sm(), occ.smem_per_block,
                     occ.carveout);
  if (plans.empty()) {
    out += "nothing to shape: the kernel already runs at " + std::to_string(occ.blocks_per_sm) +
           " block(s) per SM\n";
  } else {
    out += fmt::format("#{:>3} {:>12} {:>12} {:>9} {:>7}  {}\n", "k", "dyn-smem(B)", "extra(B)",
                       "blocks/SM", "opt-in", "note");
    for (const auto& p : plans)
      out += fmt::format(" {:>3} {:>12} {:>12} {:>9} {:>7}  {}\n", p.target, p.dynamic_smem, p.extra,
                         p.blocks_per_sm, p.needs_optin ? "yes" : "no",
                         !p.reachable ? "unreachable: " + p.note
                         : p.already  ? "already at or below k"
                                      : "");
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace cco::cli
