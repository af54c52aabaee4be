// The levers of a diagnosed step, largest bound first (trace/levers.hpp): each bound is the
// largest over the ranks' typical steps, the order follows the bounds, levers below the floor are
// left out, and the text and JSON list them in that order.
#include <gtest/gtest.h>

#include "trace/diagnosis.hpp"
#include "trace/levers.hpp"

namespace {

using cco::trace::StepParts;

constexpr int64_t ms = 1000000;

cco::trace::RankSteps rank_with(int rank, const StepParts& p) {
  cco::trace::RankSteps r;
  r.rank = rank;
  r.steps = {p};
  r.steps[0].rank = rank;
  return r;
}

TEST(Levers, LargestBoundFirstOverTheRanks) {
  // Rank 0: DDP's copies 4.7 ms; compute slowed 8 ms, 3 of them by memory bandwidth.
  StepParts a;
  a.time_ns = 170 * ms;
  a.compute_alone_ns = 150 * ms;
  a.compute_copies_ns = 4700000;
  a.compute_slowed_ns = 8 * ms;
  a.compute_slowed_memory_ns = 3 * ms;
  a.compute_slowed_sms_ns = 4 * ms;
  a.compute_slowed_other_ns = 1 * ms;
  // Rank 1: a wait for rank 0 of 6 ms, and a little exposed tail.
  StepParts b;
  b.time_ns = 170 * ms;
  b.exposed_ns = 6500000;
  b.exposed_rank_wait_ns = 6 * ms;
  b.exposed_tail_ns = 500000;
  b.compute_slowed_memory_ns = 10000;  // below the floor alone
  cco::trace::Diagnosis d;
  d.ranks = {rank_with(0, a), rank_with(1, b)};
  const auto levers = cco::trace::ranked_levers(d);
  std::vector<std::string> names;
  for (const auto& l : levers) names.push_back(l.name);
  // sm-budget (rank 0): compute slowed but its memory part (5) + exposed but rank wait (0) = 5.0
  EXPECT_EQ(names, (std::vector<std::string>{"rank_skew", "sm-budget/channels/CE", "copies/bucket-view",
                                             "memory-traffic", "scheduling"}))
      << cco::trace::levers_text(levers);
  ASSERT_EQ(levers.size(), 5u);
  EXPECT_EQ(levers[0].bound_ns, 6 * ms);
  EXPECT_EQ(levers[0].rank, 1);
  EXPECT_EQ(levers[1].bound_ns, 5 * ms);
  EXPECT_EQ(levers[1].rank, 0);
  EXPECT_EQ(levers[2].bound_ns, 4700000);
  EXPECT_EQ(levers[3].bound_ns, 3 * ms);
  EXPECT_EQ(levers[4].bound_ns, 500000);
  EXPECT_EQ(levers[4].rank, 1);
  const std::string text = cco::trace::levers_text(levers);
  EXPECT_EQ(text.find("rank_skew <= 6.00 ms (rank 1: not overlap"), 0u) << text;
  EXPECT_NE(text.find("copies/bucket-view <= 4.70 ms (rank 0: cco run --framework ddp.bucket_view"),
            std::string::npos)
      << text;
  // The JSON holds them in that order.
  const auto j = cco::trace::diagnosis_to_json(d);
  ASSERT_EQ(j["levers"].size(), 5u);
  EXPECT_EQ(j["levers"][0]["lever"], "rank_skew");
  EXPECT_EQ(j["levers"][2]["bound_ns"], 4700000);
  // A higher floor leaves out the small ones; a step with nothing to win names none.
  EXPECT_EQ(cco::trace::ranked_levers(d, 4 * ms).size(), 3u);
  cco::trace::Diagnosis quiet;
  StepParts q;
  q.time_ns = q.compute_alone_ns = 100 * ms;
  quiet.ranks = {rank_with(0, q)};
  EXPECT_TRUE(cco::trace::ranked_levers(quiet).empty());
  EXPECT_EQ(cco::trace::levers_text(cco::trace::ranked_levers(quiet)), "");
}

}  // namespace
