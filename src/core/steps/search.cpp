#include "steps/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "steps/paired.hpp"
#include "model/json_number.hpp"
#include "model/schema.hpp"
#include "steps/schedule.hpp"

namespace cco::steps {

using json = nlohmann::json;

namespace {

int halve(int m) {
  return (m + 1) / 2;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<Stage> layout(const SearchOptions& o) {
  std::vector<Stage> out;
  if (o.n < 2) return out;
  std::vector<int> sizes;
  for (int m = o.n; m > 1; m = halve(m)) sizes.push_back(m);
  const int rmin = std::max(1, o.min_rounds);
  uint64_t start = o.warmup;
  for (int m : sizes) {
    const uint64_t share = o.budget / sizes.size() / static_cast<uint64_t>(m);
    const int rounds = static_cast<int>(std::max<uint64_t>(static_cast<uint64_t>(rmin),
                                                           std::min<uint64_t>(share, 1u << 20)));
    out.push_back(Stage{start, m, rounds});
    start = out.back().end();
  }
  return out;
}

uint64_t minimum_budget(int n, int min_rounds) {
  uint64_t total = 0;
  for (const Stage& s : layout(SearchOptions{n, 0, 0, min_rounds})) total += s.end() - s.start;
  return total;
}

int slot_of(const Stage& st, uint64_t step) {
  const uint64_t i = step - st.start;
  const uint64_t m = static_cast<uint64_t>(st.size);
  return order_slot(st.size, i / m, static_cast<int>(i % m));  // schedule.hpp: carry-over balanced
}

std::vector<std::pair<int, double>> stage_scores(const Stage& st, const std::vector<int>& set,
                                                 const StageTimes& times) {
  const std::size_t m = static_cast<std::size_t>(st.size);
  std::vector<std::vector<double>> dev(m);  // per slot: deviations from the round's median
  for (int r = 0; r < st.rounds; ++r) {
    std::vector<std::pair<std::size_t, double>> round;
    for (std::size_t k = 0; k < m; ++k) {
      const std::size_t i = static_cast<std::size_t>(r) * m + k;
      if (i < times.size() && times[i])
        round.emplace_back(static_cast<std::size_t>(slot_of(st, st.start + i)), *times[i]);
    }
    if (round.size() < 2) continue;  // nothing to pair against
    std::vector<double> v;
    for (const auto& [slot, t] : round) v.push_back(t);
    const double med = median_of(v);
    for (const auto& [slot, t] : round) dev[slot].push_back(t - med);
  }
  std::vector<std::pair<int, double>> out;
  for (std::size_t k = 0; k < m && k < set.size(); ++k)
    out.emplace_back(set[k], dev[k].empty() ? std::numeric_limits<double>::infinity()
                                            : median_of(dev[k]));
  // Best first; ties keep the order of `set` (stable).
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

Decision decide_next(const std::vector<Stage>& stages, int next, const std::vector<int>& set,
                     const StageTimes& times, const std::string& metric) {
  Decision d;
  d.stage = next;
  d.at_step = stages.at(static_cast<std::size_t>(next)).start;
  d.metric = metric;
  d.scores = stage_scores(stages.at(static_cast<std::size_t>(next - 1)), set, times);
  const std::size_t keep = static_cast<std::size_t>(stages[static_cast<std::size_t>(next)].size);
  std::vector<int> kept;
  for (std::size_t i = 0; i < keep && i < d.scores.size(); ++i) kept.push_back(d.scores[i].first);
  // In the order they had in `set`, so slots stay predictable.
  for (int c : set)
    if (std::find(kept.begin(), kept.end(), c) != kept.end()) d.set.push_back(c);
  d.why = "halved";
  return d;
}

std::vector<double> times_of(const History& history, int c, uint64_t from, uint64_t to) {
  std::vector<double> v;
  for (uint64_t k = from; k < to && k < history.size(); ++k)
    if (history[k].first == c && history[k].second) v.push_back(*history[k].second);
  return v;
}

History history_of(const std::vector<StepTime>& steps, bool gpu) {
  History h;
  for (const StepTime& s : steps) {
    if (s.step != h.size()) break;
    std::optional<double> t;
    if (s.regular) t = gpu ? s.gpu_ms : std::optional<double>(s.host_ms);
    h.emplace_back(s.config, t);
  }
  return h;
}

StageTimes stage_times(const Stage& st, const History& history) {
  StageTimes t;
  for (uint64_t k = st.start; k < st.end(); ++k)
    t.push_back(k < history.size() ? history[k].second : std::nullopt);
  return t;
}

std::pair<std::vector<double>, std::vector<double>> paired_rounds(const std::vector<Stage>& stages,
                                                                  const History& history, int a,
                                                                  int b) {
  std::pair<std::vector<double>, std::vector<double>> out;
  for (const Stage& st : stages) {
    for (int r = 0; r < st.rounds; ++r) {
      std::optional<double> ta, tb;
      for (int k = 0; k < st.size; ++k) {
        const uint64_t step = st.start + static_cast<uint64_t>(r * st.size + k);
        if (step >= history.size()) break;
        const auto& [c, t] = history[step];
        if (c == a && t) ta = t;
        if (c == b && t) tb = t;
      }
      if (ta && tb) {
        out.first.push_back(*ta);
        out.second.push_back(*tb);
      }
    }
  }
  return out;
}

namespace {

// A final decision at step `at` after stage `last` ran `set`: its scores, for the record; the
// winner (d.set) is the caller's to set.
Decision final_after(const std::vector<Stage>& stages, int last, const std::vector<int>& set,
                     const StageTimes& times, const std::string& metric, uint64_t at,
                     const std::string& why) {
  Decision d;
  d.stage = static_cast<int>(stages.size());
  d.at_step = at;
  d.final = true;
  d.metric = metric;
  d.scores = stage_scores(stages.at(static_cast<std::size_t>(last)), set, times);
  d.why = why;
  return d;
}

}  // namespace

Decision decide_final(const std::vector<Stage>& stages, int last, const std::vector<int>& set,
                      const StageTimes& times, const std::string& metric, const History& history,
                      uint64_t at, const std::string& why) {
  Decision d = final_after(stages, last, set, times, metric, at, why);
  int best = d.scores.empty() || !std::isfinite(d.scores.front().second) ? 0 : d.scores.front().first;
  if (best != 0) {
    const auto [base, cand] = paired_rounds(stages, history, 0, best);
    const PairedDiff diff = paired_difference(base, cand);
    if (!(diff.enough && diff.hi < 0)) {
      d.why += "; baseline kept: candidate " + std::to_string(best) +
               (diff.enough ? " was not faster than candidate 0 beyond noise"
                            : " had too few rounds beside candidate 0 for a 95% interval");
      best = 0;
    }
  }
  d.set = {best};
  return d;
}

Decision decide_nothing_to_win(const std::vector<Stage>& stages, int last,
                               const std::vector<int>& set, const StageTimes& times,
                               const std::string& metric, uint64_t at, const std::string& why) {
  Decision d = final_after(stages, last, set, times, metric, at, why);
  d.set = {0};
  return d;
}

const Decision* TuneFile::final_decision() const {
  for (const Decision& d : decisions)
    if (d.final) return &d;
  return nullptr;
}

std::string to_json(const TuneFile& f) {
  json j;
  model::stamp_schema(j, kTuneSchema);
  j["epoch"] = f.epoch;
  j["candidates"] = f.candidates;
  j["warmup"] = f.warmup;
  json dec = {{"pid", f.decider.pid}, {"device", f.decider.device},
              {"device_name", f.decider.device_name}, {"sms", f.decider.sms},
              {"cuda_driver", f.decider.cuda_driver}};
  dec["rank"] = f.decider.rank ? json(*f.decider.rank) : json(nullptr);
  j["decider"] = dec;
  j["layout"] = json::array();
  for (const Stage& s : f.stages)
    j["layout"].push_back({{"start", s.start}, {"size", s.size}, {"rounds", s.rounds}});
  if (!f.diagnosis.empty()) j["diagnosis"] = f.diagnosis;
  j["decisions"] = json::array();
  for (const Decision& d : f.decisions) {
    json scores = json::array();
    for (const auto& [c, v] : d.scores)
      scores.push_back({c, std::isfinite(v) ? json(v) : json(nullptr)});
    j["decisions"].push_back({{"stage", d.stage},
                              {"at_step", d.at_step},
                              {"set", d.set},
                              {"final", d.final},
                              {"metric", d.metric},
                              {"scores", scores},
                              {"why", d.why}});
  }
  return j.dump(1) + "\n";
}

TuneFile parse_tune_file(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error(what + ": " + why);
  };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw bad(std::string("invalid JSON: ") + e.what());
  }
  if (model::match_schema(j, kTuneSchema, kTuneSchemaLegacy) != model::SchemaMatch::kYes)
    throw bad(std::string("not a tune file of this version (schema must be \"") + kTuneSchema +
              "\" 1.x)");
  // Whole numbers in a range (a float or a huge number is refused, never cast).
  auto whole = [&](const json& v, const char* field, int64_t lo, int64_t hi) -> int64_t {
    try {
      return model::whole_number(v, field, lo, hi);
    } catch (const std::runtime_error& e) {
      throw bad(e.what());
    }
  };
  constexpr int64_t kBig = int64_t{1} << 50;
  TuneFile f;
  try {
    f.epoch = static_cast<uint64_t>(whole(j.at("epoch"), "epoch", 0, kBig));
    f.candidates = j.at("candidates").get<std::vector<std::string>>();
    if (f.candidates.size() > 64) throw bad("too many candidates");
    f.warmup = static_cast<uint64_t>(whole(j.at("warmup"), "warmup", 0, kBig));
    const json& d = j.at("decider");
    if (!d.at("rank").is_null()) f.decider.rank = static_cast<int>(whole(d.at("rank"), "rank", 0, 1 << 24));
    f.decider.pid = static_cast<int>(whole(d.at("pid"), "pid", 0, INT32_MAX));
    f.decider.device = static_cast<int>(whole(d.at("device"), "device", -1, 1 << 20));
    f.decider.device_name = d.at("device_name").get<std::string>();
    f.decider.sms = static_cast<int>(whole(d.at("sms"), "sms", 0, 1 << 20));
    f.decider.cuda_driver = d.at("cuda_driver").get<std::string>();
    for (const json& s : j.at("layout")) {
      if (f.stages.size() >= 64) throw bad("too many stages");
      f.stages.push_back(Stage{static_cast<uint64_t>(whole(s.at("start"), "start", 0, kBig)),
                               static_cast<int>(whole(s.at("size"), "size", 1, 64)),
                               static_cast<int>(whole(s.at("rounds"), "rounds", 1, 1 << 20))});
    }
    if (j.contains("diagnosis")) f.diagnosis = j.at("diagnosis").get<std::string>();
    if (f.diagnosis.size() > 4096) throw bad("diagnosis too long");
    const int n = static_cast<int>(f.candidates.size());
    for (const json& x : j.at("decisions")) {
      if (f.decisions.size() >= 256) throw bad("too many decisions");
      Decision dd;
      dd.stage = static_cast<int>(whole(x.at("stage"), "stage", 0, 64));
      dd.at_step = static_cast<uint64_t>(whole(x.at("at_step"), "at_step", 0, kBig));
      for (const json& c : x.at("set")) {
        const int64_t v = whole(c, "set", 0, 63);
        if (v >= n) throw bad("decision names candidate " + std::to_string(v) + " of " +
                              std::to_string(n));
        dd.set.push_back(static_cast<int>(v));
      }
      if (dd.set.empty()) throw bad("a decision with no candidate");
      dd.final = x.at("final").get<bool>();
      dd.metric = x.at("metric").get<std::string>();
      for (const json& s : x.at("scores")) {
        if (!s.is_array() || s.size() != 2 || !(s[1].is_null() || s[1].is_number()))
          throw bad("a score must be [candidate, ms]");
        dd.scores.emplace_back(static_cast<int>(whole(s[0], "score", 0, 63)),
                               s[1].is_null() ? std::numeric_limits<double>::infinity()
                                              : s[1].get<double>());
      }
      dd.why = x.at("why").get<std::string>();
      f.decisions.push_back(std::move(dd));
    }
  } catch (const json::exception& e) {
    throw bad(std::string("bad field: ") + e.what());
  }
  return f;
}

TuneFile read_tune_file(const std::string& path) {
  return parse_tune_file(read_bounded(path, 16u << 20), path);
}

}  // namespace cco::steps
