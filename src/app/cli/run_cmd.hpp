// cco run: starts a program with libcco_preload.so preloaded and its configuration in the
// environment (docs/cli/run.md). GPU-free: it only sets variables and execs the program, so the
// program's exit code and signals are its own.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/framework.hpp"
#include "plan/plan.hpp"
#include "steps/compare.hpp"
#include "steps/record.hpp"

namespace cco::cli {

/// `cco run ...` (args[0] == "run"). Bad flags throw Usage (exit 2), a bad plan throws
/// model::Error (exit 2), a missing library throws std::runtime_error (exit 1). On success it
/// does not return (exec); when the command cannot be started it prints one line and returns
/// 127 (not found) or 126 (not executable), like a shell.
int run_main(const std::vector<std::string>& args);

/// cco tune [options] -- CMD: the program tuned online (successive halving over switchable
/// policies, its steps as samples; docs/cli/tune.md, docs/STEPS.md). Writes a plan.
int tune_program_main(const std::vector<std::string>& args);

/// What `cco run` and `cco tune -- CMD` both take to start a program: declared once
/// (add_launch_options, run_support.hpp).
struct LaunchOptions {
  std::string lib;        ///< --lib PATH
  std::string tuner_lib;  ///< --tuner-lib PATH: the NCCL tuner plugin (plans with nccl.channels)
  bool verbose = false;   ///< -v, --verbose
  std::string steps_out;  ///< --steps-out DIR: keep the step files there
  long warmup = -1;       ///< --warmup N: steps before the rotation starts (-1: not given)
  /// --step-nvtx NAME: steps start where an NVTX range named NAME (a glob) starts; the library
  /// becomes NVTX's injection (NVTX_INJECTION64_PATH).
  std::string step_nvtx;
};

struct RunOptions : LaunchOptions {
  std::string policy;     ///< --policy NAME
  std::string plan_file;  ///< --plan FILE
  bool stats = false;     ///< --stats
  bool dry_run = false;   ///< --dry-run: print the environment and the command, run nothing
  bool force = false;     ///< --force: apply a plan made for another device or other versions
  /// --trace FILE: CCO_TRACE, a path pattern (%p pid, %r rank, %% a %; preload/trace_path.hpp).
  /// run_main makes it absolute before run_environment sees it.
  std::string trace;
  /// --compare A,B[,...]: policies or plan files rotated between steps (2 to 8 items).
  std::vector<std::string> compare;
  std::string compare_json;  ///< --compare-json FILE: the comparison as JSON
  /// --framework SPEC: framework controls (model/framework.hpp), applied by cco's Python start-up
  /// hook where the program builds its DDP or FSDP2 modules (run_framework.hpp).
  model::FrameworkSettings framework;
  /// --compare: rank 0 checks the first rounds and stops the rotation when the controls have
  /// nothing to win (CCO_COMPARE_DIAGNOSE; not with --trace); --no-diagnose: compare to the end.
  bool diagnose = true;
  std::vector<std::string> command;  ///< CMD ARGS...
};

/// --compare's items checked and made absolute (plan files): each must name a policy or a plan
/// that can switch at run time (plan::rotation_refusal). Throws Usage naming the item and why.
/// *channels: some item caps NCCL channels (the tuner plugin is needed). `flag` names the option
/// in messages (--compare for cco run, --candidates for cco tune).
std::vector<std::string> check_compare_items(const std::vector<std::string>& items,
                                             bool* channels, const std::string& flag = "--compare");

/// What runs after the program under --compare or --steps-out: reads the step files in `dir`
/// (steps-*.json, bounded), prints the comparison (when `compare`) to `out`, writes `json_path`
/// when not empty. Returns false when no comparison could be made (the reason is printed).
bool report_steps(const std::string& dir, bool compare, const std::string& json_path,
                  std::FILE* out, steps::CompareReport* report = nullptr,
                  std::vector<steps::StepFile>* files_out = nullptr);

/// --compare with --trace: reads the traces the ranks wrote (`pattern` with %r or %p; bounded
/// reads), diagnoses the steps that ran under the first configuration (the library's step marks
/// name each step's configuration; trace/diagnosis.hpp) and prints to `out` what each kind of
/// control can win at most there, beside each compared configuration's measured difference.
/// Never fails the run: what cannot be read is one line.
void report_trace_bounds(const std::string& pattern, const steps::CompareReport& r,
                         const std::vector<steps::StepFile>& files, std::FILE* out);

/// Parses args[1..]: options up to "--" or the first word that is not an option, then the
/// command. Throws Usage for unknown options, missing values, --policy with --plan, no command,
/// a --trace pattern that check_trace_pattern() refuses.
RunOptions parse_run_args(const std::vector<std::string>& args);

/// One change to the environment of the command.
struct EnvChange {
  std::string name;
  std::optional<std::string> value;  ///< nullopt: unset
};

/// Makes `changes` (run_environment's, in order) this process's environment: each set or unset.
void apply_environment(const std::vector<EnvChange>& changes);

/// What `cco run` changes in the environment, in order: LD_PRELOAD (the library appended to an
/// existing list unless already there), CCO_POLICY or CCO_PLAN (the other one unset), CCO_STATS
/// and CCO_VERBOSE when asked, CCO_TRACE (opts.trace as given) and CCO_TRACE_PID (this
/// process's id, which the command keeps: cco run execs it) with --trace, NCCL_TUNER_PLUGIN
/// (`tuner_path`, when not empty), then the variables of the plan's nccl section
/// (plan.nccl.environment(): NCCL_MIN_CTAS, NCCL_MAX_CTAS, NCCL_CTA_POLICY) and the plan's own
/// environment, each name once; a variable the user already set to another value, and a
/// NCCL_TUNER_PLUGIN naming another plugin, are kept (one warning line each in `warnings`).
/// `plan_path` is the absolute path of --plan (empty with a policy).
std::vector<EnvChange> run_environment(const RunOptions& opts, const plan::Plan& plan,
                                       const std::string& plan_path, const std::string& lib_path,
                                       const std::string& tuner_path,
                                       const std::function<const char*(const char*)>& getenv,
                                       std::vector<std::string>* warnings);

/// --trace's pattern as an absolute path (relative ones are taken from the current folder, as
/// the command may change folders). Where the folder holds no placeholder it must exist and be
/// writable: else Usage, before anything runs (a long run must not lose its trace at the end).
std::string trace_pattern_path(const std::string& pattern);

/// The library to preload: --lib, else $CCO_PRELOAD_LIB, else libcco_preload.so next to the cco
/// binary `exe` (same folder, ../../inject/preload in the build tree, ../lib/ccoverlap as installed, ../lib, ../lib64).
/// Absolute. Throws std::runtime_error
/// naming the places it looked.
std::string find_preload_library(const std::string& exe, const std::string& explicit_lib,
                                 const char* env_lib);

/// The NCCL tuner plugin for a plan with nccl.channels rules: --tuner-lib, else $CCO_TUNER_LIB,
/// else libcco_tuner.so next to the preload library `preload_lib` (same folder, ../nccl_tuner), else
/// next to the cco binary `exe` (same folder, ../../inject/nccl_tuner, ../lib/ccoverlap, ../lib, ../lib64).
/// Absolute. Throws
/// std::runtime_error naming the places it looked.
std::string find_tuner_library(const std::string& preload_lib, const std::string& exe,
                               const std::string& explicit_lib, const char* env_lib);

}  // namespace cco::cli
