// Kernel tracing of whole programs (CCO_TRACE, set by `cco run --trace FILE`; docs/PRELOAD.md):
// the preload library starts a cco::trace::Session at its first lazy initialisation and writes
// the trace from an exit handler, one file per process (trace_path.hpp names it).
//
// Never from a constructor, never throwing, fail-open: CUPTI missing, too old or in use by a
// profiler, a bad pattern, a file that cannot be written -- each is one warning on stderr, and
// the program runs and exits as it would have.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "steps/search.hpp"

namespace cco::preload {

/// Starts tracing once per process when CCO_TRACE is set and CCO_DISABLE is not: the first call
/// decides, every later call (also a re-entrant one, from CUPTI's own driver lookups) returns at
/// once. Registers the exit writer.
void trace_start_once() noexcept;

/// Registers the exit writer once more, if tracing runs (the writer runs only once). Called at
/// the first kernel launch: exit handlers run last-registered first, so the trace is written
/// before the CUDA runtime's own exit handler (registered during its initialisation) tears down.
void trace_register_late_exit() noexcept;

/// True when CCO_TRACE is set (and CCO_DISABLE is not): the step clock then runs to mark steps.
bool trace_requested() noexcept;

/// A named instant in the trace for `device`'s rank (Session::mark), when tracing runs; else
/// nothing. The step clock marks each step boundary with it.
void trace_mark(const char* name, int device) noexcept;

/// Library calls in the trace (trace::Session::push_call): whether a session records them now,
/// in this process (not a forked child): one atomic load when no trace runs.
bool trace_calls_on() noexcept;
/// Kernels this thread launches until trace_pop_call() carry the call `id`, spelled by
/// label(arg) the first time it is seen. Ask trace_calls_on() first (this checks no pid). False
/// (and nothing to pop) when not recorded.
bool trace_push_call(uint64_t id, std::string (*label)(const void* arg), const void* arg) noexcept;
void trace_pop_call() noexcept;

/// The in-process diagnosis of the first steps (docs/STEPS.md): true when this process decides
/// (no rank, or rank 0), CCO_DISABLE is not on, and either cco tune -- CMD asks for it (CCO_TUNE
/// and CCO_TUNE_DIAGNOSE on: the search's first stage) or cco run --compare does (CCO_COMPARE set,
/// CCO_TUNE off, CCO_COMPARE_DIAGNOSE on, every rank on this host: ranks_on_one_host: the rotation's first rounds). trace_start_once() then
/// traces this process even without CCO_TRACE, until the diagnosis (or the search's end); the step
/// clock marks its steps.
bool diagnose_requested() noexcept;

/// Stops the session traced only for the diagnosis (not a CCO_TRACE one: nullopt then; activity
/// off first, then flushed) and, when `diagnose`, returns the diagnosis of configuration 0's steps
/// (trace::control_verdict: the latest epoch's marks). nullopt when not asked, nothing was traced
/// or the analysis failed (one warning): the search or the comparison goes on without it.
std::optional<steps::StageVerdict> diagnosis_verdict(bool diagnose) noexcept;

/// The search's final decision: tracing started only for the diagnosis stops if it still runs.
void diagnosis_trace_done() noexcept;

}  // namespace cco::preload
