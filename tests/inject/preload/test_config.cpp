// The library's environment variables and the plan they select; bad values never stop the
// program, they give a warning and the "off" plan.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "common/config.hpp"

namespace {

using namespace cco;
using preload::EnvConfig;

EnvConfig env(std::map<std::string, std::string> vars) {
  return preload::read_env([vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(Config, Defaults) {
  const EnvConfig c = env({});
  EXPECT_FALSE(c.disabled);
  EXPECT_EQ(c.stats, 0);
  EXPECT_FALSE(c.verbose);
  EXPECT_FALSE(c.bad);
  EXPECT_TRUE(c.warnings.empty());
  std::vector<std::string> w;
  const plan::Plan p = preload::resolve_plan(c, &w);
  EXPECT_EQ(p.policy, plan::kDefaultPolicy);
  EXPECT_FALSE(p.shaping.active());  // the default is priority alone
  EXPECT_TRUE(p.priority.active());
  EXPECT_TRUE(w.empty());
}

TEST(Config, Flags) {
  EXPECT_TRUE(env({{"CCO_DISABLE", "1"}}).disabled);
  EXPECT_TRUE(env({{"CCO_DISABLE", "yes"}}).disabled);
  EXPECT_TRUE(env({{"CCO_DISABLE", "TRUE"}}).disabled);
  EXPECT_FALSE(env({{"CCO_DISABLE", "0"}}).disabled);
  EXPECT_FALSE(env({{"CCO_DISABLE", ""}}).disabled);
  EXPECT_FALSE(env({{"CCO_DISABLE", "off"}}).disabled);
  const EnvConfig c = env({{"CCO_DISABLE", "maybe"}});
  EXPECT_TRUE(c.disabled);  // unclear: the safe reading
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0], "CCO_DISABLE='maybe' is not 0 or 1; the library is disabled");

  EXPECT_EQ(env({{"CCO_STATS", "1"}}).stats, 1);
  EXPECT_EQ(env({{"CCO_STATS", "2"}}).stats, 2);
  EXPECT_EQ(env({{"CCO_STATS", "yes"}}).stats, 1);
  EXPECT_EQ(env({{"CCO_STATS", "0"}}).stats, 0);
  const EnvConfig s = env({{"CCO_STATS", "lots"}});
  EXPECT_EQ(s.stats, 0);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "CCO_STATS='lots' is not 0, 1 or 2; statistics are off");
  EXPECT_FALSE(s.bad);  // statistics are not worth running unshaped for

  EXPECT_TRUE(env({{"CCO_VERBOSE", "1"}}).verbose);
  EXPECT_EQ(env({{"CCO_VERBOSE", "x"}}).warnings.size(), 1u);

  // cco run --compare's check of its first rounds: off unless asked; a bad value keeps it off.
  EXPECT_FALSE(env({}).compare_diagnose);
  EXPECT_TRUE(env({{"CCO_COMPARE_DIAGNOSE", "1"}}).compare_diagnose);
  EXPECT_FALSE(env({{"CCO_COMPARE_DIAGNOSE", "0"}}).compare_diagnose);
  const EnvConfig d = env({{"CCO_COMPARE_DIAGNOSE", "soon"}});
  EXPECT_FALSE(d.compare_diagnose);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0], "CCO_COMPARE_DIAGNOSE='soon' is not 0 or 1; no check of the first rounds");
  EXPECT_FALSE(d.bad);
}

TEST(Config, PolicyPlanAndMethod) {
  std::vector<std::string> w;
  plan::Plan p = preload::resolve_plan(env({{"CCO_POLICY", "shape:3"}}), &w);
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 3);
  EXPECT_FALSE(p.priority.active());
  p = preload::resolve_plan(env({{"CCO_POLICY", "priority"}, {"CCO_PRIORITY_METHOD", "stream"}}),
                            &w);
  EXPECT_EQ(p.priority.method, plan::PriorityMethod::Stream);
  EXPECT_TRUE(w.empty());

  const std::string path = ::testing::TempDir() + "cco_env_plan.json";
  {
    std::ofstream f(path);
    f << R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "mine",
             "shaping": {"default": 2}})";
  }
  p = preload::resolve_plan(env({{"CCO_PLAN", path}}), &w);
  EXPECT_EQ(p.policy, "mine");
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 2);
  EXPECT_TRUE(w.empty());
  std::remove(path.c_str());
}

TEST(Config, BadValuesRunUnshaped) {
  auto check_off = [](const EnvConfig& c, const std::string& want_warning) {
    std::vector<std::string> w;
    const plan::Plan p = preload::resolve_plan(c, &w);
    EXPECT_FALSE(p.shaping.active());
    EXPECT_FALSE(p.priority.active());
    EXPECT_TRUE(p.environment.empty());
    std::vector<std::string> all = c.warnings;
    all.insert(all.end(), w.begin(), w.end());
    ASSERT_EQ(all.size(), 1u) << want_warning;
    EXPECT_EQ(all[0], want_warning);
  };
  check_off(env({{"CCO_POLICY", "fast"}}),
            "CCO_POLICY: unknown policy 'fast' (known: off, priority, shape:K, shape:model, "
            "shape+priority:K, shape+priority:model, sm-target:N, channels:N, torch-priority; "
            "parts join with '+'; a policy may end in @overlap or @always, a priority policy in "
            "@launch-attr, @stream or @both); running unshaped");
  check_off(env({{"CCO_PLAN", "/nonexistent.json"}}),
            "CCO_PLAN: plan /nonexistent.json: cannot be read (No such file or directory); running unshaped");
  check_off(env({{"CCO_PLAN", "/a.json"}, {"CCO_POLICY", "off"}}),
            "CCO_PLAN and CCO_POLICY are both set (/a.json, off); running unshaped");
  check_off(env({{"CCO_PRIORITY_METHOD", "fast"}}),
            "CCO_PRIORITY_METHOD: unknown priority method 'fast' (known: launch-attr, stream, "
            "both); running unshaped");
  const std::string path = ::testing::TempDir() + "cco_env_bad_plan.json";
  {
    std::ofstream f(path);
    f << R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0", "shaping": {"default": 0}})";
  }
  check_off(env({{"CCO_PLAN", path}}),
            "CCO_PLAN: plan " + path +
                ": shaping.default: must be >= 1 (blocks per SM), got 0; running unshaped");
  std::remove(path.c_str());
}

TEST(Config, ParseFlag) {
  EXPECT_EQ(preload::parse_flag(nullptr), false);
  EXPECT_EQ(preload::parse_flag("On"), true);
  EXPECT_EQ(preload::parse_flag("no"), false);
  EXPECT_FALSE(preload::parse_flag("2").has_value());
}

}  // namespace
