// Run plans: what the preload library (libcco_preload.so) does to an unmodified program, and what
// `cco run` puts in its environment. GPU-free: no CUDA header; tested anywhere.
//
// A plan is a JSON document (docs/PRELOAD.md has the full schema):
//
//   {
//     "schema": "ccoverlap.plan", "schema_version": "1.0.0",
//     "policy": "shape+priority:2",                 // a name for reports (free text)
//     "shaping": {
//       "default": 2 | "model" | "off",             // target blocks per SM of every kernel
//       "model_fraction": 0.5,                      // "model": keep this share of the kernel's own
//       "rules": [ {"kernel": "*gemv*", "blocks_per_sm": 1},
//                  {"kernel": "*softmax*", "pad": "16K"},
//                  {"kernel": "*elementwise*", "skip": true} ],
//       "denylist": ["*persistent*"]                // never touched (like cooperative launches)
//     },
//     "priority": { "nccl": "high" | "default", "method": "launch-attr" | "stream" | "both" },
//     "gemm": { "sm_target": 100 | -32, "when": "overlap" | "always" },   // opt-in: may change rounding
//     "nccl": { "channels": [ {"collective": "allreduce", "max_bytes": "64M", "max_channels": 16} ],
//               "min_ctas": 32, "max_ctas": 32, "cta_policy": "default" | "efficiency" | "zero" },
//     "environment": { "NCCL_MIN_CTAS": "32", "TORCH_NCCL_HIGH_PRIORITY": "1" }
//   }
//
// "when" (shaping and gemm): "always" acts on every launch; "overlap" only while communication is
// pending on the launch's device (docs/PRELOAD.md, "The communication window").
//
// Every field is optional except "schema" and "schema_version"; missing sections mean "do
// nothing" (shaping off, default priority, no environment). Kernel patterns are globs (`*`, `?`)
// matched against the kernel's name as the driver reports it (mangled) and against its demangled
// form; the first matching rule wins.
#pragma once

#include <cstdint>
#include <climits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/controls.hpp"
#include "model/framework.hpp"
#include "model/schema_names.hpp"
#include "model/types.hpp"

namespace cco::plan {

inline constexpr const char* kSchema = model::kPlanSchema;
inline constexpr const char* kSchemaVersion = model::kSchemaVersion;

/// A plan that cannot be used: bad JSON, unknown field, value out of range, unknown policy.
/// what() is one line naming the field, e.g. "shaping.rules[1].blocks_per_sm: must be >= 1, got 0".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How many blocks per SM a kernel is shaped to.
enum class TargetKind {
  Off,    ///< not shaped
  Fixed,  ///< a fixed k blocks per SM
  Model,  ///< from the occupancy model: ceil(model_fraction * the kernel's own blocks per SM)
};

struct Target {
  TargetKind kind = TargetKind::Off;
  int blocks_per_sm = 0;  ///< k, when kind == Fixed (>= 1)
};

/// What a rule does to the kernels it matches.
enum class RuleAction {
  Target,  ///< shape to `target` (fixed k or model)
  Pad,     ///< add exactly `pad` bytes of dynamic shared memory per block
  Skip,    ///< leave the launch as it is
};

struct Rule {
  std::string kernel;  ///< glob over the kernel name (mangled or demangled)
  RuleAction action = RuleAction::Skip;
  Target target;    ///< for RuleAction::Target
  int64_t pad = 0;  ///< for RuleAction::Pad, > 0
};

/// When a control acts: on every launch, or only inside the communication window (while NCCL work
/// is pending on the launch's device; docs/PRELOAD.md). The control table's one enum.
using When = model::When;

struct Shaping {
  When when = When::Always;           ///< "when"
  Target target;                      ///< "default": applies to kernels no rule matches
  double model_fraction = 0.5;        ///< for TargetKind::Model, in (0, 1]
  std::vector<Rule> rules;            ///< first match wins
  std::vector<std::string> denylist;  ///< globs; matched kernels are never touched
  /// True when any kernel may be shaped (a target or a rule that shapes).
  bool active() const;
};

enum class NcclPriority { Default, High };

/// How NCCL kernels get the highest priority (docs/PRELOAD.md, "Priority").
enum class PriorityMethod {
  LaunchAttr,  ///< add CU_LAUNCH_ATTRIBUTE_PRIORITY to NCCL's own cuLaunchKernelEx
  Stream,      ///< run each collective on a highest-priority companion stream (fork/join)
  Both,        ///< both at once
};

struct Priority {
  NcclPriority nccl = NcclPriority::Default;
  PriorityMethod method = PriorityMethod::LaunchAttr;
  /// Globs naming NCCL's kernels: never shaped, prioritised when nccl == High.
  std::vector<std::string> nccl_kernels = {"*nccl*"};
  bool active() const { return nccl == NcclPriority::High; }
  bool uses_launch_attr() const {
    return active() && (method == PriorityMethod::LaunchAttr || method == PriorityMethod::Both);
  }
  bool uses_stream() const {
    return active() && (method == PriorityMethod::Stream || method == PriorityMethod::Both);
  }
};

/// The SM budget of the program's cuBLAS and cuBLASLt GEMMs (cublasSetSmCountTarget on its
/// handles, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET on its matmul descriptors). Opt-in and never part
/// of a default policy: another SM target may make cuBLAS choose another algorithm and so change
/// rounding (reproducibly: the decision depends on launch order, never on timing).
struct Gemm {
  int sm_target = 0;  ///< 0 none; > 0 the SMs GEMMs may use; < 0 leave -sm_target SMs free
  When when = When::Always;
  bool active() const { return sm_target != 0; }
  /// The SM-count target for a device of `sms` SMs: sm_target, or sms + sm_target for a
  /// carveout; 0 when none applies or it is out of range (< 1 or > sms).
  int target_for(int sms) const;
};

/// NCCL's channels (CTAs) per collective, inside programs. `channels` is applied by ccoverlap's
/// NCCL tuner plugin (libcco_tuner.so, NCCL_TUNER_PLUGIN set by `cco run`); the rest becomes
/// NCCL's environment (NCCL_MIN_CTAS, NCCL_MAX_CTAS, NCCL_CTA_POLICY) set by `cco run`.
/// A tuner can only lower what the communicator was created with: raise max_ctas to allow more.
struct ChannelRule {
  std::string collective = "*";  ///< allreduce|allgather|reducescatter|broadcast|reduce|*
  int64_t min_bytes = 0;         ///< inclusive
  int64_t max_bytes = INT64_MAX; ///< inclusive
  int max_channels = 0;          ///< >= 1
};

struct Nccl {
  std::vector<ChannelRule> channels;  ///< first match wins
  int min_ctas = 0;                   ///< > 0: NCCL_MIN_CTAS
  int max_ctas = 0;                   ///< > 0: NCCL_MAX_CTAS
  std::optional<model::CtaPolicy> cta_policy;  ///< NCCL_CTA_POLICY (nullopt: NCCL's own)
  bool uses_tuner() const { return !channels.empty(); }
  /// The variables this section asks `cco run` to set, in order.
  std::vector<std::pair<std::string, std::string>> environment() const;
};

/// The channel cap for one collective (the tuner plugin's decision, pure, so every rank gets the
/// same answer for the same collective): the first matching rule's max_channels, else 0 (leave
/// NCCL's choice). `collective` is a name of ChannelRule::collective (not "*").
int channel_cap(const Nccl& nccl, std::string_view collective, int64_t bytes);

/// The collective names channel rules accept ("allreduce", ...), without "*".
const std::vector<std::string>& collective_names();

/// The machine a plan was measured on ("made_for", written by `cco tune`). `cco run` refuses to
/// apply such a plan on another device, SM count or driver; the libraries are the program's own,
/// so the preload library compares them when the program has loaded them (made_for_library).
struct MadeFor {
  bool set = false;
  std::string device;  ///< device name as CUDA reports it ("NVIDIA H200")
  int sms = 0;         ///< SMs of that device
  int nranks = 0;      ///< ranks it was tuned with
  /// Versions by name ("cuda_driver", "cuda_runtime", "nccl", "cublaslt"), in order.
  std::vector<std::pair<std::string, std::string>> versions;
};

struct Plan {
  std::string policy;       ///< name for reports; policies set it to their own name
  std::string description;  ///< free text
  Shaping shaping;
  Priority priority;
  Gemm gemm;
  Nccl nccl;
  /// Variables `cco run` sets for the program, in order (names are validated).
  std::vector<std::pair<std::string, std::string>> environment;
  /// Framework controls `cco run --plan` hands to its start-up hook ("framework":
  /// "ddp.bucket_view=on,...", as --framework reads them; docs/FRAMEWORK.md).
  model::FrameworkSettings framework;
  MadeFor made_for;         ///< optional: where the plan was measured
};

/// Differences between where a plan was made and this machine (empty when it matches or when
/// the plan records nothing): one line per difference, e.g. "device: NVIDIA H100 (plan: NVIDIA
/// H200)". `versions` holds this machine's versions by the same names.
std::vector<std::string> made_for_mismatch(const MadeFor& made, const std::string& device, int sms,
                                           const std::vector<std::pair<std::string, std::string>>& versions);

/// The plan's made_for.versions[key] ("nccl", "cublaslt") against `loaded`, the version of that
/// library the program loaded: empty when they agree, when either is unknown or the plan names
/// none; else one line: "plan 'P' was made with NCCL 2.28.9, this program loads NCCL 2.27.3:
/// its tuned settings may not carry over (re-tune with `cco tune -- CMD`)". `what` names the
/// library in the line.
std::string made_for_library(const Plan& plan, const std::string& key, const std::string& what,
                             const std::string& loaded);

/// Parses and validates a plan document. Throws Error (one line) on anything invalid, including
/// unknown fields, a wrong schema or a schema_version whose major is not 1.
Plan parse(std::string_view json_text);

/// Reads and parses a plan file. Throws Error("plan FILE: ...").
Plan load(const std::string& path);

/// The plan of a named policy (docs/cli/run.md): parts joined by '+', then '@' suffixes.
///   off                   the library is loaded but changes nothing (measures its cost)
///   priority              NCCL kernels at the highest priority
///   shape:K | shape:model every non-NCCL kernel shaped to K blocks per SM (or the model's k)
///   shape+priority:K      both (the paper's method); also shape+priority:model
///   sm-target:N           cuBLAS/cuBLASLt GEMMs limited to N SMs (N < 0: all but -N); opt-in
///   channels:N            NCCL collectives capped at N channels (the tuner plugin)
///   torch-priority        only TORCH_NCCL_HIGH_PRIORITY=1 (PyTorch's own high-priority streams)
///   @overlap | @always    shaping and sm-target act only inside the communication window, or
///                         always (the default)
///   @launch-attr|@stream|@both   how NCCL gets its priority
/// "shape" and "shape+priority" alone mean ":model". Names are case-insensitive. Throws Error
/// listing the names when unknown.
Plan from_policy(std::string_view name);

/// The policy `cco run` uses when given neither --policy nor --plan: NCCL kernels at the highest
/// priority, nothing else. Shaping is not a default: shape+priority:model@overlap made a 1.3B DDP
/// step on 2 H100s 6.8% slower, paired (docs/results/2026-11-26-h100x2.md); priority was within
/// noise of off there and changes no launch where no NCCL kernel runs.
inline constexpr const char* kDefaultPolicy = "priority";

/// True when an item of a list of configurations (cco run --compare, CCO_COMPARE,
/// ccoverlap.policy()) names a plan file rather than a policy: it holds '/' or ends in ".json".
bool is_plan_file(std::string_view item);

/// The plan of such an item: load(item) for a plan file, else from_policy(item). Throws Error.
Plan load_item(const std::string& item);

/// The plan of an item of a comparison (CCO_COMPARE, cco run --compare): for the measuring
/// configuration model::kNoComm, the plan of "off" named so (what it skips is the preload
/// library's part); else load_item(item). Throws Error.
Plan load_compare_item(const std::string& item);

/// Why a plan cannot take part in a run-time rotation (cco run --compare, cco tune -- CMD,
/// ccoverlap.policy()), or "" when it can. Switchable: shaping (always or overlap), priority by
/// launch attribute, the GEMM SM budget (read at every GEMM) and the NCCL channel cap
/// (nccl.channels: the tuner plugin asks the configuration in force at every collective; only in
/// a rotation, which switches at the same collective on every rank -- ccoverlap.policy() refuses
/// it). Not switchable (fixed when the program starts): priority by companion stream (its streams
/// are made per communicator), NCCL's CTA settings and the plan environment (read by NCCL when a
/// communicator is created).
std::string rotation_refusal(const Plan& p);

/// Spellings for help and error messages ("off", "priority", "shape:K", ...).
std::vector<std::string> policy_names();

/// The plan as a JSON document that parse() reads back to an equal plan.
std::string to_json(const Plan& plan, int indent = 2);

/// Names for reports: "launch-attr", "stream", "both"; "high", "default"; "off", "model", "3".
const char* to_string(PriorityMethod m);
const char* to_string(When w);
/// "always" | "overlap" (the control table's plan-key codec, any case); throws Error
When parse_when(std::string_view text);
PriorityMethod parse_method(std::string_view text);  ///< throws Error
std::string to_string(const Target& t);

/// Glob match: `*` any run (also empty), `?` one character, everything else literal.
bool glob_match(std::string_view pattern, std::string_view text);

/// True when any pattern matches any of the names.
bool matches_any(const std::vector<std::string>& patterns, std::string_view name,
                 std::string_view demangled = {});

/// The first rule whose pattern matches the name (or its demangled form), or nullptr.
const Rule* match_rule(const Shaping& shaping, std::string_view name,
                       std::string_view demangled = {});

/// True when `name` may be set by a plan's environment: [A-Za-z_][A-Za-z0-9_]*, and neither
/// LD_PRELOAD nor a CCO_ variable (those belong to `cco run` itself).
bool valid_environment_name(std::string_view name);

}  // namespace cco::plan
