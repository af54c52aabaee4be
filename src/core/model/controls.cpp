#include "model/controls.hpp"

#include <algorithm>
#include <charconv>

#include "model/ascii.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace cco::model {
namespace {

std::string num(const std::optional<int>& v) {
  return v ? std::to_string(*v) : std::string();
}

// A whole number >= `min`, or Error.
int count(std::string_view text, int min) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min)
    throw Error("expected a whole number of at least " + std::to_string(min) + ", got '" +
                std::string(text) + "'");
  return v;
}

// Control c's policy part as the table names it ("shape", "sm-target", "channels", "@").
std::string_view part(Control c) { return spelled(c, Spelling::PolicyPart); }

// "name:" stripped off a policy part, or Error.
std::string_view part_value(std::string_view text, std::string_view name) {
  if (text.size() <= name.size() || text.substr(0, name.size()) != name || text[name.size()] != ':')
    throw Error("expected " + std::string(name) + ":N, got '" + std::string(text) + "'");
  return text.substr(name.size() + 1);
}

std::string text_of(const Controls& v, Control c, Spelling s) {
  switch (c) {
    case Control::Priority:
      if (!v.priority) return {};
      if (s == Spelling::Flag) return *v.priority ? "priority" : "concurrent";
      if (s == Spelling::PolicyPart) return *v.priority ? "priority" : "";
      return *v.priority ? "high" : "default";  // plan key
    case Control::Shaping:
      if (v.shape_model)
        return s == Spelling::PolicyPart ? std::string(part(c)) + ":model" : s == Spelling::PlanKey ? "model" : "";
      if (!v.blocks_per_sm) return {};
      return (s == Spelling::PolicyPart ? std::string(part(c)) + ":" : "") + std::to_string(*v.blocks_per_sm);
    case Control::Pad:
      if (!v.pad) return {};
      return s == Spelling::Json ? std::to_string(*v.pad) : format_bytes(*v.pad);
    case Control::When:
      if (!v.when) return {};
      return std::string(s == Spelling::PolicyPart ? part(c) : "") +
             (*v.when == When::Overlap ? "overlap" : "always");
    case Control::GemmSms:
      if (s == Spelling::PolicyPart) return v.gemm_sms ? std::string(part(c)) + ":" + num(v.gemm_sms) : "";
      if (s == Spelling::Label && v.gemm_sms == 0) return "all";
      return num(v.gemm_sms);
    case Control::NcclCtas:
      return num(v.nccl_ctas);
    case Control::Green:
      return num(v.green_sms);
    case Control::Register:
      if (!v.nccl_reg) return {};
      return s == Spelling::Json ? std::to_string(comm_register_number(v.nccl_reg))
                                 : to_string(*v.nccl_reg);
    case Control::CtaPolicy:
      if (!v.cta_policy) return {};
      return s == Spelling::Env ? std::to_string(cta_policy_number(v.cta_policy))
                                : to_string(*v.cta_policy);
    case Control::Channels:
      if (!v.channels) return {};
      return (s == Spelling::PolicyPart ? std::string(part(c)) + ":" : "") + std::to_string(*v.channels);
  }
  return {};
}

void read(Controls& v, Control c, Spelling s, std::string_view text) {
  const std::string t = ascii_lower(text);
  switch (c) {
    case Control::Priority:
      if ((s != Spelling::PlanKey && t == "priority") || (s == Spelling::PlanKey && t == "high"))
        v.priority = true;
      else if ((s == Spelling::Flag && t == "concurrent") ||
               (s == Spelling::PlanKey && t == "default"))
        v.priority = false;
      else
        throw Error("expected " +
                    std::string(s == Spelling::PlanKey ? "high or default" : "priority") +
                    ", got '" + std::string(text) + "'");
      return;
    case Control::Shaping: {
      const std::string_view k =
          s == Spelling::PolicyPart ? part_value(t, part(c)) : std::string_view(t);
      if (k == "model" && (s == Spelling::PolicyPart || s == Spelling::PlanKey)) {
        v.shape_model = true;
        v.blocks_per_sm.reset();
      } else {
        v.blocks_per_sm = count(k, 1);
        v.shape_model = false;
      }
      return;
    }
    case Control::Pad:
      v.pad = s == Spelling::Json ? count(t, 0) : parse_bytes(std::string(text));
      return;
    case Control::When: {
      std::string_view w = t;
      if (s == Spelling::PolicyPart) {
        if (!w.starts_with(part(c))) throw Error("expected @overlap or @always, got '" + t + "'");
        w.remove_prefix(part(c).size());
      }
      if (w == "overlap")
        v.when = When::Overlap;
      else if (w == "always")
        v.when = When::Always;
      else
        throw Error("expected overlap or always, got '" + std::string(text) + "'");
      return;
    }
    case Control::GemmSms:
      if (s == Spelling::Label && t == "all")
        v.gemm_sms = 0;
      else
        v.gemm_sms = s == Spelling::PolicyPart ? count(part_value(t, part(c)), 1) : count(t, 0);
      return;
    case Control::NcclCtas:
      v.nccl_ctas = count(t, 1);
      return;
    case Control::Green:
      v.green_sms = count(t, 1);
      return;
    case Control::Register:
      v.nccl_reg =
          s == Spelling::Json ? comm_register_from_number(count(t, 0)) : parse_register(text);
      return;
    case Control::CtaPolicy:
      if (s == Spelling::Env) {
        v.cta_policy = cta_policy_from_number(count(t, 0));
      } else if (s == Spelling::PlanKey && t != "default" && t != "efficiency" && t != "zero") {
        throw Error("must be \"default\", \"efficiency\" or \"zero\", got \"" + t + "\"");
      } else {
        v.cta_policy = parse_cta_policy(text);  // its message names the text as given
      }
      return;
    case Control::Channels:
      v.channels =
          count(s == Spelling::PolicyPart ? part_value(t, part(c)) : std::string_view(t), 1);
      return;
  }
}

std::string_view key_of(const char* spelled, std::size_t key) {
  std::string_view all(spelled);
  const auto comma = all.find(',');
  if (comma == std::string_view::npos) return all;
  return key == 0 ? all.substr(0, comma) : all.substr(comma + 1);
}

}  // namespace

const ControlRow& control_row(Control c) {
  const auto& row = kControls[static_cast<std::size_t>(c)];
  if (row.id != c) throw Error("model::kControls is out of the order of model::Control");
  return row;
}

std::string spelling_name(Control c, Spelling s, std::size_t key) {
  const char* spelled = control_row(c).spelled[static_cast<std::size_t>(s)];
  return spelled ? std::string(key_of(spelled, key)) : std::string();
}

std::size_t spelling_keys(Control c, Spelling s) {
  const char* spelled = control_row(c).spelled[static_cast<std::size_t>(s)];
  if (!spelled) return 0;
  return std::string_view(spelled).find(',') == std::string_view::npos ? 1 : 2;
}

std::string plan_field(Control c, std::size_t key) {
  const std::string k = spelling_name(c, Spelling::PlanKey, key);
  return k.substr(k.rfind('.') + 1);  // npos + 1 == 0: the whole key
}

std::string plan_section(Control c, std::size_t key) {
  const std::string k = spelling_name(c, Spelling::PlanKey, key);
  const auto dot = k.rfind('.');
  return dot == std::string::npos ? std::string() : k.substr(0, dot);
}

std::string control_text(const Controls& v, Control c, Spelling s) {
  return spelling_keys(c, s) == 0 ? std::string() : text_of(v, c, s);
}

void set_control(Controls& v, Control c, Spelling s, std::string_view text) {
  if (spelling_keys(c, s) == 0)
    throw Error(std::string(control_row(c).name) + " has no such spelling");
  read(v, c, s, text);
}

std::string label_tokens(const Controls& v) {
  std::string out;
  for (const auto& row : kControls) {
    const std::string t = control_text(v, row.id, Spelling::Label);
    if (t.empty()) continue;
    out += ' ';
    out += spelling_name(row.id, Spelling::Label);
    out += '=';
    out += t;
  }
  return out;
}

Controls controls_from_label(std::string_view tokens) {
  Controls v;
  while (!tokens.empty()) {
    const auto space = tokens.find(' ');
    const std::string_view token = tokens.substr(0, space);
    tokens = space == std::string_view::npos ? std::string_view() : tokens.substr(space + 1);
    if (token.empty()) continue;
    const auto eq = token.find('=');
    const auto* row = std::find_if(kControls.begin(), kControls.end(), [&](const ControlRow& r) {
      const char* l = r.spelled[static_cast<std::size_t>(Spelling::Label)];
      return l && eq != std::string_view::npos && token.substr(0, eq) == l;
    });
    if (row == kControls.end()) throw Error("unknown label token '" + std::string(token) + "'");
    read(v, row->id, Spelling::Label, token.substr(eq + 1));
  }
  return v;
}

}  // namespace cco::model
