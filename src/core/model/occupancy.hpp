// Occupancy calculator and shaping planner.
//
// occupancy() reproduces what cudaOccupancyMaxActiveBlocksPerMultiprocessor answers for a kernel
// footprint (with the default shared-memory carveout preference, i.e. the driver may pick the
// largest carveout). plan_padding() answers the inverse question the paper needs: how much extra
// dynamic shared memory caps a kernel at k resident blocks per SM.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/limits.hpp"

namespace cco::model {

/// What a kernel launch asks of one SM.
struct Footprint {
  int threads = 0;           ///< threads per block (blockDim.x * y * z), 1..max_threads_per_block
  int regs = 0;              ///< registers per thread as compiled (0 = unknown, treated as 0)
  int64_t static_smem = 0;   ///< static shared memory per block
  int64_t dynamic_smem = 0;  ///< dynamic shared memory per block the launch asks for
};

/// Which resource decides the occupancy.
enum class Limiter { Warps, Blocks, Registers, SharedMemory, None };
const char* to_string(Limiter l);

struct Occupancy {
  int blocks_per_sm = 0;     ///< resident blocks per SM (0: the block cannot launch)
  Limiter limiter = Limiter::None;
  int by_warps = 0;          ///< the bound from each resource alone
  int by_blocks = 0;
  int by_regs = 0;
  int by_smem = 0;
  int64_t smem_per_block = 0;  ///< static + dynamic + reserved, rounded to the allocation unit
  int64_t carveout = 0;        ///< smallest carveout step that holds blocks_per_sm blocks
  int warps_per_sm = 0;        ///< resident warps at this occupancy
  double occupancy = 0.0;      ///< warps_per_sm / max warps per SM
  std::string why_zero;        ///< when blocks_per_sm == 0: why the block cannot launch
};

/// Validates a footprint against the limits; throws Error with one line naming the bad field
/// (threads outside 1..max, registers over the per-thread maximum, shared memory over the opt-in
/// maximum, negative sizes).
void validate(const DeviceLimits& dev, const Footprint& fp);

/// Blocks of this footprint resident on one SM. Calls validate() first.
Occupancy occupancy(const DeviceLimits& dev, const Footprint& fp);

/// Result of planning padding for a target of k blocks per SM.
struct PaddingPlan {
  int target = 0;                ///< k asked for
  bool reachable = false;        ///< false: no dynamic size within the opt-in maximum caps at k
  bool already = false;          ///< the footprint as launched already has <= k blocks per SM
  int64_t dynamic_smem = 0;      ///< dynamic shared memory to launch with (>= the launch's own)
  int64_t extra = 0;             ///< dynamic_smem - the launch's own dynamic size
  bool needs_optin = false;      ///< static + dynamic_smem exceeds the default per-block limit
  int blocks_per_sm = 0;         ///< occupancy with dynamic_smem
  std::string note;              ///< human-readable reason when unreachable
};

/// The smallest dynamic shared memory, never below fp.dynamic_smem, that caps the footprint at
/// k blocks per SM. k must be >= 1 (Error otherwise). When the footprint already has <= k blocks
/// the launch's own size is returned with already = true. When no size up to the opt-in maximum
/// reaches k, reachable = false and dynamic_smem is the largest allowed size.
PaddingPlan plan_padding(const DeviceLimits& dev, const Footprint& fp, int k);

/// Plans for every k from the footprint's current occupancy down to 1.
std::vector<PaddingPlan> plan_all(const DeviceLimits& dev, const Footprint& fp);

/// The shaping of one kernel for one shape row, the one path every runner takes ("target k ->
/// padding -> check"): the extra dynamic shared memory -- `pad` when >= 0 (a row's explicit
/// --pad), else plan_padding's for `k` -- and the blocks per SM the model predicts with it. The
/// runner then checks the prediction against the driver on its device.
struct ShapeChoice {
  int64_t pad = 0;       ///< extra dynamic shared memory to launch with
  int model_bps = 0;     ///< blocks per SM with it, by the model
  std::string note;      ///< why k could not be reached ("" when it could, or pad was given)
};
/// Throws Error when the padded footprint cannot launch (a given pad beyond the device's limit).
ShapeChoice shape_choice(const DeviceLimits& dev, const Footprint& fp, int k, int64_t pad);

/// Parses a byte size: plain integer or with K/M/G suffix (powers of 1024, case-insensitive,
/// optional trailing "B" / "iB"). Throws Error on anything else, on negative values and overflow.
int64_t parse_bytes(const std::string& text);

/// Formats a byte count the way nccl-tests prints sizes: "256M", "64K", "1000" (exact only).
std::string format_bytes(int64_t bytes);

}  // namespace cco::model
