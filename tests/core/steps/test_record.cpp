// The step file: round trip, bad input, bounded reads.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "steps/record.hpp"

using namespace cco::steps;

namespace {
// The one-line error parse_step_file gives `text` (named x.json), or "no error".
std::string error_of(const std::string& text) {
  try {
    parse_step_file(text, "x.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

std::string tmp_path(const char* tag) {
  return (testing::TempDir() + "cco_steps_" + tag + "_" + std::to_string(::getpid()));
}
}  // namespace

TEST(Record, RoundTrip) {
  StepFile f;
  f.pid = 7;
  f.rank = 1;
  f.device = 0;
  f.source = "collectives";
  f.period = 22;
  f.collectives = 440;
  f.locks = 2;
  f.configs = {"off", "shape:1"};
  f.warmup = 3;
  f.steps = {{0, 0, 85.5, 85.25, true}, {1, 1, 90.0, std::nullopt, false}};
  const std::string text = to_json(f);
  EXPECT_NE(text.find("\"schema\": \"ccoverlap.steps\""), std::string::npos);
  EXPECT_NE(text.find("\"schema_version\": \"1.0.0\""), std::string::npos);
  const StepFile g = parse_step_file(text);
  EXPECT_EQ(g.pid, 7);
  // The name of earlier versions is still read.
  std::string old = text;
  old.replace(old.find("\"ccoverlap.steps\""), 17, "\"cco.steps/1\"");
  EXPECT_EQ(parse_step_file(old).pid, 7);
  EXPECT_EQ(g.rank, 1);
  EXPECT_EQ(g.period, 22);
  EXPECT_EQ(g.configs, f.configs);
  ASSERT_EQ(g.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(*g.steps[0].gpu_ms, 85.25);
  EXPECT_FALSE(g.steps[1].gpu_ms.has_value());
  EXPECT_FALSE(g.steps[1].regular);
}

TEST(Record, BadInputGivesOneLine) {
  const auto msg = error_of;
  EXPECT_NE(msg("{").find("x.json: not JSON"), std::string::npos);
  EXPECT_NE(msg("{\"schema\": \"ccoverlap.bench\"}").find("not a step file"), std::string::npos);
  EXPECT_EQ(msg("{\"schema\": \"cco.steps/9\"}"),
            "x.json: a step file of another version (cco.steps/9): this cco reads ccoverlap.steps 1.x");
  EXPECT_EQ(msg("{\"schema\": \"ccoverlap.steps\", \"schema_version\": \"2.0.0\"}"),
            "x.json: a step file of another version (ccoverlap.steps 2.0.0): this cco reads "
            "ccoverlap.steps 1.x");
  StepFile f;
  f.configs = {"a"};
  f.steps = {{0, 3, 1.0, std::nullopt, true}};
  EXPECT_NE(msg(to_json(f)).find("configuration 3 of 1"), std::string::npos);
  std::string missing = to_json(StepFile{});
  missing.replace(missing.find("\"period\""), 8, "\"perioX\"");
  EXPECT_NE(msg(missing).find("x.json:"), std::string::npos);
}

// A whole number written as a float, or out of its range, is refused with one line: before, a
// step of 2.2e25 was cast to an integer (undefined behaviour, found by the compare_file fuzzer).
TEST(Record, WholeNumbersAreCheckedNotCast) {
  const auto msg = error_of;
  StepFile f;
  f.configs = {"a"};
  f.steps = {{0, 0, 1.0, std::nullopt, true}};
  const std::string good = to_json(f);
  EXPECT_EQ(msg(good), "no error");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  EXPECT_EQ(msg(with("\"step\": 0", "\"step\": 2.22222e+25")), "x.json: step must be a whole number");
  EXPECT_EQ(msg(with("\"step\": 0", "\"step\": 1.5")), "x.json: step must be a whole number");
  EXPECT_NE(msg(with("\"config\": 0", "\"config\": 1e20")).find("config must be a whole number"),
            std::string::npos);
  EXPECT_NE(msg(with("\"period\": 0", "\"period\": 99999999999")).find("period out of range"),
            std::string::npos);
  EXPECT_NE(msg(with("\"collectives\": 0", "\"collectives\": -1")).find("collectives out of range"),
            std::string::npos);
  EXPECT_NE(msg(with("\"pid\": 0", "\"pid\": \"7\"")).find("pid must be a whole number"),
            std::string::npos);
}

TEST(Record, BoundedReads) {
  const std::string dir = tmp_path("dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  EXPECT_THROW(read_step_file(dir), std::runtime_error);
  ::rmdir(dir.c_str());

  const std::string fifo = tmp_path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_step_file(fifo);  // must not wait for a writer
    ADD_FAILURE() << "a FIFO was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos);
  }
  ::unlink(fifo.c_str());

  const std::string big = tmp_path("big");
  {
    std::ofstream o(big);
    o << std::string(2000, 'x');
  }
  EXPECT_THROW(read_bounded(big, 1000), std::runtime_error);
  EXPECT_EQ(read_bounded(big, 2000).size(), 2000u);
  std::remove(big.c_str());
  EXPECT_THROW(read_step_file("/nonexistent/cco.json"), std::runtime_error);
  EXPECT_THROW(read_step_file("/dev/zero"), std::runtime_error);
}

// One limit for kept steps and step files: a file of kMaxKeptSteps steps, each written with the
// longest numbers it can hold, stays under the size the reader accepts (the library kept 1M steps
// while the reader refused files over 64 MiB, about 555k steps, and cco then said that no step
// file had been written).
TEST(Record, TheLargestStepFileIsReadable) {
  StepFile f;
  f.pid = 2147483647;
  f.rank = 2147483647;
  f.device = 2147483647;
  f.source = "collectives";
  f.configs = {"off", "shape+priority:model@overlap", "sm-target:-16@overlap"};
  const std::size_t n = 1000;
  for (std::size_t i = 0; i < n; ++i)
    f.steps.push_back({kMaxKeptSteps - 1 - i, 7, 123456.78901234567 + static_cast<double>(i),
                       98765.432109876543 + static_cast<double>(i), false});
  const std::size_t header = to_json(StepFile{}).size() + 200;
  const double per_step = static_cast<double>(to_json(f).size() - header) / static_cast<double>(n);
  EXPECT_LT(per_step, 200.0);
  EXPECT_LT(static_cast<double>(header) + per_step * static_cast<double>(kMaxKeptSteps),
            static_cast<double>(kStepFileLimit));
}
