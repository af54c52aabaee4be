// The tuner plugin's pure decision (src/inject/nccl_tuner/decide.hpp): which rule caps which collective, byte
// ranges (inclusive), first match wins, "*", collective types no rule can name, and that a cap
// never raises a channel count NCCL has already chosen.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "plan/plan.hpp"
#include "nccl_tuner/decide.hpp"
#include "nccl_tuner/nccl_tuner_abi.h"

namespace {

using namespace cco;
using tuner::decide;

plan::ChannelRule rule(const char* coll, int64_t lo, int64_t hi, int ch) {
  plan::ChannelRule r;
  r.collective = coll;
  r.min_bytes = lo;
  r.max_bytes = hi;
  r.max_channels = ch;
  return r;
}

constexpr int64_t M = 1 << 20;

TEST(TunerDecide, CollectiveNamesFollowNcclFuncT) {
  EXPECT_EQ(tuner::collective_name(ccoNcclFuncBroadcast), "broadcast");
  EXPECT_EQ(tuner::collective_name(ccoNcclFuncReduce), "reduce");
  EXPECT_EQ(tuner::collective_name(ccoNcclFuncAllGather), "allgather");
  EXPECT_EQ(tuner::collective_name(ccoNcclFuncReduceScatter), "reducescatter");
  EXPECT_EQ(tuner::collective_name(ccoNcclFuncAllReduce), "allreduce");
  for (int t : {5, 6, 7, 8, 9, 10, 11, -1, 1000}) EXPECT_EQ(tuner::collective_name(t), "") << t;
  // Every name the plan accepts is reachable from some ncclFunc_t.
  for (const auto& n : plan::collective_names()) {
    bool found = false;
    for (int t = 0; t < ccoNcclNumFuncs; ++t) found = found || tuner::collective_name(t) == n;
    EXPECT_TRUE(found) << n;
  }
  EXPECT_EQ(tuner::collective_index(ccoNcclFuncAllReduce), 4);
  EXPECT_EQ(tuner::collective_index(ccoNcclFuncSend), tuner::kCollectiveSlots - 1);
  EXPECT_EQ(tuner::collective_index(-3), tuner::kCollectiveSlots - 1);
}

TEST(TunerDecide, NoRulesLeavesNcclsChoice) {
  const plan::Nccl n;
  for (int t = 0; t < ccoNcclNumFuncs; ++t) {
    const auto d = decide(n, t, 64 * M, 0);
    EXPECT_FALSE(d.set);
    EXPECT_EQ(d.cap, 0);
  }
}

TEST(TunerDecide, RuleMatchingAndInclusiveByteRanges) {
  plan::Nccl n;
  n.channels = {rule("allreduce", 1 * M, 64 * M, 8)};
  EXPECT_FALSE(decide(n, ccoNcclFuncAllReduce, 1 * M - 1, 0).set);
  auto d = decide(n, ccoNcclFuncAllReduce, 1 * M, 0);  // min inclusive
  EXPECT_TRUE(d.set);
  EXPECT_EQ(d.channels, 8);
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, 64 * M, 0).channels, 8);  // max inclusive
  EXPECT_FALSE(decide(n, ccoNcclFuncAllReduce, 64 * M + 1, 0).set);
  // Another collective of the same size: no rule.
  EXPECT_FALSE(decide(n, ccoNcclFuncAllGather, 8 * M, 0).set);
  EXPECT_FALSE(decide(n, ccoNcclFuncBroadcast, 8 * M, 0).set);
}

TEST(TunerDecide, FirstMatchWins) {
  plan::Nccl n;
  n.channels = {rule("allreduce", 0, 16 * M, 4), rule("allreduce", 0, INT64_MAX, 16),
                rule("*", 0, INT64_MAX, 2)};
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, 1 * M, 0).channels, 4);
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, 16 * M, 0).channels, 4);
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, 16 * M + 1, 0).channels, 16);
  EXPECT_EQ(decide(n, ccoNcclFuncAllGather, 1 * M, 0).channels, 2);  // falls to "*"
  // The same rules in the other order: "*" first takes everything.
  plan::Nccl r;
  r.channels = {n.channels[2], n.channels[0], n.channels[1]};
  EXPECT_EQ(decide(r, ccoNcclFuncAllReduce, 1 * M, 0).channels, 2);
}

TEST(TunerDecide, StarMatchesEveryNamedCollectiveOnly) {
  plan::Nccl n;
  n.channels = {rule("*", 0, INT64_MAX, 3)};
  for (int t : {ccoNcclFuncBroadcast, ccoNcclFuncReduce, ccoNcclFuncAllGather,
                ccoNcclFuncReduceScatter, ccoNcclFuncAllReduce}) {
    const auto d = decide(n, t, 0, 0);
    EXPECT_TRUE(d.set) << t;
    EXPECT_EQ(d.channels, 3) << t;
  }
  for (int t : {int{ccoNcclFuncSendRecv}, int{ccoNcclFuncSend}, int{ccoNcclFuncRecv},
                int{ccoNcclFuncAlltoAll}, int{ccoNcclFuncScatter}, int{ccoNcclFuncGather}, 99})
    EXPECT_FALSE(decide(n, t, 1 * M, 0).set) << t;
}

TEST(TunerDecide, NeverRaisesNcclsOwnCount) {
  plan::Nccl n;
  n.channels = {rule("*", 0, INT64_MAX, 16)};
  // NCCL 2.28 passes 0: not decided yet, the cap is written.
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, 1 * M, 0).channels, 16);
  // A count already chosen is only lowered.
  auto d = decide(n, ccoNcclFuncAllReduce, 1 * M, 32);
  EXPECT_TRUE(d.set);
  EXPECT_EQ(d.channels, 16);
  for (int have : {1, 2, 8, 15, 16}) {
    d = decide(n, ccoNcclFuncAllReduce, 1 * M, have);
    EXPECT_FALSE(d.set) << have;
    EXPECT_EQ(d.cap, 16) << have;  // the rule matched; nothing to lower
  }
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, 1 * M, -1).channels, 16);  // nonsense: treated as 0
  // Over a sweep, the answer never exceeds what NCCL had.
  for (int have = 1; have <= 64; ++have) {
    int ch = have;
    d = decide(n, ccoNcclFuncAllGather, 4 * M, ch);
    if (d.set) ch = d.channels;
    EXPECT_LE(ch, have);
    EXPECT_EQ(ch, std::min(have, 16));
  }
}

TEST(TunerDecide, HugeSizesSaturate) {
  plan::Nccl n;
  n.channels = {rule("allreduce", 0, 64 * M, 2), rule("allreduce", 0, INT64_MAX, 5)};
  const auto huge = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, huge, 0).channels, 5);
  EXPECT_EQ(decide(n, ccoNcclFuncAllReduce, static_cast<std::uint64_t>(INT64_MAX) + 1, 0).channels,
            5);
}

TEST(TunerDecide, PolicyChannelsN) {
  const plan::Plan p = plan::from_policy("channels:8");
  ASSERT_TRUE(p.nccl.uses_tuner());
  for (int t = 0; t < 5; ++t)
    for (std::uint64_t b : {0ull, 1ull, 4096ull, 1ull << 30, 1ull << 40})
      EXPECT_EQ(decide(p.nccl, t, b, 0).channels, 8) << t << " " << b;
  EXPECT_FALSE(plan::from_policy("shape+priority:model").nccl.uses_tuner());
}

TEST(TunerDecide, PlanFileRules) {
  const plan::Plan p = plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"channels": [
      {"collective": "allreduce", "max_bytes": "64M", "max_channels": 16},
      {"collective": "allgather", "min_bytes": "1M", "max_channels": 4},
      {"collective": "*", "min_bytes": "1G", "max_channels": 32}]}})");
  EXPECT_EQ(decide(p.nccl, ccoNcclFuncAllReduce, 64 * M, 0).channels, 16);
  EXPECT_EQ(decide(p.nccl, ccoNcclFuncAllReduce, 1024 * M, 0).channels, 32);
  EXPECT_FALSE(decide(p.nccl, ccoNcclFuncAllReduce, 512 * M, 0).set);
  EXPECT_FALSE(decide(p.nccl, ccoNcclFuncAllGather, M - 1, 0).set);
  EXPECT_EQ(decide(p.nccl, ccoNcclFuncAllGather, M, 0).channels, 4);
  EXPECT_EQ(decide(p.nccl, ccoNcclFuncReduceScatter, 2048 * M, 0).channels, 32);
}

}  // namespace
