// The step file: what the preload library measured of one process's steps, written at exit when
// CCO_STEPS_DIR names a folder (docs/STEPS.md). JSON, schema "ccoverlap.steps" 1.x ("cco.steps/1"
// before, still read):
//
//   { "schema": "ccoverlap.steps", "schema_version": "1.0.0", "pid": 1234, "rank": 0 | null, "device": 0 | null,
//     "source": "collectives" | "marker" | "none",
//     "period": 64,            // collectives per step (source collectives; 0 otherwise)
//     "collectives": 5120, "locks": 2, "mismatches": 0,
//     "configs": ["off", "shape:1"], "warmup": 5,
//     "ended": "exit" | "signal",
//     "steps": [ { "step": 0, "config": 0, "host_ms": 85.1, "gpu_ms": 84.9 | null,
//                  "regular": true } ... ],
//     "note": "...",
//     "check": { "at_step": 17, "stopped": true, "why": "...", "diagnosis": "..." } }  // optional
//
// `steps` holds the steps since the last lock (a relock starts them again); `step` counts from
// that lock. `regular` is false when the step's collectives differed from the period (an extra
// collective, a changed size): such steps are not compared. `check` (absent: none made) is cco run
// --compare's check after the rotation's first rounds (docs/STEPS.md): the step it took effect at,
// whether the rotation stopped there (configuration 0 from then on), why, and the deciding rank's
// diagnosis of configuration 0's steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/schema_names.hpp"

namespace cco::steps {

inline constexpr const char* kStepSchema = model::kStepsSchema;  ///< with schema_version 1.x
inline constexpr const char* kStepSchemaLegacy = model::kStepsSchemaLegacy;  ///< read

struct StepTime {
  uint64_t step = 0;
  int config = 0;
  double host_ms = 0;
  std::optional<double> gpu_ms;
  bool regular = true;
};

/// cco run --compare's check after its first rounds (CCO_COMPARE_DIAGNOSE).
struct RotationCheck {
  uint64_t at_step = 0;  ///< the step the decision took effect at
  bool stopped = false;  ///< configuration 0 from at_step on: no more rotation
  std::string why;       ///< "nothing to win here: ...", "the comparison goes on: ...", ...
  std::string diagnosis; ///< the deciding rank's plain sentence ("" : none made)
};

/// The check as JSON ({"at_step", "stopped", "why", "diagnosis"}), the one spelling the step
/// file and the comparison (compare.hpp) share.
nlohmann::json check_to_json(const RotationCheck& c);
/// Its reader: throws nlohmann::json::exception (a missing or mistyped field) or
/// std::runtime_error (an at_step that is not a whole number).
RotationCheck check_from_json(const nlohmann::json& j);

struct StepFile {
  int pid = 0;
  std::optional<int> rank;
  std::optional<int> device;
  std::string source = "none";
  int period = 0;
  uint64_t collectives = 0, locks = 0, mismatches = 0;
  std::vector<std::string> configs;
  uint64_t warmup = 0;
  std::string ended = "exit";
  std::vector<StepTime> steps;
  std::string note;
  std::optional<RotationCheck> check;
};

std::string to_json(const StepFile& f);

/// "rank R" when the file names a rank, else "pid P": how reports name the process.
std::string process_name(const StepFile& f);

/// Parses a step file's text. Throws std::runtime_error with one clear line ("<what>: ...").
StepFile parse_step_file(const std::string& text, const std::string& what = "step file");

/// Reads and parses a step file: a regular file of at most 64 MiB (a FIFO, a device or a folder
/// gets one clear error, never a hang). Throws std::runtime_error.
StepFile read_step_file(const std::string& path);

/// The one limit on steps kept: the preload library keeps at most this many steps per process
/// (later ones are counted, not kept), and a step file of that many steps (each under 200 bytes
/// of JSON) stays under kStepFileLimit, the size read_step_file accepts.
inline constexpr uint64_t kMaxKeptSteps = 1'000'000;
inline constexpr std::size_t kStepFileLimit = std::size_t{256} << 20;

/// Reads a regular file of at most `limit` bytes. Throws std::runtime_error naming the path.
std::string read_bounded(const std::string& path, std::size_t limit);

}  // namespace cco::steps
