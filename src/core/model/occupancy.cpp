#include "model/occupancy.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <limits>

namespace cco::model {
namespace {

int64_t round_up(int64_t x, int64_t unit) { return unit <= 0 ? x : (x + unit - 1) / unit * unit; }
int64_t div_up(int64_t x, int64_t d) { return (x + d - 1) / d; }

int smem_alloc(const DeviceLimits& dev, const Footprint& fp, int64_t* per_block) {
  *per_block = round_up(fp.static_smem + fp.dynamic_smem + dev.smem_reserved_per_block,
                        dev.smem_alloc_unit);
  if (*per_block <= 0) return INT_MAX;
  return static_cast<int>(dev.smem_per_sm / *per_block);
}

}  // namespace

const char* to_string(Limiter l) {
  switch (l) {
    case Limiter::Warps: return "warps";
    case Limiter::Blocks: return "blocks";
    case Limiter::Registers: return "registers";
    case Limiter::SharedMemory: return "shared-memory";
    case Limiter::None: return "none";
  }
  return "?";
}

void validate(const DeviceLimits& dev, const Footprint& fp) {
  if (fp.threads < 1 || fp.threads > dev.max_threads_per_block)
    throw Error("threads per block must be 1.." + std::to_string(dev.max_threads_per_block) +
                " on " + dev.arch + ", got " + std::to_string(fp.threads));
  if (fp.regs < 0 || fp.regs > dev.max_regs_per_thread)
    throw Error("registers per thread must be 0.." + std::to_string(dev.max_regs_per_thread) +
                " on " + dev.arch + ", got " + std::to_string(fp.regs));
  if (fp.static_smem < 0) throw Error("static shared memory must not be negative");
  if (fp.dynamic_smem < 0) throw Error("dynamic shared memory must not be negative");
  // Static shared memory cannot opt in: above the default per-block limit it must be dynamic.
  if (fp.static_smem > dev.smem_per_block_default)
    throw Error("static shared memory " + std::to_string(fp.static_smem) +
                " B exceeds the static per-block maximum of " +
                std::to_string(dev.smem_per_block_default) + " B on " + dev.arch);
  if (fp.static_smem + fp.dynamic_smem > dev.smem_per_block_optin)
    throw Error("static + dynamic shared memory " + std::to_string(fp.static_smem + fp.dynamic_smem) +
                " B exceeds the opt-in maximum of " + std::to_string(dev.smem_per_block_optin) +
                " B per block on " + dev.arch);
}

Occupancy occupancy(const DeviceLimits& dev, const Footprint& fp) {
  validate(dev, fp);
  Occupancy o;
  const int warps_per_block = static_cast<int>(div_up(fp.threads, dev.warp_size));

  o.by_warps = dev.max_warps_per_sm() / warps_per_block;
  o.by_blocks = dev.max_blocks_per_sm;

  // Registers go to warps in allocation units, inside one of the SM's sub-partitions. The
  // per-block check assumes a block's warps are spread over all sub-partitions at once.
  const int64_t regs_per_warp = round_up(int64_t{fp.regs} * dev.warp_size, dev.reg_alloc_unit);
  if (regs_per_warp == 0) {
    o.by_regs = INT_MAX;
  } else {
    const int parts = std::max(1, dev.reg_sub_partitions);
    const int64_t per_block_sw = regs_per_warp * warps_per_block;
    const int64_t per_block_hw = regs_per_warp * round_up(warps_per_block, parts);
    if (per_block_sw > dev.regs_per_block || per_block_hw > dev.regs_per_block) {
      o.by_regs = 0;
      o.why_zero = "the block needs " + std::to_string(per_block_hw) +
                   " registers, more than the " + std::to_string(dev.regs_per_block) +
                   " one block may hold";
    } else {
      const int64_t warps_per_part = (dev.regs_per_sm / parts) / regs_per_warp;
      o.by_regs = static_cast<int>(warps_per_part * parts / warps_per_block);
    }
  }

  o.by_smem = smem_alloc(dev, fp, &o.smem_per_block);

  o.blocks_per_sm = std::min({o.by_warps, o.by_blocks, o.by_regs, o.by_smem});
  // Ties: name the resource a user can act on first (shared memory is what shaping moves).
  if (o.blocks_per_sm == o.by_smem && o.by_smem != INT_MAX) o.limiter = Limiter::SharedMemory;
  else if (o.blocks_per_sm == o.by_regs) o.limiter = Limiter::Registers;
  else if (o.blocks_per_sm == o.by_warps) o.limiter = Limiter::Warps;
  else o.limiter = Limiter::Blocks;
  if (o.by_regs == INT_MAX) o.by_regs = o.by_blocks;  // report "no bound" as the block limit
  if (o.by_smem == INT_MAX) o.by_smem = o.by_blocks;
  if (o.blocks_per_sm == 0 && o.why_zero.empty()) o.why_zero = "no block fits on one SM";

  const int64_t used = o.smem_per_block * o.blocks_per_sm;
  o.carveout = dev.smem_per_sm;
  for (int64_t step : dev.smem_carveouts)
    if (step >= used) {
      o.carveout = step;
      break;
    }
  o.warps_per_sm = o.blocks_per_sm * warps_per_block;
  o.occupancy = dev.max_warps_per_sm() > 0
                    ? static_cast<double>(o.warps_per_sm) / dev.max_warps_per_sm()
                    : 0.0;
  return o;
}

PaddingPlan plan_padding(const DeviceLimits& dev, const Footprint& fp, int k) {
  if (k < 1) throw Error("blocks per SM must be at least 1, got " + std::to_string(k));
  const Occupancy now = occupancy(dev, fp);
  PaddingPlan p;
  p.target = k;
  if (now.blocks_per_sm <= k) {
    p.reachable = true;
    p.already = true;
    p.dynamic_smem = fp.dynamic_smem;
    p.blocks_per_sm = now.blocks_per_sm;
  } else {
    // Other limits allow more than k, so shared memory must: floor(S / A) <= k with A the
    // allocated size per block, i.e. A > S / (k + 1), A a multiple of the allocation unit.
    const int64_t unit = std::max<int64_t>(1, dev.smem_alloc_unit);
    const int64_t need_alloc = round_up(dev.smem_per_sm / (k + 1) + 1, unit);
    // The smallest request that rounds up to need_alloc.
    const int64_t need_request = need_alloc - unit + 1;
    int64_t dyn = need_request - fp.static_smem - dev.smem_reserved_per_block;
    dyn = std::max(dyn, fp.dynamic_smem);
    const int64_t max_dyn = dev.smem_per_block_optin - fp.static_smem;
    if (dyn > max_dyn) {
      p.reachable = false;
      p.dynamic_smem = max_dyn;
      p.note = "k=" + std::to_string(k) + " needs " + std::to_string(dyn) +
               " B of dynamic shared memory, over the opt-in maximum of " +
               std::to_string(max_dyn) + " B left beside the static " +
               std::to_string(fp.static_smem) + " B";
    } else {
      p.reachable = true;
      p.dynamic_smem = dyn;
    }
    Footprint padded = fp;
    padded.dynamic_smem = p.dynamic_smem;
    p.blocks_per_sm = occupancy(dev, padded).blocks_per_sm;
  }
  p.extra = p.dynamic_smem - fp.dynamic_smem;
  p.needs_optin = fp.static_smem + p.dynamic_smem > dev.smem_per_block_default;
  return p;
}

std::vector<PaddingPlan> plan_all(const DeviceLimits& dev, const Footprint& fp) {
  const int top = occupancy(dev, fp).blocks_per_sm;
  std::vector<PaddingPlan> out;
  for (int k = top; k >= 1; --k) out.push_back(plan_padding(dev, fp, k));
  return out;
}

ShapeChoice shape_choice(const DeviceLimits& dev, const Footprint& fp, int k, int64_t pad) {
  ShapeChoice c;
  if (pad >= 0) {
    c.pad = pad;
  } else {
    const PaddingPlan p = plan_padding(dev, fp, k);
    if (!p.reachable) c.note = p.note;
    c.pad = p.extra;
  }
  Footprint padded = fp;
  padded.dynamic_smem += c.pad;
  c.model_bps = occupancy(dev, padded).blocks_per_sm;
  return c;
}

int64_t parse_bytes(const std::string& text) {
  const std::string bad = "invalid size '" + text + "' (expected an integer with optional K, M or G)";
  if (text.empty()) throw Error(bad);
  std::size_t i = 0;
  int64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const int d = text[i] - '0';
    if (value > (std::numeric_limits<int64_t>::max() - d) / 10) throw Error(bad + ": too large");
    value = value * 10 + d;
    ++i;
  }
  if (i == 0) throw Error(bad);
  std::string suffix;
  for (; i < text.size(); ++i) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  int64_t mult = 1;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") mult = int64_t{1} << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") mult = int64_t{1} << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") mult = int64_t{1} << 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB") mult = int64_t{1} << 40;
  else throw Error(bad);
  if (value > std::numeric_limits<int64_t>::max() / mult) throw Error(bad + ": too large");
  return value * mult;
}

std::string format_bytes(int64_t bytes) {
  constexpr const char* units[] = {"T", "G", "M", "K"};
  constexpr int shifts[] = {40, 30, 20, 10};
  for (int i = 0; i < 4; ++i) {
    const int64_t u = int64_t{1} << shifts[i];
    if (bytes >= u && bytes % u == 0) return std::to_string(bytes / u) + units[i];
  }
  return std::to_string(bytes);
}

}  // namespace cco::model
