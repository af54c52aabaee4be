// FSDP2's re-gathers (issue 43 item 3): with `reshard_after_forward=True` (FSDP2's default) each
// block's parameters are all-gathered in forward, freed, and all-gathered again in backward;
// `fsdp.reshard=off` (cco run --framework; `reshard_after_forward=False`) keeps them and drops
// the backward all-gathers, for the memory of the unsharded parameters. GPU-free.
//
// In a step whose parameter all-gathers (where cco's labels give sizes: those whose size occurs
// twice or more in the step) outnumber its reduce-scatters, the surplus are taken as the
// re-gathers: the last of them in time order (backward runs last). Only where the step looks like
// FSDP2's, seen whole: reduce-scatters, FSDP2's copy-out kernels, and a window that starts with an
// all-gather. What they cost the step on the GPU (each where no other collective runs):
//   - the exposed communication inside them, but for the rank wait (rank skew's; `exposed`
//     comes without it);
//   - the compute slowed beside them: the step's compute slowed, in proportion to the compute that
//     overlapped them against all overlapped compute;
//   - the framework's copies out of their buffers (FSDP2's `split_with_sizes_copy` after each
//     all-gather): the last ones of the step, as many as the re-gathers' share of all-gathers.
// The host's work (allocating and freeing the unsharded parameters) is not in a GPU trace, so
// this is not a bound of what dropping them wins (docs/TRACE.md, "FSDP2's re-gathers").
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "trace/analysis.hpp"
#include "trace/format.hpp"

namespace cco::trace {

struct Regathers {
  int all_gathers = 0, reduce_scatters = 0, regathers = 0;
  int64_t exposed_ns = 0;  ///< exposed communication inside the re-gathers
  int64_t slowed_ns = 0;   ///< compute slowed beside them (the step's, by their share)
  int64_t copies_ns = 0;   ///< the framework's copies out of their buffers
  int64_t step_ns = 0;     ///< the step's length: the bound never exceeds it
  /// An upper bound: the terms may overlap (a copy-out that ran slowed counts twice).
  int64_t cost_ns() const { return std::min(exposed_ns + slowed_ns + copies_ns, step_ns); }
};

/// A communication kernel of an all-gather / a reduce-scatter: by cco's label of the NCCL call
/// ("nccl AllGather ...") or, unlabelled, by NCCL's kernel name (ncclDevKernel_AllGather_..., a
/// profiler's trace). Copy-engine collectives are neither (their copies carry no kind).
bool is_all_gather(const KernelEvent& k);
bool is_reduce_scatter(const KernelEvent& k);
/// A compute kernel that copies an all-gather's output into the parameters (FSDP2's
/// split_with_sizes_copy).
bool is_gather_copy_out(const KernelEvent& k);

/// The re-gathers of one step: `comms` the communication kernels that start in it, `copies_out`
/// its gather copy-outs, `exposed` its exposed communication less the rank wait and `comp` its
/// compute (unions, clipped to `step`), `overlapped_ns` the compute time that overlapped communication and
/// `compute_slowed_ns` the step's compute slowed.
Regathers regathers(std::vector<const KernelEvent*> comms,
                    std::vector<const KernelEvent*> copies_out, const std::vector<Interval>& exposed,
                    const std::vector<Interval>& comp, int64_t compute_overlapped_ns,
                    int64_t compute_slowed_ns, Interval step);

}  // namespace cco::trace
