// The diagnosis' first line (trace/headline.hpp): the largest part beyond compute alone named, the
// one thing to try for it, at most 30 words in every case, and nothing to win said plainly.
#include <gtest/gtest.h>

#include "trace/headline.hpp"

namespace {

using cco::trace::StepParts;

constexpr int64_t ms = 1000000;

StepParts step(int64_t StepParts::*part, int64_t v) {
  StepParts p;
  p.time_ns = 200 * ms;
  p.compute_alone_ns = 150 * ms;
  p.comm_busy_ns = 40 * ms;
  p.*part = v;
  return p;
}

void expect_names(const StepParts& p, const char* cause, const char* advice) {
  const std::string h = cco::trace::headline(p);
  EXPECT_LE(cco::trace::word_count(h), 30u) << h;
  EXPECT_NE(h.find(cause), std::string::npos) << h;
  EXPECT_NE(h.find(advice), std::string::npos) << h;
  EXPECT_NE(h.find("200.0 ms step"), std::string::npos) << h;
}

TEST(Headline, NamesTheLargestPartAndWhatToTry) {
  expect_names(step(&StepParts::idle_ns, 30 * ms), "GPU waits for the host 30.0 ms", "data loading");
  expect_names(step(&StepParts::compute_slowed_ns, 9 * ms), "Compute runs 9.0 ms slower",
               "--framework");
  StepParts skew = step(&StepParts::exposed_rank_wait_ns, 12 * ms);
  skew.slowest_peer = 3;
  expect_names(skew, "wait 12.0 ms for rank 3", "not overlap");
  expect_names(step(&StepParts::exposed_dependent_ns, 7 * ms), "exposed 7.0 ms", "larger buckets");
  expect_names(step(&StepParts::exposed_slowed_ns, 5 * ms), "5.0 ms slower beside compute",
               "priority");
  expect_names(step(&StepParts::compute_copies_ns, 6 * ms), "copies take 6.0 ms",
               "ddp.bucket_view");
  // The largest wins: idle 10 against slowed 20.
  StepParts both = step(&StepParts::idle_ns, 10 * ms);
  both.compute_slowed_ns = 20 * ms;
  EXPECT_NE(cco::trace::headline(both).find("Compute runs 20.0 ms slower"), std::string::npos);
}

TEST(Headline, NothingToWinIsSaid) {
  StepParts p = step(&StepParts::idle_ns, ms / 2);  // under 1% of the step
  EXPECT_NE(cco::trace::headline(p).find("nothing for overlap to win"), std::string::npos);
  p.comm_busy_ns = 0;
  p.compute_slowed_ns = 30 * ms;  // without communication only host waits count
  EXPECT_NE(cco::trace::headline(p).find("runs no communication"), std::string::npos)
      << cco::trace::headline(p);
  EXPECT_EQ(cco::trace::word_count("  a b\tc\n d  "), 4u);
}

}  // namespace
