#include "model/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/ascii.hpp"
#include "model/limits.hpp"

namespace cco::model {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double Summary::rel_iqr() const { return median != 0 ? (p75 - p25) / median : kNaN; }

double percentile(std::vector<double> s, double q) {
  if (s.empty()) throw Error("percentile of no samples");
  if (!(q >= 0 && q <= 100)) throw Error("percentile must be in [0, 100]");
  std::sort(s.begin(), s.end());
  const double pos = q / 100.0 * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, s.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

double median(std::vector<double> s) { return percentile(std::move(s), 50); }

Summary summarize(const std::vector<double>& s) {
  Summary r;
  r.n = s.size();
  if (s.empty()) {
    r.min = r.max = r.mean = r.stdev = r.median = r.p10 = r.p25 = r.p75 = r.p90 = r.mad = kNaN;
    return r;
  }
  r.min = *std::min_element(s.begin(), s.end());
  r.max = *std::max_element(s.begin(), s.end());
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  double ss = 0;
  for (double x : s) ss += (x - r.mean) * (x - r.mean);
  r.stdev = s.size() > 1 ? std::sqrt(ss / static_cast<double>(s.size() - 1)) : 0.0;
  r.median = percentile(s, 50);
  r.p10 = percentile(s, 10);
  r.p25 = percentile(s, 25);
  r.p75 = percentile(s, 75);
  r.p90 = percentile(s, 90);
  std::vector<double> dev(s.size());
  std::transform(s.begin(), s.end(), dev.begin(), [&](double x) { return std::fabs(x - r.median); });
  r.mad = percentile(std::move(dev), 50);
  return r;
}

double ideal(const OverlapTimes& t) { return std::max({t.t_comp, t.t_comm, t.t_mem}); }
double reduction(const OverlapTimes& t) { return t.t_seq > 0 ? 1.0 - t.t / t.t_seq : kNaN; }
double collective_min_traffic(Collective c, double bytes) {
  switch (c) {
    case Collective::AllReduce:
    case Collective::AllToAll:
    case Collective::SendRecv:
      return 2 * bytes;
    default:
      return bytes;
  }
}

double dram_floor_bytes(double bytes, double pass_bytes, double l2_bytes) {
  return pass_bytes > l2_bytes ? bytes : 0.0;
}

double ideal_reduction(const OverlapTimes& t) {
  return t.t_seq > 0 ? 1.0 - ideal(t) / t.t_seq : kNaN;
}
double overlap_efficiency(const OverlapTimes& t) {
  const double shorter = std::min(t.t_comp, t.t_comm);
  return shorter > 0 ? (t.t_seq - t.t) / shorter : kNaN;
}

double efficiency_best(double comp_best, double comm_best, double t) {
  if (!(comp_best > 0) || !(comm_best > 0)) return kNaN;
  return (comp_best + comm_best - t) / std::min(comp_best, comm_best);
}

namespace {
struct CollName {
  const char* name;
  const char* alias;
  Collective c;
};
constexpr CollName kColls[] = {
    {"allreduce", "all_reduce", Collective::AllReduce},
    {"allgather", "all_gather", Collective::AllGather},
    {"reducescatter", "reduce_scatter", Collective::ReduceScatter},
    {"alltoall", "alltoall", Collective::AllToAll},
    {"sendrecv", "sendrecv", Collective::SendRecv},
    {"broadcast", "broadcast", Collective::Broadcast},
    {"reduce", "reduce", Collective::Reduce},
    {"gather", "gather", Collective::Gather},
    {"scatter", "scatter", Collective::Scatter},
};
}  // namespace

const char* to_string(Collective c) {
  for (const auto& k : kColls)
    if (k.c == c) return k.name;
  return "?";
}

std::vector<std::string> collective_names() {
  std::vector<std::string> out;
  for (const auto& k : kColls) out.emplace_back(k.name);
  return out;
}

Collective parse_collective(std::string_view name) {
  std::string key = ascii_lower(name);
  if (key.size() > 5 && key.ends_with("_perf")) key.resize(key.size() - 5);
  for (const auto& k : kColls)
    if (key == k.name || key == k.alias) return k.c;
  std::string list;
  for (const auto& n : collective_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown collective '" + std::string(name) + "' (known: " + list + ")");
}

double busbw_factor(Collective c, int n) {
  if (n < 1) throw Error("number of ranks must be at least 1");
  const double nn = n;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (nn - 1) / nn;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: return (nn - 1) / nn;
    case Collective::SendRecv:
    case Collective::Broadcast:
    case Collective::Reduce: return 1.0;
  }
  return 1.0;
}

double algbw_gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : kNaN; }

double busbw_gbps(Collective c, int nranks, double bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * busbw_factor(c, nranks);
}

double gemm_flops(int64_t m, int64_t n, int64_t k, int64_t count) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(count);
}

}  // namespace cco::model
