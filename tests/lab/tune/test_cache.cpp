// The tuning cache (tune/cache.hpp) and the search record (search_json): GPU-free.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tune/cache.hpp"
#include "tune/search.hpp"

using namespace cco;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "cco-cache-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const nlohmann::json kPlan = {{"tuning", {{"chosen", "priority"}}}};

}  // namespace

TEST(Cache, WrittenEntryIsAHitForItsKeyOnly) {
  TempDir d;
  const std::string f = (d.path / "tune-k.json").string();
  tune::write_cache(f, "k1", kPlan, "the table\n");
  nlohmann::json plan;
  std::string table;
  EXPECT_EQ(tune::read_cache(f, "k1", plan, table), tune::CacheRead::Hit);
  EXPECT_EQ(plan, kPlan);
  EXPECT_EQ(table, "the table\n");
  nlohmann::json other;
  std::string other_table;
  EXPECT_EQ(tune::read_cache(f, "k2", other, other_table), tune::CacheRead::Mismatch);
  EXPECT_TRUE(other.is_null());  // filled on a hit only
  EXPECT_EQ(tune::read_cache((d.path / "absent.json").string(), "k1", plan, table),
            tune::CacheRead::Absent);
}

TEST(Cache, RetuneSkipsAHitAndIgnoredEntriesAreSaid) {
  TempDir d;
  const std::string f = (d.path / "tune-k.json").string();
  tune::write_cache(f, "k1", kPlan, "t");
  nlohmann::json plan;
  std::string table;
  std::ostringstream said;
  EXPECT_TRUE(tune::cache_hit(f, "k1", false, plan, table, &said));
  EXPECT_FALSE(tune::cache_hit(f, "k1", true, plan, table, &said));
  EXPECT_EQ(said.str(), "");
  EXPECT_FALSE(tune::cache_hit(f, "k2", false, plan, table, &said));
  EXPECT_NE(said.str().find("a cache entry of another key"), std::string::npos) << said.str();
  std::ofstream(f) << "{ not json";
  said.str("");
  EXPECT_FALSE(tune::cache_hit(f, "k1", false, plan, table, &said));
  EXPECT_NE(said.str().find("an unreadable cache entry " + f), std::string::npos) << said.str();
  EXPECT_FALSE(tune::cache_hit(f, "k1", false, plan, table, nullptr));  // quiet
}

TEST(Cache, AFifoInTheCacheIsUnreadableNotAHang) {
  TempDir d;
  const std::string f = (d.path / "tune-fifo.json").string();
  ASSERT_EQ(::mkfifo(f.c_str(), 0600), 0);
  nlohmann::json plan;
  std::string table;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(tune::read_cache(f, "k", plan, table), tune::CacheRead::Unreadable);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(Cache, ResolveCreatesTheFolderAndRefusesAFile) {
  TempDir d;
  const auto dir = d.path / "a" / "b";
  EXPECT_EQ(tune::resolve_cache_dir(dir.string()), dir.string());
  EXPECT_TRUE(fs::is_directory(dir));
  std::ofstream(d.path / "file") << "x";
  EXPECT_THROW(tune::resolve_cache_dir((d.path / "file").string()), std::exception);
}

TEST(SearchRecord, HoldsTheCountsOfTheSearch) {
  tune::SearchResult r;
  r.space_size = 12;
  r.refined = 5;
  r.rounds_run = 2;
  r.finalists = {{bench::Mode::Seq}, {bench::Mode::Concurrent}, {bench::Mode::Priority}};
  r.final_iters = 9;
  const auto j = tune::search_json(r, 6, 42.5);
  EXPECT_EQ(j["space_size"], 12);
  EXPECT_EQ(j["neighbours_screened"], 5);
  EXPECT_EQ(j["neighbour_rounds"], 2);
  EXPECT_EQ(j["finalists"], 2);  // seq is a reference, not a candidate
  EXPECT_EQ(j["screen_iters"], 6);
  EXPECT_EQ(j["final_iters"], 9);
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 42.5);
}
