#include "plan/plan.hpp"

#include "model/controls.hpp"
#include "model/limits.hpp"
#include "model/read_file.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/occupancy.hpp"

namespace cco::plan {
namespace {

using nlohmann::json;

// A control's plan key and its field inside its section, from the control table
// (model::plan_field): "priority.nccl" and "nccl", "shaping.rules[].pad" and "pad". `k`: which key
// of a spelling that names two ("nccl.min_ctas,nccl.max_ctas").
std::string key_of(model::Control c, std::size_t k = 0) { return model::spelling_name(c, model::Spelling::PlanKey, k); }
const char* field(model::Control c, std::size_t k = 0) {
  static const auto fields = [] {
    std::array<std::array<std::string, 2>, model::kControls.size()> f;
    for (const auto& row : model::kControls)
      for (std::size_t i = 0; i < 2; ++i) f[static_cast<std::size_t>(row.id)][i] = model::plan_field(row.id, i);
    return f;
  }();
  return fields[static_cast<std::size_t>(c)][k].c_str();
}

// The CTA policy's plan key, from the control table: "nccl.cta_policy" (the field "cta_policy").
constexpr auto kCta = model::Control::CtaPolicy;
constexpr const char* kCtaKey = model::spelled(kCta, model::Spelling::PlanKey);
constexpr const char* kCtaField = kCtaKey + std::string_view(kCtaKey).find('.') + 1;
std::string cta_text(model::Controls c, model::Spelling s) { return model::control_text(c, kCta, s); }

// NCCL's CTA counts, from the control table: the plan keys "nccl.min_ctas,nccl.max_ctas" and the
// environment "NCCL_MIN_CTAS,NCCL_MAX_CTAS", key 0 the minimum and 1 the maximum (a plan may set
// them apart; a bench row sets both to one count).
constexpr auto kCtas = model::Control::NcclCtas;
std::string ctas_key(std::size_t k) { return key_of(kCtas, k); }  // "nccl.min_ctas", "nccl.max_ctas"
const char* ctas_field(std::size_t k) { return field(kCtas, k); }  // "min_ctas", "max_ctas"
// The count as the environment spells it, with its variable.
std::pair<std::string, std::string> ctas_env(std::size_t k, int count) {
  model::Controls c;
  c.nccl_ctas = count;
  return {model::spelling_name(kCtas, model::Spelling::Env, k), model::control_text(c, kCtas, model::Spelling::Env)};
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(where.empty() ? what : where + ": " + what);
}

std::string type_name(const json& j) {
  return j.type_name();
}

// Rejects keys a section does not know: a typo must not silently do nothing.
void check_keys(const json& obj, const std::string& where,
                std::initializer_list<const char*> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
    fail(where.empty() ? it.key() : where + "." + it.key(), "unknown field (known: " + list + ")");
  }
}

const json& need_object(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "must be an object, got " + type_name(j));
  return j;
}

std::string need_string(const json& j, const std::string& where) {
  if (!j.is_string()) fail(where, "must be a string, got " + type_name(j));
  return j.get<std::string>();
}

int need_k(const json& j, const std::string& where) {
  if (!j.is_number_integer()) fail(where, "must be an integer >= 1 or \"model\", got " + j.dump());
  const auto v = j.get<int64_t>();
  if (v < 1 || v > 1024) fail(where, "must be >= 1 (blocks per SM), got " + std::to_string(v));
  return static_cast<int>(v);
}

// "default" and a rule's "blocks_per_sm": k, "model", or (default only) "off".
Target parse_target(const json& j, const std::string& where, bool allow_off) {
  Target t;
  if (j.is_string()) {
    const std::string s = lower(j.get<std::string>());
    if (s == "model") {
      t.kind = TargetKind::Model;
      return t;
    }
    if (s == "off" && allow_off) return t;
    fail(where, std::string(allow_off ? "must be an integer >= 1, \"model\" or \"off\""
                                      : "must be an integer >= 1 or \"model\"") +
                    ", got \"" + j.get<std::string>() + "\"");
  }
  t.kind = TargetKind::Fixed;
  t.blocks_per_sm = need_k(j, where);
  return t;
}

std::vector<std::string> parse_patterns(const json& j, const std::string& where) {
  if (!j.is_array()) fail(where, "must be an array of kernel-name patterns, got " + type_name(j));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    std::string p = need_string(j[i], w);
    if (p.empty()) fail(w, "an empty pattern matches nothing; use \"*\" for every kernel");
    out.push_back(std::move(p));
  }
  return out;
}

Rule parse_rule(const json& j, const std::string& where) {
  need_object(j, where);
  const char* pad = field(model::Control::Pad);  // "pad" ("shaping.rules[].pad")
  check_keys(j, where, {"kernel", "blocks_per_sm", pad, "skip", "comment"});
  Rule r;
  if (!j.contains("kernel")) fail(where, "missing \"kernel\" (a kernel-name pattern)");
  r.kernel = need_string(j["kernel"], where + ".kernel");
  if (r.kernel.empty()) fail(where + ".kernel", "must not be empty");
  int actions = 0;
  if (j.contains("blocks_per_sm")) {
    ++actions;
    r.action = RuleAction::Target;
    r.target = parse_target(j["blocks_per_sm"], where + ".blocks_per_sm", false);
  }
  if (j.contains(pad)) {
    ++actions;
    r.action = RuleAction::Pad;
    const json& p = j[pad];
    const std::string w = where + "." + pad;
    if (p.is_number_integer()) {
      r.pad = p.get<int64_t>();
    } else if (p.is_string()) {
      model::Controls c;  // the control table's codec reads "16K"
      try {
        model::set_control(c, model::Control::Pad, model::Spelling::PlanKey, p.get<std::string>());
      } catch (const model::Error& e) {
        fail(w, e.what());
      }
      r.pad = *c.pad;
    } else {
      fail(w, "must be a byte count (integer or \"16K\"), got " + p.dump());
    }
    if (r.pad <= 0) fail(w, "must be > 0 bytes, got " + std::to_string(r.pad));
    if (r.pad > (int64_t{1} << 30)) fail(w, "is larger than any GPU's shared memory");
  }
  if (j.contains("skip")) {
    if (!j["skip"].is_boolean()) fail(where + ".skip", "must be true or false");
    if (j["skip"].get<bool>()) {
      ++actions;
      r.action = RuleAction::Skip;
    }
  }
  if (actions != 1)
    fail(where, "needs exactly one of \"blocks_per_sm\", \"" + std::string(pad) + "\" or \"skip\": true (got " +
                    std::to_string(actions) + ")");
  return r;
}

Shaping parse_shaping(const json& j) {
  const std::string where = "shaping";
  need_object(j, where);
  const auto shape = model::Control::Shaping;  // "shaping.default"
  check_keys(j, where, {field(shape), "model_fraction", "rules", "denylist", "when", "comment"});
  Shaping s;
  if (j.contains("when")) {
    try {
      s.when = parse_when(need_string(j["when"], "shaping.when"));
    } catch (const Error& e) {
      fail("shaping.when", e.what());
    }
  }
  if (j.contains(field(shape))) s.target = parse_target(j[field(shape)], key_of(shape), true);
  if (j.contains("model_fraction")) {
    const json& f = j["model_fraction"];
    if (!f.is_number()) fail("shaping.model_fraction", "must be a number in (0, 1]");
    s.model_fraction = f.get<double>();
    if (!(s.model_fraction > 0.0 && s.model_fraction <= 1.0))
      fail("shaping.model_fraction", "must be in (0, 1], got " + f.dump());
  }
  if (j.contains("rules")) {
    const json& rs = j["rules"];
    if (!rs.is_array()) fail("shaping.rules", "must be an array, got " + type_name(rs));
    for (std::size_t i = 0; i < rs.size(); ++i)
      s.rules.push_back(parse_rule(rs[i], "shaping.rules[" + std::to_string(i) + "]"));
  }
  if (j.contains("denylist")) s.denylist = parse_patterns(j["denylist"], "shaping.denylist");
  return s;
}

Priority parse_priority(const json& j) {
  need_object(j, "priority");
  const auto prio = model::Control::Priority;  // "priority.nccl"
  check_keys(j, "priority", {field(prio), "method", "nccl_kernels", "comment"});
  Priority p;
  if (j.contains(field(prio))) {
    const std::string v = need_string(j[field(prio)], key_of(prio));
    model::Controls c;  // the control table's codec: "high" or "default", in any case
    try {
      model::set_control(c, prio, model::Spelling::PlanKey, v);
    } catch (const model::Error&) {
      fail(key_of(prio), "must be \"high\" or \"default\", got \"" + lower(v) + "\"");
    }
    p.nccl = *c.priority ? NcclPriority::High : NcclPriority::Default;
  }
  if (j.contains("method")) {
    try {
      p.method = parse_method(need_string(j["method"], "priority.method"));
    } catch (const Error& e) {
      fail("priority.method", e.what());
    }
  }
  if (j.contains("nccl_kernels")) {
    p.nccl_kernels = parse_patterns(j["nccl_kernels"], "priority.nccl_kernels");
    if (p.nccl_kernels.empty())
      fail("priority.nccl_kernels",
           "must name at least one pattern (NCCL kernels are never padded)");
  }
  return p;
}

Gemm parse_gemm(const json& j) {
  need_object(j, "gemm");
  const auto sms = model::Control::GemmSms;  // "gemm.sm_target"; its value may be < 0, which the
  const char* target = field(sms);            // table's count cannot say: read here
  check_keys(j, "gemm", {target, "when", "comment"});
  Gemm g;
  if (!j.contains(target))
    fail("gemm", "missing \"" + std::string(target) + "\" (SMs the GEMMs may use; < 0 leaves that many free)");
  const json& t = j[target];
  if (!t.is_number_integer()) fail(key_of(sms), "must be an integer, got " + t.dump());
  const auto v = t.get<int64_t>();
  if (v == 0) fail(key_of(sms), "must not be 0 (omit the section for no SM budget)");
  if (v > 1024 || v < -1024) fail(key_of(sms), "is larger than any GPU's SM count: " + std::to_string(v));
  g.sm_target = static_cast<int>(v);
  if (j.contains("when")) {
    try {
      g.when = parse_when(need_string(j["when"], "gemm.when"));
    } catch (const Error& e) {
      fail("gemm.when", e.what());
    }
  }
  return g;
}

int64_t parse_byte_field(const json& v, const std::string& w) {
  int64_t b = 0;
  if (v.is_number_integer()) {
    b = v.get<int64_t>();
  } else if (v.is_string()) {
    try {
      b = model::parse_bytes(v.get<std::string>());
    } catch (const model::Error& e) {
      fail(w, e.what());
    }
  } else {
    fail(w, "must be a byte count (integer or \"64M\"), got " + v.dump());
  }
  if (b < 0) fail(w, "must be >= 0 bytes, got " + std::to_string(b));
  return b;
}

int parse_ctas(const json& v, const std::string& w) {
  if (!v.is_number_integer()) fail(w, "must be an integer in 1..64, got " + v.dump());
  const auto n = v.get<int64_t>();
  if (n < 1 || n > 64) fail(w, "must be in 1..64 (NCCL's channel limit), got " + std::to_string(n));
  return static_cast<int>(n);
}

Nccl parse_nccl(const json& j) {
  need_object(j, "nccl");
  check_keys(j, "nccl", {"channels", ctas_field(0), ctas_field(1), kCtaField, "comment"});
  Nccl n;
  if (j.contains("channels")) {
    const json& cs = j["channels"];
    if (!cs.is_array()) fail("nccl.channels", "must be an array, got " + type_name(cs));
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const std::string w = "nccl.channels[" + std::to_string(i) + "]";
      const json& c = cs[i];
      need_object(c, w);
      const char* max = field(model::Control::Channels);  // "nccl.channels[].max_channels"
      check_keys(c, w, {"collective", "min_bytes", "max_bytes", max, "comment"});
      ChannelRule r;
      if (c.contains("collective")) {
        r.collective = lower(need_string(c["collective"], w + ".collective"));
        const auto& names = collective_names();
        if (r.collective != "*" && std::find(names.begin(), names.end(), r.collective) == names.end()) {
          std::string list;
          for (const auto& x : names) list += x + ", ";
          fail(w + ".collective", "unknown collective '" + r.collective + "' (known: " + list + "*)");
        }
      }
      if (c.contains("min_bytes")) r.min_bytes = parse_byte_field(c["min_bytes"], w + ".min_bytes");
      if (c.contains("max_bytes")) r.max_bytes = parse_byte_field(c["max_bytes"], w + ".max_bytes");
      if (r.min_bytes > r.max_bytes) fail(w, "min_bytes is larger than max_bytes");
      if (!c.contains(max)) fail(w, "missing \"" + std::string(max) + "\"");
      r.max_channels = parse_ctas(c[max], w + "." + max);
      n.channels.push_back(r);
    }
  }
  if (j.contains(ctas_field(0))) n.min_ctas = parse_ctas(j[ctas_field(0)], ctas_key(0));
  if (j.contains(ctas_field(1))) n.max_ctas = parse_ctas(j[ctas_field(1)], ctas_key(1));
  if (n.min_ctas > 0 && n.max_ctas > 0 && n.min_ctas > n.max_ctas)
    fail("nccl", std::string(ctas_field(0)) + " (" + std::to_string(n.min_ctas) + ") is larger than " +
                     ctas_field(1) + " (" + std::to_string(n.max_ctas) + ")");
  model::Controls c;  // the control table's codec (model/controls.hpp)
  try {
    if (j.contains(kCtaField)) set_control(c, kCta, model::Spelling::PlanKey, need_string(j[kCtaField], kCtaKey));
  } catch (const model::Error& e) {
    fail(kCtaKey, e.what());
  }
  n.cta_policy = c.cta_policy;
  return n;
}

std::vector<std::pair<std::string, std::string>> parse_environment(const json& j) {
  need_object(j, "environment");
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string w = "environment." + it.key();
    if (!valid_environment_name(it.key()))
      fail(w, "not a variable a plan may set (letters, digits, _; not LD_PRELOAD or CCO_*)");
    const json& v = it.value();
    std::string value;
    if (v.is_string())
      value = v.get<std::string>();
    else if (v.is_number_integer())
      value = std::to_string(v.get<int64_t>());
    else if (v.is_boolean())
      value.push_back(v.get<bool>() ? '1' : '0');
    else
      fail(w, "must be a string or an integer, got " + type_name(v));
    out.emplace_back(it.key(), value);
  }
  return out;
}

void check_schema(const json& doc) {
  if (!doc.contains("schema")) {
    if (doc.contains("shaping") || doc.contains("priority"))
      fail("schema", std::string("missing (a plan starts with \"schema\": \"") + kSchema +
                         "\", \"schema_version\": \"" + kSchemaVersion + "\")");
    fail("", std::string("not a ccoverlap plan: no \"schema\": \"") + kSchema + "\" field");
  }
  const std::string schema = need_string(doc["schema"], "schema");
  if (schema == model::kFootprintSchema)
    fail("",
         "this is a footprint report from `cco plan --json`, not a run plan (see docs/PRELOAD.md)");
  if (schema != kSchema) fail("schema", std::string("must be \"") + kSchema + "\", got \"" + schema + "\"");
  if (doc.contains("footprint") || doc.contains("plans") || doc.contains("occupancy"))  // before
    fail("",
         "this is a footprint report from `cco plan --json`, not a run plan (see docs/PRELOAD.md)");
  if (!doc.contains("schema_version")) fail("schema_version", "missing (expected \"1.0.0\")");
  const std::string v = need_string(doc["schema_version"], "schema_version");
  // MAJOR.MINOR.PATCH; only major 1 is understood. Newer minors may add fields we reject as
  // unknown, which is the safe answer.
  std::size_t dot = v.find('.');
  const std::string major = v.substr(0, dot);
  bool digits = !major.empty() && std::all_of(major.begin(), major.end(),
                                              [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || dot == std::string::npos)
    fail("schema_version", "must look like \"1.0.0\", got \"" + v + "\"");
  if (major != "1")
    fail("schema_version", "\"" + v + "\" is not supported by this ccoverlap (understands 1.x)");
}

json target_json(const Target& t) {
  switch (t.kind) {
    case TargetKind::Off:
      return "off";
    case TargetKind::Model:
      return "model";
    case TargetKind::Fixed:
      return t.blocks_per_sm;
  }
  return "off";
}

}  // namespace

bool Shaping::active() const {
  if (target.kind != TargetKind::Off) return true;
  for (const auto& r : rules)
    if (r.action != RuleAction::Skip) return true;
  return false;
}

const char* to_string(PriorityMethod m) {
  switch (m) {
    case PriorityMethod::LaunchAttr:
      return "launch-attr";
    case PriorityMethod::Stream:
      return "stream";
    case PriorityMethod::Both:
      return "both";
  }
  return "?";
}

const char* to_string(When w) {
  return w == When::Overlap ? "overlap" : "always";
}

When parse_when(std::string_view text) {
  model::Controls c;
  try {
    model::set_control(c, model::Control::When, model::Spelling::PlanKey, text);
  } catch (const model::Error&) {
    throw Error("unknown \"when\" '" + std::string(text) + "' (known: always, overlap)");
  }
  return *c.when;
}

int Gemm::target_for(int sms) const {
  if (sm_target == 0 || sms < 1) return 0;
  const int t = sm_target > 0 ? sm_target : sms + sm_target;
  return (t >= 1 && t <= sms) ? t : 0;
}

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> n = {"allreduce", "allgather", "reducescatter", "broadcast",
                                             "reduce"};
  return n;
}

int channel_cap(const Nccl& nccl, std::string_view collective, int64_t bytes) {
  for (const auto& r : nccl.channels)
    if ((r.collective == "*" || r.collective == collective) && bytes >= r.min_bytes &&
        bytes <= r.max_bytes)
      return r.max_channels;
  return 0;
}

std::vector<std::pair<std::string, std::string>> Nccl::environment() const {
  std::vector<std::pair<std::string, std::string>> e;
  if (min_ctas > 0) e.push_back(ctas_env(0, min_ctas));
  if (max_ctas > 0) e.push_back(ctas_env(1, max_ctas));
  model::Controls c;
  c.cta_policy = cta_policy;
  if (cta_policy) e.emplace_back(model::spelled(kCta, model::Spelling::Env), cta_text(c, model::Spelling::Env));
  return e;
}

PriorityMethod parse_method(std::string_view text) {
  const std::string s = lower(text);
  if (s == "launch-attr" || s == "attr" || s == "launch_attr") return PriorityMethod::LaunchAttr;
  if (s == "stream") return PriorityMethod::Stream;
  if (s == "both") return PriorityMethod::Both;
  throw Error("unknown priority method '" + std::string(text) +
              "' (known: launch-attr, stream, both)");
}

std::string to_string(const Target& t) {
  switch (t.kind) {
    case TargetKind::Off:
      return "off";
    case TargetKind::Model:
      return "model";
    case TargetKind::Fixed:
      return std::to_string(t.blocks_per_sm);
  }
  return "?";
}

Plan parse(std::string_view json_text) {
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end(), nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse errors and numbers out of range alike
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at ..." -> "parse error at ..."
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    fail("", "invalid JSON: " + what);
  }
  if (!doc.is_object()) fail("", "a plan must be a JSON object, got " + type_name(doc));
  check_schema(doc);
  check_keys(doc, "",
             {"schema", "schema_version", "policy", "description", "comment", "shaping", "priority",
              "gemm", "nccl", "environment", "framework", "generated_by", "tuning", "made_for"});
  Plan p;
  if (doc.contains("policy")) p.policy = need_string(doc["policy"], "policy");
  if (doc.contains("description")) p.description = need_string(doc["description"], "description");
  if (doc.contains("shaping")) p.shaping = parse_shaping(doc["shaping"]);
  if (doc.contains("priority")) p.priority = parse_priority(doc["priority"]);
  if (doc.contains("gemm")) p.gemm = parse_gemm(doc["gemm"]);
  if (doc.contains("nccl")) p.nccl = parse_nccl(doc["nccl"]);
  if (doc.contains("environment")) p.environment = parse_environment(doc["environment"]);
  if (doc.contains("framework")) {
    try {
      p.framework = model::parse_framework(need_string(doc["framework"], "framework"), "");
    } catch (const model::Error& e) {
      fail("framework", e.what());
    }
  }
  for (const auto& [k, v] : p.nccl.environment())
    for (const auto& [k2, v2] : p.environment)
      if (k == k2 && v != v2)
        fail("environment." + k2, "conflicts with the nccl section (" + k + "=" + v + ")");
  if (doc.contains("made_for")) {
    const auto& m = doc["made_for"];
    need_object(m, "made_for");
    check_keys(m, "made_for", {"device", "sms", "nranks", "versions"});
    p.made_for.set = true;
    if (m.contains("device")) p.made_for.device = need_string(m["device"], "made_for.device");
    if (m.contains("sms")) {
      if (!m["sms"].is_number_integer() || m["sms"].get<int64_t>() < 0)
        fail("made_for.sms", "must be a non-negative integer");
      p.made_for.sms = m["sms"].get<int>();
    }
    if (m.contains("nranks")) {
      if (!m["nranks"].is_number_integer() || m["nranks"].get<int64_t>() < 0)
        fail("made_for.nranks", "must be a non-negative integer");
      p.made_for.nranks = m["nranks"].get<int>();
    }
    if (m.contains("versions")) {
      need_object(m["versions"], "made_for.versions");
      for (const auto& [k, v] : m["versions"].items())
        p.made_for.versions.emplace_back(k, need_string(v, "made_for.versions." + k));
    }
  }
  if (p.policy.empty()) p.policy = "plan";
  return p;
}

Plan load(const std::string& path) {
  std::string text;
  try {
    text = model::read_file(path, model::kPlanFileLimit);
  } catch (const model::FileError& e) {
    throw Error("plan " + path + ": " + e.reason());
  }
  try {
    return parse(text);
  } catch (const Error& e) {
    throw Error("plan " + path + ": " + e.what());
  }
}

std::string to_json(const Plan& plan, int indent) {
  json j;
  j["schema"] = kSchema;
  j["schema_version"] = kSchemaVersion;
  j["policy"] = plan.policy;
  if (!plan.description.empty()) j["description"] = plan.description;
  json s;
  s[field(model::Control::Shaping)] = target_json(plan.shaping.target);
  s["model_fraction"] = plan.shaping.model_fraction;
  s["rules"] = json::array();
  for (const auto& r : plan.shaping.rules) {
    json rj;
    rj["kernel"] = r.kernel;
    switch (r.action) {
      case RuleAction::Target:
        rj["blocks_per_sm"] = target_json(r.target);
        break;
      case RuleAction::Pad:
        rj[field(model::Control::Pad)] = r.pad;
        break;
      case RuleAction::Skip:
        rj["skip"] = true;
        break;
    }
    s["rules"].push_back(rj);
  }
  s["denylist"] = plan.shaping.denylist;
  s["when"] = to_string(plan.shaping.when);
  j["shaping"] = s;
  if (plan.gemm.active())
    j["gemm"] = {{field(model::Control::GemmSms), plan.gemm.sm_target}, {"when", to_string(plan.gemm.when)}};
  if (!plan.nccl.channels.empty() || plan.nccl.min_ctas > 0 || plan.nccl.max_ctas > 0 ||
      plan.nccl.cta_policy) {
    json n = json::object();
    if (!plan.nccl.channels.empty()) {
      n["channels"] = json::array();
      for (const auto& r : plan.nccl.channels) {
        json rj = {{"collective", r.collective}, {field(model::Control::Channels), r.max_channels}};
        if (r.min_bytes > 0) rj["min_bytes"] = r.min_bytes;
        if (r.max_bytes != INT64_MAX) rj["max_bytes"] = r.max_bytes;
        n["channels"].push_back(rj);
      }
    }
    if (plan.nccl.min_ctas > 0) n[ctas_field(0)] = plan.nccl.min_ctas;
    if (plan.nccl.max_ctas > 0) n[ctas_field(1)] = plan.nccl.max_ctas;
    model::Controls c;
    c.cta_policy = plan.nccl.cta_policy;
    if (c.cta_policy) n[kCtaField] = cta_text(c, model::Spelling::PlanKey);
    j["nccl"] = n;
  }
  model::Controls prio;  // "high" or "default", as the control table writes it
  prio.priority = plan.priority.nccl == NcclPriority::High;
  j["priority"] = {{field(model::Control::Priority), model::control_text(prio, model::Control::Priority, model::Spelling::PlanKey)},
                   {"method", to_string(plan.priority.method)},
                   {"nccl_kernels", plan.priority.nccl_kernels}};
  json env = json::object();
  for (const auto& [k, v] : plan.environment) env[k] = v;
  j["environment"] = env;
  if (!plan.framework.empty()) j["framework"] = model::framework_text(plan.framework);
  if (plan.made_for.set) {
    json m;
    m["device"] = plan.made_for.device;
    m["sms"] = plan.made_for.sms;
    m["nranks"] = plan.made_for.nranks;
    json v = json::object();
    for (const auto& [k, x] : plan.made_for.versions) v[k] = x;
    m["versions"] = v;
    j["made_for"] = m;
  }
  return j.dump(indent);
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point: linear in practice, no recursion.
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(const std::vector<std::string>& patterns, std::string_view name,
                 std::string_view demangled) {
  for (const auto& pat : patterns)
    if (glob_match(pat, name) || (!demangled.empty() && glob_match(pat, demangled))) return true;
  return false;
}

const Rule* match_rule(const Shaping& shaping, std::string_view name, std::string_view demangled) {
  for (const auto& r : shaping.rules)
    if (glob_match(r.kernel, name) || (!demangled.empty() && glob_match(r.kernel, demangled)))
      return &r;
  return nullptr;
}

bool valid_environment_name(std::string_view name) {
  if (name.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  if (name == "LD_PRELOAD") return false;
  if (name.substr(0, 4) == "CCO_") return false;
  return true;
}

bool is_plan_file(std::string_view item) {
  return item.find('/') != std::string_view::npos ||
         (item.size() > 5 && item.substr(item.size() - 5) == ".json");
}

Plan load_item(const std::string& item) {
  return is_plan_file(item) ? load(item) : from_policy(item);
}

Plan load_compare_item(const std::string& item) {
  if (!model::is_nocomm(item)) return load_item(item);
  Plan p = from_policy("off");
  p.policy = std::string(model::kNoComm);
  return p;
}

std::string rotation_refusal(const Plan& p) {
  if (p.priority.uses_stream())
    return "its priority method '" + std::string(to_string(p.priority.method)) +
           "' uses companion streams, made once per communicator (use @launch-attr)";
  if (!p.nccl.environment().empty())
    return "its NCCL CTA settings are read by NCCL when a communicator is created";
  if (!p.environment.empty()) return "its environment is set before the program starts";
  if (!p.framework.empty())
    return "its framework controls are set where the program builds its modules (docs/FRAMEWORK.md)";
  return "";
}

}  // namespace cco::plan
