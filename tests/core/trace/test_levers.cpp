// The levers of a diagnosed step, largest bound first (trace/levers.hpp): each bound is the
// largest over the ranks' typical steps, the order follows the bounds, levers below the floor are
// left out, and the text and JSON list them in that order.
#include <gtest/gtest.h>

#include <algorithm>

#include "report/diagnosis_text.hpp"
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
  b.slowest_peer = 0;
  b.time_ns = 170 * ms;
  b.exposed_ns = 6500000;
  b.exposed_rank_wait_ns = 6 * ms;
  b.exposed_tail_ns = 500000;
  b.compute_slowed_memory_ns = 10000;  // below the floor alone
  cco::trace::Diagnosis d;
  d.ranks = {rank_with(0, a), rank_with(1, b)};
  // Rank 0's typical step is its second: the first, with no copies, is not the one read.
  StepParts other = a;
  other.compute_copies_ns = 0;
  d.ranks[0].steps.insert(d.ranks[0].steps.begin(), other);
  d.ranks[0].typical = 1;
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
  EXPECT_EQ(text.find("rank_skew <= 6.00 ms (rank 1 waits for rank 0: not overlap"), 0u) << text;
  EXPECT_NE(text.find("copies/bucket-view <= 4.70 ms (rank 0: cco run --framework ddp.bucket_view"),
            std::string::npos)
      << text;
  // The JSON holds them in that order.
  const auto j = cco::trace::diagnosis_to_json(d);
  ASSERT_EQ(j["levers"].size(), 5u);
  EXPECT_EQ(j["levers"][0]["lever"], "rank_skew");
  EXPECT_EQ(j["levers"][2]["bound_ns"], 4700000);
  EXPECT_EQ(j["levers"][0]["waits_for"], 0);
  EXPECT_TRUE(j["levers"][1]["waits_for"].is_null());
  // A higher floor leaves out the small ones; a step with nothing to win names none.
  EXPECT_EQ(cco::trace::ranked_levers(d, 4 * ms).size(), 3u);
  cco::trace::Diagnosis quiet;
  StepParts q;
  q.time_ns = q.compute_alone_ns = 100 * ms;
  quiet.ranks = {rank_with(0, q)};
  EXPECT_TRUE(cco::trace::ranked_levers(quiet).empty());
  EXPECT_EQ(cco::trace::levers_text(cco::trace::ranked_levers(quiet)), "");
}

// Equal bounds keep the bounds table's order (priority/shaping before sm-budget before
// scheduling ...), and the text report prints the list after the table.
TEST(Levers, TiesKeepTheTableOrderAndTheTextPrintsThem) {
  StepParts p;
  p.time_ns = 110 * ms;
  p.compute_alone_ns = 100 * ms;
  p.exposed_ns = 2 * ms;
  p.exposed_tail_ns = 2 * ms;  // scheduling: 2
  p.sm_wait_ns = 2 * ms;       // priority/shaping: min(2, 2 - 0) = 2
  p.compute_copies_ns = 2 * ms;
  cco::trace::Diagnosis d;
  d.ranks = {rank_with(0, p)};
  std::vector<std::string> names;
  for (const auto& l : cco::trace::ranked_levers(d)) names.push_back(l.name);
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "priority/shaping");
  const auto at = [&](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_LT(at("scheduling"), at("copies/bucket-view"));
  d.sentence.assign(1, 's');
  const std::string text = cco::report::format_diagnosis(d);
  const auto line = text.find("# levers, largest bound first");
  ASSERT_NE(line, std::string::npos) << text;
  EXPECT_GT(line, text.find("#rank       priority/shaping")) << text;  // after the bounds table
  EXPECT_NE(text.find("priority/shaping <= 2.00 ms (rank 0:", line), std::string::npos) << text;
}

}  // namespace
