// The per-step diagnosis of a trace (docs/TRACE.md, "Steps: where the time goes"): the program's
// steps found in the trace, each step of each rank split into parts that add up to its time,
// and what each kind of control can win at most. GPU-free (part of cco.core).
//
// A step's time on a rank, T, is split exactly (every nanosecond of the step window once):
//
//   T = compute_alone + compute_slowed                       (the compute kernels' busy time)
//     + exposed_rank_wait + exposed_slowed + exposed_tail + exposed_dependent
//                                                            (communication nothing hid)
//     + idle                                                 (no kernel ran)
//
// compute_alone is an estimate (the compute kernels at their speed alone); the four exposed parts
// split the exposed communication by cause, in that precedence. What each control can win is
// bounded from these parts (LeverBounds). Ranks of one run share one clock (one host), so the
// rank wait compares their start times; traces of several hosts are not comparable there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/analysis.hpp"
#include "trace/format.hpp"

namespace cco::trace {

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

struct StepOptions {
  /// Where steps come from: "auto" -- the first that gives steps of: NVTX ranges, then marks,
  /// named `name` (when given); PyTorch profiler steps "ProfilerStep#N" (the GPU-side
  /// annotation, else the CPU one); NVTX ranges "train_step"; the preload library's step marks
  /// ("cco step, epoch E", latest epoch); the repeating unit of the communication kernels.
  /// Or one of them alone: "nvtx" (ranges matching `name`, default "*step*"), "profiler",
  /// "marks" (marks matching `name`, default the library's), "collectives", "none" (the whole
  /// window as one step).
  std::string source = "auto";
  std::string name;  ///< glob (fnmatch) for "nvtx" and "marks"; "" : the defaults
  /// Steps left out at the start (warm-up). Unset: 3 when at least 6 steps were found, else 1
  /// when at least 3, else 0.
  std::optional<int> warmup;
  AnalysisOptions window;  ///< only steps inside [from, to) count
  /// Only the steps the preload library's marks say ran under this configuration ("cco step,
  /// epoch E, config C": cco run --compare with --trace); implies the library's marks as source.
  std::optional<int> config;
};

/// One step of one rank on the GPU's timeline: [begin, end) ns.
struct StepWindow {
  int64_t index = 0;  ///< the step's number among all found (warm-up included), per rank
  int64_t begin_ns = 0, end_ns = 0;
  int config = -1;  ///< the configuration its mark names (the library's marks), else -1
  /// The program's own number of the step, where its source names one (PyTorch's
  /// "ProfilerStep#551": 551), else -1.
  int64_t program_step = -1;
  int64_t length() const { return end_ns - begin_ns; }
};

struct StepSet {
  /// "nvtx", "profiler", "marks", "collectives" or "none" (the whole window as one step).
  std::string source = "none";
  std::string detail;  ///< "NVTX ranges 'train_step'", "period of 77 communication kernels", ...
  int warmup = 0;      ///< steps left out at the start
  std::size_t found = 0;  ///< steps found per rank (the fewest of any rank), warm-up included
  std::map<int, std::vector<StepWindow>> ranks;  ///< kept steps per rank, aligned by position
  std::vector<std::string> notes;                ///< what the finding could not do, plainly
};

/// Finds the steps. Never throws on odd traces: what cannot be found becomes source "none" (the
/// whole window, one step per rank) with a note saying why.
StepSet find_steps(const Trace& t, const StepOptions& o = {});

// ---------------------------------------------------------------------------------------------
// Parts of a step
// ---------------------------------------------------------------------------------------------

/// Where a kernel's time alone came from, best first.
enum class AloneSource {
  Baseline,     ///< the same op (kernel and its position in the step) in a trace given as alone
  BaselineKernel,  ///< the same kernel (name, grid, block, registers, shared memory) there
  SameOp,       ///< the same op in other steps of this trace, where it ran alone
  SameKernel,   ///< the same kernel elsewhere in the kept steps of this trace, alone (may mix shapes)
  None,         ///< no estimate: taken as not slowed
};
const char* to_string(AloneSource s);

struct StepParts {
  int rank = 0;
  int64_t step = 0;  ///< StepWindow::index
  int64_t program_step = -1;  ///< StepWindow::program_step: the program's number, -1: none
  /// The step as tables show it: the program's own number where it has one, else the index.
  int64_t shown_step() const { return program_step >= 0 ? program_step : step; }
  int64_t begin_ns = 0, end_ns = 0;
  int64_t time_ns = 0;  ///< end - begin
  // The exact split of time_ns.
  int64_t compute_alone_ns = 0;
  int64_t compute_slowed_ns = 0;   ///< compute kernels' time beyond alone, while comm ran
  int64_t exposed_rank_wait_ns = 0;  ///< a collective started here before its last peer
  int64_t exposed_slowed_ns = 0;   ///< collectives' time beyond alone, where nothing hid it
  int64_t exposed_tail_ns = 0;     ///< after the step's last compute or before its first
  int64_t exposed_dependent_ns = 0;  ///< between compute kernels: compute waited for it
  int64_t idle_ns = 0;             ///< no kernel at all (host, launch gaps)
  // Beside the split (not addends).
  int64_t compute_busy_ns = 0, comm_busy_ns = 0, overlapped_ns = 0;
  int64_t exposed_ns = 0;          ///< the four exposed parts
  int64_t comm_slowed_ns = 0;      ///< all collectives' time beyond alone, hidden or not
  int64_t sm_wait_ns = 0;          ///< ready collectives waiting while compute ran (docs/TRACE.md)
  int64_t compute_slowed_spread_ns = 0;  ///< +- of compute_slowed (half the alone IQRs, summed)
  /// compute_slowed by cause (trace/slowdown.hpp; they add up to it): device-memory bandwidth the
  /// collectives took, SMs their CTAs held, and what neither explains
  int64_t compute_slowed_memory_ns = 0, compute_slowed_sms_ns = 0, compute_slowed_other_ns = 0;
  /// Communication kernels (not copies) whose collective's size the trace does not name: they
  /// take no memory share (traced without cco's preload library, say)
  std::size_t comm_unsized_kernels = 0;
  /// Share of the compute time that overlapped communication whose alone time was estimated.
  double compute_estimated = 1.0;
  std::map<AloneSource, int64_t> compute_alone_sources;  ///< overlapped compute ns by source
  int slowest_peer = -1;          ///< the rank whose late start made this one wait most
  int64_t slowest_peer_lag_ns = 0;
  std::size_t compute_kernels = 0, comm_kernels = 0;
  /// Communication on the copy engines (NCCL's copies, CTA policy zero): part of comm_busy
  int64_t copy_engine_ns = 0;
  /// The program's own device copies on its compute streams (DDP's copies of gradients into and
  /// out of its buckets): part of compute_busy; work the program does only because it syncs
  /// gradients the way it does (docs/TRACE.md, "Copies the program makes")
  int64_t compute_copies_ns = 0;
  /// FSDP2's re-gathers (trace/regather.hpp): the backward all-gathers beyond the reduce-scatters'
  /// count, and what they cost on the GPU: their exposed time (not the rank wait), the compute
  /// slowed beside them and the copies out of their buffers. Not a bound of fsdp.reshard=off,
  /// which also saves their host work (2 H200s: it won 41.7 ms where this was 14)
  int regathers = 0;
  int64_t regather_ns = 0;

  int64_t exposed_parts_ns() const {
    return exposed_rank_wait_ns + exposed_slowed_ns + exposed_tail_ns + exposed_dependent_ns;
  }
  /// The sum of the split; equals time_ns.
  int64_t parts_ns() const {
    return compute_alone_ns + compute_slowed_ns + exposed_parts_ns() + idle_ns;
  }
};

/// What a kind of control can win at most in a step (ns), from its parts.
struct LeverBounds {
  int64_t priority_shaping_ns = 0;  ///< min(SM wait, exposed - rank wait)
  /// SM budgets, channel caps, copy engines: compute slowed but for its memory part +
  /// exposed_slowed + priority_shaping (a collective that needs fewer SMs, or none, also waits
  /// less for them; it moves the same bytes)
  int64_t sm_budget_ns = 0;
  /// Fewer device-memory bytes beside compute (NCCL's symmetric, zero-copy kernels on window
  /// buffers; a collective moved off the step's busiest part): compute_slowed_memory
  int64_t memory_traffic_ns = 0;
  int64_t scheduling_ns = 0;  ///< bucket sizes, prefetch (the program's): tail + dependent
  int64_t rank_skew_ns = 0;   ///< no overlap control: rank wait
  int64_t all_hidden_ns = 0;  ///< the step with every collective hidden: time - exposed
  int64_t ideal_ns = 0;       ///< compute alone and nothing exposed: compute_alone + idle
  /// Framework settings that drop the program's copies (DDP's bucket view: cco run --framework
  /// ddp.bucket_view): compute_copies, the copies on its compute streams
  int64_t framework_copies_ns = 0;
};
LeverBounds lever_bounds(const StepParts& p);

struct Spread {
  double median = 0, q1 = 0, q3 = 0;
};

/// One rank over its kept steps.
struct RankSteps {
  int rank = 0;
  std::vector<StepParts> steps;
  std::size_t typical = 0;  ///< index into steps of the step with the median time (lower median)
  std::map<std::string, Spread> spread;  ///< per part name (as in JSON, without _ns), ms
};

struct DiagnosisOptions {
  StepOptions steps;
  /// Traces where the program's kernels ran alone (the same program without gradient sync, a
  /// communication-only run, or a bench trace with its "alone" runs): every kernel there that
  /// overlapped nothing of the other kind gives its kernel's time alone, and in steps found as
  /// in the trace diagnosed (same options), its op's (kernel and position in the step).
  std::vector<const Trace*> alone;
  /// How steps are found in the alone traces (unset: as in the trace diagnosed, any
  /// configuration). A bench trace given as its own alone trace names its sequential runs: nvtx
  /// "seq, iteration *". With a configuration, the alone trace may be the trace itself: the
  /// twin, a `cco run --compare off,nocomm --trace` run's nocomm steps set against its 'off'
  /// steps (both traced alike, so what tracing costs is on both sides).
  std::optional<StepOptions> alone_steps;
};

/// One rank's steps against the same rank's steps in the alone trace (the program without
/// gradient sync, say): the mean step time difference split into parts that add up to it exactly,
/// means over the kept steps of each (ms). It answers "the step with communication costs X ms
/// more than without: why".
struct VersusAlone {
  int rank = 0;
  std::string alone_source;  ///< the alone trace's file (the first given with this rank's steps)
  std::size_t steps = 0, alone_steps = 0;
  double time_ms = 0, alone_time_ms = 0;
  double difference_ms() const { return time_ms - alone_time_ms; }
  /// The step times' medians on both sides: on few steps one slow step moves the means (and the
  /// parts, which add up to their difference) but not these.
  double time_median_ms = 0, alone_time_median_ms = 0;
  double compute_slowed_ms = 0;  ///< this trace's compute slowed (the alone trace has none)
  /// compute_slowed_ms by cause (slowdown.hpp: device-memory bandwidth, SMs, the rest); they add
  /// up to it.
  double compute_slowed_memory_ms = 0, compute_slowed_sms_ms = 0, compute_slowed_other_ms = 0;
  double compute_only_here_ms = 0;  ///< compute alone here - compute busy there (kernels only here)
  double exposed_ms = 0;         ///< exposed communication here - there
  double idle_ms = 0;            ///< host idle here - there
  double parts_ms() const { return compute_slowed_ms + compute_only_here_ms + exposed_ms + idle_ms; }
};

struct Diagnosis {
  StepSet steps;
  std::vector<RankSteps> ranks;
  /// Per rank found in an alone trace with steps (DiagnosisOptions::alone): empty otherwise.
  std::vector<VersusAlone> versus_alone;
  int critical_rank = -1;  ///< the rank with the longest typical step
  /// The first line (trace/headline.hpp): at most 30 words, the largest part of the critical
  /// rank's typical step and the one thing to try first
  std::string headline;
  std::string sentence;    ///< the plain sentence: what holds the step back, what can win
  std::vector<std::string> notes;
  bool partial = false;  ///< dropped records: the figures are bounds
};

Diagnosis diagnose(const Trace& t, const DiagnosisOptions& o = {});

/// What the overlap controls can win in the steps one configuration ran: cco tune -- CMD's early
/// stop (docs/STEPS.md). The steps are the preload library's marks of that configuration (no
/// warm-up: the search's own warm-up steps are marked as such and left out).
struct ControlVerdict {
  std::size_t steps = 0;  ///< steps diagnosed (the critical rank's)
  double bound_ms = 0;    ///< the larger of the priority/shaping and the SM-budget bounds (typical step)
  double noise_ms = 0;    ///< half the interquartile range of the step times
  /// On every rank: no communication ran, or the bound is below the noise; from at least
  /// kVerdictMinSteps steps and no dropped records (figures that are only bounds never stop).
  bool nothing_to_win = false;
  std::string sentence;  ///< the diagnosis' plain sentence
};
inline constexpr std::size_t kVerdictMinSteps = 4;
ControlVerdict control_verdict(const Trace& t, int config);
/// The diagnosis as JSON (diagnosis_json.cpp).
nlohmann::json diagnosis_to_json(const Diagnosis& d);

namespace detail {
/// Every part of a step by its JSON name (without "_ns"): the JSON and the per-rank spreads.
const std::vector<std::pair<const char*, int64_t StepParts::*>>& part_fields();
}  // namespace detail

}  // namespace cco::trace
