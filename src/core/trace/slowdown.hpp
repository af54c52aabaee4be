// Why compute ran slower beside communication (issue 43 item 2; docs/TRACE.md, "Compute slowed,
// by cause"): a compute kernel's time beyond alone split into what the communication kernels
// running beside it took from it. GPU-free (part of cco.core).
//
// Two causes are modelled, from what the trace holds, each as the slowdown it would explain:
//
//   SMs taken       the collectives' CTAs hold SMs (one each: NCCL's channels) while a compute
//                   kernel with more blocks than the remaining SMs hold at once runs its waves on
//                   fewer SMs: alone x c / (S - c), c the SMs the collectives held on average over
//                   the kernel's run, S the device's SMs. A kernel whose blocks all fit beside the
//                   collectives loses nothing to them.
//   memory bandwidth the collectives' device-memory traffic (their estimated bytes over their
//                   time) takes a share b of the device's bandwidth, on average over the kernel's
//                   run; a kernel that is not compute-bound (every kernel but GEMMs, convolutions
//                   and fused attention, by name) then runs at most 1 / (1 - b) slower:
//                   alone x b / (1 - b). Copies (the program's own, on the copy engines) take no
//                   SMs and are memory traffic by nature.
//
// The observed slowdown is split in proportion to what each cause explains, never beyond it:
// where the two explain more than was observed, both are scaled down to it; where less, the rest
// is "other" (cache and NVLink contention, clocks, what the model does not see). The parts are
// estimates of causes; their sum is exact (the observed compute slowed).
//
// A collective's bytes come from its NCCL call, as cco's preload library records it on its
// kernels (KernelEvent::call "nccl AllReduce bf16 count=N ranks=R") or as PyTorch's profiler
// writes it in the kernel's args ("In msg nelems", "dtype", "Group size"); a trace without them
// has no memory share, and says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/metrics.hpp"
#include "trace/format.hpp"

namespace cco::trace {

/// One collective's size as nccl-tests counts it (model::busbw_factor's `bytes`: all-reduce's
/// buffer, all-gather's output, reduce-scatter's input) and its communicator's size.
struct CollectiveSize {
  model::Collective kind = model::Collective::AllReduce;
  double bytes = 0;
  int nranks = 1;
};

/// The label cco's preload library gives an NCCL call's kernels (KernelEvent::call): "nccl
/// AllReduce bf16 count=1048576 ranks=2" (NCCL's name of the kind, its data type, NCCL's count,
/// the communicator's size). Types: i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64 f8e4m3 f8e5m2.
std::string collective_call_label(std::string_view kind, std::string_view dtype, std::size_t count,
                                  int nranks);
/// The size a kernel's call label names (collective_call_label), or nullopt (not such a label,
/// or one that does not parse: the memory share then leaves this collective out).
std::optional<CollectiveSize> collective_size(std::string_view call);

/// The device-memory bytes one rank moves for a collective, estimated: its input read and output
/// written (model::collective_min_traffic), plus each byte its peers send written into this
/// rank's memory and read once (2 x busbw bytes, which is what ring and tree algorithms receive).
/// NCCL's copy-engine and symmetric (zero-copy) kernels move less; this is the ring's figure.
double collective_traffic_bytes(const CollectiveSize& c);

/// What the model needs of a device: its SMs and its peak device-memory bandwidth (bytes/s),
/// from the trace's rank (RankInfo::sm_count, RankInfo::mem_bandwidth), else from the device's
/// name where it is one of the known parts (H200, H100, A100, A40, MI250X); 0 where unknown.
struct DeviceFacts {
  int sms = 0;
  double mem_bandwidth = 0;
};
DeviceFacts device_facts(const RankInfo& r);

/// True for kernels that are compute-bound by their name: GEMMs (cuBLAS, cuBLASLt, CUTLASS,
/// nvjet), convolutions and fused attention. The memory share slows every other kernel.
bool likely_compute_bound(std::string_view kernel_name);

/// A compute kernel's slowdown beside communication, split by cause (ns; the three add up to
/// the slowdown given).
struct SlowedCauses {
  double memory = 0;  ///< memory bandwidth the collectives took
  double sms = 0;     ///< SMs the collectives' CTAs held
  double other = 0;   ///< what neither explains
};

/// The communication kernels beside one compute kernel, each with how long they overlapped it.
struct Beside {
  const KernelEvent* comm = nullptr;
  int64_t overlap_ns = 0;
};

/// Splits `slowed_ns` (the kernel's time beyond `alone_ns`, > 0) of compute kernel `k` by what
/// the communication kernels `beside` it took (see the top of this file). A collective of unknown
/// size takes no memory share; a device of unknown SMs or bandwidth, none of that kind.
SlowedCauses split_slowed(const KernelEvent& k, double alone_ns, double slowed_ns,
                          const std::vector<Beside>& beside, const DeviceFacts& dev);

/// The device-memory bytes a communication kernel moves per ns, estimated (0: its size is not
/// known). Copies: their bytes, read and written.
double comm_traffic_rate(const KernelEvent& c);

}  // namespace cco::trace
