// The tuning cache, shared by pairs and steps: one JSON file per cache key, {cache_key, plan,
// table}, in a folder resolved from --cache-dir, $CCO_CACHE_DIR, $XDG_CACHE_HOME or ~/.cache.
// GPU-free (cco.tune_core).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

namespace cco::tune {

/// Resolves the cache folder (`requested`, else $CCO_CACHE_DIR, $XDG_CACHE_HOME/ccoverlap,
/// ~/.cache/ccoverlap) and creates it; throws bench::UsageError when it cannot be written.
std::string resolve_cache_dir(const std::string& requested);

/// Reading a cached tuning result: plan and table are filled on a Hit only. The file is read
/// with a bound (a FIFO, a device or a huge file is Unreadable, never a hang).
enum class CacheRead { Hit, Absent, Mismatch, Unreadable };
CacheRead read_cache(const std::string& file, const std::string& key, nlohmann::json& plan,
                     std::string& table);
/// Writes {cache_key, plan, table}; throws bench::UsageError when the file cannot be written.
void write_cache(const std::string& file, const std::string& key, const nlohmann::json& plan,
                 const std::string& table);
/// read_cache unless `retune`: true on a Hit. An entry that cannot be read (or holds another
/// key) is ignored, and said on `progress` when given.
bool cache_hit(const std::string& file, const std::string& key, bool retune, nlohmann::json& plan,
               std::string& table, std::ostream* progress);

}  // namespace cco::tune
