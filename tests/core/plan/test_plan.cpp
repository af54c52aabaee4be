// Run plans: parsing, validation (one clear line per mistake), named policies, round trips,
// kernel-name patterns.
#include <gtest/gtest.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/controls.hpp"
#include "model/types.hpp"
#include "plan/plan.hpp"

namespace {

using namespace cco::plan;

std::string doc(const std::string& body) {
  return R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0")" +
         (body.empty() ? std::string() : ", " + body) + "}";
}

// The error of parsing `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PlanParse, MinimalPlanDoesNothing) {
  const Plan p = parse(doc(""));
  EXPECT_EQ(p.policy, "plan");
  EXPECT_EQ(p.shaping.target.kind, TargetKind::Off);
  EXPECT_FALSE(p.shaping.active());
  EXPECT_FALSE(p.priority.active());
  EXPECT_TRUE(p.environment.empty());
  ASSERT_EQ(p.priority.nccl_kernels.size(), 1u);
  EXPECT_EQ(p.priority.nccl_kernels[0], "*nccl*");
}

TEST(PlanParse, FullPlan) {
  const Plan p = parse(doc(R"(
    "policy": "tuned-4096", "description": "from cco tune",
    "shaping": {"default": 2, "model_fraction": 0.25,
                "rules": [{"kernel": "*gemv*", "blocks_per_sm": 1},
                          {"kernel": "*softmax*", "pad": "16K"},
                          {"kernel": "*elementwise*", "skip": true},
                          {"kernel": "*layernorm*", "blocks_per_sm": "model"},
                          {"kernel": "*bias*", "pad": 4096}],
                "denylist": ["*persistent*", "*splitK*"]},
    "priority": {"nccl": "high", "method": "stream", "nccl_kernels": ["*nccl*", "*Nccl*"]},
    "environment": {"NCCL_MIN_CTAS": "32", "NCCL_MAX_CTAS": 32, "TORCH_NCCL_HIGH_PRIORITY": true},
    "generated_by": {"tool": "cco tune"})"));
  EXPECT_EQ(p.policy, "tuned-4096");
  EXPECT_EQ(p.description, "from cco tune");
  EXPECT_EQ(p.shaping.target.kind, TargetKind::Fixed);
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(p.shaping.model_fraction, 0.25);
  ASSERT_EQ(p.shaping.rules.size(), 5u);
  EXPECT_EQ(p.shaping.rules[0].action, RuleAction::Target);
  EXPECT_EQ(p.shaping.rules[0].target.blocks_per_sm, 1);
  EXPECT_EQ(p.shaping.rules[1].action, RuleAction::Pad);
  EXPECT_EQ(p.shaping.rules[1].pad, 16 * 1024);
  EXPECT_EQ(p.shaping.rules[2].action, RuleAction::Skip);
  EXPECT_EQ(p.shaping.rules[3].target.kind, TargetKind::Model);
  EXPECT_EQ(p.shaping.rules[4].pad, 4096);
  ASSERT_EQ(p.shaping.denylist.size(), 2u);
  EXPECT_TRUE(p.priority.active());
  EXPECT_EQ(p.priority.method, PriorityMethod::Stream);
  EXPECT_TRUE(p.priority.uses_stream());
  EXPECT_FALSE(p.priority.uses_launch_attr());
  ASSERT_EQ(p.environment.size(), 3u);
  // nlohmann keeps object keys sorted: NCCL_MAX_CTAS, NCCL_MIN_CTAS, TORCH_...
  EXPECT_EQ(p.environment[0].first, "NCCL_MAX_CTAS");
  EXPECT_EQ(p.environment[0].second, "32");
  EXPECT_EQ(p.environment[2].second, "1");
}

TEST(PlanParse, DefaultSpellings) {
  EXPECT_EQ(parse(doc(R"("shaping": {"default": "model"})")).shaping.target.kind,
            TargetKind::Model);
  EXPECT_EQ(parse(doc(R"("shaping": {"default": "OFF"})")).shaping.target.kind, TargetKind::Off);
  EXPECT_EQ(parse(doc(R"("priority": {"nccl": "default"})")).priority.nccl, NcclPriority::Default);
  EXPECT_EQ(parse(doc(R"("priority": {"nccl": "high", "method": "both"})")).priority.method,
            PriorityMethod::Both);
  // Comments are allowed (the file is written by people too).
  EXPECT_NO_THROW(parse("// a tuned plan\n" + doc(R"("policy": "x" /* inline */)")));
}

TEST(PlanParse, SchemaErrors) {
  EXPECT_EQ(error_of("{}"), "not a ccoverlap plan: no \"schema\": \"ccoverlap.plan\" field");
  EXPECT_EQ(error_of(R"({"shaping": {}})"),
            "schema: missing (a plan starts with \"schema\": \"ccoverlap.plan\", "
            "\"schema_version\": \"1.0.0\")");
  EXPECT_EQ(error_of(R"({"schema": "nvbench", "schema_version": "1.0.0"})"),
            "schema: must be \"ccoverlap.plan\", got \"nvbench\"");
  EXPECT_EQ(error_of(R"({"schema": "ccoverlap.plan"})"),
            "schema_version: missing (expected \"1.0.0\")");
  EXPECT_EQ(error_of(R"({"schema": "ccoverlap.plan", "schema_version": "2.0.0"})"),
            "schema_version: \"2.0.0\" is not supported by this ccoverlap (understands 1.x)");
  EXPECT_EQ(error_of(R"({"schema": "ccoverlap.plan", "schema_version": "one"})"),
            "schema_version: must look like \"1.0.0\", got \"one\"");
  EXPECT_EQ(error_of(R"({"schema": "ccoverlap.plan", "schema_version": 1})"),
            "schema_version: must be a string, got number");
  EXPECT_NO_THROW(parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.3.0"})"));
  // `cco plan --json` writes the same schema name for a footprint report: say what it is.
  EXPECT_EQ(
      error_of(doc(R"("arch": "sm_90", "footprint": {}, "plans": [])")),
      "this is a footprint report from `cco plan --json`, not a run plan (see docs/PRELOAD.md)");
}

TEST(PlanParse, JsonErrorsAreOneLine) {
  const std::string e = error_of("{\"schema\": ");
  EXPECT_EQ(e.rfind("invalid JSON: parse error at line 1", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_EQ(error_of("[1, 2]"), "a plan must be a JSON object, got array");
}

TEST(PlanParse, FieldErrors) {
  struct Case {
    const char* body;
    const char* error;
  } cases[] = {
      {R"("shapping": {})",
       "shapping: unknown field (known: schema, schema_version, policy, description, comment, "
       "shaping, priority, gemm, nccl, environment, framework, generated_by, tuning, made_for)"},
      {R"("shaping": 3)", "shaping: must be an object, got number"},
      {R"("shaping": {"defualt": 2})",
       "shaping.defualt: unknown field (known: default, model_fraction, rules, denylist, when, comment)"},
      {R"("shaping": {"default": 0})", "shaping.default: must be >= 1 (blocks per SM), got 0"},
      {R"("shaping": {"default": -3})", "shaping.default: must be >= 1 (blocks per SM), got -3"},
      {R"("shaping": {"default": 1.5})",
       "shaping.default: must be an integer >= 1 or \"model\", got 1.5"},
      {R"("shaping": {"default": "lots"})",
       "shaping.default: must be an integer >= 1, \"model\" or \"off\", got \"lots\""},
      {R"("shaping": {"model_fraction": 0})", "shaping.model_fraction: must be in (0, 1], got 0"},
      {R"("shaping": {"model_fraction": 1.5})",
       "shaping.model_fraction: must be in (0, 1], got 1.5"},
      {R"("shaping": {"model_fraction": "half"})",
       "shaping.model_fraction: must be a number in (0, 1]"},
      {R"("shaping": {"rules": {}})", "shaping.rules: must be an array, got object"},
      {R"("shaping": {"rules": [{"blocks_per_sm": 1}]})",
       "shaping.rules[0]: missing \"kernel\" (a kernel-name pattern)"},
      {R"("shaping": {"rules": [{"kernel": ""  , "skip": true}]})",
       "shaping.rules[0].kernel: must not be empty"},
      {R"("shaping": {"rules": [{"kernel": "*", "skip": true}, {"kernel": "x"}]})",
       "shaping.rules[1]: needs exactly one of \"blocks_per_sm\", \"pad\" or \"skip\": true (got "
       "0)"},
      {R"("shaping": {"rules": [{"kernel": "x", "blocks_per_sm": 1, "pad": 4}]})",
       "shaping.rules[0]: needs exactly one of \"blocks_per_sm\", \"pad\" or \"skip\": true (got "
       "2)"},
      {R"("shaping": {"rules": [{"kernel": "x", "blocks_per_sm": "off"}]})",
       "shaping.rules[0].blocks_per_sm: must be an integer >= 1 or \"model\", got \"off\""},
      {R"("shaping": {"rules": [{"kernel": "x", "pad": 0}]})",
       "shaping.rules[0].pad: must be > 0 bytes, got 0"},
      {R"("shaping": {"rules": [{"kernel": "x", "pad": "lots"}]})",
       "shaping.rules[0].pad: invalid size 'lots' (expected an integer with optional K, M or G)"},
      {R"("shaping": {"rules": [{"kernel": "x", "pad": "2G"}]})",
       "shaping.rules[0].pad: is larger than any GPU's shared memory"},
      {R"("shaping": {"rules": [{"kernel": "x", "skip": "yes"}]})",
       "shaping.rules[0].skip: must be true or false"},
      {R"("shaping": {"rules": [{"kernel": "x", "skip": true, "why": 1}]})",
       "shaping.rules[0].why: unknown field (known: kernel, blocks_per_sm, pad, skip, comment)"},
      {R"("shaping": {"denylist": "gemm"})",
       "shaping.denylist: must be an array of kernel-name patterns, got string"},
      {R"("shaping": {"denylist": ["a", ""]})",
       "shaping.denylist[1]: an empty pattern matches nothing; use \"*\" for every kernel"},
      {R"("shaping": {"denylist": [3]})", "shaping.denylist[0]: must be a string, got number"},
      {R"("priority": {"nccl": "highest"})",
       "priority.nccl: must be \"high\" or \"default\", got \"highest\""},
      {R"("priority": {"method": "magic"})",
       "priority.method: unknown priority method 'magic' (known: launch-attr, stream, both)"},
      {R"("priority": {"nccl_kernels": []})",
       "priority.nccl_kernels: must name at least one pattern (NCCL kernels are never padded)"},
      {R"("priority": {"level": 1})",
       "priority.level: unknown field (known: nccl, method, nccl_kernels, comment)"},
      {R"("environment": {"LD_PRELOAD": "x.so"})",
       "environment.LD_PRELOAD: not a variable a plan may set (letters, digits, _; not LD_PRELOAD "
       "or CCO_*)"},
      {R"("environment": {"CCO_POLICY": "off"})",
       "environment.CCO_POLICY: not a variable a plan may set (letters, digits, _; not LD_PRELOAD "
       "or CCO_*)"},
      {R"("environment": {"A-B": "1"})",
       "environment.A-B: not a variable a plan may set (letters, digits, _; not LD_PRELOAD or "
       "CCO_*)"},
      {R"("environment": {"NCCL_MIN_CTAS": [32]})",
       "environment.NCCL_MIN_CTAS: must be a string or an integer, got array"},
      {R"("environment": ["NCCL_MIN_CTAS=32"])", "environment: must be an object, got array"},
      {R"("policy": 3)", "policy: must be a string, got number"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(doc(c.body)), c.error) << c.body;
}

TEST(PlanLoad, FilesAndErrorsNameTheFile) {
  const std::string path = ::testing::TempDir() + "cco_plan_test.json";
  {
    std::ofstream f(path);
    f << doc(R"("shaping": {"default": 3})");
  }
  EXPECT_EQ(load(path).shaping.target.blocks_per_sm, 3);
  {
    std::ofstream f(path);
    f << doc(R"("shaping": {"default": 0})");
  }
  try {
    load(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "plan " + path + ": shaping.default: must be >= 1 (blocks per SM), got 0");
  }
  std::remove(path.c_str());
  try {
    load("/nonexistent/plan.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "plan /nonexistent/plan.json: cannot be read (No such file or directory)");
  }
  // Bounded input: a folder, a FIFO (never waited for) and a file over the limit, one line each.
  auto message = [](const std::string& p) {
    try {
      load(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("/tmp"), "plan /tmp: a folder, not a file");
  char fifo[] = "/tmp/cco-plan-fifo-XXXXXX";
  ASSERT_NE(::mkdtemp(fifo), nullptr);
  const std::string f = std::string(fifo) + "/p.json";
  ASSERT_EQ(::mkfifo(f.c_str(), 0600), 0);
  EXPECT_EQ(message(f), "plan " + f + ": not a regular file (a FIFO, a socket or a device)");
  ::unlink(f.c_str());
  EXPECT_EQ(message("/dev/zero"), "plan /dev/zero: not a regular file (a FIFO, a socket or a device)");
  const std::string big = std::string(fifo) + "/big.json";
  {
    std::ofstream o(big);
    o << std::string((16u << 20) + 1, ' ');
  }
  EXPECT_EQ(message(big), "plan " + big + ": larger than the limit of 16 MiB");
  ::unlink(big.c_str());
  ::rmdir(fifo);
}

TEST(Policies, Names) {
  Plan p = from_policy("off");
  EXPECT_FALSE(p.shaping.active());
  EXPECT_FALSE(p.priority.active());
  EXPECT_TRUE(p.environment.empty());
  EXPECT_EQ(p.policy, "off");

  p = from_policy("priority");
  EXPECT_FALSE(p.shaping.active());
  EXPECT_TRUE(p.priority.active());
  EXPECT_EQ(p.priority.method, PriorityMethod::LaunchAttr);

  p = from_policy("shape:3");
  EXPECT_EQ(p.shaping.target.kind, TargetKind::Fixed);
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 3);
  EXPECT_FALSE(p.priority.active());

  p = from_policy("Shape+Priority:1");
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 1);
  EXPECT_TRUE(p.priority.active());
  EXPECT_EQ(p.policy, "shape+priority:1");

  EXPECT_EQ(from_policy("shape").shaping.target.kind, TargetKind::Model);
  EXPECT_EQ(from_policy("shape:model").shaping.target.kind, TargetKind::Model);
  EXPECT_EQ(from_policy("shape+priority").shaping.target.kind, TargetKind::Model);
  EXPECT_EQ(from_policy("priority+shape:2").shaping.target.blocks_per_sm, 2);
  // The default: priority alone, no shaping and no SM target (never slower where it cannot help).
  EXPECT_FALSE(from_policy(kDefaultPolicy).shaping.active());
  EXPECT_FALSE(from_policy(kDefaultPolicy).gemm.active());
  EXPECT_TRUE(from_policy(kDefaultPolicy).priority.active());

  p = from_policy("torch-priority");
  EXPECT_FALSE(p.shaping.active());
  EXPECT_FALSE(p.priority.active());
  ASSERT_EQ(p.environment.size(), 1u);
  EXPECT_EQ(p.environment[0].first, "TORCH_NCCL_HIGH_PRIORITY");
  EXPECT_EQ(p.environment[0].second, "1");

  EXPECT_EQ(from_policy("priority@stream").priority.method, PriorityMethod::Stream);
  EXPECT_EQ(from_policy("shape+priority:2@both").priority.method, PriorityMethod::Both);
  EXPECT_EQ(from_policy("priority@launch-attr").priority.method, PriorityMethod::LaunchAttr);
}

TEST(Policies, Errors) {
  auto err = [](const char* n) {
    try {
      from_policy(n);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string known =
      "(known: off, priority, shape:K, shape:model, shape+priority:K, shape+priority:model, "
      "sm-target:N, channels:N, torch-priority; parts join with '+'; a policy may end in @overlap "
      "or @always, a priority policy in @launch-attr, @stream or @both)";
  EXPECT_EQ(err("fast"), "unknown policy 'fast' " + known);
  EXPECT_EQ(err(""), "unknown policy '' " + known);
  EXPECT_EQ(err("off:2"), "unknown policy 'off:2' " + known);
  EXPECT_EQ(err("shape:"), "unknown policy 'shape:' " + known);
  EXPECT_EQ(err("shape:0"), "policy 'shape:0': K must be >= 1 (blocks per SM)");
  EXPECT_EQ(err("shape:-1"), "policy 'shape:-1': K must be an integer >= 1 or \"model\"");
  EXPECT_EQ(err("shape:x"), "policy 'shape:x': K must be an integer >= 1 or \"model\"");
  EXPECT_EQ(err("shape:2@stream"),
            "policy 'shape:2@stream': @stream only applies to policies that prioritise NCCL");
  EXPECT_EQ(
      err("priority@fast"),
      "policy 'priority@fast': unknown priority method 'fast' (known: launch-attr, stream, both)");
  // The new parts and suffixes.
  EXPECT_EQ(err("priority@overlap"),
            "policy 'priority@overlap': @overlap only applies to policies that shape or set an "
            "sm-target");
  EXPECT_EQ(err("shape:2@overlap@always"),
            "policy 'shape:2@overlap@always': @always: more than one of @overlap/@always");
  EXPECT_EQ(err("shape+priority:2@stream@both"),
            "policy 'shape+priority:2@stream@both': @both: more than one priority method");
  EXPECT_EQ(err("sm-target:0"), "policy 'sm-target:0': sm-target:0 is no budget; use N >= 1 or N <= -1");
  EXPECT_EQ(err("sm-target:x"),
            "policy 'sm-target:x': sm-target:N needs an integer N (N < 0: all SMs but -N)");
  EXPECT_EQ(err("sm-target"),
            "policy 'sm-target': sm-target needs :N (SMs the GEMMs may use; -N leaves N free)");
  EXPECT_EQ(err("channels:0"), "policy 'channels:0': channels:N needs N in 1..64");
  EXPECT_EQ(err("channels:65"), "policy 'channels:65': channels:N needs N in 1..64");
  EXPECT_EQ(err("shape+shape"), "policy 'shape+shape': 'shape' given twice");
  EXPECT_EQ(err("off+priority"), "unknown policy 'off+priority' " + known);
  EXPECT_EQ(err("priority:2"), "unknown policy 'priority:2' " + known);
  EXPECT_EQ(err("shape+"), "unknown policy 'shape+' " + known);
}

TEST(Policies, CommunicationAwareAndProgramControls) {
  Plan p = from_policy("shape+priority:model@overlap");
  EXPECT_EQ(p.shaping.when, When::Overlap);
  EXPECT_EQ(p.shaping.target.kind, TargetKind::Model);
  EXPECT_TRUE(p.priority.active());
  EXPECT_EQ(p.priority.method, PriorityMethod::LaunchAttr);
  EXPECT_FALSE(p.gemm.active());

  // @overlap acts only inside the communication window; static forms stay static.
  EXPECT_EQ(from_policy("shape:model@overlap").shaping.when, When::Overlap);
  EXPECT_EQ(from_policy("shape+priority:model").shaping.when, When::Always);
  EXPECT_EQ(from_policy("shape:2@always").shaping.when, When::Always);

  p = from_policy("shape+priority:2@overlap@stream");
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 2);
  EXPECT_EQ(p.shaping.when, When::Overlap);
  EXPECT_EQ(p.priority.method, PriorityMethod::Stream);
  EXPECT_EQ(from_policy("shape+priority:2@stream@overlap").shaping.when, When::Overlap);

  p = from_policy("sm-target:100");
  EXPECT_EQ(p.gemm.sm_target, 100);
  EXPECT_EQ(p.gemm.when, When::Always);
  EXPECT_FALSE(p.shaping.active());
  EXPECT_FALSE(p.priority.active());
  p = from_policy("sm-target:-32+priority@overlap");
  EXPECT_EQ(p.gemm.sm_target, -32);
  EXPECT_EQ(p.gemm.when, When::Overlap);
  EXPECT_TRUE(p.priority.active());

  p = from_policy("channels:16+shape:1");
  ASSERT_EQ(p.nccl.channels.size(), 1u);
  EXPECT_EQ(p.nccl.channels[0].max_channels, 16);
  EXPECT_EQ(p.nccl.channels[0].collective, "*");
  EXPECT_TRUE(p.nccl.uses_tuner());
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 1);
}

TEST(Plans, GemmSmTarget) {
  Gemm g;
  EXPECT_EQ(g.target_for(132), 0);  // none
  g.sm_target = 100;
  EXPECT_EQ(g.target_for(132), 100);
  EXPECT_EQ(g.target_for(80), 0);  // more SMs than the device has: not applied
  g.sm_target = -32;
  EXPECT_EQ(g.target_for(132), 100);
  EXPECT_EQ(g.target_for(32), 0);  // nothing left
  EXPECT_EQ(g.target_for(33), 1);
  EXPECT_EQ(g.target_for(0), 0);

  const Plan p = parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
      "gemm": {"sm_target": -24, "when": "overlap"}})");
  EXPECT_EQ(p.gemm.sm_target, -24);
  EXPECT_EQ(p.gemm.when, When::Overlap);
  auto err = [](const std::string& body) { return error_of(doc(body)); };
  EXPECT_EQ(err(R"("gemm": {"sm_target": 0})"),
            "gemm.sm_target: must not be 0 (omit the section for no SM budget)");
  EXPECT_EQ(err(R"("gemm": {"sm_target": 5000})"),
            "gemm.sm_target: is larger than any GPU's SM count: 5000");
  EXPECT_EQ(err(R"("gemm": {"sm_target": 1.5})"), "gemm.sm_target: must be an integer, got 1.5");
  EXPECT_EQ(err(R"("gemm": {"when": "overlap"})"),
            "gemm: missing \"sm_target\" (SMs the GEMMs may use; < 0 leaves that many free)");
  EXPECT_EQ(err(R"("gemm": {"sm_target": 8, "when": "sometimes"})"),
            "gemm.when: unknown \"when\" 'sometimes' (known: always, overlap)");
  EXPECT_EQ(err(R"("gemm": {"sm_target": 8, "smz": 1})"),
            "gemm.smz: unknown field (known: sm_target, when, comment)");
  EXPECT_EQ(err(R"("shaping": {"default": 2, "when": "later"})"),
            "shaping.when: unknown \"when\" 'later' (known: always, overlap)");
}

TEST(Plans, NcclChannelsAndCtas) {
  const Plan p = parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
      "nccl": {"channels": [
                 {"collective": "allreduce", "max_bytes": "64M", "max_channels": 8},
                 {"collective": "AllReduce", "min_bytes": 67108865, "max_channels": 16},
                 {"max_bytes": 1024, "max_channels": 2}],
               "min_ctas": 4, "max_ctas": 32, "cta_policy": "efficiency"}})");
  ASSERT_EQ(p.nccl.channels.size(), 3u);
  EXPECT_EQ(p.nccl.channels[1].collective, "allreduce");
  // First match wins; byte bounds are inclusive; no match leaves NCCL's choice (0).
  EXPECT_EQ(channel_cap(p.nccl, "allreduce", 0), 8);
  EXPECT_EQ(channel_cap(p.nccl, "allreduce", int64_t{64} << 20), 8);
  EXPECT_EQ(channel_cap(p.nccl, "allreduce", (int64_t{64} << 20) + 1), 16);
  EXPECT_EQ(channel_cap(p.nccl, "allgather", 1024), 2);
  EXPECT_EQ(channel_cap(p.nccl, "allgather", 1025), 0);
  const auto env = p.nccl.environment();
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"NCCL_MIN_CTAS", "4"}));
  EXPECT_EQ(env[1], (std::pair<std::string, std::string>{"NCCL_MAX_CTAS", "32"}));
  EXPECT_EQ(env[2].first, "NCCL_CTA_POLICY");
  // Written and read back equal.
  const Plan b = parse(to_json(p));
  EXPECT_EQ(to_json(b), to_json(p));
  EXPECT_EQ(channel_cap(b.nccl, "allreduce", (int64_t{64} << 20) + 1), 16);

  auto err = [](const std::string& body) { return error_of(doc(body)); };
  EXPECT_EQ(err(R"("nccl": {"channels": [{"collective": "alltoall", "max_channels": 4}]})"),
            "nccl.channels[0].collective: unknown collective 'alltoall' (known: allreduce, "
            "allgather, reducescatter, broadcast, reduce, *)");
  EXPECT_EQ(err(R"("nccl": {"channels": [{"max_channels": 0}]})"),
            "nccl.channels[0].max_channels: must be in 1..64 (NCCL's channel limit), got 0");
  EXPECT_EQ(err(R"("nccl": {"channels": [{"collective": "allreduce"}]})"),
            "nccl.channels[0]: missing \"max_channels\"");
  EXPECT_EQ(err(R"("nccl": {"channels": [{"min_bytes": 10, "max_bytes": 5, "max_channels": 1}]})"),
            "nccl.channels[0]: min_bytes is larger than max_bytes");
  EXPECT_EQ(err(R"("nccl": {"min_ctas": 32, "max_ctas": 8})"),
            "nccl: min_ctas (32) is larger than max_ctas (8)");
  EXPECT_EQ(err(R"("nccl": {"cta_policy": "fast"})"),
            "nccl.cta_policy: must be \"default\", \"efficiency\" or \"zero\", got \"fast\"");
  EXPECT_EQ(err(R"("nccl": {"max_ctas": 16}, "environment": {"NCCL_MAX_CTAS": "32"})"),
            "environment.NCCL_MAX_CTAS: conflicts with the nccl section (NCCL_MAX_CTAS=16)");
}

TEST(Plans, JsonRoundTrip) {
  for (const char* name :
       {"off", "priority", "shape:2", "shape+priority:model@stream", "torch-priority",
        "shape+priority:model@overlap", "sm-target:-20@overlap", "channels:8"}) {
    const Plan a = from_policy(name);
    const Plan b = parse(to_json(a));
    EXPECT_EQ(b.policy, a.policy) << name;
    EXPECT_EQ(b.shaping.target.kind, a.shaping.target.kind) << name;
    EXPECT_EQ(b.shaping.target.blocks_per_sm, a.shaping.target.blocks_per_sm) << name;
    EXPECT_EQ(b.priority.nccl, a.priority.nccl) << name;
    EXPECT_EQ(b.priority.method, a.priority.method) << name;
    EXPECT_EQ(b.environment, a.environment) << name;
    EXPECT_EQ(b.shaping.when, a.shaping.when) << name;
    EXPECT_EQ(b.gemm.sm_target, a.gemm.sm_target) << name;
    EXPECT_EQ(b.gemm.when, a.gemm.when) << name;
    EXPECT_EQ(b.nccl.channels.size(), a.nccl.channels.size()) << name;
    EXPECT_EQ(to_json(b), to_json(a)) << name;
  }
  Plan full = parse(doc(R"("shaping": {"default": 2, "rules": [{"kernel": "a*", "pad": 512},
      {"kernel": "b", "skip": true}, {"kernel": "c", "blocks_per_sm": "model"}], "denylist": ["d"]})"));
  EXPECT_EQ(to_json(parse(to_json(full))), to_json(full));
}

TEST(Patterns, Glob) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(
      glob_match("*nccl*", "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL17ncclDevKernelArgs4K"));
  EXPECT_TRUE(glob_match("nccl*", "ncclDevKernel_x"));
  EXPECT_FALSE(glob_match("nccl*", "_Zncclx"));
  EXPECT_TRUE(glob_match("*gemm*", "sm90_xmma_gemm_bf16bf16_bf16f32"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
  EXPECT_TRUE(glob_match("*a*a*a*", "aaa"));
  EXPECT_FALSE(glob_match("*a*a*a*a", "aaa"));
  EXPECT_FALSE(glob_match("abc", "abcd"));
  EXPECT_TRUE(glob_match("abc", "abc"));
  EXPECT_FALSE(glob_match("", "x"));
  EXPECT_TRUE(glob_match("", ""));
}

TEST(Patterns, RulesFirstMatchAndDemangled) {
  const Plan p = parse(doc(R"("shaping": {"default": 2,
      "rules": [{"kernel": "*softmax*", "skip": true}, {"kernel": "*", "blocks_per_sm": 1},
                {"kernel": "*never*", "pad": 4}], "denylist": ["void add<*"]})"));
  const Rule* r = match_rule(p.shaping, "_Z7softmaxPf");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->action, RuleAction::Skip);
  r = match_rule(p.shaping, "gemm");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->action, RuleAction::Target);
  // A pattern matches either spelling of the name.
  EXPECT_TRUE(matches_any(p.shaping.denylist, "_Z3addIfEvPT_", "void add<float>(float*)"));
  EXPECT_FALSE(matches_any(p.shaping.denylist, "_Z3addIfEvPT_"));
  EXPECT_EQ(match_rule(parse(doc("")).shaping, "x"), nullptr);
}

TEST(Plans, EnvironmentNames) {
  EXPECT_TRUE(valid_environment_name("NCCL_MIN_CTAS"));
  EXPECT_TRUE(valid_environment_name("_X1"));
  EXPECT_FALSE(valid_environment_name("1X"));
  EXPECT_FALSE(valid_environment_name(""));
  EXPECT_FALSE(valid_environment_name("A=B"));
  EXPECT_FALSE(valid_environment_name("LD_PRELOAD"));
  EXPECT_FALSE(valid_environment_name("CCO_STATS"));
  EXPECT_TRUE(valid_environment_name("CCOX"));
}

}  // namespace

TEST(PlanMadeFor, ParsedCheckedAndRoundTripped) {
  const auto p = cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "made_for": {"device": "NVIDIA H200", "sms": 132, "nranks": 2,
                 "versions": {"nccl": "2.28.9", "cuda_driver": "13.0"}}})");
  ASSERT_TRUE(p.made_for.set);
  EXPECT_EQ(p.made_for.device, "NVIDIA H200");
  EXPECT_EQ(p.made_for.sms, 132);
  EXPECT_EQ(p.made_for.nranks, 2);
  EXPECT_EQ(cco::plan::parse(cco::plan::to_json(p)).made_for.versions, p.made_for.versions);
  using V = std::vector<std::pair<std::string, std::string>>;
  EXPECT_TRUE(cco::plan::made_for_mismatch(p.made_for, "NVIDIA H200", 132,
                                           V{{"nccl", "2.28.9"}, {"cuda_driver", "13.0"}})
                  .empty());
  const auto diff = cco::plan::made_for_mismatch(p.made_for, "NVIDIA H100 80GB HBM3", 132,
                                                 V{{"nccl", "2.29.1"}, {"cuda_driver", "13.0"}});
  ASSERT_EQ(diff.size(), 2u);
  EXPECT_EQ(diff[0], "device: NVIDIA H100 80GB HBM3 (plan: NVIDIA H200)");
  EXPECT_EQ(diff[1], "nccl: 2.29.1 (plan: 2.28.9)");
  EXPECT_TRUE(cco::plan::made_for_mismatch({}, "anything", 1, {}).empty());
  EXPECT_THROW(cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "made_for": {"device": "x", "gpu": 1}})"), cco::plan::Error);
  EXPECT_THROW(cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "made_for": {"sms": -3}})"), cco::plan::Error);
}

// A plan's framework controls (docs/FRAMEWORK.md) read as --framework reads them, written back
// the same, refused with the reason, and never rotated between steps.
TEST(PlanFramework, ReadWrittenRefusedAndNotRotated) {
  const auto p = cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "framework": "ddp.bucket_view,ddp.bucket_mb=100"})");
  ASSERT_EQ(p.framework.size(), 2u);
  EXPECT_EQ(cco::model::framework_text(p.framework), "ddp.bucket_view=on,ddp.bucket_mb=100");
  EXPECT_EQ(cco::plan::parse(cco::plan::to_json(p)).framework, p.framework);
  EXPECT_NE(cco::plan::rotation_refusal(p).find("framework controls"), std::string::npos);
  EXPECT_TRUE(cco::plan::parse(cco::plan::to_json(cco::plan::from_policy("priority"))).framework.empty());
  for (const char* bad : {R"("ddp.nope")", R"(true)", R"("ddp.bucket_mb=0")", R"("")"}) {
    try {
      cco::plan::parse(std::string(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0", "framework": )") +
                       bad + "}");
      ADD_FAILURE() << bad << " was read";
    } catch (const cco::plan::Error& e) {
      EXPECT_NE(std::string(e.what()).find("framework"), std::string::npos) << e.what();
    }
  }
}

// The libraries are the program's (the preload library compares them once loaded): a plan made
// with NCCL 2.28.9 under a program that loads 2.27.3 gets one line naming both; the same
// version, an unknown one, or a plan that names none, nothing.
TEST(PlanMadeFor, LibraryTheProgramLoads) {
  auto p = cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "made_for": {"device": "NVIDIA H200", "versions": {"nccl": "2.28.9", "cublaslt": "13.1.0"}}})");
  p.policy = "tuned";
  EXPECT_EQ(cco::plan::made_for_library(p, "nccl", "NCCL", "2.27.3"),
            "plan 'tuned' was made with NCCL 2.28.9, this program loads NCCL 2.27.3: its tuned "
            "settings may not carry over (re-tune with `cco tune -- CMD`)");
  const std::string lt = cco::plan::made_for_library(p, "cublaslt", "cuBLASLt", "13.0.2");
  EXPECT_NE(lt.find("made with cuBLASLt 13.1.0, this program loads cuBLASLt 13.0.2"),
            std::string::npos) << lt;
  EXPECT_TRUE(cco::plan::made_for_library(p, "nccl", "NCCL", "2.28.9").empty());
  EXPECT_TRUE(cco::plan::made_for_library(p, "nccl", "NCCL", "").empty());
  EXPECT_TRUE(cco::plan::made_for_library(p, "cuda_runtime", "CUDA", "12.8").empty());
  EXPECT_TRUE(cco::plan::made_for_library(cco::plan::from_policy("off"), "nccl", "NCCL", "2.27.3").empty());
  // The codes NCCL and cuBLASLt report.
  EXPECT_EQ(cco::model::version_from_code(22809), "2.28.9");
  EXPECT_EQ(cco::model::version_from_code(130100), "13.1.0");
  EXPECT_EQ(cco::model::version_from_code(0), "");
}

// Found by fuzz_plan (tests/fuzz/regressions/plan/number_overflow_1e999.json): a number too large
// for a double escaped as the JSON library's own exception instead of a plan::Error.
TEST(PlanRegression, NumberOutOfRangeIsAPlanError) {
  EXPECT_THROW(cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "shaping": {"default": "model", "model_fraction": 1e999}})"),
               cco::plan::Error);
}

// What can switch between steps (cco run --compare, cco tune -- CMD): shaping, priority by launch
// attribute, the SM budget and channel caps; not what NCCL or the program read once.
TEST(PlanRotation, WhatCanSwitchBetweenSteps) {
  for (const char* ok : {"off", "priority", "shape:1@overlap", "shape+priority:model",
                         "sm-target:100", "sm-target:-16@overlap", "channels:4",
                         "shape:1+channels:8", "priority+sm-target:64"})
    EXPECT_EQ(cco::plan::rotation_refusal(cco::plan::from_policy(ok)), "") << ok;
  EXPECT_NE(cco::plan::rotation_refusal(cco::plan::from_policy("priority@stream"))
                .find("companion streams"),
            std::string::npos);
  EXPECT_NE(cco::plan::rotation_refusal(cco::plan::from_policy("torch-priority"))
                .find("environment"),
            std::string::npos);
  const auto ctas = cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"max_ctas": 16, "channels": [{"collective": "*", "max_channels": 4}]}})");
  EXPECT_NE(cco::plan::rotation_refusal(ctas).find("CTA settings"), std::string::npos);
  const auto channels = cco::plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "gemm": {"sm_target": -8}, "nccl": {"channels": [{"collective": "allreduce", "max_channels": 4}]}})");
  EXPECT_EQ(cco::plan::rotation_refusal(channels), "");
}

namespace {

using namespace cco::plan;

std::string plan_doc() { return R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0"})"; }

// Every control with a plan key, written from the control table (its key, its value as the table
// spells it) into a plan and parsed, reaches what applies it in a program: the environment cco run
// sets, the tuner plugin's channel cap, the hook's priority and shaping decision, the GEMM target.
TEST(Plan, EveryControlsPlanKeyReachesWhatAppliesIt) {
  using cco::model::Control;
  using cco::model::Spelling;
  cco::model::Controls v;
  v.priority = true;
  v.blocks_per_sm = 3;
  v.pad = 16384;
  v.when = cco::model::When::Overlap;
  v.gemm_sms = 108;
  v.nccl_ctas = 32;
  v.cta_policy = cco::model::CtaPolicy::Efficiency;
  v.channels = 8;
  for (const auto& row : cco::model::kControls) {
    const std::size_t keys = cco::model::spelling_keys(row.id, Spelling::PlanKey);
    if (keys == 0) continue;
    const std::string text = cco::model::control_text(v, row.id, Spelling::PlanKey);
    ASSERT_NE(text, "") << row.name;
    const bool number = text.find_first_not_of("0123456789") == std::string::npos;
    const nlohmann::json value = number ? nlohmann::json(std::stoi(text)) : nlohmann::json(text);
    nlohmann::json j = nlohmann::json::parse(plan_doc());
    for (std::size_t k = 0; k < keys; ++k) {
      const std::string key = cco::model::spelling_name(row.id, Spelling::PlanKey, k);
      const auto dot = key.find('.'), list = key.find("[]");
      const std::string section = key.substr(0, dot), field = key.substr(key.rfind('.') + 1);
      if (list != std::string::npos)  // a list of rules: one rule for every kernel or collective
        j[section][key.substr(dot + 1, list - dot - 1)] = nlohmann::json::array(
            {{{field, value}, {section == "shaping" ? "kernel" : "collective", "*"}}});
      else
        j[section][field] = value;
    }
    if (row.id == Control::When) {
      j["shaping"]["default"] = 2;
      j["gemm"]["sm_target"] = 100;
    }
    const Plan p = parse(j.dump());
    const auto env = p.nccl.environment();
    switch (row.id) {
      case Control::Priority: EXPECT_TRUE(p.priority.uses_launch_attr()); break;
      case Control::Shaping: EXPECT_EQ(to_string(p.shaping.target), "3"); break;
      case Control::Pad:
        ASSERT_NE(match_rule(p.shaping, "any_kernel"), nullptr);
        EXPECT_EQ(match_rule(p.shaping, "any_kernel")->pad, 16384);
        break;
      case Control::When:
        EXPECT_EQ(p.shaping.when, When::Overlap);
        EXPECT_EQ(p.gemm.when, When::Overlap);
        break;
      case Control::GemmSms: EXPECT_EQ(p.gemm.target_for(132), 108); break;
      case Control::Channels: EXPECT_EQ(channel_cap(p.nccl, "allreduce", 1 << 20), 8); break;
      case Control::NcclCtas:
      case Control::CtaPolicy:
        ASSERT_EQ(env.size(), cco::model::spelling_keys(row.id, Spelling::Env)) << row.name;
        for (std::size_t k = 0; k < env.size(); ++k) {
          EXPECT_EQ(env[k].first, cco::model::spelling_name(row.id, Spelling::Env, k));
          EXPECT_EQ(env[k].second, cco::model::control_text(v, row.id, Spelling::Env));
        }
        break;
      default: ADD_FAILURE() << row.name << " has a plan key but no check of what applies it";
    }
    EXPECT_EQ(parse(to_json(p)).nccl.cta_policy, p.nccl.cta_policy) << "the writer spells it back";
  }
}

// One enum for when a control acts: the plan's is the control table's, and "when" reads through
// the table's codec in any case, with the plan's own message for anything else.
TEST(Plan, WhenIsTheControlTablesEnum) {
  static_assert(std::is_same_v<When, cco::model::When>);
  EXPECT_EQ(parse_when("OVERLAP"), cco::model::When::Overlap);
  EXPECT_EQ(parse_when("always"), cco::model::When::Always);
  EXPECT_STREQ(to_string(When::Overlap), "overlap");
  EXPECT_STREQ(to_string(When::Always), "always");
  try {
    parse_when("@overlap");
    FAIL() << "a policy suffix is no plan's \"when\"";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown \"when\" '@overlap' (known: always, overlap)");
  }
}

// Every control with a policy part, written by the control table's codec, names the policy that
// applies it; the parts are the ones users type today.
TEST(Plan, EveryControlsPolicyPartIsAPolicy) {
  using cco::model::Control;
  using cco::model::Spelling;
  auto part = [](Control c, auto set) {
    cco::model::Controls v;
    set(v);
    return cco::model::control_text(v, c, Spelling::PolicyPart);
  };
  const std::string prio = part(Control::Priority, [](auto& v) { v.priority = true; });
  const std::string k3 = part(Control::Shaping, [](auto& v) { v.blocks_per_sm = 3; });
  const std::string model = part(Control::Shaping, [](auto& v) { v.shape_model = true; });
  const std::string sms = part(Control::GemmSms, [](auto& v) { v.gemm_sms = 108; });
  const std::string ch = part(Control::Channels, [](auto& v) { v.channels = 8; });
  const std::string overlap = part(Control::When, [](auto& v) { v.when = cco::model::When::Overlap; });
  const std::string always = part(Control::When, [](auto& v) { v.when = cco::model::When::Always; });
  EXPECT_EQ(prio, "priority");
  EXPECT_EQ(k3, "shape:3");
  EXPECT_EQ(model, "shape:model");
  EXPECT_EQ(sms, "sm-target:108");
  EXPECT_EQ(ch, "channels:8");
  EXPECT_EQ(overlap, "@overlap");
  EXPECT_EQ(always, "@always");
  EXPECT_EQ(from_policy(prio).priority.nccl, NcclPriority::High);
  EXPECT_EQ(to_string(from_policy(k3).shaping.target), "3");
  EXPECT_EQ(from_policy(model).shaping.target.kind, TargetKind::Model);
  EXPECT_EQ(from_policy(sms).gemm.target_for(132), 108);
  EXPECT_EQ(channel_cap(from_policy(ch).nccl, "allreduce", 1 << 20), 8);
  const Plan joined = from_policy(k3 + "+" + prio + "+" + sms + overlap);
  EXPECT_EQ(joined.shaping.when, When::Overlap);
  EXPECT_EQ(joined.gemm.when, When::Overlap);
  EXPECT_EQ(from_policy(sms + always).gemm.when, When::Always);
  EXPECT_EQ(policy_names(), (std::vector<std::string>{"off", "priority", "shape:K", "shape:model",
                                                      "shape+priority:K", "shape+priority:model",
                                                      "sm-target:N", "channels:N", "torch-priority"}));
}

// NCCL's CTA counts: the table's two plan keys and two variables, minimum apart from maximum as a
// plan may set them, in the spellings plans and cco run use today.
TEST(Plan, CtaCountsKeepTheirTwoKeysThroughTheTable) {
  using cco::model::Control;
  using cco::model::Spelling;
  EXPECT_EQ(cco::model::spelling_name(Control::NcclCtas, Spelling::PlanKey, 0), "nccl.min_ctas");
  EXPECT_EQ(cco::model::spelling_name(Control::NcclCtas, Spelling::PlanKey, 1), "nccl.max_ctas");
  const Plan p = parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"min_ctas": 4, "max_ctas": 32}})");
  EXPECT_EQ(p.nccl.min_ctas, 4);
  EXPECT_EQ(p.nccl.max_ctas, 32);
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(p.nccl.environment(), (Env{{"NCCL_MIN_CTAS", "4"}, {"NCCL_MAX_CTAS", "32"}}));
  const auto written = nlohmann::json::parse(to_json(p));
  EXPECT_EQ(written["nccl"], (nlohmann::json{{"min_ctas", 4}, {"max_ctas", 32}}));
  const Plan back = parse(to_json(p));
  EXPECT_EQ(back.nccl.min_ctas, 4);
  EXPECT_EQ(back.nccl.max_ctas, 32);
  const Plan max_only = parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"max_ctas": 16}})");
  EXPECT_EQ(max_only.nccl.environment(), (Env{{"NCCL_MAX_CTAS", "16"}}));
  EXPECT_EQ(error_of(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"min_ctas": 0}})").rfind("nccl.min_ctas: ", 0), 0u);
}

// The other plan keys, named by the control table (model::plan_field), are the ones plans use
// today: read in these spellings, written back in them, and named in the same messages.
TEST(Plan, TheOtherPlanKeysAreTheTablesInTodaysSpellings) {
  using cco::model::Control;
  using cco::model::Spelling;
  EXPECT_EQ(cco::model::spelling_name(Control::Priority, Spelling::PlanKey), "priority.nccl");
  EXPECT_EQ(cco::model::spelling_name(Control::Shaping, Spelling::PlanKey), "shaping.default");
  EXPECT_EQ(cco::model::spelling_name(Control::Pad, Spelling::PlanKey), "shaping.rules[].pad");
  EXPECT_EQ(cco::model::spelling_name(Control::GemmSms, Spelling::PlanKey), "gemm.sm_target");
  EXPECT_EQ(cco::model::spelling_name(Control::Channels, Spelling::PlanKey), "nccl.channels[].max_channels");
  const Plan p = parse(doc(R"("priority": {"nccl": "HIGH"},
    "shaping": {"default": 3, "rules": [{"kernel": "k*", "pad": "16K"}]},
    "gemm": {"sm_target": -8}, "nccl": {"channels": [{"collective": "allreduce", "max_channels": 4}]})"));
  EXPECT_EQ(p.priority.nccl, NcclPriority::High);
  EXPECT_EQ(to_string(p.shaping.target), "3");
  ASSERT_EQ(p.shaping.rules.size(), 1u);
  EXPECT_EQ(p.shaping.rules[0].pad, 16384);
  EXPECT_EQ(p.gemm.sm_target, -8);
  EXPECT_EQ(channel_cap(p.nccl, "allreduce", 1 << 20), 4);
  const auto w = nlohmann::json::parse(to_json(p));
  EXPECT_EQ(w["priority"]["nccl"], "high");
  EXPECT_EQ(w["shaping"]["default"], 3);
  EXPECT_EQ(w["shaping"]["rules"][0]["pad"], 16384);
  EXPECT_EQ(w["gemm"]["sm_target"], -8);
  EXPECT_EQ(w["nccl"]["channels"][0]["max_channels"], 4);
  EXPECT_EQ(nlohmann::json::parse(to_json(parse(doc(""))))["priority"]["nccl"], "default");
  EXPECT_EQ(error_of(doc(R"("priority": {"nccl": "Priority"})")),
            "priority.nccl: must be \"high\" or \"default\", got \"priority\"");
  EXPECT_EQ(error_of(doc(R"("shaping": {"default": 0})")),
            "shaping.default: must be >= 1 (blocks per SM), got 0");
  EXPECT_EQ(error_of(doc(R"("shaping": {"rules": [{"kernel": "k", "pad": "lots"}]})")).rfind(
                "shaping.rules[0].pad: ", 0),
            0u);
  EXPECT_EQ(error_of(doc(R"("shaping": {"rules": [{"kernel": "k"}]})")),
            "shaping.rules[0]: needs exactly one of \"blocks_per_sm\", \"pad\" or \"skip\": true (got 0)");
  EXPECT_EQ(error_of(doc(R"("gemm": {"when": "always"})")),
            "gemm: missing \"sm_target\" (SMs the GEMMs may use; < 0 leaves that many free)");
  EXPECT_EQ(error_of(doc(R"("gemm": {"sm_target": "all"})")), "gemm.sm_target: must be an integer, got \"all\"");
  EXPECT_EQ(error_of(doc(R"("nccl": {"channels": [{"collective": "allreduce"}]})")),
            "nccl.channels[0]: missing \"max_channels\"");
  EXPECT_EQ(error_of(doc(R"("nccl": {"channels": [{"max_channels": 65}]})")),
            "nccl.channels[0].max_channels: must be in 1..64 (NCCL's channel limit), got 65");
}

}  // namespace
