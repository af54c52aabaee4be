// `cco tune`: the search space, its pruning, the model-based default, cache keys and the tuned
// plan's record. GPU-free (cco.tune_core); the measuring loop is in tune.hpp (cco.tune).
#pragma once

#include <limits>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/report.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace cco::tune {

/// What the space is built from: the device and the compute part's launches.
struct SpaceInput {
  model::DeviceLimits limits;
  bool shapeable = false;       ///< the compute launches are ours (padding applies)
  model::Footprint footprint;   ///< when shapeable
  int natural_bps = 0;          ///< blocks per SM as launched (when shapeable)
  bool vendor_gemm = false;     ///< cuBLASLt: the SM-count target applies
  int nccl_ctas = 24;           ///< CTAs NCCL uses by default for this collective (see predict)
  /// Buffer registrations (model::CommRegister values) a row may use: pairs, every one unless
  /// --registers names some; training steps, none (empty). And the run's own registration,
  /// which rows with -1 use.
  std::vector<int> registrations;
  int run_reg = 0;
  /// The run's own CTA policy (nullopt: NCCL's default), and whether the collective has a
  /// copy-engine path (model::copy_engine_collective) with a symmetric window available to its
  /// rows: then the zero-CTA policy is a candidate by default.
  std::optional<model::CtaPolicy> run_policy = std::nullopt;
  bool copy_engine = false;
};

/// Which budgets to search. Empty lists take the defaults documented in docs/cli/tune.md.
struct SpaceOptions {
  std::vector<int> sm_budgets;  ///< cuBLASLt SM-count targets (0 = all SMs)
  std::vector<int> ctas;        ///< NCCL minCTAs = maxCTAs values (-1 = NCCL's default)
  std::vector<int> blocks_per_sm;  ///< shape targets (default: every k below the kernel's own)
  bool priority = true;         ///< also try the high-priority communication stream
  std::vector<int> green_sms;   ///< green-context SM partitions for the compute part (default: none)
  /// Buffer registrations to screen (model::CommRegister values; default: the run's own and,
  /// where SpaceInput::registrations allows it, a symmetric window; the neighbour round tries
  /// the others of SpaceInput::registrations).
  std::vector<int> registers;
  /// CTA policies to try beyond the run's own (--nccl-cta-policy's further values). Empty: zero
  /// where SpaceInput::copy_engine, nothing else.
  std::vector<model::CtaPolicy> cta_policies;
  int refine = 3;  ///< screened candidates whose neighbours are screened (0: none)
  int rounds = 3;  ///< neighbour rounds at most (a hill climb; see run_tune)
};

/// The checks pairs and steps share: CTAs 1..64 or -1, shape targets >= 1, green partitions
/// 1..SMs-1; throws bench::UsageError with one line.
void validate_common(const model::DeviceLimits& limits, const std::vector<int>& ctas,
                     const std::vector<int>& blocks_per_sm, const std::vector<int>& green_sms);

/// A screening round's rows: seq (the baseline), then the space and the model's default, each
/// once.
std::vector<bench::RowSpec> screening_rows(const std::vector<bench::RowSpec>& space,
                                           const bench::RowSpec& predicted);

/// Validates the lists against the device (SM budgets 1..SMs or 0, CTAs 1..64 or -1, k >= 1);
/// throws bench::UsageError with one line.
void validate(const SpaceInput& in, const SpaceOptions& opt);

/// Candidates: concurrent and priority, every shape target with and without priority, each
/// crossed with the SM budgets (cuBLASLt only) and CTA counts. Pruned, with a note each: shape
/// targets the model says cannot be reached or that give the same blocks per SM as another,
/// shaping a kernel already at one block per SM, and SM budgets for kernels we do not launch.
/// A further CTA policy adds its own rows: efficiency crossed like the rest but without CTA
/// counts (the policy picks them); zero one row, concurrent with the buffers in a symmetric
/// window, since SM budgets, CTA counts, shaping and priority all divide SMs or order kernels
/// and a collective on the copy engines has neither.
std::vector<bench::RowSpec> build_space(const SpaceInput& in, const SpaceOptions& opt,
                                        std::vector<std::string>* notes = nullptr);

/// The CTA policies a space tries beyond the run's own: `listed` (--nccl-cta-policy's further
/// values) when given, else zero where `copy_engine` (the collective, or one of the step's, can
/// run on the copy engines) and the run's own is not zero already.
std::vector<model::CtaPolicy> cta_policies_to_try(const std::vector<model::CtaPolicy>& listed,
                                                  bool copy_engine,
                                                  std::optional<model::CtaPolicy> run_policy);

/// What pairs and steps say about their zero-CTA row.
struct ZeroRowText {
  std::string pruned;  ///< why zero cannot apply (note when asked for but !copy_engine)
  std::string kept;    ///< the note for the row
};
/// The rows of `policies` (cta_policies_to_try), the run's own skipped: zero one concurrent row
/// whose buffers are registered as `zero_reg` (SM budgets, CTA counts, shaping and priority
/// divide SMs or order kernels, which the copy engines do not use); any other policy crossed
/// with `sms` x `compute_side` x priority (when `priority`), on the policy's own CTA count.
std::vector<bench::RowSpec> policy_rows(const std::vector<model::CtaPolicy>& policies,
                                        std::optional<model::CtaPolicy> run_policy,
                                        bool copy_engine,
                                        std::optional<model::CommRegister> zero_reg,
                                        const std::vector<bench::RowSpec>& compute_side,
                                        const std::vector<int>& sms, bool priority,
                                        const ZeroRowText& text, std::vector<std::string>* notes);

/// Appends `r` unless an equal row is there already.
void add_unique(std::vector<bench::RowSpec>& rows, const bench::RowSpec& r);

/// The parts of a tuned plan that `cco run` applies and checks, the same for pairs and steps:
/// schema, policy "tuned", shaping (k > 0 for a shape mode), NCCL priority, NCCL_MIN/MAX_CTAS, and
/// made_for (first device's name and SMs, ranks, CUDA/NCCL/cuBLASLt versions).
nlohmann::json plan_base(const bench::RowSpec& choice, int blocks_per_sm,
                         const nlohmann::json& devices, int nranks, const nlohmann::json& versions,
                         const std::string& description);

/// Whether `cco run` can apply every control of a row: priority, residency and NCCL CTAs. A
/// cuBLASLt SM target, a green partition and buffer registration apply only to launches and
/// buffers cco makes (cco bench).
bool run_applicable(const bench::RowSpec& r);

/// The candidate whose controls a tuned plan hands to `cco run`: `best` when run_applicable,
/// else the fastest run_applicable one (its NCCL CTAs were measured without the budgets that
/// only cco bench applies, unlike the best's), else `best`. T: anything with .spec and .t_us.
template <class T>
std::size_t applied_index(const std::vector<T>& tried, std::size_t best) {
  if (run_applicable(tried.at(best).spec)) return best;
  std::size_t a = best;
  for (std::size_t i = 0; i < tried.size(); ++i)
    if (run_applicable(tried[i].spec) && (a == best || tried[i].t_us < tried[a].t_us)) a = i;
  return a;
}

/// What the plan says when the applied candidate is not the choice (empty when it is).
std::string applied_note(const bench::RowSpec& choice, const bench::RowSpec& applied, double applied_t_us);

/// The fields a tuned plan's choice shares between pairs and steps: label, mode, priority, the
/// shape target (`blocks_per_sm`, 0 unshaped), NCCL CTAs, green partition, time, reduction and
/// efficiency; each plan adds its own. T: Tried or StepTried.
template <class T>
nlohmann::json choice_json(const T& b, int blocks_per_sm) {
  return {{"label", b.spec.label()},
          {"mode", bench::to_string(b.spec.mode)},
          {"priority", bench::is_priority(b.spec.mode)},
          {"blocks_per_sm", blocks_per_sm},
          {model::json_field(model::Control::NcclCtas), bench::budget_number(b.spec.controls.nccl_ctas)},
          {model::json_field(model::Control::Green), bench::budget_number(b.spec.controls.green_sms)},
          {"t_us", b.t_us},
          {"reduction", b.reduction},
          {"efficiency", b.efficiency}};
}

/// The same for a row of the plan's "tried" table: label, time and quartiles, reduction,
/// efficiency, blocks per SM and whether it is the model's default.
template <class T>
nlohmann::json tried_json(const T& t, int blocks_per_sm) {
  return {{"label", t.spec.label()},     {"t_us", t.t_us},
          {"p25_us", t.p25_us},          {"p75_us", t.p75_us},
          {"reduction", t.reduction},    {"efficiency", t.efficiency},
          {"blocks_per_sm", blocks_per_sm}, {"predicted", t.predicted},
          {"run_applicable", run_applicable(t.spec)}};
}

/// The NCCL CTA counts the refinement steps between (a ladder: 4, 8, 12, 16, 24, 32, 48, 64).
const std::vector<int>& cta_ladder();

/// The refinement round's neighbours of one screened candidate, each one step away in one
/// control: the cuBLASLt SM target +-4 (an SM count from all SMs: SMs-4 and SMs-8), a green
/// partition +-8 (the driver's granularity on sm_90), the adjacent CTA counts of cta_ladder()
/// (from NCCL's default: the rungs on either side of in.nccl_ctas), the shape target +-1 where the
/// model says it reaches a distinct blocks-per-SM, priority flipped, and each other buffer
/// registration of in.registrations. Never the candidate
/// itself; budgets stay within the device (SM targets at least a quarter of the SMs).
std::vector<bench::RowSpec> neighbours(const SpaceInput& in, const bench::RowSpec& r);

/// The neighbours pairs and steps share, appended to `out`: priority flipped, a green partition
/// +-8 SMs (within 8..sms-1), and (no CTA policy) the adjacent rungs of cta_ladder() around the
/// row's CTA count, or around `nccl_ctas` (NCCL's default, written -1) when the row has none.
void common_neighbours(const bench::RowSpec& r, int sms, int nccl_ctas, std::vector<bench::RowSpec>& out);

/// The model-based default, for when no tuning run is possible: an NCCL CTA needs a whole SM
/// (each runs one thread block that keeps an SM busy), so leave the collective about its CTA
/// count in SMs.
/// - kernels we launch: k = natural - max(1, round(2 * natural * ctas / SMs)), at least 1, with
///   priority (shaping lets SMs drain; priority hands the drained SMs to NCCL first);
/// - cuBLASLt: SM-count target = SMs - ctas, with priority.
bench::RowSpec predict(const SpaceInput& in);

/// A stable 64-bit FNV-1a hash, as 16 hex digits (std::hash is not stable across builds).
std::string stable_hash(const std::string& text);

/// The cache key of a tuning result: device, software versions, ranks, the workload (compute,
/// collective, size, types) and the space searched. Timing options (-n, -w) and output paths do
/// not enter it.
std::string cache_key(const nlohmann::json& devices, const nlohmann::json& versions, int nranks,
                      const bench::Options& o, const SpaceOptions& space);

/// One candidate's result in the final (side-by-side) round.
struct Tried {
  bench::RowSpec spec;
  double t_us = 0, p25_us = 0, p75_us = 0;
  /// Each part alone under this candidate's own budgets (medians): with them, max(...) is what
  /// the candidate would take if overlapping cost nothing but the budgets (docs/METRICS.md).
  double comp_alone_us = 0, comm_alone_us = 0;
  /// The same overlap efficiency against the candidate's own parts: (C_own + M_own - t) /
  /// min(C_own, M_own), which does not credit a faster collective (or a slower compute part) to
  /// overlap. NaN when a part was not timed.
  double own_efficiency() const;
  double reduction = 0, efficiency = 0;  ///< against the run's own T_seq and parts
  /// E_best: against the fastest compute part and the fastest collective measured in the final
  /// round under any candidate's settings (model::efficiency_best). NaN when a part is missing.
  double efficiency_best = std::numeric_limits<double>::quiet_NaN();
  int64_t pad = 0;
  int blocks_per_sm = 0;
  bool predicted = false;  ///< the model-based default
};

/// Indices of `s`, fastest median first (ties: the earlier first). T: anything with .t_us
/// (Tried, StepTried, the search's Screened).
template <class T>
std::vector<std::size_t> fastest_first(const std::vector<T>& s) {
  std::vector<std::size_t> order(s.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return s[a].t_us < s[b].t_us; });
  return order;
}

/// Picks the fastest median (ties: the earlier row), the first of fastest_first; `concurrent` is
/// always among the candidates, so the choice is never slower than plain overlap in the run that
/// chose it. Throws std::runtime_error when `tried` is empty. T: Tried or StepTried (Tried for a
/// braced list).
template <class T = Tried>
std::size_t pick_best(const std::vector<T>& tried) {
  if (tried.empty()) throw std::runtime_error("no candidate was measured");
  return fastest_first(tried).front();
}

/// The tuned plan file (schema ccoverlap.plan 1.0.0, policy "tuned"), recording the device and
/// versions it was made on, the workload, the choice, and every candidate tried.
nlohmann::json plan_json(const bench::Report& final_round, const std::vector<Tried>& tried,
                         std::size_t best, const std::string& key);

/// Tried rows from a bench report of the final round (rows in the order the space gave them).
std::vector<Tried> tried_from(const bench::Report& rep, const bench::RowSpec& predicted);

}  // namespace cco::tune
