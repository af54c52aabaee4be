#include "steps/record.hpp"

#include "model/json_number.hpp"
#include "model/limits.hpp"
#include "model/schema.hpp"
#include "model/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace cco::steps {

using nlohmann::json;

std::string to_json(const StepFile& f) {
  json j;
  model::stamp_schema(j, kStepSchema);
  j["pid"] = f.pid;
  j["rank"] = f.rank ? json(*f.rank) : json(nullptr);
  j["device"] = f.device ? json(*f.device) : json(nullptr);
  j["source"] = f.source;
  j["period"] = f.period;
  j["collectives"] = f.collectives;
  j["locks"] = f.locks;
  j["mismatches"] = f.mismatches;
  j["configs"] = f.configs;
  j["warmup"] = f.warmup;
  j["ended"] = f.ended;
  json steps = json::array();
  for (const auto& s : f.steps)
    steps.push_back({{"step", s.step},
                     {"config", s.config},
                     {"host_ms", s.host_ms},
                     {"gpu_ms", s.gpu_ms ? json(*s.gpu_ms) : json(nullptr)},
                     {"regular", s.regular}});
  j["steps"] = std::move(steps);
  j["note"] = f.note;
  if (f.check) j["check"] = check_to_json(*f.check);
  return j.dump(1) + "\n";
}

json check_to_json(const RotationCheck& c) {
  return {{"at_step", c.at_step}, {"stopped", c.stopped}, {"why", c.why}, {"diagnosis", c.diagnosis}};
}

RotationCheck check_from_json(const json& j) {
  RotationCheck c;
  c.at_step = static_cast<uint64_t>(model::whole_number(j.at("at_step"), "check.at_step"));
  c.stopped = j.at("stopped").get<bool>();
  c.why = j.at("why").get<std::string>();
  c.diagnosis = j.value("diagnosis", "");
  return c;
}

std::string process_name(const StepFile& f) {
  return f.rank ? "rank " + std::to_string(*f.rank) : "pid " + std::to_string(f.pid);
}

StepFile parse_step_file(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(what + ": not JSON (" + e.what() + ")");
  }
  try {
    std::string found;
    const auto m = model::match_schema(j, kStepSchema, kStepSchemaLegacy, &found);
    if (m == model::SchemaMatch::kOtherVersion)
      throw std::runtime_error(what + ": a step file of another version (" + found +
                               "): this cco reads " + kStepSchema + " 1.x");
    if (m != model::SchemaMatch::kYes)
      throw std::runtime_error(what + ": not a step file (schema \"" + std::string(kStepSchema) +
                               "\" expected)");
    // Whole numbers are checked, never cast (a float such as 2e25 would be undefined behaviour).
    auto whole = [&](const json& v, const char* field, int64_t lo, int64_t hi) {
      try {
        return model::whole_number(v, field, lo, hi);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(what + ": " + e.what());
      }
    };
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    constexpr int64_t kCountMax = std::numeric_limits<int64_t>::max();
    StepFile f;
    f.pid = static_cast<int>(whole(j.at("pid"), "pid", 0, kIntMax));
    if (!j.at("rank").is_null()) f.rank = static_cast<int>(whole(j.at("rank"), "rank", 0, kIntMax));
    if (!j.at("device").is_null())
      f.device = static_cast<int>(whole(j.at("device"), "device", 0, kIntMax));
    f.source = j.at("source").get<std::string>();
    if (f.source != "collectives" && f.source != "marker" && f.source != "none")
      throw std::runtime_error(what + ": unknown source '" + f.source + "'");
    f.period = static_cast<int>(whole(j.at("period"), "period", 0, kIntMax));
    f.collectives = static_cast<uint64_t>(whole(j.at("collectives"), "collectives", 0, kCountMax));
    f.locks = static_cast<uint64_t>(whole(j.at("locks"), "locks", 0, kCountMax));
    f.mismatches = static_cast<uint64_t>(whole(j.at("mismatches"), "mismatches", 0, kCountMax));
    f.configs = j.at("configs").get<std::vector<std::string>>();
    f.warmup = static_cast<uint64_t>(whole(j.at("warmup"), "warmup", 0, kCountMax));
    f.ended = j.at("ended").get<std::string>();
    f.note = j.value("note", "");
    if (const auto c = j.find("check"); c != j.end() && !c->is_null()) {
      try {
        f.check = check_from_json(*c);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(what + ": " + e.what());
      }
    }
    const json& all = j.at("steps");
    if (!all.is_array()) throw std::runtime_error(what + ": steps must be an array");
    for (const auto& s : all) {
      StepTime t;
      t.step = static_cast<uint64_t>(whole(s.at("step"), "step", 0, kCountMax));
      t.config = static_cast<int>(whole(s.at("config"), "config", 0, kIntMax));
      t.host_ms = s.at("host_ms").get<double>();
      if (!s.at("gpu_ms").is_null()) t.gpu_ms = s.at("gpu_ms").get<double>();
      t.regular = s.at("regular").get<bool>();
      // Without configurations (a run that compares nothing) every step is configuration 0.
      if (t.config >= std::max<int>(1, static_cast<int>(f.configs.size())))
        throw std::runtime_error(what + ": step " + std::to_string(t.step) +
                                 " names configuration " + std::to_string(t.config) +
                                 " of " + std::to_string(f.configs.size()));
      f.steps.push_back(t);
    }
    return f;
  } catch (const json::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

std::string read_bounded(const std::string& path, std::size_t limit) {
  try {
    return model::read_file(path, limit);
  } catch (const model::Error& e) {
    throw std::runtime_error(e.what());
  }
}

StepFile read_step_file(const std::string& path) {
  return parse_step_file(read_bounded(path, kStepFileLimit), path);
}

}  // namespace cco::steps
