#include "steps/compare.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <nlohmann/json.hpp>

#include "model/controls.hpp"
#include "model/json_number.hpp"
#include "model/schema.hpp"
#include "steps/schedule.hpp"

namespace cco::steps {
namespace {

std::string ms(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::string signed_ms(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.3f", v);
  return b;
}

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.2f%%", v);
  return b;
}

}  // namespace

CompareReport compare(const std::vector<StepFile>& files) {
  CompareReport r;
  r.files = files.size();
  if (files.empty()) {
    r.refused = "no step file was written: the program made no kernel launch, collective or step "
                "mark under the preload library, or did not start under it";
    return r;
  }
  // The reference: the lowest rank (or, without ranks, the lowest pid) among the files with
  // steps. A rank that recorded no step while another did (it died, or was stopped, before its
  // steps reached its file) is said as such and left out (issue 46: rank 0 dead within 5 s, the
  // other rank with 59 steps, was refused as "no steps were found").
  const auto key = [](const StepFile& g) {
    return std::make_tuple(g.steps.empty(), g.rank.value_or(1 << 30), g.pid);
  };
  std::size_t ref = 0;
  for (std::size_t i = 1; i < files.size(); ++i)
    if (key(files[i]) < key(files[ref])) ref = i;
  if (!files[ref].steps.empty())
    for (const auto& g : files)
      if (g.steps.empty())
        r.notes.push_back(process_name(g) + " recorded no step" +
                          (g.ended != "exit" ? " (it did not exit normally: it died or was "
                                               "stopped before its steps reached its file)"
                                             : "") +
                          "; the other ranks' steps are compared");
  const StepFile& f = files[ref];
  r.source = f.source;
  r.period = f.period;
  r.steps = f.steps.size();
  r.check = f.check;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i == ref) continue;
    const StepFile& o = files[i];
    if (o.steps.empty() && !f.steps.empty()) continue;  // said above
    if (o.source != f.source || o.period != f.period || o.configs != f.configs ||
        o.warmup != f.warmup) {
      r.problems.push_back(process_name(o) + " found other steps than " + process_name(f) +
                           " (source " + o.source + ", period " + std::to_string(o.period) +
                           " against " + f.source + ", " + std::to_string(f.period) + ")");
      continue;
    }
    const std::size_t common = std::min(o.steps.size(), f.steps.size());
    for (std::size_t k = 0; k < common; ++k)
      if (o.steps[k].step != f.steps[k].step || o.steps[k].config != f.steps[k].config) {
        r.problems.push_back(process_name(o) + " ran step " + std::to_string(o.steps[k].step) +
                             " under another configuration than " + process_name(f));
        break;
      }
  }
  const int n = static_cast<int>(f.configs.size());
  if (f.source == "none" || f.steps.empty()) {
    r.refused = "no steps were found: the program issued no repeating sequence of collectives "
                "and marked no step (ccoverlap.step() or --step-nvtx)";
    return r;
  }
  if (!r.problems.empty()) {
    r.refused = "the ranks did not find the same steps (see above)";
    return r;
  }
  if (n < 1) {
    r.refused = "the step file names no configuration";
    return r;
  }
  // Rounds: one regular step of each configuration.
  std::map<int64_t, std::vector<const StepTime*>> rounds;
  for (const auto& s : f.steps) {
    const int64_t rd = round_of_step(s.step, n, f.warmup);
    if (rd < 0) continue;
    if (!s.regular) ++r.irregular;
    auto& v = rounds[rd];
    v.resize(static_cast<std::size_t>(n), nullptr);
    if (s.config >= 0 && s.config < n) v[static_cast<std::size_t>(s.config)] = &s;
  }
  bool all_gpu = true;
  std::vector<std::vector<const StepTime*>> used;
  for (const auto& [rd, v] : rounds) {
    const bool complete = std::all_of(v.begin(), v.end(), [](const StepTime* s) {
      return s != nullptr && s->regular;
    });
    if (!complete) continue;
    for (const StepTime* s : v) all_gpu = all_gpu && s->gpu_ms.has_value();
    used.push_back(v);
  }
  r.rounds = used.size();
  r.metric = all_gpu && !used.empty() ? "gpu" : "host";
  if (used.empty()) {
    r.refused = "no complete round of steps after the warm-up of " + std::to_string(f.warmup) +
                " steps (" + std::to_string(f.steps.size()) + " steps recorded): run more steps";
    return r;
  }
  // A step's time is the mean over the ranks of that step's time on each (every file agreed on
  // the steps and their configurations above): each rank times a step from its own arrival at the
  // boundary, so one rank's steps trade time with their neighbours as the ranks' arrival order
  // changes, and the more so where the ranks meet less often (nocomm meets once per step).
  std::vector<std::map<uint64_t, const StepTime*>> others;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i == ref) continue;
    auto& m = others.emplace_back();
    for (const auto& s : files[i].steps) m[s.step] = &s;
  }
  auto one = [&](const StepTime* s) -> std::optional<double> {
    if (r.metric == "gpu") return s->gpu_ms;
    return s->host_ms;
  };
  auto value = [&](const StepTime* s) {
    double sum = *one(s);
    int n_ranks = 1;
    for (const auto& m : others) {
      const auto it = m.find(s->step);
      if (it == m.end() || it->second->config != s->config) continue;
      if (const auto v = one(it->second)) {
        sum += *v;
        ++n_ranks;
      }
    }
    r.ranks = std::max(r.ranks, static_cast<std::size_t>(n_ranks));
    return sum / n_ranks;
  };
  std::vector<std::vector<double>> per(static_cast<std::size_t>(n));
  for (const auto& v : used)
    for (int c = 0; c < n; ++c) per[static_cast<std::size_t>(c)].push_back(value(v[static_cast<std::size_t>(c)]));
  for (int c = 0; c < n; ++c) {
    ConfigResult cr;
    cr.name = f.configs[static_cast<std::size_t>(c)];
    // The same item twice (an A/A comparison, which must come out within noise): tell them apart.
    if (std::count(f.configs.begin(), f.configs.end(), cr.name) > 1)
      cr.name += " [" + std::to_string(c + 1) + "]";
    cr.summary = summarize(per[static_cast<std::size_t>(c)]);
    if (c > 0) cr.vs_first = paired_difference(per[0], per[static_cast<std::size_t>(c)]);
    r.configs.push_back(cr);
  }
  return r;
}

namespace {

// The rotation's check, under the table: where it stopped the comparison, or that it went on.
std::string format_check(const CompareReport& r) {
  if (!r.check) return "";
  const RotationCheck& c = *r.check;
  const std::string base = r.configs.empty() ? "the first configuration" : "'" + r.configs[0].name + "'";
  std::string out;
  if (c.stopped)
    out = "# compare stopped at step " + std::to_string(c.at_step) + ": " + c.why +
          ". Every later step ran under " + base +
          ". cco run --no-diagnose compares to the end.\n";
  else
    out = "# compare checked at step " + std::to_string(c.at_step) + ": " + c.why + ".\n";
  if (!c.diagnosis.empty()) out += "#   the diagnosis of " + base + "'s steps: " + c.diagnosis + "\n";
  return out;
}

// The price of communication (model::kNoComm compared): what the steps cost over the same steps
// whose collectives move no data, the ceiling of every overlap lever (docs/STEPS.md).
std::string format_price(const CompareReport& r) {
  const auto c = nocomm_item(r);
  if (!c) return "";
  const std::string base = "'" + r.configs[0].name + "'";
  const auto& cr = r.configs[*c];
  if (!cr.vs_first.enough)
    return "# the price of communication: too few rounds for a 95% interval (run at least 6)\n";
  const double med = -cr.vs_first.median, lo = -cr.vs_first.hi, hi = -cr.vs_first.lo;
  const double step = r.configs[0].summary.median;
  char share[48] = "";
  if (step > 0) std::snprintf(share, sizeof share, " (%.1f%% of ", 100.0 * med / step);
  std::string out = "# the price of communication: " + ms(med) + " ms [" + ms(lo) + ", " +
                    ms(hi) + "] per step" + (step > 0 ? share + base + "'s step)" : "") +
                    ": what " + base + "'s steps cost over the same steps whose collectives "
                    "move no data.";
  if (cr.vs_first.contains_zero())
    out += " Within noise: no overlap control can win here.\n";
  else if (med < 0)
    out += " Negative: the steps without data movement were slower (noise, or a program that "
           "waits on what it receives).\n";
  else
    out += " No overlap control can win more than this.\n";
  return out;
}

}  // namespace

std::optional<std::size_t> nocomm_item(const CompareReport& r) {
  for (std::size_t c = 1; c < r.configs.size(); ++c)
    if (model::is_nocomm(r.configs[c].name)) return c;
  return std::nullopt;
}

std::string format_report(const CompareReport& r) {
  std::string out;
  for (const auto& n : r.notes) out += "cco: compare: " + n + "\n";
  for (const auto& p : r.problems) out += "cco: compare: " + p + "\n";
  if (!r.refused.empty()) return out + "cco: compare: refused: " + r.refused + "\n" + format_check(r);
  out += "# compare: " + std::to_string(r.rounds) + " rounds of " +
         std::to_string(r.configs.size()) + " steps (steps found from " + r.source +
         (r.period > 0 ? ", " + std::to_string(r.period) + " collectives each" : "") + "), " +
         r.metric + " time per step in ms" +
         (r.ranks > 1 ? " (each step the mean of " + std::to_string(r.ranks) + " ranks')" : "") +
         ", " + std::to_string(r.files) + " step file" + (r.files == 1 ? "" : "s") +
         (r.irregular ? ", " + std::to_string(r.irregular) + " irregular steps left out" : "") +
         "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-32s %10s %10s %10s  %s\n", "#config", "median", "q1", "q3",
                "paired difference to the first (median, 95% interval)");
  out += line;
  const double base = r.configs.empty() ? 0 : r.configs[0].summary.median;
  for (std::size_t c = 0; c < r.configs.size(); ++c) {
    const auto& cr = r.configs[c];
    std::string diff;
    if (c == 0) {
      diff = "(baseline)";
    } else if (!cr.vs_first.enough) {
      diff = signed_ms(cr.vs_first.median) + " ms; too few rounds (" +
             std::to_string(cr.vs_first.pairs) + ") for a 95% interval: run at least 6";
    } else {
      diff = signed_ms(cr.vs_first.median) + " ms [" + signed_ms(cr.vs_first.lo) + ", " +
             signed_ms(cr.vs_first.hi) + "]";
      if (base > 0) diff += " " + pct(100.0 * cr.vs_first.median / base);
      diff += cr.vs_first.contains_zero() ? "  within noise"
              : cr.vs_first.median < 0  ? "  faster"
                                          : "  slower";
    }
    std::snprintf(line, sizeof line, "%-32s %10s %10s %10s  ", cr.name.c_str(),
                  ms(cr.summary.median).c_str(), ms(cr.summary.q1).c_str(),
                  ms(cr.summary.q3).c_str());
    out += line + diff + "\n";
  }
  return out + format_price(r) + format_check(r);
}

std::string to_json(const CompareReport& r) {
  nlohmann::json j;
  model::stamp_schema(j, kCompareSchema);
  j["metric"] = r.metric;
  j["files"] = r.files;
  j["ranks"] = r.ranks;
  j["steps"] = r.steps;
  j["rounds"] = r.rounds;
  j["irregular"] = r.irregular;
  j["period"] = r.period;
  j["source"] = r.source;
  j["problems"] = r.problems;
  j["notes"] = r.notes;
  j["refused"] = r.refused.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.refused);
  j["check"] = r.check ? check_to_json(*r.check) : nlohmann::json(nullptr);
  auto& cs = j["configs"] = nlohmann::json::array();
  for (std::size_t c = 0; c < r.configs.size(); ++c) {
    const auto& cr = r.configs[c];
    nlohmann::json e = {{"name", cr.name},
                        {"n", cr.summary.n},
                        {"median_ms", cr.summary.median},
                        {"q1_ms", cr.summary.q1},
                        {"q3_ms", cr.summary.q3},
                        {"min_ms", cr.summary.min},
                        {"max_ms", cr.summary.max}};
    if (c > 0)
      e["vs_first"] = {{"pairs", cr.vs_first.pairs},
                       {"median_ms", cr.vs_first.median},
                       {"lo_ms", cr.vs_first.enough ? nlohmann::json(cr.vs_first.lo) : nlohmann::json(nullptr)},
                       {"hi_ms", cr.vs_first.enough ? nlohmann::json(cr.vs_first.hi) : nlohmann::json(nullptr)},
                       {"coverage", cr.vs_first.coverage},
                       {"within_noise", cr.vs_first.contains_zero()}};
    cs.push_back(e);
  }
  return j.dump(1) + "\n";
}

CompareReport parse_compare(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) { return std::runtime_error(what + ": " + why); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw bad("not valid JSON");
  }
  std::string found;
  const auto m = model::match_schema(j, kCompareSchema, kCompareSchemaLegacy, &found);
  if (m == model::SchemaMatch::kOtherVersion)
    throw bad("a comparison of another version (" + found + "): this cco reads " +
              std::string(kCompareSchema) + " 1.x");
  if (m != model::SchemaMatch::kYes)
    throw bad(std::string("not a comparison (schema must be \"") + kCompareSchema + "\")");
  CompareReport r;
  try {
    auto count = [](const nlohmann::json& v) {
      return static_cast<std::size_t>(model::whole_number(v, "a count"));
    };
    r.metric = j.at("metric").get<std::string>();
    r.files = count(j.at("files"));
    if (const auto k = j.find("ranks"); k != j.end())  // optional: 1.x files before it
      r.ranks = std::max<std::size_t>(1, std::min<std::size_t>(count(*k), 1u << 20));
    r.steps = count(j.at("steps"));
    r.rounds = count(j.at("rounds"));
    r.irregular = count(j.at("irregular"));
    r.period = static_cast<int>(std::min<std::size_t>(count(j.at("period")), 1u << 20));
    r.source = j.at("source").get<std::string>();
    r.problems = j.at("problems").get<std::vector<std::string>>();
    if (const auto n = j.find("notes"); n != j.end())  // optional: 1.x files before it
      r.notes = n->get<std::vector<std::string>>();
    if (!j.at("refused").is_null()) r.refused = j.at("refused").get<std::string>();
    if (const auto c = j.find("check"); c != j.end() && !c->is_null())  // optional
      r.check = check_from_json(*c);
    const auto& cs = j.at("configs");
    // A refused comparison (no steps found, ...) has no configurations; any other has 1 to 64.
    if (!cs.is_array() || cs.size() > 64 || (cs.empty() && r.refused.empty()))
      throw std::runtime_error("configs: an array of 1 to 64 configurations (none only when the "
                               "comparison was refused)");
    for (const auto& e : cs) {
      ConfigResult c;
      c.name = e.at("name").get<std::string>();
      c.summary.n = count(e.at("n"));
      c.summary.median = e.at("median_ms").get<double>();
      c.summary.q1 = e.at("q1_ms").get<double>();
      c.summary.q3 = e.at("q3_ms").get<double>();
      c.summary.min = e.at("min_ms").get<double>();
      c.summary.max = e.at("max_ms").get<double>();
      if (e.contains("vs_first")) {
        const auto& v = e.at("vs_first");
        c.vs_first.pairs = count(v.at("pairs"));
        c.vs_first.median = v.at("median_ms").get<double>();
        c.vs_first.enough = !v.at("lo_ms").is_null() && !v.at("hi_ms").is_null();
        if (c.vs_first.enough) {
          c.vs_first.lo = v.at("lo_ms").get<double>();
          c.vs_first.hi = v.at("hi_ms").get<double>();
        }
        c.vs_first.coverage = v.at("coverage").get<double>();
      }
      r.configs.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    throw bad(std::string("bad field: ") + e.what());
  }
  return r;
}

}  // namespace cco::steps
