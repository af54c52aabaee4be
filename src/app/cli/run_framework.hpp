// cco run --framework: framework controls (model/framework.hpp) for unmodified PyTorch programs,
// applied by cco's Python start-up hook (src/inject/startup/sitecustomize.py; docs/FRAMEWORK.md).
// Here: where the hook is, what cco run adds to the program's environment for it, and the summary
// after the program of what the hook did in each process. GPU-free.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "model/framework.hpp"

namespace cco::cli {

struct EnvChange;

/// The folder holding cco's sitecustomize.py, next to the cco binary `exe`: ../../inject/startup
/// in the build tree, ../lib/ccoverlap/startup as installed. Absolute. Throws std::runtime_error
/// naming the places it looked.
std::string find_startup_dir(const std::string& exe);

/// What --framework adds to the environment: PYTHONPATH with `startup_dir` first (once),
/// CCO_FRAMEWORK (the settings) and CCO_FRAMEWORK_OUT (`report_dir`, where the hook writes what
/// it did; none when empty).
std::vector<EnvChange> framework_environment(const model::FrameworkSettings& s,
                                             const std::string& startup_dir,
                                             const std::string& report_dir,
                                             const std::function<const char*(const char*)>& getenv);

/// What the hook did, summed over the processes' reports in `report_dir` (framework-*.json,
/// bounded reads; at most 4096 files).
struct FrameworkOutcome {
  std::string control;  ///< "ddp.bucket_view"
  std::string module;   ///< "DistributedDataParallel"
  std::string outcome;  ///< "applied", "kept" (the program's own value), "same", "unsupported"
  std::string value;    ///< cco's value (applied) or the program's (kept, same)
  int processes = 0;    ///< processes where it happened
  int times = 0;        ///< module constructions, over those processes
};
struct FrameworkSummary {
  std::size_t files = 0;  ///< reports read
  /// The most device memory any process's PyTorch held (max_memory_reserved, at its exit), and the
  /// smallest of their devices' sizes; 0: no process reported (the program never started CUDA).
  int64_t peak_reserved_bytes = 0, device_bytes = 0;
  std::vector<FrameworkOutcome> outcomes;
  std::vector<std::string> notes;  ///< reports that could not be read
};
FrameworkSummary read_framework_reports(const std::string& report_dir);

/// The most device memory a process held, "12.3 of 139.8 GiB (9%)"; "" when none reported.
std::string memory_text(const FrameworkSummary& sum);

/// The summary as lines "COMMAND: framework: ..." (`command`: "cco run", "cco tune"): one per
/// control and outcome, and one per control that no process reached (the program built no such
/// module, or its Python did not load the hook).
std::string format_framework_summary(const model::FrameworkSettings& s, const FrameworkSummary& sum,
                                     const std::string& command = "cco run");

}  // namespace cco::cli
