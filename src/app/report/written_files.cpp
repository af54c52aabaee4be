#include "report/written_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "model/limits.hpp"
#include "model/schema.hpp"
#include "steps/search.hpp"

namespace cco::report {
namespace {

using nlohmann::json;

template <class J>
std::string str_of(const J& v) {
  if (v.is_string()) return v.template get<std::string>();
  if (v.is_null()) return "-";
  if (v.is_number_float()) {
    const double d = v.template get<double>();
    return std::isfinite(d) ? fmt::format("{:.4g}", d) : "-";
  }
  if (v.is_object() || v.is_array()) return "...";
  return v.dump();
}

// A table of an array of flat objects: the first object's scalar keys as columns, at most
// `max_rows` rows (the rest counted).
template <class J>
std::string rows_table(const J& rows, std::size_t max_rows = 200) {
  if (!rows.is_array() || rows.empty() || !rows[0].is_object()) return "";
  std::vector<std::string> keys;
  for (const auto& [k, v] : rows[0].items())
    if (!v.is_object() && !v.is_array()) keys.push_back(k);
  std::vector<std::vector<std::string>> cells;
  cells.push_back(keys);
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    std::vector<std::string> line;
    for (const auto& k : keys)
      line.push_back(rows[i].is_object() && rows[i].contains(k) ? str_of(rows[i][k]) : "");
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(keys.size(), 0);
  for (const auto& line : cells)
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], std::min<std::size_t>(line[c].size(), 40));
  std::string out;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    std::string line = r == 0 ? "#" : " ";
    for (std::size_t c = 0; c < cells[r].size(); ++c) {
      std::string cell = cells[r][c].substr(0, 40);
      line += cell + std::string(width[c] - cell.size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (rows.size() > max_rows) out += fmt::format("# ... {} more rows\n", rows.size() - max_rows);
  return out;
}

std::string tune_decision(const json& doc, const std::string& path) {
  steps::TuneFile f;
  try {
    f = steps::parse_tune_file(doc.dump(), path);
  } catch (const std::runtime_error& e) {
    throw model::Error(e.what());
  }
  std::string out = fmt::format(
      "# decision file ({}): {} candidates, warm-up {} steps, epoch {}; decided by {}{}{}\n",
      path, f.candidates.size(), f.warmup, f.epoch,
      f.decider.rank ? "rank " + std::to_string(*f.decider.rank) : "pid " + std::to_string(f.decider.pid),
      f.decider.device_name.empty() ? "" : " on " + f.decider.device_name,
      f.decider.sms > 0 ? fmt::format(" ({} SMs)", f.decider.sms) : "");
  for (std::size_t i = 0; i < f.candidates.size(); ++i)
    out += fmt::format("#   candidate {}: {}\n", i, f.candidates[i]);
  out += "#stage  first step  candidates  rounds\n";
  for (std::size_t s = 0; s < f.stages.size(); ++s)
    out += fmt::format(" {:<5}  {:>10}  {:>10}  {:>6}\n", s, f.stages[s].start, f.stages[s].size,
                       f.stages[s].rounds);
  if (f.decisions.empty()) out += "# no decision yet\n";
  for (const auto& d : f.decisions) {
    std::string set;
    for (int c : d.set) {
      if (!set.empty()) set += ", ";
      set += c >= 0 && static_cast<std::size_t>(c) < f.candidates.size() ? f.candidates[static_cast<std::size_t>(c)]
                                                                         : std::to_string(c);
    }
    out += fmt::format("at step {}: {} {}: {}{}\n", d.at_step, d.final ? "final," : "stage " + std::to_string(d.stage) + ",",
                       d.final ? "runs" : "runs", set, d.why.empty() ? "" : " (" + d.why + ")");
  }
  if (!f.diagnosis.empty()) out += "# diagnosis of candidate 0's first steps: " + f.diagnosis + "\n";
  return out;
}

std::string trace_analysis(const json& doc, const std::string& path) {
  const std::string schema = str_of(doc["schema"]);
  std::string out = doc.contains("inputs") && doc["inputs"].is_array()
                        ? fmt::format("# the JSON of cco report ({}, {}): the analysis of {} input(s)\n",
                                      schema, path, doc["inputs"].size())
                        : fmt::format("# the JSON of cco report ({}, {}): a step diagnosis\n", schema, path);
  const json* d = doc.contains("diagnosis") ? &doc["diagnosis"] : &doc;  // or a step_diagnosis
  if (d->is_object() && d->contains("sentence") && (*d)["sentence"].is_string())
    out += (*d)["sentence"].get<std::string>() + "\n";
  if (doc.contains("ranks") && doc["ranks"].is_array()) {
    out += "# whole trace per rank (ms)\n";
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    json all = doc["ranks"];
    if (doc.contains("all") && doc["all"].is_object()) all.push_back(doc["all"]);
    for (const auto& r : all) {
      if (!r.is_object()) continue;
      auto ms = [&](const char* k) {
        return r.contains(k) && r[k].is_number() ? json(r[k].get<double>() / 1e6) : json(nullptr);
      };
      nlohmann::ordered_json row;
      row["rank"] = &r == &all.back() && doc.contains("all") ? json("all")
                    : r.contains("rank")                     ? json(str_of(r["rank"]))
                                                             : json("-");
      for (const char* k : {"span", "compute_busy", "comm_busy", "overlapped", "exposed_comm"})
        row[k] = ms((std::string(k) + "_ns").c_str());
      rows.push_back(std::move(row));
    }
    out += rows_table(rows);
  }
  if (doc.contains("kernels") && doc["kernels"].is_array() && !doc["kernels"].empty())
    out += fmt::format("# {} kinds of kernel; cco report on the traces themselves shows them\n",
                       doc["kernels"].size());
  return out;
}

std::string checks(const json& doc, const std::string& path) {
  const bool ok = doc.contains("ok") && doc["ok"].is_boolean() && doc["ok"].get<bool>();
  std::string out = fmt::format("# cco doctor ({}): {}\n", path,
                                ok ? "every check passed" : "some check failed");
  if (doc.contains("checks") && doc["checks"].is_array())
    for (const auto& c : doc["checks"]) {
      if (!c.is_object()) continue;
      out += fmt::format("{:<5} {}: {}", str_of(c.value("status", json())), str_of(c.value("name", json())),
                         str_of(c.value("detail", json())));
      const std::string fix = c.contains("fix") ? str_of(c["fix"]) : "-";
      out += fix == "-" || fix.empty() ? "\n" : " (" + fix + ")\n";
    }
  return out;
}

std::string footprint(const json& doc, const std::string& path) {
  std::string out = fmt::format("# cco plan --json ({}): a kernel's footprint on {} ({}, {} SMs)\n",
                                path, str_of(doc.value("device", json())), str_of(doc.value("arch", json())),
                                str_of(doc.value("sm_count", json())));
  if (doc.contains("footprint") && doc["footprint"].is_object()) {
    const auto& f = doc["footprint"];
    out += fmt::format("# footprint: {} threads, {} registers, {} B static and {} B dynamic shared memory\n",
                       str_of(f.value("threads", json())), str_of(f.value("regs", json())),
                       str_of(f.value("static_smem", json())), str_of(f.value("dynamic_smem", json())));
  }
  if (doc.contains("occupancy") && doc["occupancy"].is_object())
    out += fmt::format("# blocks per SM: {} (limited by {})\n",
                       str_of(doc["occupancy"].value("blocks_per_sm", json())),
                       str_of(doc["occupancy"].value("limiter", json())));
  if (doc.contains("plans")) out += rows_table(doc["plans"]);
  return out;
}

}  // namespace

std::optional<std::string> describe_written(const json& doc, const std::string& path) {
  if (!doc.is_object()) return std::nullopt;
  const auto s = doc.find("schema");
  if (s == doc.end() || !s->is_string()) return std::nullopt;
  const std::string schema = s->get<std::string>();
  std::string found;
  if (const auto m = model::match_schema(doc, steps::kTuneSchema, steps::kTuneSchemaLegacy, &found);
      m != model::SchemaMatch::kNo) {
    if (m == model::SchemaMatch::kOtherVersion)
      throw model::Error(path + ": " + found + " is a version this cco does not read (" +
                         steps::kTuneSchema + " 1.x): written by another version of cco?");
    return tune_decision(doc, path);
  }
  // The kinds below are views: read leniently (only the major version is checked).
  static const char* const kViews[] = {
      model::kTraceAnalysisSchema, model::kStepDiagnosisSchema, model::kCompareSchema,
      model::kSweepReportSchema,   model::kResultReportSchema,  model::kDoctorSchema,
      model::kInfoSchema,          model::kFootprintSchema};
  const bool old_footprint = schema == model::kPlanSchema && doc.contains("footprint") &&
                             doc.contains("plans") && !doc.contains("tuning");
  if (std::find(std::begin(kViews), std::end(kViews), schema) == std::end(kViews) && !old_footprint)
    return std::nullopt;
  if (!old_footprint && model::match_schema(doc, schema, {}, &found) != model::SchemaMatch::kYes)
    throw model::Error(path + ": " + found + " is a version this cco does not read (" + schema +
                       " 1.x): written by another version of cco?");
  if (schema == model::kTraceAnalysisSchema || schema == model::kStepDiagnosisSchema)
    return trace_analysis(doc, path);
  if (schema == model::kDoctorSchema) return checks(doc, path);
  if (old_footprint || schema == model::kFootprintSchema) return footprint(doc, path);
  if (schema == model::kInfoSchema) {
    std::string out = fmt::format("# cco info --json ({})\n", path);
    if (doc.contains("versions") && doc["versions"].is_object())
      for (const auto& [k, v] : doc["versions"].items()) out += fmt::format("{}: {}\n", k, str_of(v));
    const std::size_t n = doc.contains("devices") && doc["devices"].is_array() ? doc["devices"].size() : 0;
    out += fmt::format("devices: {}\n", n);
    if (n) out += rows_table(doc["devices"]);
    return out;
  }
  // A comparison or a results table of cco report: its rows.
  std::string out = fmt::format("# the JSON of cco report ({}, {})", schema, path);
  for (const char* k : {"kind", "input", "a", "b"})
    if (doc.contains(k) && doc[k].is_string()) out += fmt::format(", {} {}", k, doc[k].get<std::string>());
  out += "\n";
  if (doc.contains("rows")) out += rows_table(doc["rows"]);
  return out;
}

}  // namespace cco::report
