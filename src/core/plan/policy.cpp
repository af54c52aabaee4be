// Named policies (`cco run --policy`, `cco bench`'s plans): parts joined by '+', '@' suffixes,
// each part read by the control table's PolicyPart spelling and codec (model/controls.hpp).
#include "plan/plan.hpp"

#include <algorithm>

#include "model/ascii.hpp"
#include "model/controls.hpp"
#include "model/limits.hpp"

namespace cco::plan {
namespace {

// A named policy's parts, from the control table: "priority", "shape", "sm-target", "channels"
// (a value after ':'), and '@' before when the controls act ("@overlap", "@always").
std::string part_name(model::Control c) { return model::spelling_name(c, model::Spelling::PolicyPart); }


}  // namespace

std::vector<std::string> policy_names() {
  using model::Control;
  const std::string prio = part_name(Control::Priority), shape = part_name(Control::Shaping);
  return {"off",
          prio,
          shape + ":K",
          shape + ":model",
          shape + "+" + prio + ":K",
          shape + "+" + prio + ":model",
          part_name(Control::GemmSms) + ":N",
          part_name(Control::Channels) + ":N",
          "torch-priority"};
}

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A signed integer of at most 4 digits, or throws with `what`.
int small_int(std::string_view s, const std::string& what) {
  const bool neg = !s.empty() && s[0] == '-';
  const std::string_view d = neg ? s.substr(1) : s;
  if (!all_digits(d) || d.size() > 4) throw Error(what);
  const int v = std::stoi(std::string(d));
  return neg ? -v : v;
}

// "BASE@S1@S2...": BASE, and the suffixes in `suffixes`.
std::string split_suffixes(const std::string& full, std::vector<std::string>& suffixes) {
  const auto at = full.find('@');
  if (at == std::string::npos) return full;
  const std::string rest = full.substr(at + 1);
  for (std::size_t from = 0;;) {
    const auto next = rest.find('@', from);
    suffixes.push_back(rest.substr(from, next - from));
    if (next == std::string::npos) break;
    from = next + 1;
  }
  return full.substr(0, at);
}

// "KIND[:ARG]+KIND[:ARG]...": (kind, argument) pairs; false when a part, or an argument after a
// ':', is empty.
bool split_parts(const std::string& base, std::vector<std::pair<std::string, std::string>>& parts) {
  for (std::size_t from = 0;;) {
    const auto next = base.find('+', from);
    const std::string part = base.substr(from, next - from);
    if (part.empty()) return false;
    const auto colon = part.find(':');
    std::string arg = colon == std::string::npos ? "" : part.substr(colon + 1);
    if (colon != std::string::npos && arg.empty()) return false;
    parts.emplace_back(part.substr(0, colon), arg);
    if (next == std::string::npos) return true;
    from = next + 1;
  }
}

}  // namespace

Plan from_policy(std::string_view name) {
  const std::string full = model::ascii_lower(name);
  auto unknown = [&]() -> Error {
    std::string list;
    for (const auto& n : policy_names()) list += (list.empty() ? "" : ", ") + n;
    return Error("unknown policy '" + std::string(name) + "' (known: " + list +
                 "; parts join with '+'; a policy may end in @overlap or @always, a priority "
                 "policy in @launch-attr, @stream or @both)");
  };
  auto bad = [&](const std::string& why) { return Error("policy '" + std::string(name) + "': " + why); };
  if (model::is_nocomm(full))
    throw Error("'" + std::string(name) + "' is a measuring configuration, not a policy: its "
                "collectives move no data and its answers are not kept; only a comparison takes "
                "it, after the policy it measures (cco run --compare off,nocomm)");
  // '@' suffixes: when the controls act, and how NCCL gets its priority.
  std::vector<std::string> suffixes;
  const std::string base = split_suffixes(full, suffixes);
  Plan p;
  p.policy = full;
  // Parts joined by '+'. "shape+priority:K" is the paper's spelling: K belongs to shape.
  std::vector<std::pair<std::string, std::string>> parts;  // kind, argument
  if (base.empty() || !split_parts(base, parts)) throw unknown();
  bool has_shape = false, prio = false, torch = false, off = false;
  std::string shape_arg;
  using model::Control;
  const std::string prio_part = part_name(Control::Priority), shape_part = part_name(Control::Shaping),
                    sms_part = part_name(Control::GemmSms), channels_part = part_name(Control::Channels);
  for (const auto& part : parts) {
    const std::string& kind = part.first;  // named, not a structured binding: clang 14 cannot
    const std::string& arg = part.second;  // capture a binding in the lambda below
    const bool seen_twice = std::count_if(parts.begin(), parts.end(), [&](const auto& q) {
                              return q.first == kind;
                            }) > 1;
    if (seen_twice) throw bad("'" + kind + "' given twice");
    if (kind == "off" || kind == "torch-priority") {
      if (!arg.empty() || parts.size() > 1) throw unknown();
      (kind == "off" ? off : torch) = true;
    } else if (kind == prio_part) {
      prio = true;
      if (!arg.empty()) {  // shape+priority:K
        if (!shape_arg.empty()) throw unknown();
        shape_arg = arg;
      }
    } else if (kind == shape_part) {
      has_shape = true;
      if (!arg.empty()) {
        if (!shape_arg.empty()) throw unknown();
        shape_arg = arg;
      }
    } else if (kind == sms_part) {
      // A plan's target may also leave SMs free (N < 0), which the table's count cannot say.
      if (arg.empty()) throw bad(sms_part + " needs :N (SMs the GEMMs may use; -N leaves N free)");
      p.gemm.sm_target = small_int(arg, "policy '" + std::string(name) + "': " + sms_part +
                                            ":N needs an integer N (N < 0: all SMs but -N)");
      if (p.gemm.sm_target == 0) throw bad(sms_part + ":0 is no budget; use N >= 1 or N <= -1");
    } else if (kind == channels_part) {
      if (arg.empty() || !all_digits(arg) || arg.size() > 2)
        throw bad(channels_part + ":N needs an integer N in 1..64");
      model::Controls c;  // the table's codec reads the part whole ("channels:8")
      try {
        model::set_control(c, Control::Channels, model::Spelling::PolicyPart, kind + ":" + arg);
      } catch (const model::Error&) {
        throw bad(channels_part + ":N needs N in 1..64");
      }
      ChannelRule r;
      r.max_channels = *c.channels;
      if (r.max_channels > 64) throw bad(channels_part + ":N needs N in 1..64");
      p.nccl.channels.push_back(r);
    } else {
      throw unknown();
    }
  }
  if (!shape_arg.empty() && !has_shape) {
    if (prio) throw unknown();  // "priority:K" alone
  }
  if (has_shape) {
    Target t;
    if (!shape_arg.empty() && shape_arg != "model" && (!all_digits(shape_arg) || shape_arg.size() > 4))
      throw bad("K must be an integer >= 1 or \"model\"");
    model::Controls c;  // the table's codec reads the part whole ("shape:3", "shape:model")
    try {
      model::set_control(c, Control::Shaping, model::Spelling::PolicyPart,
                         shape_part + ":" + (shape_arg.empty() ? "model" : shape_arg));
    } catch (const model::Error&) {
      throw bad("K must be >= 1 (blocks per SM)");
    }
    if (c.shape_model) {
      t.kind = TargetKind::Model;
    } else {
      t.kind = TargetKind::Fixed;
      t.blocks_per_sm = *c.blocks_per_sm;
    }
    p.shaping.target = t;
  }
  if (prio) p.priority.nccl = NcclPriority::High;
  bool when_seen = false, method_seen = false;
  const std::string at = part_name(Control::When);
  for (const auto& sfx : suffixes) {
    model::Controls when;  // the table's codec reads the part whole ("@overlap")
    try {
      model::set_control(when, Control::When, model::Spelling::PolicyPart, at + sfx);
    } catch (const model::Error&) {
    }
    if (when.when) {
      if (when_seen) throw bad(at + sfx + ": more than one of @overlap/@always");
      when_seen = true;
      if (!has_shape && !p.gemm.active())
        throw bad(at + sfx + " only applies to policies that shape or set an " + sms_part);
      const When w = *when.when;
      if (has_shape) p.shaping.when = w;
      if (p.gemm.active()) p.gemm.when = w;
      continue;
    }
    if (method_seen) throw bad("@" + sfx + ": more than one priority method");
    method_seen = true;
    if (!prio) throw bad("@" + sfx + " only applies to policies that prioritise NCCL");
    try {
      p.priority.method = parse_method(sfx);
    } catch (const Error& e) {
      throw bad(e.what());
    }
  }
  (void)off;
  if (torch) p.environment.emplace_back("TORCH_NCCL_HIGH_PRIORITY", "1");
  return p;
}

}  // namespace cco::plan
