#include "trace/diagnosis.hpp"
#include "trace/headline.hpp"
#include "trace/regather.hpp"
#include "trace/slowdown.hpp"
#include "trace/step_find.hpp"
#include "trace/step_match.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "model/limits.hpp"
#include "steps/paired.hpp"

namespace cco::trace {

using nlohmann::json;
using detail::find_steps_in;
using detail::kernels_by_rank;
using detail::KernelsByRank;

namespace {
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

// ---------------------------------------------------------------------------------------------
// Diagnosis
// ---------------------------------------------------------------------------------------------

const char* to_string(AloneSource s) {
  switch (s) {
    case AloneSource::Baseline: return "baseline_op";
    case AloneSource::BaselineKernel: return "baseline_kernel";
    case AloneSource::SameOp: return "same_op";
    case AloneSource::SameKernel: return "same_kernel";
    case AloneSource::None: return "none";
  }
  return "none";
}

LeverBounds lever_bounds(const StepParts& p) {
  LeverBounds b;
  b.priority_shaping_ns = std::min(p.sm_wait_ns, p.exposed_ns - p.exposed_rank_wait_ns);
  // Taking SMs away from compute (a budget) or the collective off them (fewer channels, copy
  // engines) removes what sharing cost both sides, and may also remove the wait for SMs.
  // At most everything removable: compute slowed and the exposed time that is not rank wait.
  // Not the compute slowed by memory bandwidth: a collective on fewer SMs moves the same bytes.
  const int64_t by_sms = p.compute_slowed_ns - p.compute_slowed_memory_ns;
  b.sm_budget_ns = std::min(by_sms + p.exposed_slowed_ns + b.priority_shaping_ns,
                            by_sms + p.exposed_ns - p.exposed_rank_wait_ns);
  b.memory_traffic_ns = p.compute_slowed_memory_ns;
  b.scheduling_ns = p.exposed_tail_ns + p.exposed_dependent_ns;
  b.rank_skew_ns = p.exposed_rank_wait_ns;
  b.all_hidden_ns = p.time_ns - p.exposed_ns;
  b.ideal_ns = p.compute_alone_ns + p.idle_ns;
  b.framework_copies_ns = p.compute_copies_ns;
  return b;
}

namespace {

// Length of the part of x inside a union (sorted, disjoint).
int64_t overlap_length(const std::vector<Interval>& u, Interval x) {
  if (x.end <= x.begin) return 0;
  auto it = std::lower_bound(u.begin(), u.end(), x.begin,
                             [](const Interval& i, int64_t v) { return i.end <= v; });
  int64_t s = 0;
  for (; it != u.end() && it->begin < x.end; ++it)
    s += std::max<int64_t>(0, std::min(it->end, x.end) - std::max(it->begin, x.begin));
  return s;
}

// A kernel's identity for "the same kernel alone": name and launch, and the library call that
// launched it where the trace knows it (a persistent GEMM runs one grid for many shapes).
// `calls`: whether the traces matched against each other all carry library calls (a trace
// without them would match no kernel that has one). Only compute kernels' calls (GEMM shapes)
// tell kernels apart; a collective's call (its size: trace/slowdown.hpp) is for the memory share.
std::string kernel_key(const KernelEvent& k, bool calls) {
  const bool by_call = calls && k.category == KernelCategory::Compute;
  return fmt::format("{}|{}x{}x{}|{}x{}x{}|{}|{}|{}", k.name, k.grid.x, k.grid.y, k.grid.z,
                     k.block.x, k.block.y, k.block.z, k.registers, k.static_smem + k.dynamic_smem,
                     by_call ? std::string_view(k.call) : std::string_view());
}

bool has_calls(const Trace& t) {
  return std::any_of(t.kernels.begin(), t.kernels.end(), [](const KernelEvent& k) {
    return k.category == KernelCategory::Compute && !k.call.empty();
  });
}

// Median and quartiles, as the step comparisons compute them (steps::summarize).
Spread spread_of(std::vector<double> v) {
  const steps::Summary m = steps::summarize(std::move(v));
  return {m.median, m.q1, m.q3};
}

// Durations of kernels that ran alone, by kernel and by op (kernel and its position among the
// same kernels in its step), from the kept steps of a trace.
struct AloneTable {
  std::unordered_map<std::string, std::vector<double>> by_kernel;
  std::map<std::pair<std::string, int>, std::vector<double>> by_op;
  std::unordered_map<std::string, Spread> kernel_spread;
  std::map<std::pair<std::string, int>, Spread> op_spread;
  void finish() {
    for (auto& [k, v] : by_kernel) kernel_spread[k] = spread_of(v);
    for (auto& [k, v] : by_op) op_spread[k] = spread_of(v);
  }
};

// Per rank, what the whole trace knows: unions, waits, kernels by start.
struct RankView {
  bool calls = false;  // kernels are told apart by their library call too (kernel_key)
  DeviceFacts dev;     // the rank's SMs and memory bandwidth (trace/slowdown.hpp)
  std::vector<const KernelEvent*> ks;  // by start
  std::vector<Interval> comp_u, comm_u;
  std::vector<CommWait> waits;          // by begin
  std::vector<int64_t> ks_end, waits_end;  // running maximum of the ends, in the same order
};

// The first of a list (by start) whose running maximum end passes t: nothing before it reaches
// past t, however long one kernel or wait lasted.
std::size_t first_reaching(const std::vector<int64_t>& running_end, int64_t t) {
  return static_cast<std::size_t>(
      std::upper_bound(running_end.begin(), running_end.end(), t) - running_end.begin());
}

// The kernels of a view that overlap [b, e), each with its position among kernels of the same
// key that start in the window (ordinals count only kernels starting inside).
template <class F>
void for_window(const RankView& v, int64_t b, int64_t e, F&& f) {
  for (std::size_t i = first_reaching(v.ks_end, b); i < v.ks.size() && v.ks[i]->start_ns < e; ++i)
    if (v.ks[i]->end_ns > b) f(*v.ks[i]);
}

// for_window with each kernel's op: f(kernel, key, position among the kernels of that key that
// start inside the window). A kernel that started before the window has no op: ("", -1).
template <class F>
void for_ops(const RankView& v, int64_t b, int64_t e, F&& f) {
  std::unordered_map<std::string, int> ord;
  for_window(v, b, e, [&](const KernelEvent& k) {
    if (k.start_ns < b) return f(k, std::string(), -1);
    std::string key = kernel_key(k, v.calls);
    const int n = ord[key]++;
    f(k, std::move(key), n);
  });
}

// The effective start of each communication kernel: its start, or its last peer's start when
// that was later (kernel -> {last peer start, the peer}).
using PeerStarts = std::unordered_map<const KernelEvent*, std::pair<int64_t, int>>;

// Every kernel of the views that ran alone, by kernel only (whole trace).
void add_alone_kernels(AloneTable& tab, const std::map<int, RankView>& views) {
  for (const auto& [rank, v] : views)
    for (const auto* k : v.ks) {
      const auto& other = k->category == KernelCategory::Compute ? v.comm_u : v.comp_u;
      if (overlap_length(other, {k->start_ns, k->end_ns}) > 0) continue;
      tab.by_kernel[kernel_key(*k, v.calls)].push_back(static_cast<double>(k->duration_ns()));
    }
}

void add_alone(AloneTable& tab, const std::map<int, RankView>& views, const StepSet& st,
               const PeerStarts& peers, bool kernels = true) {
  for (const auto& [rank, steps] : st.ranks) {
    const auto vit = views.find(rank);
    if (vit == views.end()) continue;
    const RankView& v = vit->second;
    for (const auto& w : steps) {
      for_ops(v, w.begin_ns, w.end_ns, [&](const KernelEvent& k, std::string key, int n) {
        if (n < 0) return;
        int64_t s = k.start_ns;
        if (auto p = peers.find(&k); p != peers.end()) s = std::max(s, p->second.first);
        if (s >= k.end_ns) return;  // a peer started after it ended: no time alone to learn
        const auto& other = k.category == KernelCategory::Compute ? v.comm_u : v.comp_u;
        if (overlap_length(other, {s, k.end_ns}) > 0) return;
        const double d = static_cast<double>(k.end_ns - s);
        if (kernels) tab.by_kernel[key].push_back(d);
        tab.by_op[{key, n}].push_back(d);
      });
    }
  }
}

std::map<int, RankView> views_of(const Trace& t, const KernelsByRank& by_rank, bool calls) {
  std::map<int, RankView> out;
  for (const auto& [rank, ks] : by_rank) {
    RankView& v = out[rank];
    v.calls = calls;
    for (const auto& r : t.ranks)
      if (r.rank == rank) v.dev = device_facts(r);
    v.ks = ks;
    std::vector<Interval> c, m;
    for (const auto* k : v.ks) {
      (k->category == KernelCategory::Compute ? c : m).push_back({k->start_ns, k->end_ns});
      v.ks_end.push_back(v.ks_end.empty() ? k->end_ns : std::max(v.ks_end.back(), k->end_ns));
    }
    v.comp_u = interval_union(std::move(c));
    v.comm_u = interval_union(std::move(m));
    v.waits = communication_waits(t, rank);
    for (const auto& w : v.waits)
      v.waits_end.push_back(v.waits_end.empty() ? w.end_ns : std::max(v.waits_end.back(), w.end_ns));
  }
  return out;
}

// Matches the communication kernels across ranks: every rank issues the same collectives in the
// same order on each communicator, so the j-th kernel of a rank's s-th communication stream (its
// streams in the order of their first communication kernel) is the j-th of every other rank's.
// Records, per kernel, the latest start among its peers and whose it was.
PeerStarts peer_starts(const std::map<int, RankView>& views, std::vector<std::string>& notes) {
  PeerStarts out;
  if (views.size() < 2) return out;
  // rank -> its communication streams, each a list of kernels by start
  std::map<int, std::vector<std::vector<const KernelEvent*>>> per;
  for (const auto& [rank, v] : views) {
    std::map<std::pair<int, int64_t>, std::size_t> idx;
    auto& streams = per[rank];
    for (const auto* k : v.ks) {
      if (k->category != KernelCategory::Communication) continue;
      auto [it, fresh] = idx.try_emplace({k->device, k->stream}, streams.size());
      if (fresh) streams.emplace_back();
      streams[it->second].push_back(k);
    }
  }
  std::size_t nstreams = kMax, mismatched = 0, uneven = 0;
  for (const auto& [r, st] : per) nstreams = std::min(nstreams, st.size());
  for (const auto& [r, st] : per)
    if (st.size() != nstreams) ++uneven;
  for (std::size_t s = 0; s < nstreams; ++s) {
    std::size_t n = kMax;
    for (const auto& [r, st] : per) n = std::min(n, st[s].size());
    for (const auto& [r, st] : per)
      if (st[s].size() != n) ++uneven;
    for (std::size_t j = 0; j < n; ++j) {
      const KernelEvent* first = per.begin()->second[s][j];
      int64_t last = kMin;
      int who = -1;
      bool same = true;
      for (const auto& [r, st] : per) {
        const KernelEvent* k = st[s][j];
        same = same && k->name == first->name;
        if (k->start_ns > last) {
          last = k->start_ns;
          who = r;
        }
      }
      if (!same) {
        ++mismatched;
        continue;
      }
      for (const auto& [r, st] : per) out[st[s][j]] = {last, who};
    }
  }
  if (uneven > 0)
    notes.push_back("the ranks' traces hold different numbers of communication kernels (or "
                    "streams): collectives are matched from the first one on, as far as every rank "
                    "has them");
  if (mismatched > 0)
    notes.push_back(fmt::format("{} communication kernels did not match across ranks by name: no "
                                "rank wait for them",
                                mismatched));
  return out;
}

struct Estimate {
  double alone = 0, half_iqr = 0;
  AloneSource source = AloneSource::None;
};

Estimate estimate(const std::string& key, int ord, const AloneTable* base, const AloneTable& own) {
  auto from = [&](const AloneTable& t, AloneSource op, AloneSource kern) -> std::optional<Estimate> {
    if (auto it = t.op_spread.find({key, ord}); it != t.op_spread.end())
      return Estimate{it->second.median, (it->second.q3 - it->second.q1) / 2, op};
    if (auto it = t.kernel_spread.find(key); it != t.kernel_spread.end())
      return Estimate{it->second.median, (it->second.q3 - it->second.q1) / 2, kern};
    return std::nullopt;
  };
  if (base)
    if (auto e = from(*base, AloneSource::Baseline, AloneSource::BaselineKernel)) return *e;
  if (auto e = from(own, AloneSource::SameOp, AloneSource::SameKernel)) return *e;
  return {};
}

StepParts step_parts(int rank, const StepWindow& w, const RankView& v, const PeerStarts& peers,
                     const AloneTable* base, const AloneTable& own) {
  StepParts p;
  p.rank = rank;
  p.step = w.index;
  p.program_step = w.program_step;
  p.begin_ns = w.begin_ns;
  p.end_ns = w.end_ns;
  p.time_ns = w.length();
  const int64_t b = w.begin_ns, e = w.end_ns;
  std::vector<Interval> comp, comm, rank_wait, copies, own_copies;
  struct Op {
    const KernelEvent* k;
    std::string key;
    int ord;
    int64_t work_start;  // collectives: when its last peer started, if later
  };
  std::vector<Op> comps, comms;  // the ops that start inside the window
  std::vector<const KernelEvent*> copies_out;  // FSDP2's copies out of all-gathers (regather.hpp)
  int64_t first_comp = kMax, last_comp = kMin;
  for_ops(v, b, e, [&](const KernelEvent& k, std::string key, int n) {
    const Interval iv{std::max(k.start_ns, b), std::min(k.end_ns, e)};
    const bool inside = n >= 0;
    if (k.category == KernelCategory::Compute) {
      comp.push_back(iv);
      if (k.copy == "DtoD") own_copies.push_back(iv);  // not a profiler's HtoD or memset
      first_comp = std::min(first_comp, iv.begin);
      last_comp = std::max(last_comp, iv.end);
      if (inside) comps.push_back({&k, std::move(key), n, k.start_ns});
      if (inside && is_gather_copy_out(k)) copies_out.push_back(&k);
      ++p.compute_kernels;
    } else {
      comm.push_back(iv);
      if (k.is_copy()) copies.push_back(iv);
      else if (!collective_size(k.call)) ++p.comm_unsized_kernels;
      ++p.comm_kernels;
      int64_t ws = k.start_ns;
      if (auto it = peers.find(&k); it != peers.end() && it->second.first > k.start_ns) {
        ws = std::min(it->second.first, k.end_ns);  // never past its own end
        rank_wait.push_back({std::max(k.start_ns, b), std::min(ws, e)});
        if (ws - k.start_ns > p.slowest_peer_lag_ns) {
          p.slowest_peer_lag_ns = ws - k.start_ns;
          p.slowest_peer = it->second.second;
        }
      }
      if (inside) comms.push_back({&k, std::move(key), n, ws});
    }
  });
  const auto comp_u = interval_union(std::move(comp));
  const auto comm_u = interval_union(std::move(comm));
  std::vector<Interval> all = comp_u;
  all.insert(all.end(), comm_u.begin(), comm_u.end());
  const int64_t busy = total_length(interval_union(std::move(all)));
  p.compute_busy_ns = total_length(comp_u);
  p.comm_busy_ns = total_length(comm_u);
  p.overlapped_ns = total_length(interval_intersection(comp_u, comm_u));
  p.idle_ns = p.time_ns - busy;
  p.exposed_ns = p.comm_busy_ns - p.overlapped_ns;
  p.copy_engine_ns = total_length(interval_union(std::move(copies)));
  p.compute_copies_ns = total_length(interval_union(std::move(own_copies)));

  // Compute slowed: each compute kernel that overlapped communication, its time beyond alone,
  // at most the time it overlapped (it ran at its own speed otherwise); split by cause.
  int64_t overlapped_comp = 0, estimated = 0;
  double slowed = 0, spread = 0;
  SlowedCauses causes;
  std::vector<Beside> beside;
  for (const auto& op : comps) {
    const KernelEvent* k = op.k;
    const int64_t ov = overlap_length(comm_u, {k->start_ns, std::min(k->end_ns, e)});
    if (ov <= 0) continue;
    overlapped_comp += ov;
    const Estimate est = estimate(op.key, op.ord, base, own);
    p.compute_alone_sources[est.source] += ov;
    if (est.source == AloneSource::None) continue;
    estimated += ov;
    const double extra = std::clamp(static_cast<double>(k->duration_ns()) - est.alone, 0.0,
                                    static_cast<double>(ov));
    slowed += extra;
    if (extra <= 0) continue;
    spread += std::min(est.half_iqr, extra);
    beside.clear();  // the collectives that ran beside it (starting before the step's end)
    for_window(v, k->start_ns, std::min(k->end_ns, e), [&](const KernelEvent& c) {
      if (c.category == KernelCategory::Communication)
        beside.push_back({&c, std::min(k->end_ns, c.end_ns) - std::max(k->start_ns, c.start_ns)});
    });
    const SlowedCauses c = split_slowed(*k, est.alone, extra, beside, v.dev);
    causes.memory += c.memory;
    causes.sms += c.sms;
  }
  p.compute_slowed_ns = std::min<int64_t>(p.overlapped_ns, std::llround(slowed));
  // The parts by cause, in whole ns that add up to compute_slowed (other takes the rounding).
  p.compute_slowed_memory_ns = std::min<int64_t>(p.compute_slowed_ns, std::llround(causes.memory));
  p.compute_slowed_sms_ns =
      std::min<int64_t>(p.compute_slowed_ns - p.compute_slowed_memory_ns, std::llround(causes.sms));
  p.compute_slowed_other_ns =
      p.compute_slowed_ns - p.compute_slowed_memory_ns - p.compute_slowed_sms_ns;
  p.compute_slowed_spread_ns = std::llround(spread);
  p.compute_estimated =
      overlapped_comp > 0 ? static_cast<double>(estimated) / static_cast<double>(overlapped_comp)
                          : 1.0;
  p.compute_alone_ns = p.compute_busy_ns - p.compute_slowed_ns;

  // Exposed communication, by cause: rank wait, then slowed, then tail/head, then dependent.
  const auto exposed = interval_difference(comm_u, comp_u);
  const auto rw_u = interval_union(std::move(rank_wait));
  p.exposed_rank_wait_ns = total_length(interval_intersection(exposed, rw_u));
  const auto rest = interval_difference(exposed, rw_u);
  const int64_t rest_len = total_length(rest);
  double ex_slowed = 0, all_slowed = 0;
  for (const auto& c : comms) {
    const Interval work{c.work_start, std::min(c.k->end_ns, e)};
    const int64_t ov = overlap_length(comp_u, work);
    if (ov <= 0) continue;  // ran alone: by definition not slowed by compute
    const Estimate est = estimate(c.key, c.ord, base, own);
    if (est.source == AloneSource::None) continue;
    const double extra =
        std::clamp(static_cast<double>(work.length()) - est.alone, 0.0, static_cast<double>(ov));
    all_slowed += extra;
    ex_slowed += std::min(extra, static_cast<double>(overlap_length(rest, work)));
  }
  p.comm_slowed_ns = std::llround(all_slowed);
  p.exposed_slowed_ns = std::min<int64_t>(rest_len, std::llround(ex_slowed));
  std::vector<Interval> edges;
  if (first_comp == kMax) {
    edges.push_back({b, e});
  } else {
    edges.push_back({b, first_comp});
    edges.push_back({last_comp, e});
  }
  const int64_t at_edges = total_length(interval_intersection(rest, interval_union(edges)));
  p.exposed_tail_ns = std::min(at_edges, rest_len - p.exposed_slowed_ns);
  p.exposed_dependent_ns = rest_len - p.exposed_slowed_ns - p.exposed_tail_ns;

  std::vector<const KernelEvent*> comm_ops;
  for (const auto& c : comms) comm_ops.push_back(c.k);
  const Regathers rg = regathers(std::move(comm_ops), std::move(copies_out), rest, comp_u,
                                 p.overlapped_ns, p.compute_slowed_ns, {b, e});
  p.regathers = rg.regathers;
  p.regather_ns = rg.cost_ns();

  // Waiting for SMs inside the window.
  for (std::size_t i = first_reaching(v.waits_end, b); i < v.waits.size() && v.waits[i].begin_ns < e;
       ++i)
    p.sm_wait_ns +=
        std::max<int64_t>(0, std::min(v.waits[i].end_ns, e) - std::max(v.waits[i].begin_ns, b));
  return p;
}


std::string ms(int64_t ns) {
  return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
}

// The step-to-step noise a bound is compared with: half the interquartile range (ms).
double noise_ms(const Spread& time_spread) {
  return (time_spread.q3 - time_spread.q1) / 2;
}

// What the project's controls can win at most: the larger of their two kinds' bounds (ms).
double best_bound_ms(const LeverBounds& lb) {
  return static_cast<double>(std::max(lb.priority_shaping_ns, lb.sm_budget_ns)) / 1e6;
}

std::string sentence_of(const StepParts& p, const Spread& time_spread, std::size_t nsteps,
                        const std::string& source) {
  const LeverBounds lb = lever_bounds(p);
  const std::string which =
      fmt::format("rank {}, {}", p.rank,
                  nsteps > 1 ? fmt::format("the median of {} steps", nsteps) : source);
  if (p.comm_busy_ns == 0)
    return fmt::format("No communication ran in this {} step ({}): nothing for an overlap control "
                       "to win.",
                       ms(p.time_ns), which);
  const double hidden = 100.0 * static_cast<double>(p.overlapped_ns) /
                        static_cast<double>(p.comm_busy_ns);
  std::string s = fmt::format("Communication is {:.0f}% hidden in this {} step ({}); ", hidden,
                              ms(p.time_ns), which);
  // Beyond compute at its speed alone, the two largest causes.
  std::vector<std::pair<int64_t, std::string>> causes = {
      {p.compute_slowed_ns, "compute runs slower beside communication"},
      {p.exposed_rank_wait_ns, "collectives wait for another rank"},
      {p.exposed_slowed_ns, "collectives run slower beside compute"},
      {p.exposed_tail_ns, "communication has nothing left to hide it (step tail or head)"},
      {p.exposed_dependent_ns, "compute waits for communication to finish"},
      {p.idle_ns, "the GPU waits for the host (no kernel ran)"}};
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  s += fmt::format("{} of it are beyond compute alone", ms(p.time_ns - p.compute_alone_ns));
  // A cause's figure; compute slowed with its largest cause where the model names one
  // (trace/slowdown.hpp).
  const auto figure = [&](const std::pair<int64_t, std::string>& c) {
    std::string f = ms(c.first);
    if (c.second.rfind("compute runs slower", 0) == 0 &&
        (p.compute_slowed_memory_ns > 0 || p.compute_slowed_sms_ns > 0))
      f += p.compute_slowed_memory_ns >= p.compute_slowed_sms_ns
               ? fmt::format(", {} of it device-memory bandwidth the collectives take",
                             ms(p.compute_slowed_memory_ns))
               : fmt::format(", {} of it SMs the collectives hold", ms(p.compute_slowed_sms_ns));
    return f;
  };
  if (causes[0].first > 0) {
    s += fmt::format(", mostly because {} ({}", causes[0].second, figure(causes[0]));
    if (causes[1].first > 0)
      s += fmt::format(") and {} ({})", causes[1].second, figure(causes[1]));
    else
      s += ")";
  }
  s += fmt::format(". Priority and shaping can win at most {}; SM budgets, channel caps and copy "
                   "engines at most {}",
                   ms(lb.priority_shaping_ns), ms(lb.sm_budget_ns));
  if (lb.memory_traffic_ns > 0)
    s += fmt::format("; fewer device-memory bytes beside compute (zero-copy collectives) at most {}",
                     ms(lb.memory_traffic_ns));
  if (lb.scheduling_ns > 0)
    s += fmt::format("; scheduling (bucket size, prefetch) at most {}", ms(lb.scheduling_ns));
  if (lb.rank_skew_ns > 0)
    s += fmt::format("; {} is rank skew, which no overlap control changes", ms(lb.rank_skew_ns));
  // The program's own copies on its compute stream: a framework setting can drop them.
  if (lb.framework_copies_ns >= p.time_ns / 100)
    s += fmt::format("; the program's own device copies take {} (where they are DDP's bucket "
                     "copies, `cco run --framework ddp.bucket_view` drops those out of the "
                     "buckets: at most that)",
                     ms(lb.framework_copies_ns));
  s += ".";
  const double noise = noise_ms(time_spread);
  const double best = best_bound_ms(lb);
  if (nsteps > 1 && best < noise)
    s += fmt::format(" The controls' bound is below the step-to-step noise (half the "
                     "interquartile range, {:.1f} ms): nothing to win here.",
                     noise);
  return s;
}

}  // namespace

namespace {

// Means over a rank's kept steps of a part, ms.
double mean_ms(const std::vector<StepParts>& steps, int64_t StepParts::*f) {
  double sum = 0;
  for (const auto& p : steps) sum += static_cast<double>(p.*f);
  return steps.empty() ? 0 : sum / static_cast<double>(steps.size()) / 1e6;
}

// Each rank's steps split into parts (against `base`, the alone traces' table, if any, and
// `own`, this trace's), with the typical step and each part's spread.
std::vector<RankSteps> rank_steps(const StepSet& st, const std::map<int, RankView>& views,
                                  const PeerStarts& peers, const AloneTable* base,
                                  const AloneTable& own) {
  std::vector<RankSteps> out;
  for (const auto& [rank, steps] : st.ranks) {
    RankSteps rs;
    rs.rank = rank;
    for (const auto& w : steps) rs.steps.push_back(step_parts(rank, w, views.at(rank), peers, base, own));
    if (rs.steps.empty()) continue;
    std::vector<std::size_t> idx(rs.steps.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return rs.steps[a].time_ns < rs.steps[b].time_ns;
    });
    rs.typical = idx[(idx.size() - 1) / 2];
    for (const auto& [name, f] : detail::part_fields()) {
      std::vector<double> v;
      for (const auto& p : rs.steps) v.push_back(static_cast<double>(p.*f) / 1e6);
      rs.spread[name] = spread_of(std::move(v));
    }
    out.push_back(std::move(rs));
  }
  return out;
}

// Each rank against the first alone trace that has steps of that rank (means: they add up exactly,
// medians would not).
std::vector<VersusAlone> versus_alone(
    const std::vector<RankSteps>& ranks,
    const std::vector<std::pair<std::string, std::vector<RankSteps>>>& alone) {
  std::vector<VersusAlone> out;
  for (const RankSteps& r : ranks) {
    const RankSteps* a = nullptr;
    std::string source;
    for (const auto& [file, alone_ranks] : alone)
      for (const RankSteps& ar : alone_ranks)
        if (!a && ar.rank == r.rank && !ar.steps.empty()) {
          a = &ar;
          source = file;
        }
    if (!a || r.steps.empty()) continue;
    VersusAlone v;
    v.rank = r.rank;
    v.alone_source = source;
    v.steps = r.steps.size();
    v.alone_steps = a->steps.size();
    v.time_ms = mean_ms(r.steps, &StepParts::time_ns);
    v.alone_time_ms = mean_ms(a->steps, &StepParts::time_ns);
    v.time_median_ms = r.spread.at("time").median;
    v.alone_time_median_ms = a->spread.at("time").median;
    v.compute_slowed_ms = mean_ms(r.steps, &StepParts::compute_slowed_ns);
    v.compute_slowed_memory_ms = mean_ms(r.steps, &StepParts::compute_slowed_memory_ns);
    v.compute_slowed_sms_ms = mean_ms(r.steps, &StepParts::compute_slowed_sms_ns);
    v.compute_slowed_other_ms = mean_ms(r.steps, &StepParts::compute_slowed_other_ns);
    v.compute_only_here_ms =
        mean_ms(r.steps, &StepParts::compute_alone_ns) - mean_ms(a->steps, &StepParts::compute_busy_ns);
    v.exposed_ms = mean_ms(r.steps, &StepParts::exposed_ns) - mean_ms(a->steps, &StepParts::exposed_ns);
    v.idle_ms = mean_ms(r.steps, &StepParts::idle_ns) - mean_ms(a->steps, &StepParts::idle_ns);
    out.push_back(v);
  }
  return out;
}

}  // namespace

namespace detail {

const std::vector<std::pair<const char*, int64_t StepParts::*>>& part_fields() {
  static const std::vector<std::pair<const char*, int64_t StepParts::*>> f = {
      {"time", &StepParts::time_ns},
      {"compute_alone", &StepParts::compute_alone_ns},
      {"compute_slowed", &StepParts::compute_slowed_ns},
      {"compute_slowed_memory", &StepParts::compute_slowed_memory_ns},
      {"compute_slowed_sms", &StepParts::compute_slowed_sms_ns},
      {"compute_slowed_other", &StepParts::compute_slowed_other_ns},
      {"exposed_rank_wait", &StepParts::exposed_rank_wait_ns},
      {"exposed_slowed", &StepParts::exposed_slowed_ns},
      {"exposed_tail", &StepParts::exposed_tail_ns},
      {"exposed_dependent", &StepParts::exposed_dependent_ns},
      {"idle", &StepParts::idle_ns},
      {"compute_busy", &StepParts::compute_busy_ns},
      {"comm_busy", &StepParts::comm_busy_ns},
      {"overlapped", &StepParts::overlapped_ns},
      {"exposed", &StepParts::exposed_ns},
      {"comm_slowed", &StepParts::comm_slowed_ns},
      {"sm_wait", &StepParts::sm_wait_ns},
      {"copy_engine", &StepParts::copy_engine_ns},
      {"compute_copies", &StepParts::compute_copies_ns},
      {"regather", &StepParts::regather_ns},
  };
  return f;
}

}  // namespace detail

Diagnosis diagnose(const Trace& t, const DiagnosisOptions& o) {
  Diagnosis d;
  const KernelsByRank by_rank = kernels_by_rank(t);  // sorted once, for the steps and the views
  d.steps = find_steps_in(t, o.steps, by_rank);
  d.partial = t.dropped_records > 0;
  // Library calls tell GEMM shapes apart only when every trace matched carries them.
  bool calls = has_calls(t);
  bool alone_calls = true;
  for (const Trace* at : o.alone) alone_calls = alone_calls && has_calls(*at);
  if (calls && !alone_calls) {
    calls = false;
    d.notes.push_back("the alone trace names no library calls (traced without them): GEMM "
                      "kernels are matched by name and launch only, as their shapes may mix");
  }
  const auto views = views_of(t, by_rank, calls);
  const PeerStarts peers = peer_starts(views, d.notes);
  AloneTable own;
  add_alone(own, views, d.steps, peers);
  own.finish();
  // The alone traces: their kernels (and, where they have steps, each kernel by its place in the
  // step) make the table of times alone; their own steps, split alike, are what each rank's steps
  // are set against (versus_alone). Each is sorted, stepped and viewed once.
  std::optional<AloneTable> base;
  std::vector<std::pair<std::string, std::vector<RankSteps>>> alone_steps;  // (file, its steps)
  for (const Trace* at : o.alone) {
    StepOptions so = o.alone_steps.value_or(o.steps);
    so.window = {};
    // An alone run has no configurations of its own, unless its steps are asked for by one: the
    // twin, another configuration's steps of a `cco run --compare --trace` trace (nocomm's).
    if (!o.alone_steps) so.config.reset();
    const KernelsByRank at_by_rank = kernels_by_rank(*at);
    const StepSet bs = find_steps_in(*at, so, at_by_rank);
    const auto bviews = views_of(*at, at_by_rank, calls);
    if (!base) base.emplace();
    add_alone_kernels(*base, bviews);
    if (bs.source == "none") {
      if (d.steps.source != "none")
        d.notes.push_back("the alone trace " + at->source +
                          " has no steps: its kernels are matched by kernel only, and the step is "
                          "not set against it (versus_alone)");
      continue;
    }
    // Steps of another unit (a layer's period, another program) would place its kernels at
    // wrong positions and give a split that means nothing: refused, by kernel only.
    if (d.steps.source != "none")
      if (const std::string why = steps_mismatch(t, d.steps, *at, bs); !why.empty()) {
        d.notes.push_back("the alone trace " + at->source + " has other steps than this trace (" +
                          why + "): the step is not set against it (versus_alone), and its "
                          "kernels are matched by kernel only");
        continue;
      }
    std::vector<std::string> ignored;
    const PeerStarts bpeers = peer_starts(bviews, ignored);
    add_alone(*base, bviews, bs, bpeers, false);
    // Only real steps on both sides: a window taken as one step (no steps found) is not a step.
    if (d.steps.source == "none") continue;
    AloneTable aown;
    add_alone(aown, bviews, bs, bpeers);
    aown.finish();
    alone_steps.emplace_back(at->source, rank_steps(bs, bviews, bpeers, nullptr, aown));
  }
  if (base) base->finish();
  d.ranks = rank_steps(d.steps, views, peers, base ? &*base : nullptr, own);
  d.versus_alone = versus_alone(d.ranks, alone_steps);
  if (d.ranks.empty()) {
    d.sentence = d.steps.ranks.empty() && !d.steps.notes.empty()
                     ? "Nothing to diagnose: " + d.steps.notes.back() + "."
                     : "No kernels in the window: nothing to diagnose.";
    return d;
  }
  const RankSteps* crit = &d.ranks.front();
  for (const auto& r : d.ranks)
    if (r.steps[r.typical].time_ns > crit->steps[crit->typical].time_ns) crit = &r;
  d.critical_rank = crit->rank;
  d.sentence = sentence_of(crit->steps[crit->typical], crit->spread.at("time"), crit->steps.size(),
                           d.steps.detail);
  d.headline = headline(crit->steps[crit->typical]);
  if (d.partial)
    d.notes.push_back(fmt::format("{} records were dropped while tracing: busy times are lower "
                                  "bounds and the parts may move between causes",
                                  t.dropped_records));
  double est_min = 1.0;
  for (const auto& r : d.ranks)
    for (const auto& p : r.steps) est_min = std::min(est_min, p.compute_estimated);
  if (est_min < 0.9)
    d.notes.push_back(fmt::format(
        "for some compute kernels that overlapped communication no time alone is known (as little "
        "as {:.0f}% estimated in a step): compute slowed is a lower bound there; a trace of the "
        "program without communication (--alone) tells",
        100 * est_min));
  bool copies = false;
  for (const auto& k : t.kernels) copies = copies || k.is_copy();
  bool no_copy_records = false;
  for (const auto& n : t.notes) no_copy_records = no_copy_records || n.find("memcpy records") != std::string::npos;
  if (!copies && no_copy_records)
    d.notes.push_back("the trace has no copy records: collectives NCCL ran on the copy engines "
                      "(CTA policy zero) are not counted as communication");
  return d;
}

ControlVerdict control_verdict(const Trace& t, int config) {
  DiagnosisOptions o;
  o.steps.source = "marks";
  o.steps.config = config;
  o.steps.warmup = 0;
  const Diagnosis d = diagnose(t, o);
  ControlVerdict v;
  v.sentence = d.sentence;
  bool all = !d.ranks.empty() && !d.partial;
  for (const RankSteps& r : d.ranks) {
    const StepParts& p = r.steps[r.typical];
    const double bound = best_bound_ms(lever_bounds(p));
    const double noise = noise_ms(r.spread.at("time"));
    if (r.rank == d.critical_rank) {
      v.steps = r.steps.size();
      v.bound_ms = bound;
      v.noise_ms = noise;
    }
    all = all && r.steps.size() >= kVerdictMinSteps && (p.comm_busy_ns == 0 || bound < noise);
  }
  v.nothing_to_win = all;
  return v;
}

}  // namespace cco::trace
