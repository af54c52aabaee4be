// The shaping decision for one launch: pure functions of the plan, the device limits, what the
// driver said about the kernel, and the launch's block size and dynamic shared memory. No driver
// call here; the hook (hook.hpp) gathers the inputs and applies the answer.
#pragma once

#include <cstdint>
#include <string>

#include "model/limits.hpp"
#include "plan/plan.hpp"

namespace cco::preload {

/// Why a launch went through unchanged (or Shaped when it did not). Counted per process.
enum class Reason : int {
  Shaped = 0,       ///< shaped: launched with more dynamic shared memory
  Disabled,         ///< the hook is off for this process (bad configuration, no driver API)
  Nccl,             ///< an NCCL kernel: never padded
  PolicyOff,        ///< the plan shapes nothing for this kernel
  Denylist,         ///< the kernel matches shaping.denylist
  RuleSkip,         ///< a rule says skip
  Cooperative,      ///< a cooperative launch
  Cluster,          ///< a thread-block-cluster launch (attribute or compiled-in cluster size)
  Already,          ///< the kernel already runs at or below the target blocks per SM
  SmallGrid,        ///< grid <= SMs x k: padding cannot change residency
  Unreachable,      ///< the target needs more shared memory than a block may have
  ModelError,       ///< the model rejected the footprint (e.g. block larger than the kernel allows)
  NameFailed,       ///< cuFuncGetName and cuKernelGetName failed
  AttrQueryFailed,  ///< a cuFuncGetAttribute/cuKernelGetAttribute or device query failed
  AttrSetFailed,    ///< raising MAX_DYNAMIC_SHARED_SIZE_BYTES failed
  OccupancyFailed,  ///< the driver's occupancy query failed
  ModelMismatch,    ///< the driver's occupancy disagrees with the model's padding
  LaunchRetried,    ///< the shaped launch failed; the original was launched instead
  NoComm,           ///< "when": "overlap" and no communication pending on the device
  Captured,         ///< "when": "overlap", communication pending, but the launch is being captured
  Count
};
const char* to_string(Reason r);
inline constexpr int kReasonCount = static_cast<int>(Reason::Count);

/// What the driver told us about a (non-NCCL) kernel.
struct KernelInfo {
  std::string name;         ///< as cuFuncGetName/cuKernelGetName report it (mangled)
  std::string demangled;    ///< empty when not a mangled C++ name
  int regs = 0;             ///< CU_FUNC_ATTRIBUTE_NUM_REGS
  int64_t static_smem = 0;  ///< CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  int max_threads = 0;      ///< CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (0: unknown)
  bool cluster = false;     ///< compiled with a required cluster size > 1
};

/// The grid-independent part of a decision, cached per kernel and launch shape.
struct Decision {
  Reason reason = Reason::PolicyOff;  ///< Shaped, or why not
  int own_blocks = 0;                 ///< the model's blocks per SM for the launch as asked
  int target = 0;                     ///< k (0 when no target applies, e.g. a pad rule)
  int64_t dynamic_smem = 0;           ///< what to launch with (>= the launch's own) when Shaped
  int new_blocks = 0;                 ///< the model's blocks per SM with dynamic_smem
  bool needs_optin = false;           ///< static + dynamic_smem > the default per-block limit
  std::string note;                   ///< why, for verbose output
};

/// k for TargetKind::Model: ceil(fraction * own), at least 1.
int model_target(int own_blocks, double fraction);

/// Decides the padding for a kernel matched by `rule` (nullptr: the plan's default target).
/// Does not look at denylists, NCCL names, cooperative or cluster launches, or the grid: the
/// caller checks those first (see decide()). Never throws.
Decision decide_shape(const plan::Shaping& shaping, const plan::Rule* rule,
                      const model::DeviceLimits& dev, const KernelInfo& k, int threads,
                      int64_t launch_dynamic_smem);

/// True when a grid of `blocks` cannot be spread thinner than k per SM anyway (<= SMs x k).
bool small_grid(const model::DeviceLimits& dev, uint64_t blocks, int k);

/// The whole decision for one launch as the hook makes it, for tests and for documentation:
/// denylist, rule skip, cluster kernel, then decide_shape(), then small_grid().
Decision decide(const plan::Shaping& shaping, const model::DeviceLimits& dev, const KernelInfo& k,
                uint64_t grid_blocks, int threads, int64_t launch_dynamic_smem);

/// Device attributes the model needs, as the driver reports them (cuDeviceGetAttribute).
struct DeviceAttributes {
  int cc_major = 0, cc_minor = 0, sm_count = 0, warp_size = 32;
  int max_threads_per_block = 0, max_threads_per_sm = 0, max_blocks_per_sm = 0;
  int regs_per_sm = 0, regs_per_block = 0;
  int smem_per_sm = 0, smem_per_block = 0, smem_per_block_optin = 0, smem_reserved_per_block = 0;
};

/// The model's limits for a live device: the built-in table of its architecture (allocation
/// units, carveout steps are not queryable) overwritten with everything the device reports, like
/// cco::rt::query_limits() but from driver attributes.
model::DeviceLimits limits_from_attributes(const DeviceAttributes& a);

/// "_Z3fooi" -> "foo(int)"; empty when the name is not a mangled C++ name.
std::string demangle(const char* name);

}  // namespace cco::preload
