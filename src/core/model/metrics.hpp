// The metrics of docs/METRICS.md, implemented once, and robust statistics over samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cco::model {

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

/// Summary of a set of samples (any unit). Empty input gives n = 0 and NaN everywhere.
struct Summary {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0, stdev = 0;
  double median = 0, p10 = 0, p25 = 0, p75 = 0, p90 = 0;
  double mad = 0;  ///< median absolute deviation from the median
  /// Relative spread used in tables: (p75 - p25) / median, the interquartile range over the median.
  double rel_iqr() const;
};

/// Percentile q in [0, 100] with linear interpolation between closest ranks (numpy's default).
/// Throws Error on empty input or q outside [0, 100].
double percentile(std::vector<double> samples, double q);
double median(std::vector<double> samples);
Summary summarize(const std::vector<double>& samples);

// ---------------------------------------------------------------------------------------------
// Overlap metrics (docs/METRICS.md): a compute part C and a communication part M.
// ---------------------------------------------------------------------------------------------

/// Times of one workload, all in the same unit (the bench uses microseconds, medians).
struct OverlapTimes {
  double t_comp = 0;  ///< C alone
  double t_comm = 0;  ///< M alone
  double t_seq = 0;   ///< C then M on one stream
  double t = 0;       ///< the mode being judged
  /// The memory-traffic floor: the device-memory bytes both parts move at least, over the
  /// device's peak bandwidth (0: unknown). No overlap runs faster than this.
  double t_mem = 0;
};

/// max(T_comp, T_comm, T_mem): the time with perfect overlap (T_mem, the memory-traffic floor,
/// binds only where both parts together move more bytes than the device can in max(C, M)).
double ideal(const OverlapTimes& t);
/// 1 - T / T_seq: the paper's headline figure (0.25 = 25% lower total time).
double reduction(const OverlapTimes& t);
/// The reduction perfect overlap would give: 1 - T_ideal / T_seq.
double ideal_reduction(const OverlapTimes& t);
/// (T_seq - T) / min(T_comp, T_comm): 1 = the shorter part fully hidden, 0 = no better than
/// sequential, < 0 = worse. NaN when the shorter part takes no time.
double overlap_efficiency(const OverlapTimes& t);
/// E_best = (S - T) / (S - L) with S = comp_best + comm_best (the best sequential time: the
/// fastest compute part alone plus the fastest collective alone over every setting measured) and
/// L = max(comp_best, comm_best): the share of the achievable gain that overlap delivered. Unlike
/// overlap_efficiency, a setting whose collective is merely faster does not count as overlap.
/// NaN when either part is missing (<= 0).
double efficiency_best(double comp_best, double comm_best, double t);

// ---------------------------------------------------------------------------------------------
// Collective bandwidth, as nccl-tests defines it (docs/METRICS.md derives the factors).
// ---------------------------------------------------------------------------------------------

enum class Collective {
  AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Broadcast, Reduce, Gather, Scatter
};

/// "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "broadcast", "reduce",
/// "gather", "scatter".
const char* to_string(Collective c);
/// Accepts the names above and nccl-tests' binary names without "_perf" (all_reduce, ...).
/// Throws Error listing the accepted names when unknown.
Collective parse_collective(std::string_view name);
std::vector<std::string> collective_names();

/// busbw = algbw * factor(n): 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
/// all-to-all, 1 for send/recv, broadcast and reduce. n >= 1 (Error otherwise).
double busbw_factor(Collective c, int nranks);
/// Device-memory bytes one rank's collective of nccl-tests size `bytes` must move at least: its
/// input read and its output written where both are the full size (all-reduce, all-to-all,
/// send/recv: 2 x bytes), else the larger of the two (all-gather's output, reduce-scatter's
/// input, ...: bytes). A floor, not an estimate: NCCL's staging and copies move more.
double collective_min_traffic(Collective c, double bytes);
/// The bytes a part must move through device memory at least, for the memory-traffic floor:
/// `bytes` (all its passes) when one pass's working set, `pass_bytes`, exceeds the L2 cache
/// (`l2_bytes`; 0: unknown, taken as none), else 0: a part that fits in L2 may run from it.
double dram_floor_bytes(double bytes, double pass_bytes, double l2_bytes);
/// algbw in GB/s (1e9 bytes per second) of `bytes` moved in `seconds` (the nccl-tests "size").
double algbw_gbps(double bytes, double seconds);
double busbw_gbps(Collective c, int nranks, double bytes, double seconds);

/// Floating-point operations of count GEMMs M x N x K (2 M N K each).
double gemm_flops(int64_t m, int64_t n, int64_t k, int64_t count = 1);

}  // namespace cco::model
