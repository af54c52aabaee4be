// The per-step diagnosis as JSON (schema ccoverlap.step_diagnosis; docs/TRACE.md, "Steps: where
// the time goes"): every part of every kept step, the bounds, the spreads and the comparison with
// an alone trace. GPU-free (part of cco.core).
#include "trace/diagnosis.hpp"
#include "trace/levers.hpp"

#include "model/schema.hpp"

namespace cco::trace {

using nlohmann::json;

namespace {

json parts_json(const StepParts& p) {
  json j;
  j["rank"] = p.rank;
  j["step"] = p.step;
  if (p.program_step >= 0) j["program_step"] = p.program_step;
  j["begin_ns"] = p.begin_ns;
  j["end_ns"] = p.end_ns;
  for (const auto& [name, f] : detail::part_fields()) j[std::string(name) + "_ns"] = p.*f;
  j["compute_slowed_spread_ns"] = p.compute_slowed_spread_ns;
  j["compute_estimated"] = p.compute_estimated;
  json src = json::object();
  for (const auto& [s, ns] : p.compute_alone_sources) src[to_string(s)] = ns;
  j["compute_alone_sources_ns"] = src;
  j["slowest_peer"] = p.slowest_peer >= 0 ? json(p.slowest_peer) : json(nullptr);
  j["slowest_peer_lag_ns"] = p.slowest_peer_lag_ns;
  j["compute_kernels"] = p.compute_kernels;
  j["comm_kernels"] = p.comm_kernels;
  j["regathers"] = p.regathers;  // FSDP2's backward all-gathers (regather_ns: their GPU cost)
  const LeverBounds lb = lever_bounds(p);
  json bounds = json::object();
  for (const auto& b : kBoundColumns) bounds[b.json] = lb.*(b.field);
  j["bounds_ns"] = std::move(bounds);
  j["comm_unsized_kernels"] = p.comm_unsized_kernels;
  return j;
}

}  // namespace

json diagnosis_to_json(const Diagnosis& d) {
  json j;
  model::stamp_schema(j, model::kStepDiagnosisSchema);
  if (!d.headline.empty()) j["headline"] = d.headline;
  j["sentence"] = d.sentence;
  j["steps"] = {{"source", d.steps.source},
                {"detail", d.steps.detail},
                {"found", d.steps.found},
                {"warmup", d.steps.warmup}};
  j["critical_rank"] = d.critical_rank >= 0 ? json(d.critical_rank) : json(nullptr);
  j["partial"] = d.partial;
  json ranks = json::array();
  for (const auto& r : d.ranks) {
    json x;
    x["rank"] = r.rank;
    x["typical"] = parts_json(r.steps[r.typical]);
    json sp = json::object();
    for (const auto& [name, s] : r.spread)
      sp[name + "_ms"] = {{"median", s.median}, {"q1", s.q1}, {"q3", s.q3}};
    x["spread"] = sp;
    json steps = json::array();
    for (const auto& p : r.steps) steps.push_back(parts_json(p));
    x["steps"] = steps;
    ranks.push_back(std::move(x));
  }
  j["ranks"] = ranks;
  json levers = json::array();  // trace/levers.hpp: largest bound first
  for (const auto& l : ranked_levers(d))
    levers.push_back({{"lever", l.name}, {"bound_ns", l.bound_ns}, {"rank", l.rank},
                      {"waits_for", l.peer >= 0 ? json(l.peer) : json(nullptr)}, {"how", l.how}});
  j["levers"] = levers;
  json va = json::array();
  for (const auto& v : d.versus_alone)
    va.push_back({{"rank", v.rank},
                  {"alone_trace", v.alone_source},
                  {"steps", v.steps},
                  {"alone_steps", v.alone_steps},
                  {"time_ms", v.time_ms},
                  {"alone_time_ms", v.alone_time_ms},
                  {"difference_ms", v.difference_ms()},
                  {"time_median_ms", v.time_median_ms},
                  {"alone_time_median_ms", v.alone_time_median_ms},
                  {"compute_slowed_ms", v.compute_slowed_ms},
                  {"compute_slowed_memory_ms", v.compute_slowed_memory_ms},
                  {"compute_slowed_sms_ms", v.compute_slowed_sms_ms},
                  {"compute_slowed_other_ms", v.compute_slowed_other_ms},
                  {"compute_only_here_ms", v.compute_only_here_ms},
                  {"exposed_ms", v.exposed_ms},
                  {"idle_ms", v.idle_ms}});
  j["versus_alone"] = va;
  j["notes"] = d.notes;
  return j;
}

}  // namespace cco::trace
