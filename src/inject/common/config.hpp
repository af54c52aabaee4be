// The preload library's configuration: environment variables read once, and the plan they name.
//
//   CCO_DISABLE=1             everything off: no wrapper is handed out, launches pass untouched
//   CCO_POLICY=NAME           a named policy (cco::plan::from_policy); default shape+priority:model
//   CCO_PLAN=FILE             a plan file (JSON); conflicts with CCO_POLICY
//   CCO_PRIORITY_METHOD=M     launch-attr | stream | both: overrides the plan's priority method
//   CCO_STATS=0|1|2           per-process statistics at exit (2: also per kernel, and always)
//   CCO_VERBOSE=0|1           one line per kernel and launch shape the first time it is decided
//   CCO_STEPS_DIR=DIR         find and time the program's steps; write DIR/steps-<rank|pid>.json
//   CCO_COMPARE=A,B,...       rotate these policies or plan files between steps (a paired
//                             comparison; docs/STEPS.md); takes the place of CCO_POLICY/CCO_PLAN
//   CCO_WARMUP_STEPS=N        steps before the rotation starts (default 5)
//   CCO_STEP_NVTX=NAME        steps start where an NVTX range named NAME (a glob) starts; the
//                             library must be NVTX's injection (NVTX_INJECTION64_PATH)
//   CCO_PLAN_FORCE=1          apply CCO_PLAN even when its made_for names another device, SM
//                             count or driver (cco run --force); else it runs as 'off'
//   CCO_TUNE=1                search CCO_COMPARE's candidates online instead of rotating them
//                             (cco tune -- CMD; needs CCO_STEPS_DIR, where DIR/tune.json is kept)
//   CCO_TUNE_STEPS=N          search steps (default: the minimum, 6 rounds per stage)
//   CCO_TUNE_TIME=S           end the search at the next stage after S seconds (0: no limit)
//   CCO_TUNE_WAIT=S           how long a rank waits for rank 0's decision (default 300)
//   CCO_TUNE_DIAGNOSE=1       rank 0 traces the first stage and diagnoses it; nothing to win
//                             ends the search (trace_hook.hpp; read there, not here)
//   CCO_COMPARE_DIAGNOSE=1    (cco run --compare) rank 0 traces the rotation's first rounds and
//                             diagnoses them; nothing to win stops the rotation, every rank
//                             waiting for that decision (needs CCO_STEPS_DIR; DIR/check.json)
//   RANK | OMPI_COMM_WORLD_RANK | PMI_RANK | SLURM_PROCID   the rank, named in the step file
//
// Bad values never stop the program: each gives one warning and the library runs unshaped (the
// "off" plan) or, for CCO_STATS/CCO_VERBOSE, with that feature off.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace cco::preload {

struct EnvConfig {
  bool disabled = false;
  int stats = 0;  ///< 0 off, 1 summary at exit (when anything was seen), 2 + per kernel
  bool verbose = false;
  std::string plan_path;                       ///< CCO_PLAN
  bool plan_force = false;  ///< CCO_PLAN_FORCE: apply a plan made for another device (cco run --force)
  std::string policy;                          ///< CCO_POLICY
  std::optional<plan::PriorityMethod> method;  ///< CCO_PRIORITY_METHOD
  std::string steps_dir;             ///< CCO_STEPS_DIR
  std::vector<std::string> compare;  ///< CCO_COMPARE, split at ','
  uint64_t warmup = 5;               ///< CCO_WARMUP_STEPS
  std::string step_nvtx;             ///< CCO_STEP_NVTX (at most 255 characters)
  bool tune = false;                 ///< CCO_TUNE
  uint64_t tune_steps = 0;           ///< CCO_TUNE_STEPS
  uint64_t tune_time_s = 0;          ///< CCO_TUNE_TIME
  uint64_t tune_wait_s = 300;        ///< CCO_TUNE_WAIT (also the rotation check's wait)
  bool compare_diagnose = false;     ///< CCO_COMPARE_DIAGNOSE
  bool tune_exit = false;            ///< CCO_TUNE_EXIT: end the process (exit 0) at the final decision
  std::optional<int> rank;           ///< from the launcher's variables
  bool bad = false;  ///< a value was invalid or CCO_PLAN and CCO_POLICY conflict: run unshaped
  std::vector<std::string> warnings;  ///< one line each, for warn_once
};

/// Reads the CCO_* variables through `get` (getenv in the library; a map in tests).
EnvConfig read_env(const std::function<const char*(const char*)>& get);

/// The plan of one item of a list (CCO_COMPARE, ccoverlap.policy()): plan::load_item(item), then
/// `method` overrides the priority method. Throws (plan::Error or std::exception) with one line.
plan::Plan resolve_item(const std::string& item, std::optional<plan::PriorityMethod> method);
/// An item of CCO_COMPARE: resolve_item, and the measuring configuration nocomm as the plan of
/// "off" named so (plan::load_compare_item).
plan::Plan resolve_compare_item(const std::string& item,
                                std::optional<plan::PriorityMethod> method);

/// Parses a boolean variable: 1/true/yes/on, 0/false/no/off/empty (case-insensitive).
/// Returns nullopt for anything else.
std::optional<bool> parse_flag(const char* value);

/// The plan the library runs: CCO_PLAN's file, else CCO_POLICY, else the default policy, then
/// CCO_PRIORITY_METHOD applied. On any error (bad file, bad policy, env.bad) it returns the "off"
/// plan and appends one warning line to `warnings`.
plan::Plan resolve_plan(const EnvConfig& env, std::vector<std::string>* warnings);

}  // namespace cco::preload
