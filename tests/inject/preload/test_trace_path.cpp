// CCO_TRACE's file names (preload/trace_path.hpp): placeholders, the rank variables, the default
// naming of processes other than the command, and the patterns `cco run --trace` refuses.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "preload/trace_path.hpp"

namespace {

using namespace cco::preload;

std::optional<int> rank_of(std::map<std::string, std::string> vars) {
  return rank_from_env([vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(TracePath, RankVariablesInOrder) {
  EXPECT_EQ(rank_of({}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", "3"}}), 3);
  EXPECT_EQ(rank_of({{"OMPI_COMM_WORLD_RANK", "5"}}), 5);
  EXPECT_EQ(rank_of({{"SLURM_PROCID", "7"}}), 7);
  EXPECT_EQ(rank_of({{"LOCAL_RANK", "1"}}), 1);
  EXPECT_EQ(rank_of({{"RANK", "2"}, {"OMPI_COMM_WORLD_RANK", "5"}, {"LOCAL_RANK", "0"}}), 2);
  EXPECT_EQ(rank_of({{"OMPI_COMM_WORLD_RANK", "4"}, {"SLURM_PROCID", "9"}}), 4);
  EXPECT_EQ(rank_of({{"SLURM_PROCID", "6"}, {"LOCAL_RANK", "0"}}), 6);
  EXPECT_EQ(rank_of({{"RANK", "0"}}), 0);
}

// cco run --compare's check shares its decision through a folder of one host: it is made only
// where the launcher's variables say every rank is on this host, alike on every rank.
TEST(TracePath, RanksOnOneHost) {
  auto one_host = [](std::map<std::string, std::string> vars) {
    return ranks_on_one_host([vars](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  EXPECT_TRUE(one_host({}));  // one process, no launcher
  EXPECT_TRUE(one_host({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "4"}}));
  EXPECT_FALSE(one_host({{"RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}}));
  EXPECT_FALSE(one_host({{"RANK", "0"}, {"WORLD_SIZE", "4"}}));  // unknown: no
  EXPECT_TRUE(one_host({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  EXPECT_FALSE(one_host({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  EXPECT_TRUE(one_host({{"SLURM_PROCID", "3"}, {"SLURM_NNODES", "1"}}));
  EXPECT_FALSE(one_host({{"SLURM_PROCID", "3"}, {"SLURM_NNODES", "2"}}));
  EXPECT_FALSE(one_host({{"RANK", "0"}, {"WORLD_SIZE", ""}, {"LOCAL_WORLD_SIZE", ""}}));
}

TEST(TracePath, BadRankValuesAreSkipped) {
  EXPECT_EQ(rank_of({{"RANK", ""}}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", "-1"}}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", "1x"}}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", "+1"}}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", " 1"}}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", "99999999999"}}), std::nullopt);
  EXPECT_EQ(rank_of({{"RANK", "abc"}, {"LOCAL_RANK", "2"}}), 2);  // the next valid one
}

TEST(TracePath, Placeholders) {
  EXPECT_EQ(expand_trace_path("/t/trace_%r.json", 4242, 3, true), "/t/trace_3.json");
  EXPECT_EQ(expand_trace_path("/t/trace_%r.json", 4242, 3, false), "/t/trace_3.json");
  EXPECT_EQ(expand_trace_path("/t/trace_%r.json", 4242, std::nullopt, false),
            "/t/trace_4242.json");  // no rank: the pid, so processes never clash
  EXPECT_EQ(expand_trace_path("/t/trace_%p.json", 4242, 3, false), "/t/trace_4242.json");
  EXPECT_EQ(expand_trace_path("/t/r%r_p%p.json", 17, 0, true), "/t/r0_p17.json");
  EXPECT_EQ(expand_trace_path("%r%r", 1, 2, true), "22");
  EXPECT_EQ(expand_trace_path("/t/100%%_%r.json", 1, 2, true), "/t/100%_2.json");
  EXPECT_EQ(expand_trace_path("/t/rank%r/trace.json", 1, 5, false), "/t/rank5/trace.json");
}

TEST(TracePath, NoPlaceholderDefaultNaming) {
  // The command cco run started writes the file as named; every other process appends .<pid>.
  EXPECT_EQ(expand_trace_path("/t/trace.json", 4242, std::nullopt, true), "/t/trace.json");
  EXPECT_EQ(expand_trace_path("/t/trace.json", 4243, 1, false), "/t/trace.json.4243");
  // %% is no placeholder.
  EXPECT_EQ(expand_trace_path("/t/a%%b.json", 9, std::nullopt, true), "/t/a%b.json");
  EXPECT_EQ(expand_trace_path("/t/a%%b.json", 9, std::nullopt, false), "/t/a%b.json.9");
  EXPECT_FALSE(trace_pattern_has_placeholder("/t/a%%p.json"));  // "%%" then "p"
  EXPECT_TRUE(trace_pattern_has_placeholder("/t/a%%%p.json"));
  EXPECT_TRUE(trace_pattern_has_placeholder("%r"));
  EXPECT_FALSE(trace_pattern_has_placeholder("trace.json"));
}

TEST(TracePath, TopProcess) {
  EXPECT_TRUE(trace_top_process(nullptr, 12));  // set by hand: every process is "the command"
  EXPECT_TRUE(trace_top_process("", 12));
  EXPECT_TRUE(trace_top_process("12", 12));
  EXPECT_FALSE(trace_top_process("13", 12));
  EXPECT_FALSE(trace_top_process("12x", 12));
}

TEST(TracePath, PatternChecks) {
  EXPECT_EQ(check_trace_pattern("trace.json"), "");
  EXPECT_EQ(check_trace_pattern("/x/trace_%r_%p_%%.json"), "");
  EXPECT_EQ(check_trace_pattern(""), "is empty");
  EXPECT_EQ(check_trace_pattern("trace_%d.json"),
            "has an unknown placeholder %d (known: %p pid, %r rank, %% a %)");
  EXPECT_EQ(check_trace_pattern("trace%"), "ends in a lone % (write %% for a literal %)");
  EXPECT_EQ(check_trace_pattern("out/"), "names a folder, not a file");
}

}  // namespace
