// The option vocabulary of cco bench and cco tune (src/lab/bench/flags.hpp): the table in the order
// of its ids, spellings found in every form, each scope's refusals with their reasons, and the
// parsers agreeing with the table (a flag the table gives a scope is parsed there; one it denies
// is refused with the table's reason).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bench/flags.hpp"
#include "bench/options.hpp"
#include "bench/workload_args.hpp"
#include "bench/workload_bench.hpp"
#include "model/controls.hpp"
#include "model/limits.hpp"
#include "model/read_file.hpp"

namespace {

using namespace cco::bench;

std::string refusal(const std::vector<std::string>& args, FlagScope scope) {
  try {
    refuse_out_of_scope(args, scope);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Flags, TableInIdOrderWithUniqueSpellings) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < flags().size(); ++i) {
    const FlagSpec& f = flags()[i];
    EXPECT_EQ(static_cast<std::size_t>(f.id), i) << f.names;
    EXPECT_EQ(&flag(f.id), &f);
    EXPECT_NE(f.scopes, 0u) << f.names;
    std::string all = f.names;
    for (std::size_t p = 0; p <= all.size();) {
      const auto c = all.find(',', p);
      const std::string one = all.substr(p, c == std::string::npos ? std::string::npos : c - p);
      EXPECT_TRUE(seen.insert(one).second) << one << " spelled twice";
      if (c == std::string::npos) break;
      p = c + 1;
    }
    // Every refusal has its reason: a flag missing from a step scope says why.
    if (!(f.scopes & kStep) && (f.scopes & kPair)) {
      EXPECT_NE(f.not_step, nullptr) << f.names;
    }
    if ((f.scopes & kPair) && !(f.scopes & kTunePair)) {
      EXPECT_NE(f.not_tune, nullptr) << f.names;
    }
  }
  EXPECT_EQ(flags().size(), static_cast<std::size_t>(F::kCount));
}

TEST(Flags, EveryControlsFlagAndTuneListIsABenchOrTuneFlag) {
  // model::kControls spells a control's flag once; the flag table and the parsers take it there.
  for (const auto& row : cco::model::kControls)
    for (const auto s : {cco::model::Spelling::Flag, cco::model::Spelling::TuneList})
      for (std::size_t k = 0; k < cco::model::spelling_keys(row.id, s); ++k) {
        const std::string name = cco::model::spelling_name(row.id, s, k);
        EXPECT_NE(find_flag(name), nullptr) << row.name << ": " << name;
      }
  // Row labels are the table's tokens: a label reads back into the row's controls.
  RowSpec r;
  r.mode = Mode::ShapePriority;
  r.set_k(2);
  r.controls.gemm_sms = 66;
  r.controls.nccl_ctas = 8;
  r.controls.cta_policy = cco::model::CtaPolicy::Efficiency;
  EXPECT_EQ(r.label(), "shape+priority k=2 sms=66 ctas=8 cta=efficiency");
  EXPECT_EQ(cco::model::controls_from_label(r.label().substr(r.label().find(' '))), r.label_controls());
}

TEST(Flags, FoundInEveryForm) {
  ASSERT_NE(find_flag("-b"), nullptr);
  EXPECT_EQ(find_flag("-b")->id, F::MinBytes);
  EXPECT_EQ(find_flag("-b1M")->id, F::MinBytes);
  EXPECT_EQ(find_flag("--minbytes=1M")->id, F::MinBytes);
  EXPECT_EQ(find_flag("--no-cache")->id, F::NoCache);
  EXPECT_EQ(find_flag("-n5")->id, F::Iters);
  EXPECT_EQ(find_flag("-1,16"), nullptr) << "a negative value is not a flag";
  EXPECT_EQ(find_flag("-"), nullptr);
  EXPECT_EQ(find_flag("--frobnicate"), nullptr);
  EXPECT_EQ(find_flag("file.json"), nullptr);
}

TEST(Flags, EachScopeRefusesWithTheReason) {
  EXPECT_EQ(refusal({"bench", "-b", "1M", "-g", "2"}, kPair), "");
  EXPECT_EQ(refusal({"bench", "--sm-budgets", "100"}, kPair),
            "--sm-budgets is a cco tune option (see cco tune --help)");
  EXPECT_EQ(refusal({"bench", "--workload", "./w.json", "-b1M"}, kStep),
            "-b does not apply to --workload: the workload file sets sizes and types (use --param "
            "NAME=VALUE)");
  EXPECT_EQ(refusal({"bench", "--workload", "./w.json", "--bootstrap", "env"}, kStep), "")
      << "steps run one process per GPU under a launcher, as pairs do";
  EXPECT_EQ(refusal({"tune", "--workload", "./w", "--bootstrap", "env"}, kTuneStep),
            "--bootstrap does not apply to --workload: cco tune --workload runs in one process "
            "with a thread per GPU");
  EXPECT_EQ(refusal({"bench", "--workload", "./w.json", "-a", "1"}, kStep), "")
      << "steps combine ranks like pairs (-a)";
  EXPECT_EQ(refusal({"bench", "--workload", "./w.json", "--ctas", "16"}, kStep),
            "--ctas is a cco tune option (see cco tune --help)");
  EXPECT_EQ(refusal({"tune", "--modes", "shape"}, kTunePair),
            "--modes is a cco bench option: cco tune chooses the modes itself");
  EXPECT_EQ(refusal({"tune", "--param", "x=1"}, kTunePair), "--param goes with --workload FILE");
  EXPECT_EQ(refusal({"tune", "--workload", "./w", "--registers", "window"}, kTuneStep),
            "--registers does not apply to --workload: cco tune --workload does not search "
            "buffer registration (cco bench --workload takes --nccl-register for the step's arena)");
  EXPECT_EQ(refusal({"tune", "--workload", "./w", "--csv", "x.csv"}, kTuneStep),
            "--csv is a cco bench option: cco tune writes a plan (--plan, --json)");
  // A flag's value is never taken for a flag; "--" ends the options.
  EXPECT_EQ(refusal({"bench", "--json", "-b"}, kStep), "");
  EXPECT_EQ(refusal({"tune", "--ctas", "-1,16"}, kTunePair), "");
  EXPECT_EQ(refusal({"tune", "--", "-b"}, kTuneStep), "");
}

// The parsers follow the table: what it gives the pair scope parses there; what it gives only
// to cco tune is refused there with the table's line.
TEST(Flags, ParsersAgreeWithTheTable) {
  for (const FlagSpec& f : flags()) {
    std::string one = f.names;
    one = one.substr(one.find(',') == std::string::npos ? 0 : one.find(',') + 1);  // long name
    std::vector<std::string> args = {"bench", one};
    if (f.value) args.push_back(f.id == F::Bootstrap ? "threads" : "x");
    try {
      (void)parse_options(args);
    } catch (const UsageError& e) {
      const std::string what = e.what();
      const bool refused_by_table = what.find(" is a cco tune option") != std::string::npos ||
                                    what.find(" goes with --workload") != std::string::npos;
      if (f.scopes & kPair) {
        EXPECT_FALSE(refused_by_table) << one << ": " << what;
        EXPECT_EQ(what.find("not expected"), std::string::npos) << one << " not parsed: " << what;
      } else if (f.id != F::Workload && f.id != F::Validate && f.id != F::Param &&
                 f.id != F::GpuMemory) {
        EXPECT_TRUE(refused_by_table) << one << ": " << what;
      }
    }
  }
}

// The same for a step: every flag the table gives the step scope parses there; the others are
// refused with the table's line (split_step_args takes the workload's own four first).
TEST(Flags, StepParserAgreesWithTheTable) {
  for (const FlagSpec& f : flags()) {
    if (f.id == F::Workload || f.id == F::Validate || f.id == F::Param || f.id == F::GpuMemory)
      continue;
    std::string one = f.names;
    one = one.substr(one.find(',') == std::string::npos ? 0 : one.find(',') + 1);
    std::vector<std::string> args = {"bench", "--workload", "./w.json", one};
    if (f.value) args.push_back("x");
    try {
      (void)parse_step_options(args);
    } catch (const UsageError& e) {
      const std::string what = e.what();
      if (f.scopes & kStep) {
        EXPECT_EQ(what.find("not expected"), std::string::npos) << one << " not parsed: " << what;
        EXPECT_EQ(what.find("--workload:"), std::string::npos) << one << ": " << what;
      } else {
        EXPECT_TRUE(what.find(" does not apply to --workload") != std::string::npos ||
                    what.find(" is a cco tune option") != std::string::npos)
            << one << ": " << what;
      }
    }
  }
}

}  // namespace

namespace {
// Steps take the launcher options pairs take, checked the same way.
TEST(Flags, StepParserTakesTheLauncherOptions) {
  const auto so = cco::bench::parse_step_options(
      {"bench", "--workload", "./w.json", "--bootstrap", "env", "--bootstrap-timeout", "30"});
  EXPECT_EQ(so.common.bootstrap, "env");
  EXPECT_DOUBLE_EQ(so.common.bootstrap_timeout, 30.0);
  EXPECT_THROW((void)cco::bench::parse_step_options(
                   {"bench", "--workload", "./w.json", "--bootstrap", "sockets"}),
               cco::bench::UsageError);
  EXPECT_THROW((void)cco::bench::parse_step_options(
                   {"bench", "--workload", "./w.json", "--bootstrap-timeout", "-1"}),
               cco::bench::UsageError);
}
}  // namespace

namespace {
// The workload's own flags come out of a bench command line through CLI11 and the table's
// spellings; -g, -c and --json are read and left, in order, for the bench's parser.
TEST(Flags, StepArgsParsedFromTheTable) {
  const auto a = cco::bench::split_step_args({"bench", "-g4", "--json=out.json", "--workload",
                                              "./w.json", "-c", "0", "--param", "a=1", "-q"});
  EXPECT_EQ(a.workload, "./w.json");
  EXPECT_EQ(a.ngpus, 4);
  EXPECT_FALSE(a.check);
  EXPECT_EQ(a.json_path, "out.json");
  EXPECT_EQ(a.rest, (std::vector<std::string>{"bench", "-g4", "--json=out.json", "-c", "0", "-q"}));
  EXPECT_THROW((void)cco::bench::split_step_args({"bench", "--workload", "./w", "--validate=x"}),
               cco::model::Error);
}
}  // namespace

namespace {
// -d all and --in-place are a pair's (issue 19, item 6): a step and cco tune refuse them in one
// line that says why.
TEST(Flags, DatatypeAllAndInPlaceAreAPairs) {
  EXPECT_EQ(refusal({"bench", "--workload", "./w.json", "-d", "all"}, kStep),
            "-d does not apply to --workload: the workload file sets sizes and types (use --param "
            "NAME=VALUE)");
  EXPECT_EQ(refusal({"bench", "--workload", "./w.json", "--in-place", "1"}, kStep),
            "--in-place does not apply to --workload: a step's collectives run as the file says "
            "(out of place)");
  EXPECT_EQ(refusal({"tune", "--in-place", "1"}, kTunePair),
            "--in-place is a cco bench option: cco tune measures the collective out of place (cco "
            "bench --in-place 1 times both)");
  EXPECT_EQ(refusal({"bench", "-d", "all", "--in-place", "1"}, kPair), "");
  try {
    (void)cco::bench::parse_step_options({"bench", "--workload", "./w.json", "-d", "all"});
    ADD_FAILURE() << "a step took -d all";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-d does not apply to --workload"), std::string::npos)
        << e.what();
  }
}
}  // namespace

#ifdef CCO_COMPLETION_FILE
namespace {

// The words bash completion offers for `cco CMD` (generated from docs/cli/*.md).
std::set<std::string> completion_words(const std::string& cmd) {
  const std::string text = cco::model::read_file(CCO_COMPLETION_FILE, 1 << 20);
  const std::string key = "    " + cmd + ") opts=\"";
  const auto at = text.find(key);
  if (at == std::string::npos) return {};
  const auto end = text.find('"', at + key.size());
  std::set<std::string> words;
  std::string w;
  for (char c : text.substr(at + key.size(), end - at - key.size())) {
    if (c == ' ') {
      if (!w.empty()) words.insert(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) words.insert(w);
  return words;
}

// Completion covers every spelling of every flag the parsers take, command by command: the flag
// table is what the parsers bind, the completion what the help pages list.
TEST(Flags, CompletionOffersEveryFlagOfBenchAndTune) {
  using cco::bench::FlagScope;
  for (const auto& [cmd, scopes] :
       {std::pair<std::string, unsigned>{"bench", cco::bench::kPair | cco::bench::kStep},
        {"tune", cco::bench::kTunePair | cco::bench::kTuneStep}}) {
    const auto words = completion_words(cmd);
    ASSERT_FALSE(words.empty()) << cmd;
    for (const auto& f : cco::bench::flags()) {
      if (!(f.scopes & scopes)) continue;
      std::string names = f.names;
      for (std::size_t p = 0; p <= names.size();) {
        const auto q = std::min(names.find(',', p), names.size());
        const std::string n = names.substr(p, q - p);
        EXPECT_TRUE(words.count(n)) << "cco " << cmd << ": completion lacks " << n;
        p = q + 1;
      }
    }
  }
}

}  // namespace
#endif
