#include "preload/decide.hpp"

#include <cxxabi.h>

#include <cmath>
#include <cstdlib>

#include "model/occupancy.hpp"

namespace cco::preload {

const char* to_string(Reason r) {
  switch (r) {
    case Reason::Shaped:
      return "shaped";
    case Reason::Disabled:
      return "disabled";
    case Reason::Nccl:
      return "nccl";
    case Reason::PolicyOff:
      return "policy-off";
    case Reason::Denylist:
      return "denylist";
    case Reason::RuleSkip:
      return "rule-skip";
    case Reason::Cooperative:
      return "cooperative";
    case Reason::Cluster:
      return "cluster";
    case Reason::Already:
      return "already";
    case Reason::SmallGrid:
      return "small-grid";
    case Reason::Unreachable:
      return "unreachable";
    case Reason::ModelError:
      return "model-error";
    case Reason::NameFailed:
      return "name-failed";
    case Reason::AttrQueryFailed:
      return "attr-query-failed";
    case Reason::AttrSetFailed:
      return "attr-set-failed";
    case Reason::OccupancyFailed:
      return "occupancy-failed";
    case Reason::ModelMismatch:
      return "model-mismatch";
    case Reason::LaunchRetried:
      return "launch-retried";
    case Reason::NoComm:
      return "no-comm";
    case Reason::Captured:
      return "captured";
    case Reason::Count:
      break;
  }
  return "?";
}

int model_target(int own_blocks, double fraction) {
  if (own_blocks <= 1) return 1;
  const int k = static_cast<int>(std::ceil(own_blocks * fraction - 1e-9));
  return k < 1 ? 1 : k;
}

Decision decide_shape(const plan::Shaping& shaping, const plan::Rule* rule,
                      const model::DeviceLimits& dev, const KernelInfo& k, int threads,
                      int64_t launch_dynamic_smem) {
  Decision d;
  d.dynamic_smem = launch_dynamic_smem;
  try {
    if (k.max_threads > 0 && threads > k.max_threads) {
      d.reason = Reason::ModelError;
      d.note = "block of " + std::to_string(threads) + " threads exceeds the kernel's maximum " +
               std::to_string(k.max_threads);
      return d;
    }
    model::Footprint fp;
    fp.threads = threads;
    fp.regs = k.regs;
    fp.static_smem = k.static_smem;
    fp.dynamic_smem = launch_dynamic_smem;
    const model::Occupancy own = model::occupancy(dev, fp);
    d.own_blocks = own.blocks_per_sm;
    d.new_blocks = own.blocks_per_sm;
    if (own.blocks_per_sm == 0) {
      d.reason = Reason::ModelError;
      d.note = "the model says the block cannot launch: " + own.why_zero;
      return d;
    }

    plan::Target target = shaping.target;
    if (rule) {
      if (rule->action == plan::RuleAction::Skip) {
        d.reason = Reason::RuleSkip;
        d.note = "rule '" + rule->kernel + "' skips it";
        return d;
      }
      if (rule->action == plan::RuleAction::Pad) {
        const int64_t dyn = launch_dynamic_smem + rule->pad;
        if (k.static_smem + dyn > dev.smem_per_block_optin) {
          d.reason = Reason::Unreachable;
          d.note = "pad " + std::to_string(rule->pad) + " B exceeds the opt-in maximum";
          return d;
        }
        fp.dynamic_smem = dyn;
        d.dynamic_smem = dyn;
        d.new_blocks = model::occupancy(dev, fp).blocks_per_sm;
        d.needs_optin = k.static_smem + dyn > dev.smem_per_block_default;
        d.reason = Reason::Shaped;
        d.note = "rule '" + rule->kernel + "' pads " + std::to_string(rule->pad) + " B";
        return d;
      }
      target = rule->target;
    }
    if (target.kind == plan::TargetKind::Off) {
      d.reason = Reason::PolicyOff;
      return d;
    }
    d.target = target.kind == plan::TargetKind::Fixed
                   ? target.blocks_per_sm
                   : model_target(own.blocks_per_sm, shaping.model_fraction);
    if (own.blocks_per_sm <= d.target) {
      d.reason = Reason::Already;
      d.note = "already at " + std::to_string(own.blocks_per_sm) + " block(s) per SM";
      return d;
    }
    const model::PaddingPlan p = model::plan_padding(dev, fp, d.target);
    if (!p.reachable) {
      d.reason = Reason::Unreachable;
      d.note = p.note;
      return d;
    }
    d.dynamic_smem = p.dynamic_smem;
    d.new_blocks = p.blocks_per_sm;
    d.needs_optin = p.needs_optin;
    d.reason = p.dynamic_smem == launch_dynamic_smem ? Reason::Already : Reason::Shaped;
    return d;
  } catch (const std::exception& e) {
    d.reason = Reason::ModelError;
    d.dynamic_smem = launch_dynamic_smem;
    d.note = e.what();
    return d;
  }
}

bool small_grid(const model::DeviceLimits& dev, uint64_t blocks, int k) {
  if (k < 1 || dev.sm_count < 1) return false;
  return blocks <= static_cast<uint64_t>(dev.sm_count) * static_cast<uint64_t>(k);
}

Decision decide(const plan::Shaping& shaping, const model::DeviceLimits& dev, const KernelInfo& k,
                uint64_t grid_blocks, int threads, int64_t launch_dynamic_smem) {
  Decision d;
  d.dynamic_smem = launch_dynamic_smem;
  if (!shaping.active()) {
    d.reason = Reason::PolicyOff;
    return d;
  }
  if (plan::matches_any(shaping.denylist, k.name, k.demangled)) {
    d.reason = Reason::Denylist;
    return d;
  }
  if (k.cluster) {
    d.reason = Reason::Cluster;
    return d;
  }
  d = decide_shape(shaping, plan::match_rule(shaping, k.name, k.demangled), dev, k, threads,
                   launch_dynamic_smem);
  if (d.reason == Reason::Shaped && d.target > 0 && small_grid(dev, grid_blocks, d.target)) {
    d.reason = Reason::SmallGrid;
    d.dynamic_smem = launch_dynamic_smem;
  }
  return d;
}

model::DeviceLimits limits_from_attributes(const DeviceAttributes& a) {
  model::DeviceLimits d;
  const std::string arch = "sm_" + std::to_string(a.cc_major) + std::to_string(a.cc_minor);
  for (const auto& b : model::builtin_architectures())
    if (b.arch == arch) d = b;
  if (d.arch.empty()) {
    // An architecture the table does not know: take the closest rules, keep only the carveout
    // the device reports.
    d = model::find_architecture(a.cc_major >= 9 ? "sm_90" : "sm_80");
    d.smem_carveouts.clear();
  }
  d.name = arch + " (live)";
  d.arch = arch;
  d.cc_major = a.cc_major;
  d.cc_minor = a.cc_minor;
  d.sm_count = a.sm_count;
  if (a.warp_size > 0) d.warp_size = a.warp_size;
  d.max_threads_per_block = a.max_threads_per_block;
  d.max_threads_per_sm = a.max_threads_per_sm;
  d.max_blocks_per_sm = a.max_blocks_per_sm;
  d.regs_per_sm = a.regs_per_sm;
  d.regs_per_block = a.regs_per_block;
  d.smem_per_sm = a.smem_per_sm;
  d.smem_per_block_default = a.smem_per_block;
  d.smem_per_block_optin = a.smem_per_block_optin;
  d.smem_reserved_per_block = a.smem_reserved_per_block;
  if (d.smem_carveouts.empty() || d.smem_carveouts.back() != d.smem_per_sm)
    d.smem_carveouts.push_back(d.smem_per_sm);
  d.from_device = true;
  return d;
}

std::string demangle(const char* name) {
  if (!name || name[0] != '_' || name[1] != 'Z') return {};
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && out) ? out : "";
  std::free(out);
  return s;
}

}  // namespace cco::preload
