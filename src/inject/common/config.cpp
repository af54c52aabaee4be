#include "common/config.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "model/ascii.hpp"
#include "model/controls.hpp"
#include "model/env_names.hpp"

namespace cco::preload {

std::optional<bool> parse_flag(const char* value) {
  if (!value) return false;
  const std::string v = model::ascii_lower(value);
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  return std::nullopt;
}

EnvConfig read_env(const std::function<const char*(const char*)>& get) {
  EnvConfig c;
  if (const char* v = get(cco::env::kDisable)) {
    const auto f = parse_flag(v);
    if (!f) {
      // Unclear intent: the safe reading of a mistyped "disable" is to disable.
      c.warnings.push_back(std::string("CCO_DISABLE='") + v +
                           "' is not 0 or 1; the library is disabled");
      c.disabled = true;
    } else {
      c.disabled = *f;
    }
  }
  if (const char* v = get(cco::env::kStats)) {
    const std::string s = v;
    if (s.empty() || s == "0")
      c.stats = 0;
    else if (s == "1")
      c.stats = 1;
    else if (s == "2")
      c.stats = 2;
    else if (auto f = parse_flag(v))
      c.stats = *f ? 1 : 0;
    else
      c.warnings.push_back("CCO_STATS='" + s + "' is not 0, 1 or 2; statistics are off");
  }
  // A 0/1 variable: anything else keeps `*out`, with "NAME='v' is not 0 or 1; " + `otherwise`.
  auto flag = [&](const char* name, bool* out, const char* otherwise) {
    const char* v = get(name);
    if (!v) return;
    if (const auto f = parse_flag(v))
      *out = *f;
    else
      c.warnings.push_back(std::string(name) + "='" + v + "' is not 0 or 1; " + otherwise);
  };
  flag(cco::env::kVerbose, &c.verbose, "ignored");
  if (const char* v = get(cco::env::kPlan)) c.plan_path = v;
  flag(cco::env::kPlanForce, &c.plan_force, "ignored");
  if (const char* v = get(cco::env::kPolicy)) c.policy = v;
  if (!c.plan_path.empty() && !c.policy.empty()) {
    c.warnings.push_back("CCO_PLAN and CCO_POLICY are both set (" + c.plan_path + ", " + c.policy +
                         "); running unshaped");
    c.bad = true;
  }
  if (const char* v = get(cco::env::kStepsDir); v && *v) c.steps_dir = v;
  if (const char* v = get(cco::env::kCompare); v && *v) {
    std::string item;
    for (const char* q = v;; ++q) {
      if (*q == ',' || *q == '\0') {
        if (item.empty()) {
          c.warnings.push_back(std::string("CCO_COMPARE='") + v +
                               "' has an empty item; no comparison");
          c.compare.clear();
          break;
        }
        c.compare.push_back(item);
        item.clear();
        if (*q == '\0') break;
      } else {
        item += *q;
      }
    }
    if (c.compare.size() > 8) {
      c.warnings.push_back("CCO_COMPARE names more than 8 configurations; no comparison");
      c.compare.clear();
    }
  }
  // The online search (cco tune -- CMD): CCO_TUNE=1 with CCO_COMPARE's candidates and
  // CCO_STEPS_DIR (its decision file lives there).
  flag(cco::env::kTune, &c.tune, "no search");
  flag(cco::env::kCompareDiagnose, &c.compare_diagnose, "no check of the first rounds");
  flag(cco::env::kTuneExit, &c.tune_exit, "the program runs on after the search");
  // A count from 0 to `max`; anything else keeps the default, with "NAME='v' " + `bad` said once.
  auto count = [&](const char* name, uint64_t max, uint64_t* out, const std::string& bad) {
    const char* v = get(name);
    if (!v || !*v) return;
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (errno || *end || *v == '-' || n > max)
      c.warnings.push_back(std::string(name) + "='" + v + "' " + bad);
    else
      *out = n;
  };
  for (auto [name, max, out] : {std::tuple{cco::env::kTuneSteps, uint64_t{10000000}, &c.tune_steps},
                                std::tuple{cco::env::kTuneTime, uint64_t{86400 * 30}, &c.tune_time_s},
                                std::tuple{cco::env::kTuneWait, uint64_t{86400}, &c.tune_wait_s}})
    count(name, max, out,
          "is not a number from 0 to " + std::to_string(max) + "; the default is used");
  if (c.tune && (c.compare.size() < 2 || c.steps_dir.empty())) {
    c.warnings.push_back("CCO_TUNE needs CCO_COMPARE (2 to 8 candidates) and CCO_STEPS_DIR; no search");
    c.tune = false;
  }
  count(cco::env::kWarmupSteps, 1000000, &c.warmup, "is not a step count (0 to 1000000); 5 are used");
  if (const char* v = get(cco::env::kStepNvtx); v && *v) {
    if (std::strlen(v) > 255)
      c.warnings.push_back("CCO_STEP_NVTX is longer than 255 characters; no steps from NVTX");
    else
      c.step_nvtx = v;
  }
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = get(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r < (1 << 24)) c.rank = static_cast<int>(r);
    break;
  }
  if (const char* v = get(cco::env::kPriorityMethod); v && *v) {
    try {
      c.method = plan::parse_method(v);
    } catch (const plan::Error& e) {
      c.warnings.push_back(std::string("CCO_PRIORITY_METHOD: ") + e.what() + "; running unshaped");
      c.bad = true;
    }
  }
  return c;
}

plan::Plan resolve_item(const std::string& item, std::optional<plan::PriorityMethod> method) {
  plan::Plan p = plan::load_item(item);
  if (method) p.priority.method = *method;
  return p;
}

plan::Plan resolve_compare_item(const std::string& item,
                                std::optional<plan::PriorityMethod> method) {
  if (model::is_nocomm(item)) return plan::load_compare_item(item);  // no priority to apply
  return resolve_item(item, method);
}

plan::Plan resolve_plan(const EnvConfig& env, std::vector<std::string>* warnings) {
  auto off = [] {
    plan::Plan p = plan::from_policy("off");
    p.policy = "off (configuration error)";
    return p;
  };
  if (env.bad) return off();
  plan::Plan p;
  try {
    if (!env.plan_path.empty())
      p = plan::load(env.plan_path);
    else
      p = plan::from_policy(env.policy.empty() ? plan::kDefaultPolicy : env.policy);
  } catch (const std::exception& e) {
    const std::string src = env.plan_path.empty() ? "CCO_POLICY: " : "CCO_PLAN: ";
    if (warnings) warnings->push_back(src + e.what() + "; running unshaped");
    return off();
  }
  if (env.method) p.priority.method = *env.method;
  return p;
}

}  // namespace cco::preload
