// Device limits that decide how many blocks of a kernel fit on one SM (CU on AMD).
//
// Pure C++: no CUDA header is included anywhere in src/core/model, so everything here is testable on a
// machine without a GPU. The runtime layer (src/gpu/runtime/device.hpp) fills the same structure from
// a live device; the built-in table below holds the published limits of the architectures the
// paper measured (A40, A100, H100/H200, MI250X).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cco::model {

/// Per-SM and per-block resource limits of one device.
///
/// All sizes are bytes unless the name says otherwise. "SM" means a streaming multiprocessor on
/// NVIDIA and a compute unit on AMD.
struct DeviceLimits {
  std::string name;  ///< e.g. "NVIDIA H200" or "sm_90 (H100/H200)"
  std::string arch;  ///< "sm_80", "sm_86", "sm_90", "gfx90a"
  int cc_major = 0;  ///< compute capability (0 for AMD)
  int cc_minor = 0;
  int sm_count = 0;  ///< SMs (CUs) on the device
  /// Peak device-memory bandwidth in bytes per second (2 x memory clock x bus width; 0: unknown):
  /// the memory-traffic floor of an overlapped run (docs/METRICS.md).
  double mem_bandwidth = 0;
  /// L2 cache size in bytes (0: unknown). Data that fits may be reused from it, so the
  /// memory-traffic floor counts only the bytes of parts larger than it.
  int64_t l2_bytes = 0;

  int warp_size = 32;              ///< threads per warp (64 per wavefront on AMD)
  int max_threads_per_block = 0;   ///< largest block a launch may ask for
  int max_threads_per_sm = 0;      ///< resident threads per SM
  int max_blocks_per_sm = 0;       ///< resident blocks per SM, whatever their size
  int max_warps_per_sm() const { return max_threads_per_sm / warp_size; }

  int regs_per_sm = 0;             ///< 32-bit registers per SM
  int regs_per_block = 0;          ///< 32-bit registers one block may hold
  int max_regs_per_thread = 0;     ///< largest per-thread register count a kernel may have
  int reg_alloc_unit = 0;          ///< registers are given to a warp in multiples of this
  int reg_sub_partitions = 0;      ///< register file split (warp schedulers); a warp's registers
                                   ///< must fit in one sub-partition

  int64_t smem_per_sm = 0;               ///< largest shared memory (LDS) per SM, at the max carveout
  std::vector<int64_t> smem_carveouts;   ///< shared-memory sizes per SM the hardware can be set to
  int64_t smem_per_block_default = 0;    ///< static + dynamic a block may use without opting in
  int64_t smem_per_block_optin = 0;      ///< static + dynamic a block may use after opting in
  int64_t smem_reserved_per_block = 0;   ///< shared memory the system reserves for every block
  int64_t smem_alloc_unit = 0;           ///< a block's shared memory is rounded up to this

  bool from_device = false;  ///< true when filled by the runtime from a live device
};

/// The built-in table: sm_80 (A100 SXM), sm_86 (A40), sm_90 (H100 SXM / H200: same SM), gfx90a
/// (MI250X, one GCD). Order is stable.
const std::vector<DeviceLimits>& builtin_architectures();

/// Looks up an architecture by name. Accepts "sm_80", "sm_86", "sm_90", "gfx90a" and the aliases
/// "a100", "a40", "h100", "h200", "mi250x" (case-insensitive). Throws cco::model::Error naming the
/// accepted spellings when unknown. "live" is not handled here (it needs the runtime).
const DeviceLimits& find_architecture(std::string_view name);

/// The spellings find_architecture() accepts, for error messages and help.
std::vector<std::string> architecture_names();

/// Error raised by the model layer for invalid input (bad footprint, unknown architecture).
/// The CLI turns it into one error line and exit code 2.
class Error : public std::exception {
 public:
  explicit Error(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace cco::model
