// The overlap analysis of a kernel trace (docs/TRACE.md defines every figure): interval
// arithmetic on kernel times, per rank and merged. GPU-free (part of cco.core).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/format.hpp"

namespace cco::trace {

// ---------------------------------------------------------------------------------------------
// Interval arithmetic (half-open [begin, end), nanoseconds)
// ---------------------------------------------------------------------------------------------

struct Interval {
  int64_t begin = 0, end = 0;
  int64_t length() const { return end > begin ? end - begin : 0; }
  bool operator==(const Interval&) const = default;
};
/// Sorted, disjoint, non-empty intervals covering exactly the union of the input.
std::vector<Interval> interval_union(std::vector<Interval> v);
/// Intersection of two unions (each as returned by interval_union).
std::vector<Interval> interval_intersection(const std::vector<Interval>& a,
                                            const std::vector<Interval>& b);
/// The parts of `w` inside `u` (sorted and disjoint, as interval_union gives it), found by a
/// binary search: O(log |u| + pieces), where interval_intersection({w}, u) walks all of `u`
/// (called once per communication kernel, that made cco report quadratic in the trace's length).
std::vector<Interval> window_intersection(Interval w, const std::vector<Interval>& u);
/// a \ b for two unions (each as returned by interval_union).
std::vector<Interval> interval_difference(const std::vector<Interval>& a,
                                          const std::vector<Interval>& b);
int64_t total_length(const std::vector<Interval>& v);

// ---------------------------------------------------------------------------------------------
// Analysis (docs/TRACE.md defines every figure)
// ---------------------------------------------------------------------------------------------

/// The longest stretch a communication kernel waited for SMs: it was ready to run (launched and
/// its stream's previous kernel done) but had not started while compute kernels ran.
struct CommWait {
  int64_t begin_ns = 0, end_ns = 0;  ///< the stretch (0, 0 when none)
  int rank = 0;
  int64_t stream = 0;
  std::string kernel;  ///< the communication kernel that waited
  /// "launch": ready time from CUPTI's launch timestamps; "stream-gap": launch time unknown,
  /// ready = end of the stream's previous kernel (an upper bound: the host may have been late).
  std::string method;
  int64_t length() const { return end_ns - begin_ns; }
};

struct OverlapAnalysis {
  int rank = -1;  ///< -1 for the merged view of all ranks
  int device = -1;
  std::size_t compute_kernels = 0, comm_kernels = 0, streams = 0;
  int64_t begin_ns = 0, end_ns = 0;
  int64_t span_ns = 0;          ///< first kernel start to last kernel end
  int64_t busy_ns = 0;          ///< union of all kernels
  int64_t compute_busy_ns = 0;  ///< union of compute kernels
  int64_t comm_busy_ns = 0;     ///< union of communication kernels
  int64_t overlapped_ns = 0;    ///< intersection of the two unions
  int64_t exposed_comm_ns = 0;  ///< comm_busy - overlapped
  int64_t comm_wait_ns = 0;     ///< all waiting stretches of communication kernels, summed
  CommWait longest_comm_wait;
  /// overlapped / min(compute_busy, comm_busy); NaN when either is 0. Merged view:
  /// sum(overlapped) / sum(min(compute_busy, comm_busy)) over ranks.
  double efficiency = 0;
  /// overlapped / comm_busy: Holistic Trace Analysis's communication-computation overlap ratio,
  /// the share of communication time hidden (1 = all of it); NaN without communication. Merged
  /// view: sum(overlapped) / sum(comm_busy).
  double overlap_ratio = 0;
};

struct AnalysisOptions {
  /// Only [from, to) counts (absolute ns; kernels are clipped). Unset: the whole trace.
  std::optional<int64_t> from_ns, to_ns;
};

struct TraceAnalysis {
  std::vector<OverlapAnalysis> ranks;  ///< sorted by rank
  OverlapAnalysis all;                 ///< merged: sums over ranks (span: across ranks)
  uint64_t dropped_records = 0;
  std::size_t kernels = 0;
};

TraceAnalysis analyze(const Trace& t, const AnalysisOptions& opt = {});
/// Every stretch in which a communication kernel of `rank` waited for SMs (the pieces the
/// analysis sums into comm_wait_ns), by start time.
std::vector<CommWait> communication_waits(const Trace& t, int rank,
                                          const AnalysisOptions& opt = {});
nlohmann::json analysis_to_json(const TraceAnalysis& a);

/// The kernels of a trace by kind: one group per name (copies per direction and size), with
/// where it ran (SMs or the copy engines), how often, its total and median time in the window
/// (clipped), over all ranks; largest total first.
struct KernelGroup {
  std::string name;
  std::string call;  ///< the library call that launched its kernels ("" unknown): a group per shape
  KernelCategory category = KernelCategory::Compute;
  bool copy_engine = false;
  std::size_t count = 0;
  int64_t total_ns = 0;
  int64_t median_ns = 0;
  int64_t bytes = 0;  ///< summed over the group (copies)
};
std::vector<KernelGroup> kernel_breakdown(const Trace& t, const AnalysisOptions& opt = {});
nlohmann::json breakdown_to_json(const std::vector<KernelGroup>& g);

}  // namespace cco::trace
