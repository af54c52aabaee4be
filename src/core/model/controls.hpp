// The controls cco bench, cco tune and programs share (issue 35): one typed value (`Controls`,
// every field an enum or a std::optional, never -1 for unset) and one table row per control
// (`kControls`) naming all its spellings: the bench flag, the tune candidate list, the named
// policy's part, the plan key, the row label's token, the environment variable, the results' JSON
// field, and what applies it. GPU-free. How to add a control: docs/ARCHITECTURE.md, "Adding a
// control".
//
// A spelling may name two keys that take the same value ("--nccl-min-ctas,--nccl-max-ctas": a row's
// CTA count is minCTAs = maxCTAs). A policy part is written whole ("sm-target:108", "@overlap",
// "priority"); every other spelling's value is the text after its name (`--nccl-cta-policy zero`,
// `cta=zero`, `NCCL_CTA_POLICY=2`, `"cta_policy": "zero"`).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/ascii.hpp"
#include "model/types.hpp"

namespace cco::model {

/// When a control acts: on every launch, or only inside the communication window (plan::When).
enum class When { Always, Overlap };

struct Controls {
  std::optional<bool> priority;            ///< NCCL kernels at the highest priority
  std::optional<int> blocks_per_sm;        ///< shaping: k blocks per SM (>= 1)
  bool shape_model = false;                ///< shaping: k from the occupancy model
  std::optional<int64_t> pad;              ///< shaping: exactly this much dynamic shared memory
  std::optional<When> when;                ///< shaping and the SM target: always or @overlap
  std::optional<int> gemm_sms;             ///< GEMMs' SM-count target (0: all SMs)
  std::optional<int> nccl_ctas;            ///< NCCL minCTAs = maxCTAs
  std::optional<int> green_sms;            ///< compute in a green-context partition of N SMs
  std::optional<CommRegister> nccl_reg;    ///< the collective's buffer registration
  std::optional<CtaPolicy> cta_policy;     ///< NCCL's CTAPolicy
  std::optional<int> channels;             ///< NCCL channels per collective (the tuner plugin)
  bool operator==(const Controls&) const = default;
};

/// The controls, in the order a row's label writes them.
enum class Control { Priority, Shaping, Pad, When, GemmSms, NcclCtas, Green, Register, CtaPolicy, Channels };

/// The places a control is spelled.
enum class Spelling { Flag, TuneList, PolicyPart, PlanKey, Label, Env, Json };
inline constexpr std::size_t kSpellings = 7;

struct ControlRow {
  Control id;
  const char* name;                             ///< for messages and docs
  std::array<const char*, kSpellings> spelled;  ///< by Spelling; nullptr: not spelled there
  const char* applied_by;                       ///< where the value takes effect
};

// clang-format off
inline constexpr std::array<ControlRow, 10> kControls = {{
    // id, name, {flag, tune list, policy part, plan key, label, env, JSON}, applied by
    {Control::Priority, "priority",
     {"--modes", nullptr, "priority", "priority.nccl", nullptr, nullptr, nullptr},
     "bench: the collective on a highest-priority stream (modes priority, shape+priority); "
     "programs: the preload library's launch attribute or companion stream (hook.cpp)"},
    {Control::Shaping, "shaping target",
     {"--blocks-per-sm", "--blocks-per-sm", "shape", "shaping.default", "k", nullptr, "target_blocks_per_sm"},
     "bench: the padding planned per row (bench/ranks.cpp); programs: preload decide.cpp/hook.cpp"},
    {Control::Pad, "shaping pad",
     {"--pad", nullptr, nullptr, "shaping.rules[].pad", "pad", nullptr, "pad_bytes"},
     "bench: dynamic shared memory added to the compute launch; programs: a plan rule (hook.cpp)"},
    {Control::When, "when",
     {nullptr, nullptr, "@", "shaping.when,gemm.when", nullptr, nullptr, nullptr},
     "programs: the communication window (preload window.cpp, order_window.cpp)"},
    {Control::GemmSms, "GEMM SM target",
     {"--gemm-sms", "--sm-budgets", "sm-target", "gemm.sm_target", "sms", nullptr, "gemm_sms"},
     "bench: CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET (kernels); programs: preload blas.cpp"},
    {Control::NcclCtas, "NCCL CTAs",
     {"--nccl-min-ctas,--nccl-max-ctas", "--ctas", nullptr, "nccl.min_ctas,nccl.max_ctas", "ctas",
      "NCCL_MIN_CTAS,NCCL_MAX_CTAS", "nccl_ctas"},
     "bench: ncclConfig_t.minCTAs/maxCTAs (runtime/comm.cpp); programs: cco run's environment"},
    {Control::Green, "green partition",
     {"--green-sms", "--green-sms", nullptr, nullptr, "green", nullptr, "green_sms"},
     "bench: the compute in a green context (runtime SmPartition); not for programs"},
    {Control::Register, "registration",
     {"--nccl-register", "--registers", nullptr, nullptr, "reg", nullptr, "nccl_register"},
     "bench: ncclCommRegister / ncclCommWindowRegister (kernels/comm_op.cpp); not for programs"},
    {Control::CtaPolicy, "CTA policy",
     {"--nccl-cta-policy", "--nccl-cta-policy", nullptr, "nccl.cta_policy", "cta", "NCCL_CTA_POLICY",
      "cta_policy"},
     "bench: ncclConfig_t.CTAPolicy (runtime/comm.cpp); programs: cco run's environment"},
    {Control::Channels, "NCCL channels",
     {nullptr, nullptr, "channels", "nccl.channels[].max_channels", nullptr, nullptr, nullptr},
     "programs: the NCCL tuner plugin (nccl_tuner/decide.cpp)"},
}};
// clang-format on

/// Control `c`'s spelling `s` as the table writes it (nullptr: none), at compile time.
constexpr const char* spelled(Control c, Spelling s) {
  return kControls[static_cast<std::size_t>(c)].spelled[static_cast<std::size_t>(s)];
}

/// Control `c`'s field in the results (bench rows, step configurations, a tuned plan's choice):
/// "gemm_sms", "nccl_register", ... (nullptr: none), at compile time.
constexpr const char* json_field(Control c) { return spelled(c, Spelling::Json); }

/// The row of `c`.
const ControlRow& control_row(Control c);
/// Control `c`'s name in spelling `s` (nullptr: not spelled there). Where the spelling names two
/// keys ("NCCL_MIN_CTAS,NCCL_MAX_CTAS"), `key` picks one (0 or 1; the last when out of range).
std::string spelling_name(Control c, Spelling s, std::size_t key = 0);
/// How many keys spelling `s` of `c` names (0: none).
std::size_t spelling_keys(Control c, Spelling s);
/// Control `c`'s plan key split at its last '.': the field inside its section ("nccl" of
/// "priority.nccl", "pad" of "shaping.rules[].pad", "max_channels" of
/// "nccl.channels[].max_channels") and the section before it ("priority", "shaping.rules[]",
/// "nccl.channels[]"); "" for a control with no plan key. `key` as for spelling_name.
std::string plan_field(Control c, std::size_t key = 0);
std::string plan_section(Control c, std::size_t key = 0);

/// The value of control `c` in `v` as spelling `s` writes it ("": unset, or not spelled there).
/// A policy part comes whole ("sm-target:108"); the rest is the value alone ("108").
std::string control_text(const Controls& v, Control c, Spelling s);
/// Reads `text`, a value in spelling `s` (as control_text writes it; flags also take the other
/// spellings they accept, "2" for zero), into control `c` of `v`. Throws Error with the reason
/// ("unknown CTA policy 'fast' (known: ...)"), which callers prefix with the name they read.
void set_control(Controls& v, Control c, Spelling s, std::string_view text);

/// A row's label tokens in table order: " k=3 sms=108 ctas=32 reg=window cta=zero".
std::string label_tokens(const Controls& v);
/// Reads such tokens back (unknown tokens: Error).
Controls controls_from_label(std::string_view tokens);

/// The measuring configuration of a comparison (steps/nocomm.hpp): the program's collectives
/// move no data, to measure what communication costs its steps. Not a control and not a policy:
/// plan::from_policy refuses it, only a comparison takes it (cco run --compare off,nocomm), never
/// as its first item, and no plan holds it.
inline constexpr std::string_view kNoComm = "nocomm";
/// True when `item` (a comparison's item, a step file's configuration name) names it, in any case.
inline bool is_nocomm(std::string_view item) {
  return ascii_lower(item) == kNoComm;
}

}  // namespace cco::model
