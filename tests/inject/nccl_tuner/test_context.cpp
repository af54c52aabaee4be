// The tuner's per-communicator context (src/inject/nccl_tuner/tuner.hpp) built from the environment: the plan
// it reads (CCO_POLICY, CCO_PLAN), rank consistency (two contexts, as two ranks would make, answer
// alike), bad plans and values (one warning, NCCL's choice kept), CCO_DISABLE, statistics.
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "nccl_tuner/nccl_tuner_abi.h"
#include "nccl_tuner/tuner.hpp"

namespace {

using namespace cco;
using tuner::Context;

std::vector<std::string> g_lines;
void keep(const std::string& line) {
  g_lines.push_back(line);
}

class TunerContext : public ::testing::Test {
 protected:
  void SetUp() override {
    g_lines.clear();
    tuner::reset_warnings();
    tuner::set_line_sink(keep);
  }
  void TearDown() override { tuner::set_line_sink(nullptr); }

  static std::unique_ptr<Context> make(std::map<std::string, std::string> vars,
                                       ccoNcclDebugLogger_t logger = nullptr) {
    auto c = Context::create(
        [vars](const char* n) -> const char* {
          auto it = vars.find(n);
          return it == vars.end() ? nullptr : it->second.c_str();
        },
        logger, 0xabcdef, 2, 1);
    EXPECT_NE(c, nullptr);
    return c;
  }
  static std::string write_file(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream(path) << text;
    return path;
  }
};

int channels(Context& c, int coll, std::size_t bytes, int have = 0) {
  int n = have;
  c.get_coll_info(coll, bytes, &n);
  return n;
}

TEST_F(TunerContext, PolicyChannelsCapsEveryCollective) {
  auto c = make({{"CCO_POLICY", "channels:6"}});
  EXPECT_TRUE(c->active());
  EXPECT_EQ(c->policy(), "channels:6");
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 6);
  EXPECT_EQ(channels(*c, ccoNcclFuncBroadcast, 1), 6);
  EXPECT_EQ(channels(*c, ccoNcclFuncSendRecv, 1 << 20), 0);      // not a collective a rule names
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20, 4), 4);  // never raised
  c->get_coll_info(ccoNcclFuncAllReduce, 1, nullptr);            // ignored, counted
  EXPECT_TRUE(g_lines.empty());
}

TEST_F(TunerContext, DefaultPolicyAndPoliciesWithoutRulesCapNothing) {
  for (const std::map<std::string, std::string>& vars : {std::map<std::string, std::string>{},
                                                         {{"CCO_POLICY", "priority"}},
                                                         {{"CCO_POLICY", "off"}}}) {
    auto c = make(vars);
    EXPECT_FALSE(c->active());
    for (int t = 0; t < ccoNcclNumFuncs; ++t) EXPECT_EQ(channels(*c, t, 1 << 20), 0);
  }
  EXPECT_TRUE(g_lines.empty());
}

TEST_F(TunerContext, PlanFile) {
  const auto path =
      write_file("tuner_plan.json", R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "policy": "mine", "nccl": {"channels": [{"collective": "allgather", "max_bytes": "8M", "max_channels": 2}],
                                "max_ctas": 16}})");
  auto c = make({{"CCO_PLAN", path}});
  EXPECT_EQ(c->policy(), "mine");
  EXPECT_EQ(channels(*c, ccoNcclFuncAllGather, 8 << 20), 2);
  EXPECT_EQ(channels(*c, ccoNcclFuncAllGather, (8 << 20) + 1), 0);
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1024), 0);
  EXPECT_TRUE(g_lines.empty());
}

// Two ranks of a communicator each make their own context from the same environment; for every
// collective and size they must give NCCL the same answer, or ranks would run different kernels.
TEST_F(TunerContext, RankConsistency) {
  const auto path =
      write_file("tuner_ranks.json", R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"channels": [{"collective": "allreduce", "max_bytes": "64M", "max_channels": 16},
                          {"collective": "reducescatter", "min_bytes": "1M", "max_bytes": "1G", "max_channels": 3},
                          {"collective": "*", "min_bytes": "256M", "max_channels": 24}]}})");
  for (const std::map<std::string, std::string>& vars :
       {std::map<std::string, std::string>{{"CCO_PLAN", path}}, {{"CCO_POLICY", "channels:5"}}}) {
    auto rank0 = make(vars);
    auto rank1 = Context::create(
        [vars](const char* n) -> const char* {
          auto it = vars.find(n);
          return it == vars.end() ? nullptr : it->second.c_str();
        },
        nullptr, 0x1234, 8, 2);  // other communicator size and id: must not matter
    ASSERT_NE(rank1, nullptr);
    int capped = 0, total = 0;
    for (int t = -1; t <= ccoNcclNumFuncs; ++t)
      for (int shift = 0; shift <= 40; ++shift)
        for (std::size_t delta : {std::size_t{0}, std::size_t{1}}) {
          const std::size_t bytes = (std::size_t{1} << shift) - delta;
          const int a = channels(*rank0, t, bytes);
          const int b = channels(*rank1, t, bytes);
          ASSERT_EQ(a, b) << "collective " << t << " bytes " << bytes;
          ++total;
          capped += a != 0;
        }
    EXPECT_GT(capped, 20);  // the sweep did exercise the rules
    EXPECT_LT(capped, total);
  }
}

// ---- a rotation (CCO_COMPARE): the configuration in force caps each collective --------------

int g_index = 0;
int fake_index() {
  return g_index;
}

std::unique_ptr<Context> make_rotation(const std::string& items, cco::tuner::ConfigIndexFn index,
                                       std::map<std::string, std::string> more = {}) {
  more["CCO_COMPARE"] = items;
  return Context::create(
      [more](const char* n) -> const char* {
        auto it = more.find(n);
        return it == more.end() ? nullptr : it->second.c_str();
      },
      nullptr, 0xabcdef, 2, 1, index);
}

TEST_F(TunerContext, RotationCapsByTheConfigurationInForce) {
  auto c = make_rotation("off,channels:4,shape:1+channels:8", fake_index, {{"CCO_STATS", "1"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->configs(), 3u);
  EXPECT_TRUE(c->active());
  g_index = 0;
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 0) << "off: NCCL's own";
  g_index = 1;
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 4);
  EXPECT_EQ(channels(*c, ccoNcclFuncAllGather, 1 << 20), 4);
  g_index = 2;
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 8);
  g_index = 1;
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 4) << "back";
  g_index = -1;  // the library idle (before its first launch): the first configuration
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 0);
  g_index = 7;  // a policy switched to outside the list (cannot happen in a rotation): the first
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 0);
  EXPECT_TRUE(g_lines.empty());
  c->finalize();
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find(" configs=0/3/1 policy=compare(off,channels:4,shape:1+channels:8)"),
            std::string::npos)
      << g_lines[0];
}

// Two ranks switch at the same collective (the library's rotation is decided from the
// collective sequence): for every configuration they must answer alike.
TEST_F(TunerContext, RotationRankConsistency) {
  auto rank0 = make_rotation("channels:2,channels:6", fake_index);
  auto rank1 = make_rotation("channels:2,channels:6", fake_index);
  for (int i : {0, 1, 0, 1})
    for (int t = 0; t < ccoNcclNumFuncs; ++t) {
      g_index = i;
      ASSERT_EQ(channels(*rank0, t, 1 << 20), channels(*rank1, t, 1 << 20)) << i << " " << t;
    }
  g_index = 1;
  EXPECT_EQ(channels(*rank0, ccoNcclFuncReduceScatter, 1 << 20), 6);
}

TEST_F(TunerContext, RotationWithoutTheLibraryCapsNothing) {
  // No cco_config_index in this test process: the caps cannot follow the configurations.
  auto c = make_rotation("off,channels:4", nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->active());
  g_index = 1;
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 0);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("the preload library (cco_config_index) is not loaded"),
            std::string::npos)
      << g_lines[0];
}

TEST_F(TunerContext, RotationWithAnItemThatCannotRotateCapsNothing) {
  // The library runs 'off' throughout then; so must the tuner.
  for (const char* items : {"channels:4,torch-priority", "channels:4,no-such-policy"}) {
    g_lines.clear();
    tuner::reset_warnings();
    auto c = make_rotation(items, fake_index);
    ASSERT_NE(c, nullptr);
    EXPECT_FALSE(c->active()) << items;
    g_index = 0;
    EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 0) << items;
    ASSERT_EQ(g_lines.size(), 1u) << items;
    EXPECT_NE(g_lines[0].find("cannot rotate"), std::string::npos) << g_lines[0];
  }
  // A rotation without channel caps needs no index at all (and says nothing).
  g_lines.clear();
  auto quiet = make_rotation("off,shape:1", nullptr);
  EXPECT_FALSE(quiet->active());
  EXPECT_TRUE(g_lines.empty());
}

TEST_F(TunerContext, BadPlanOneWarningNcclsChoiceKept) {
  const auto path =
      write_file("tuner_bad.json", R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"channels": [{"collective": "alltoall", "max_channels": 4}]}})");
  for (int comm = 0; comm < 3; ++comm) {  // three communicators, one warning
    auto c = make({{"CCO_PLAN", path}});
    EXPECT_FALSE(c->active());
    for (int t = 0; t < ccoNcclNumFuncs; ++t) EXPECT_EQ(channels(*c, t, 1 << 20, 0), 0);
    EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20, 12), 12);
  }
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_EQ(g_lines[0].rfind("cco-tuner: warning: CCO_PLAN: plan " + path +
                                 ": nccl.channels[0].collective: unknown collective 'alltoall'",
                             0),
            0u)
      << g_lines[0];
  EXPECT_NE(g_lines[0].find("; NCCL's channel choice is kept\n"), std::string::npos) << g_lines[0];
}

TEST_F(TunerContext, BadPolicyAndConflictingVariables) {
  auto a = make({{"CCO_POLICY", "channels:99"}});
  EXPECT_FALSE(a->active());
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_EQ(g_lines[0].rfind("cco-tuner: warning: CCO_POLICY: ", 0), 0u) << g_lines[0];
  EXPECT_NE(g_lines[0].find("1..64"), std::string::npos) << g_lines[0];
  g_lines.clear();
  auto b = make({{"CCO_POLICY", "channels:4"}, {"CCO_PLAN", "/x.json"}});
  EXPECT_FALSE(b->active());
  EXPECT_EQ(channels(*b, ccoNcclFuncAllReduce, 1 << 20), 0);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_EQ(g_lines[0],
            "cco-tuner: warning: CCO_PLAN and CCO_POLICY are both set (/x.json, channels:4); "
            "NCCL's channel choice is kept\n");
}

TEST_F(TunerContext, BadStatisticsValueKeepsTheCaps) {
  auto c = make({{"CCO_POLICY", "channels:4"}, {"CCO_STATS", "lots"}});
  EXPECT_TRUE(c->active());
  EXPECT_FALSE(c->stats_enabled());
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 4);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_EQ(g_lines[0],
            "cco-tuner: warning: CCO_STATS='lots' is not 0, 1 or 2; statistics are off\n");
}

TEST_F(TunerContext, Disabled) {
  auto c = make({{"CCO_DISABLE", "1"}, {"CCO_POLICY", "channels:4"}, {"CCO_STATS", "1"}});
  EXPECT_FALSE(c->active());
  EXPECT_FALSE(c->stats_enabled());
  EXPECT_EQ(channels(*c, ccoNcclFuncAllReduce, 1 << 20), 0);
  c->finalize();
  EXPECT_TRUE(g_lines.empty());
}

TEST_F(TunerContext, StatisticsAtFinalize) {
  auto quiet = make({{"CCO_POLICY", "channels:4"}});
  channels(*quiet, ccoNcclFuncAllReduce, 1);
  quiet->finalize();
  EXPECT_TRUE(g_lines.empty());  // no CCO_STATS, no line

  const auto path =
      write_file("tuner_stats.json", R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "policy": "two rules", "nccl": {"channels": [{"collective": "allreduce", "max_bytes": 1000, "max_channels": 2}]}})");
  auto c = make({{"CCO_PLAN", path}, {"CCO_STATS", "1"}});
  EXPECT_TRUE(c->stats_enabled());
  channels(*c, ccoNcclFuncAllReduce, 10);
  channels(*c, ccoNcclFuncAllReduce, 100);
  channels(*c, ccoNcclFuncAllReduce, 1u << 20);
  channels(*c, ccoNcclFuncAllGather, 10);
  channels(*c, ccoNcclFuncSend, 10);
  c->finalize();
  ASSERT_EQ(g_lines.size(), 1u);
  const std::string want_tail =
      " comm=abcdef calls=5 capped=2 allgather=1/0 allreduce=3/2 other=1/0 policy=two rules\n";
  EXPECT_EQ(g_lines[0].rfind("cco-tuner: stats pid=", 0), 0u) << g_lines[0];
  ASSERT_GE(g_lines[0].size(), want_tail.size());
  EXPECT_EQ(g_lines[0].substr(g_lines[0].size() - want_tail.size()), want_tail) << g_lines[0];
}

// Through NCCL's logger (a fake one here): warnings at level WARN, an INFO line at init.
struct Logged {
  int level;
  unsigned long flags;
  std::string text;
};
std::vector<Logged> g_logged;
void fake_logger(ccoNcclDebugLogLevel level, unsigned long flags, const char*, int, const char* fmt,
                 ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_logged.push_back({level, flags, buf});
}

TEST_F(TunerContext, WarningsGoThroughNcclsLogger) {
  g_logged.clear();
  auto c = make({{"CCO_POLICY", "channels:0"}}, fake_logger);
  EXPECT_FALSE(c->active());
  ASSERT_EQ(g_logged.size(), 1u);
  EXPECT_EQ(g_logged[0].level, ccoNcclLogWarn);
  EXPECT_EQ(g_logged[0].text.rfind("cco-tuner: warning: CCO_POLICY: ", 0), 0u) << g_logged[0].text;
  EXPECT_TRUE(g_lines.empty());  // not on stderr as well
  g_logged.clear();
  auto ok = make({{"CCO_POLICY", "channels:7"}}, fake_logger);
  ASSERT_EQ(g_logged.size(), 1u);
  EXPECT_EQ(g_logged[0].level, ccoNcclLogInfo);
  EXPECT_EQ(g_logged[0].flags & CCO_NCCL_SUBSYS_TUNING, CCO_NCCL_SUBSYS_TUNING);
  EXPECT_EQ(g_logged[0].text,
            "cco-tuner: policy channels:7: 1 channel rule(s) for comm abcdef (2 ranks, 1 nodes)");
}

}  // namespace
