// Framework controls (issue 44): settings of the program's own framework -- PyTorch's
// DistributedDataParallel and FSDP2 -- that cut what communication costs its steps (fewer
// device-memory bytes, fewer copies), applied to an unmodified program by cco's Python start-up
// hook (src/inject/startup/sitecustomize.py) where the program builds those modules. GPU-free.
//
// One row per control declares it whole: its name (the `cco run --framework` token), the
// module it acts on, the keyword argument the hook passes, the value's kind, and what it changes.
// The hook is generic (it sets keywords on a target it knows), so a control on a known target is
// one row here, its test, its doc line and the changelog.
//
// A framework control is set once, when the program builds the module: it cannot switch between
// steps, so a paired comparison (`--compare`) holds it fixed in all its configurations.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cco::model {

/// What a framework control acts on: the hook's targets (sitecustomize.py, TARGETS).
enum class FrameworkTarget { Ddp, Fsdp };
const char* target_name(FrameworkTarget t);    ///< "ddp", "fsdp": the hook's key
const char* target_module(FrameworkTarget t);  ///< "DistributedDataParallel", "fully_shard"
const char* target_use(FrameworkTarget t);     ///< "built a DistributedDataParallel", "called fully_shard"

/// The kind of a control's value: a switch (on/off) or a positive number.
enum class FrameworkValue { Switch, Number };

struct FrameworkRow {
  const char* name;          ///< "ddp.bucket_view": the --framework token
  FrameworkTarget target;
  const char* keyword;       ///< the keyword argument the hook sets: "gradient_as_bucket_view"
  FrameworkValue kind;
  const char* bare;          ///< the value a bare name means ("on"), nullptr: a value is needed
  const char* unit;          ///< a number's unit, for messages ("MiB"); "" for a switch
  /// Empty: the same math (answers bit-identical). Else how it may change the answers, said when
  /// it is applied: asking for it by name is the opt-in.
  const char* rounding;
  const char* what;          ///< what it changes, in a line (docs, --help, messages)
};

// clang-format off
inline constexpr std::array<FrameworkRow, 3> kFrameworkControls = {{
    {"ddp.bucket_view", FrameworkTarget::Ddp, "gradient_as_bucket_view", FrameworkValue::Switch,
     "on", "", "",
     "gradients are views into DDP's buckets: no copy of each gradient into its bucket and back"},
    {"ddp.bucket_mb", FrameworkTarget::Ddp, "bucket_cap_mb", FrameworkValue::Number, nullptr, "MiB",
     "other bucket boundaries may change the order NCCL sums an element's ranks in (3 or more "
     "ranks)",
     "DDP's bucket size: fewer, larger all-reduces (the last bucket's must still hide)"},
    {"fsdp.reshard", FrameworkTarget::Fsdp, "reshard_after_forward", FrameworkValue::Switch,
     nullptr, "", "",
     "off: FSDP2 keeps each block's parameters gathered from forward to backward (no all-gather "
     "again in backward, more memory)"},
}};
// clang-format on

/// One control asked for, with its value as the hook's Python literal ("True", "100").
struct FrameworkSetting {
  std::size_t row = 0;  ///< index into kFrameworkControls
  std::string value;
  const FrameworkRow& control() const { return kFrameworkControls[row]; }
  bool operator==(const FrameworkSetting&) const = default;
};
using FrameworkSettings = std::vector<FrameworkSetting>;

/// Reads "ddp.bucket_view,ddp.bucket_mb=100,fsdp.reshard=off" (names in any case; a switch takes
/// on/off/true/false/1/0, a bare name its `bare` value; a number is positive and at most 1e6).
/// Throws Error naming the item and the reason (an unknown name lists the known ones; a name
/// given twice is refused), led by `what`, the option the spec came from ("" for none: a plan's
/// key, which its reader names).
FrameworkSettings parse_framework(std::string_view spec, std::string_view what = "--framework");
/// The settings as parse_framework reads them back, canonical ("ddp.bucket_view=on,...").
std::string framework_text(const FrameworkSettings& s);
/// The hook's environment value (CCO_FRAMEWORK), NAME:TARGET:KEYWORD:VALUE items joined by ';':
/// "ddp.bucket_view:ddp:gradient_as_bucket_view:True;ddp.bucket_mb:ddp:bucket_cap_mb:100".
std::string framework_env(const FrameworkSettings& s);
/// The settings that may change answers (rows with `rounding`), as "name: why" lines.
std::vector<std::string> framework_rounding(const FrameworkSettings& s);

}  // namespace cco::model
