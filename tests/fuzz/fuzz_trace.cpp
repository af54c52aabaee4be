// Kernel traces read by `cco report` (cco::trace::parse_trace and what report_trace does with
// the result). Contract: the fast reader and nlohmann's give the same result or error line;
// parse_trace returns a Trace or throws model::Error; normalising, occupancy filling, the analysis, the timeline SVG and writing the trace back never fail on a
// trace it accepted (timeline_svg may throw model::Error for an empty window), and a written
// trace reads back.
#include <algorithm>

#include "fuzz_common.hpp"
#include "model/limits.hpp"
#include "trace/analysis.hpp"
#include "trace/format.hpp"
#include "report/diagnosis_text.hpp"
#include "report/timeline.hpp"
#include "trace/diagnosis.hpp"

namespace {

// What a reader made of the text: the document and the trace as text, or its error line.
template <class F>
std::string outcome(F&& read) {
  try {
    const cco::trace::JsonOrTrace r = read();
    return r.doc.dump() + "\n" + (r.trace ? cco::trace::trace_text(*r.trace) : std::string("-"));
  } catch (const cco::model::Error& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  // The fast reader and nlohmann's agree on every input: the same result or the same line.
  {
    const std::string text(fuzz::as_text(data, size));
    if (outcome([&] { return trace::parse_json_or_trace(text, "fuzz.json"); }) !=
        outcome([&] { return trace::detail::parse_json_or_trace_dom(text, "fuzz.json"); }))
      __builtin_trap();
  }
  // So do they when they keep another tool's other events (cco report --merge), and a trace read
  // so is written as a file that reads back.
  {
    const std::string text(fuzz::as_text(data, size));
    const trace::ReadOptions keep{.keep_events = true};
    if (outcome([&] { return trace::parse_json_or_trace(text, "fuzz.json", keep); }) !=
        outcome([&] { return trace::detail::parse_json_or_trace_dom(text, "fuzz.json", keep); }))
      __builtin_trap();
    try {
      const trace::JsonOrTrace r = trace::parse_json_or_trace(text, "fuzz.json", keep);
      if (r.trace && !r.trace->kernels.empty()) {
        try {
          const trace::Trace back = trace::parse_trace(trace::trace_text(*r.trace), "merged");
          if (back.kernels.size() != r.trace->kernels.size())
            fuzz::violated("a merged file cco wrote reads back with other kernels");
        } catch (const model::Error& e) {
          fuzz::violated("parse_trace refuses a merged file cco wrote", e.what());
        }
      }
    } catch (const model::Error&) {
    }
  }
  trace::Trace t;
  try {
    t = trace::parse_trace(fuzz::as_text(data, size), "fuzz.json");
  } catch (const model::Error&) {
    return 0;
  }
  if (t.kernels.empty()) return 0;  // `cco report` refuses it here
  trace::fill_blocks_per_sm(t);
  int64_t first = t.kernels.front().start_ns, last = t.kernels.front().end_ns;
  for (const auto& k : t.kernels) {
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
  }
  const auto an = trace::analyze(t);
  (void)trace::analysis_to_json(an).dump();
  // The step diagnosis never fails on an accepted trace, and its parts add up.
  {
    const trace::Diagnosis d = trace::diagnose(t);
    for (const auto& r : d.ranks)
      for (const auto& p : r.steps)
        if (p.parts_ns() != p.time_ns) __builtin_trap();
    (void)trace::diagnosis_to_json(d).dump();
    (void)report::format_diagnosis(d);
    (void)report::format_diagnosis(d, report::TableFormat::Csv);
    trace::DiagnosisOptions o;
    o.steps.source = "collectives";
    o.alone = {&t};
    (void)trace::diagnose(t, o);
  }
  // A window over the middle half, as --from/--to give it.
  trace::AnalysisOptions w;
  const int64_t quarter = static_cast<int64_t>((static_cast<__int128>(last) - first) / 4);
  w.from_ns = first + quarter;
  w.to_ns = last - quarter;
  if (*w.to_ns <= *w.from_ns) return 0;  // every kernel at one instant: `cco report` refuses the window
  (void)trace::analyze(t, w);
  for (const auto& r : t.ranks) (void)trace::communication_waits(t, r.rank, w);
  try {
    report::TimelineOptions to;
    to.width = 600;
    (void)report::timeline_svg(t, to).str();
    to.from_ns = w.from_ns;
    to.to_ns = w.to_ns;
    (void)report::timeline_svg(t, to).str();
  } catch (const model::Error&) {
  }
  const std::string written = trace::trace_to_json(t).dump();
  try {
    (void)trace::parse_trace(written, "written");
  } catch (const model::Error& e) {
    fuzz::violated("parse_trace refuses what trace_to_json wrote", e.what());
  }
  return 0;
}
