// The tuning cache (cache.hpp): GPU-free.
#include "tune/cache.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "bench/options.hpp"
#include "bench/report.hpp"
#include "model/env_names.hpp"
#include "model/read_file.hpp"

namespace cco::tune {

namespace fs = std::filesystem;

std::string resolve_cache_dir(const std::string& requested) {
  std::string dir = requested;
  if (dir.empty()) {
    if (const char* e = std::getenv(cco::env::kCacheDir); e && *e) dir = e;
    else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::string(x) + "/ccoverlap";
    else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/ccoverlap";
    else dir = ".ccoverlap-cache";
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  const auto probe = fs::path(dir) / ".write-test";
  std::ofstream f(probe);
  if (ec || !f) throw bench::UsageError("--cache: cannot write to '" + dir + "'");
  f.close();
  fs::remove(probe, ec);
  return dir;
}

CacheRead read_cache(const std::string& file, const std::string& key, nlohmann::json& plan,
                     std::string& table) {
  if (!fs::exists(file)) return CacheRead::Absent;
  try {  // bounded: a FIFO or a huge file in the cache folder is unreadable, not a hang
    auto j = nlohmann::json::parse(model::read_file(file, model::kResultFileLimit));
    if (j.value("cache_key", "") != key || !j.contains("plan") || !j["plan"].contains("tuning"))
      return CacheRead::Mismatch;
    plan = j["plan"];
    table = j.value("table", "");
    return CacheRead::Hit;
  } catch (const std::exception&) {
    return CacheRead::Unreadable;
  }
}

void write_cache(const std::string& file, const std::string& key, const nlohmann::json& plan,
                 const std::string& table) {
  std::ofstream f(file);
  if (!f) throw bench::UsageError("--cache: cannot write '" + file + "'");
  f << bench::json_text(nlohmann::json{{"cache_key", key}, {"plan", plan}, {"table", table}}) << "\n";
}

bool cache_hit(const std::string& file, const std::string& key, bool retune, nlohmann::json& plan,
               std::string& table, std::ostream* progress) {
  if (retune) return false;
  const auto got = read_cache(file, key, plan, table);
  if (got == CacheRead::Hit) return true;
  if (got != CacheRead::Absent && progress)
    *progress << "# tune: ignoring "
              << (got == CacheRead::Mismatch ? "a cache entry of another key " : "an unreadable cache entry ")
              << file << std::endl;
  return false;
}

}  // namespace cco::tune
