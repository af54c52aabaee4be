// The option vocabulary of `cco bench` and `cco tune`, declared once: every flag's spellings,
// whether it takes a value, where it applies (a pair, a workload step, tuning either) and why it
// is refused where it does not. The parsers (options.cpp, workload_report.cpp, workload_args.cpp,
// cli/tune_cmd.cpp) bind flags by their id; the refusals all come from here, so a new control's
// flag is added in one place and every command that should refuse it says why.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace cco::bench {

/// Where a flag applies.
enum FlagScope : unsigned {
  kPair = 1u << 0,      ///< cco bench: a compute part || a collective
  kStep = 1u << 1,      ///< cco bench --workload FILE
  kTunePair = 1u << 2,  ///< cco tune (a pair)
  kTuneStep = 1u << 3,  ///< cco tune --workload FILE
};

enum class F {
  // the pair's workload
  MinBytes, MaxBytes, StepFactor, Datatype, Op, Collective, Compute, Gemm, GemmDtype, Count,
  MemBytes, InPlace, CudaGraph,
  // runs and ranks
  Ngpus, Iters, Warmup, Check, Average, Bootstrap, BootstrapTimeout,
  // modes and budgets
  Modes, BlocksPerSm, Pad, GemmSms, GreenSms, NcclMinCtas, NcclMaxCtas, NcclCtaPolicy,
  NcclCgaClusterSize, NcclRegister,
  // outputs
  Json, Csv, Trace, Quiet,
  // workload steps
  Workload, Validate, Param, GpuMemory,
  // cco tune's own
  SmBudgets, Ctas, NoPriority, ScreenIters, Top, Budget, Plan, Cache, NoCache, Retune, Refine,
  Rounds, Registers,
  kCount
};

struct FlagSpec {
  F id;
  const char* names;  ///< CLI11's spelling: "-b,--minbytes" (short first)
  bool value;         ///< takes a value
  unsigned scopes;    ///< FlagScope bits where it is accepted
  /// cco tune's own meaning: tune parses it (a list of candidates, ...), not the bench parser.
  bool tune_own;
  /// Why it does not apply to a workload step (bench or tune), when it does not.
  const char* not_step;
  /// Why cco tune refuses it, when bench accepts it and tune does not.
  const char* not_tune;
};

/// Every flag, in the order of `F`.
const std::vector<FlagSpec>& flags();
const FlagSpec& flag(F id);
/// The flag an argument names ("-b", "-b1M", "--minbytes=1M"), or null for a value or an
/// unknown option.
const FlagSpec* find_flag(const std::string& arg);

/// Throws UsageError with one line for the first argument that is a known flag not accepted in
/// `scope` (one FlagScope): "FLAG does not apply to --workload: WHY" for a step, "FLAG is a cco
/// bench option: WHY" for cco tune. Values of flags are skipped; unknown options are left to the
/// parser. args[0] is the command.
void refuse_out_of_scope(const std::vector<std::string>& args, FlagScope scope);

/// CLI11: the option `id` (its table spellings) bound to `target`.
template <class T>
CLI::Option* add_flag_option(CLI::App& app, F id, T& target) {
  return app.add_option(flag(id).names, target);
}
inline CLI::Option* add_flag_switch(CLI::App& app, F id, bool& target) {
  return app.add_flag(flag(id).names, target);
}

}  // namespace cco::bench
