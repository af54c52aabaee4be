// cco report: reads trace files (merged into one view), or one or two results (bench, step, tune);
// prints the overlap analysis (or the result's rows, or two compared), and draws a timeline (or
// the result's chart) as SVG.
#include "cli/report_cmd.hpp"

#include "model/read_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/parse.hpp"
#include "cli/report_args.hpp"
#include "model/limits.hpp"
#include "model/schema.hpp"
#include "model/types.hpp"
#include "model/occupancy.hpp"
#include "report/compare.hpp"
#include "report/diagnosis_text.hpp"
#include "trace/gzip.hpp"
#include "steps/paired.hpp"
#include "steps/record.hpp"
#include "steps/compare.hpp"
#include "steps/search.hpp"
#include "report/results.hpp"
#include "report/run_output.hpp"
#include "report/written_files.hpp"
#include "report/svg.hpp"
#include "report/sweep.hpp"
#include "report/timeline.hpp"
#include "trace/analysis.hpp"
#include "trace/diagnosis.hpp"
#include "trace/format.hpp"

namespace cco::cli {
namespace {

using nlohmann::json;

using Args = ReportArgs;

// Standard input ("-"), read with the limit of a file: one clear line past it, never all memory.
std::string read_stdin(std::size_t limit) {
  std::string text;
  char buf[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    text.append(buf, n);
    if (text.size() > limit)
      throw model::Error("standard input: more than " +
                         model::format_bytes(static_cast<int64_t>(limit)) + " (the limit for this input)");
  }
  if (std::ferror(stdin)) throw model::Error("standard input: cannot be read");
  return text;
}

// The file as JSON and, for a trace, the trace read in the same pass (trace::parse_json_or_trace:
// the events never held as a document).
trace::JsonOrTrace read_json_file(const std::string& path, const trace::ReadOptions& opts = {}) {
  // Every input with the largest limit of what cco writes (a trace, 2 GiB: cco run --trace caps
  // nothing, and 256 MiB refused traces cco itself had written; issue 46), the file type being
  // known only once it is read.
  // PyTorch's profiler writes .json.gz: read as it inflates (trace::read_json_or_trace_file).
  return trace::read_json_or_trace_file(
      path, path == "-" ? read_stdin(model::kTraceFileLimit) : model::read_file(path, model::kTraceFileLimit),
      opts);
}

// The trace of a file read by read_json_file, or the trace reader's one line on what it lacks.
trace::Trace trace_of(trace::JsonOrTrace&& f, const std::string& path) {
  if (f.trace) return std::move(*f.trace);
  return trace::trace_from_json(f.doc, path);
}

// An output, whole or not at all (WriteError: "cannot write 'PATH' (...)"); a name ending in .gz
// is written as gzip, as it says (and as cco report and PyTorch's readers take it).
void write_text(const std::string& path, const std::string& text) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  model::write_file(path, gz ? trace::gzip(text, path) : text);
}

std::string us(int64_t ns) {
  return fmt::format("{:.1f}", static_cast<double>(ns) / 1e3);
}

std::map<int, std::size_t> ranges_per_rank(const trace::Trace& t) {
  std::map<int, std::size_t> n;
  for (const auto& r : t.ranges) ++n[r.rank];
  return n;
}

std::string analysis_row(const trace::OverlapAnalysis& a) {
  const std::string rank = a.rank >= 0 ? std::to_string(a.rank) : "all";
  const std::string dev = a.device >= 0 ? std::to_string(a.device) : "-";
  return fmt::format(
      " {:>5} {:>6} {:>8} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6} {:>6}\n",
      rank, dev, a.compute_kernels + a.comm_kernels, a.streams, us(a.span_ns),
      us(a.compute_busy_ns), us(a.comm_busy_ns), us(a.overlapped_ns), us(a.exposed_comm_ns),
      us(a.comm_wait_ns), us(a.longest_comm_wait.length()),
      std::isnan(a.efficiency) ? "n/a" : fmt::format("{:.2f}", a.efficiency),
      std::isnan(a.overlap_ratio) ? "n/a" : fmt::format("{:.2f}", a.overlap_ratio));
}

std::string format_analysis(const trace::Trace& t, const trace::TraceAnalysis& an, int64_t origin,
                            const Args& a, const trace::AnalysisOptions& window) {
  std::string o =
      "# ccoverlap report: the whole trace (start-up and the time between steps included; "
      "docs/TRACE.md)\n# input: " + t.source + "\n";
  std::size_t comm = 0, copies = 0;
  for (const auto& k : t.kernels) {
    comm += k.category == trace::KernelCategory::Communication;
    copies += k.is_copy();
  }
  o += fmt::format("# ranks: {}  streams: {}  kernels: {} ({} compute, {} communication{})\n",
                   t.ranks.size(), t.streams.size(), t.kernels.size(), t.kernels.size() - comm,
                   comm,
                   copies ? fmt::format(", of which {} copies on the copy engines", copies)
                          : std::string());
  for (const auto& r : t.ranks) {
    o += fmt::format("#  rank {} device {}", r.rank, r.device);
    if (!r.device_name.empty()) o += " " + r.device_name;
    if (!r.arch.empty()) o += " " + r.arch;
    if (r.sm_count > 0) o += fmt::format(" ({} SMs)", r.sm_count);
    if (!r.host.empty()) o += " host " + r.host;
    o += "\n";
    for (const auto& s : t.streams) {
      if (s.rank != r.rank) continue;
      o += fmt::format("#    stream {} priority {}{}\n", s.stream,
                       s.priority ? std::to_string(*s.priority) : "?",
                       s.label.empty() ? "" : " (" + s.label + ")");
    }
  }
  if (!a.range.empty())
    o += fmt::format("# window: NVTX range '{}': {} .. {} us after the first kernel (at {} ns)\n",
                     a.range, us(*window.from_ns - origin), us(*window.to_ns - origin), origin);
  else if (a.from_us || a.to_us)
    o += fmt::format("# window: {} .. {} us after the first kernel (at {} ns)\n",
                     a.from_us ? fmt::format("{}", *a.from_us) : "start",
                     a.to_us ? fmt::format("{}", *a.to_us) : "end", origin);
  o += fmt::format("# dropped records: {}{}\n", t.dropped_records,
                   t.dropped_records ? "  WARNING: the trace is incomplete; busy and overlapped "
                                       "times are lower bounds"
                                     : "");
  o += "# times in us; eff = overlapped / min(compute busy, comm busy): how much of the shorter "
       "part overlap hid; ovl = overlapped / comm busy: the share of communication hidden "
       "(Holistic Trace Analysis's overlap ratio); all = sums over ranks\n";
  o += fmt::format(
      "#{:>5} {:>6} {:>8} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6} {:>6}\n",
      "rank", "device", "kernels", "streams", "span", "compute", "comm", "overlapped", "exposed",
      "comm_wait", "longest", "eff", "ovl");
  o += fmt::format(
      "#{:>5} {:>6} {:>8} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6} {:>6}\n",
      "", "", "", "", "", "busy", "busy", "", "comm", "for SMs", "wait", "", "");
  for (const auto& r : an.ranks) o += analysis_row(r);
  if (an.ranks.size() > 1) o += analysis_row(an.all);
  const auto& w = an.all.longest_comm_wait;
  if (w.length() > 0)
    o += fmt::format(
        "# longest wait for SMs: rank {} stream {}: {} waited {} us from {} us ({})\n", w.rank,
        w.stream, report::short_kernel_name(w.kernel, 80), us(w.length()), us(w.begin_ns - origin),
        w.method == "launch" ? "ready = launch timestamp or end of the stream's previous kernel"
                             : "no launch timestamps: ready = end of the stream's previous kernel, "
                               "an upper bound");
  else
    o += "# longest wait for SMs: none seen\n";
  std::size_t shown = 0, step_marks = 0;
  for (const auto& m : t.marks) {
    if (m.name.rfind("cco step, epoch ", 0) == 0) {
      ++step_marks;  // the preload library's step boundaries: counted, not listed
      continue;
    }
    if (++shown > 50) {
      o += fmt::format("# ... {} marks in all (--json lists them)\n", t.marks.size());
      break;
    }
    o += fmt::format("# mark at {} us: {}{}\n", us(m.ts_ns - origin), m.name,
                     m.rank >= 0 ? fmt::format(" (rank {})", m.rank) : std::string());
  }
  if (step_marks > 0)
    o += fmt::format("# step marks of the preload library: {} (--json lists them)\n", step_marks);
  if (!t.ranges.empty()) {
    std::string per_rank;
    for (const auto& [rank, n] : ranges_per_rank(t))
      per_rank += fmt::format("{}rank {}: {}", per_rank.empty() ? "" : ", ", rank, n);
    o += fmt::format("# NVTX ranges: {} ({})\n", t.ranges.size(), per_rank);
  }
  for (const auto& n : t.notes) o += "# note: " + n + "\n";
  return o;
}

// The window of --range NAME: from the earliest start to the latest end of the ranges so named,
// one per rank (ranks of one run share the clock).
trace::AnalysisOptions range_window(const trace::Trace& t, const std::string& name) {
  std::map<int, std::size_t> per_rank;
  trace::AnalysisOptions w;
  for (const auto& r : t.ranges) {
    if (r.name != name) continue;
    ++per_rank[r.rank];
    w.from_ns = w.from_ns ? std::min(*w.from_ns, r.start_ns) : r.start_ns;
    w.to_ns = w.to_ns ? std::max(*w.to_ns, r.end_ns) : r.end_ns;
  }
  if (per_rank.empty()) {
    std::set<std::string> names;
    for (const auto& r : t.ranges) names.insert(r.name);
    std::string some;
    std::size_t shown = 0;
    for (const auto& n : names) {
      if (++shown > 8) {
        some += ", ...";
        break;
      }
      some += (some.empty() ? "'" : ", '") + n + "'";
    }
    throw model::Error(t.source + ": no NVTX range named '" + name + "'" +
                       (t.ranges.empty() ? std::string(" (the trace has no NVTX ranges)")
                                         : fmt::format(" (the trace has {} ranges named {})",
                                                       t.ranges.size(), some)));
  }
  for (const auto& [rank, n] : per_rank)
    if (n > 1)
      throw model::Error(t.source + ": " + std::to_string(n) + " NVTX ranges on rank " +
                         std::to_string(rank) + " are named '" + name +
                         "'; --range needs a name used once per rank (cut with --from/--to)");
  if (*w.to_ns <= *w.from_ns)
    throw model::Error(t.source + ": the NVTX range '" + name + "' has zero length");
  return w;
}

report::TableFormat table_format(const Args& a);

void refuse_step_options(const Args& a, const std::string& what) {
  if (a.steps.source != "auto" || !a.steps.name.empty() || a.steps.warmup || a.steps.config ||
      !a.alone.empty() ||
      a.alone_steps || a.whole || a.kernels)
    throw Usage("--steps, --warmup-steps, --alone, --whole and --kernels apply to traces, not to " +
                what);
}


// --kernels: every group of the breakdown as CSV or Markdown (one row per kernel name; copies
// per direction and size), largest total first.
std::string breakdown_table(const std::vector<trace::KernelGroup>& groups, report::TableFormat f) {
  const bool csv = f == report::TableFormat::Csv;
  auto row = [&](const std::vector<std::string>& v) { return report::table_row(v, f); };
  // The call column only where the trace knows library calls (cco run --trace of cuBLAS GEMMs).
  const bool calls = std::any_of(groups.begin(), groups.end(),
                                 [](const trace::KernelGroup& g) { return !g.call.empty(); });
  std::vector<std::string> head = {"name", "kind", "on", "count", "total_ms", "median_us", "bytes"};
  if (calls) head.push_back("call");
  std::string out = row(head);
  if (!csv) out += row(std::vector<std::string>(head.size(), "---"));
  for (const auto& g : groups) {
    std::vector<std::string> v = {
        g.name, trace::to_string(g.category), g.copy_engine ? "copy engines" : "SMs",
        std::to_string(g.count), fmt::format("{:.3f}", static_cast<double>(g.total_ns) / 1e6),
        fmt::format("{:.1f}", static_cast<double>(g.median_ns) / 1e3),
        g.bytes ? std::to_string(g.bytes) : ""};
    if (calls) v.push_back(g.call);
    out += row(v);
  }
  return out;
}

// The kernels by total time (trace::kernel_breakdown), the first 10 (`all`: every one); --json
// lists them all.
std::string format_breakdown(const std::vector<trace::KernelGroup>& groups, bool all = false) {
  if (groups.empty()) return "";
  const std::size_t shown = all ? groups.size() : std::min<std::size_t>(groups.size(), 10);
  std::string out = fmt::format("\n# kernels by total time (all ranks, the window; {} kinds{})\n",
                                groups.size(), shown < groups.size() ? ", the first 10: --kernels lists all" : "");
  out += fmt::format("{:>10} {:>7} {:>11}  {:<12} {:<13} {:>12}  {}\n", "total ms", "count", "median us",
                     "on", "kind", "bytes", "name");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& g = groups[i];
    std::string name = g.name.size() > 70 ? g.name.substr(0, 67) + "..." : g.name;
    if (!g.call.empty()) name.append(" [").append(g.call).append("]");
    out += fmt::format("{:>10.3f} {:>7} {:>11.1f}  {:<12} {:<13} {:>12}  {}\n",
                       static_cast<double>(g.total_ns) / 1e6, g.count,
                       static_cast<double>(g.median_ns) / 1e3,
                       g.copy_engine ? "copy engines" : "SMs",
                       trace::to_string(g.category),
                       g.bytes ? std::to_string(g.bytes) : "-", name);
  }
  return out;
}

int report_trace(const Args& a, std::vector<trace::JsonOrTrace>& files) {
  std::vector<trace::Trace> parts;
  for (std::size_t i = 0; i < files.size(); ++i) parts.push_back(trace_of(std::move(files[i]), a.files[i]));
  trace::Trace t = parts.size() == 1 ? std::move(parts.front()) : trace::merge_traces(std::move(parts));
  if (t.kernels.empty())
    throw model::Error(t.source + ": no GPU kernel events in the trace" +
                       (t.dropped_records
                            ? fmt::format(" ({} records were dropped)", t.dropped_records)
                            : std::string()));
  trace::fill_blocks_per_sm(t);
  int64_t origin = t.kernels.front().start_ns;
  for (const auto& k : t.kernels) origin = std::min(origin, k.start_ns);
  trace::AnalysisOptions opt;
  if (!a.range.empty()) opt = range_window(t, a.range);
  if (a.from_us) opt.from_ns = origin + std::llround(*a.from_us * 1e3);
  if (a.to_us) opt.to_ns = origin + std::llround(*a.to_us * 1e3);
  const auto an = trace::analyze(t, opt);
  // The steps and where their time goes (trace/diagnosis.hpp).
  std::vector<trace::Trace> alone;
  for (const auto& f : a.alone) alone.push_back(trace_of(read_json_file(f), f));
  trace::DiagnosisOptions dopt;
  dopt.steps = a.steps;
  dopt.steps.window = opt;
  for (const auto& x : alone) dopt.alone.push_back(&x);
  dopt.alone_steps = a.alone_steps;
  const trace::Diagnosis diag = trace::diagnose(t, dopt);
  if (t.dropped_records)
    std::fprintf(stderr,
                 "cco report: warning: %llu records were dropped while tracing; the "
                 "trace is incomplete\n",
                 static_cast<unsigned long long>(t.dropped_records));

  json j = trace::analysis_to_json(an);
  j["inputs"] = a.files;
  j["diagnosis"] = trace::diagnosis_to_json(diag);
  if (!a.alone.empty()) j["diagnosis"]["alone_inputs"] = a.alone;
  json marks = json::array();
  for (const auto& m : t.marks)
    marks.push_back({{"name", m.name},
                     {"rank", m.rank},
                     {"ts_ns", m.ts_ns},
                     {"after_first_kernel_us", static_cast<double>(m.ts_ns - origin) / 1e3}});
  j["marks"] = marks;
  j["time_origin_ns"] = origin;
  j["window_ns"] = {{"from", opt.from_ns ? json(*opt.from_ns) : json(nullptr)},
                    {"to", opt.to_ns ? json(*opt.to_ns) : json(nullptr)},
                    {"range", a.range.empty() ? json(nullptr) : json(a.range)}};
  json nvtx = json::array();
  for (const auto& [rank, n] : ranges_per_rank(t)) nvtx.push_back({{"rank", rank}, {"count", n}});
  j["nvtx_ranges"] = nvtx;
  const auto groups = trace::kernel_breakdown(t, opt);
  j["kernels"] = trace::breakdown_to_json(groups);
  std::string drawn;  // what the timeline shows, when not what was asked
  if (!a.svg.empty()) {
    report::TimelineOptions to;
    to.from_ns = opt.from_ns;
    to.to_ns = opt.to_ns;
    // By default the typical step (of the rank whose typical step is longest), on every rank.
    if (!a.whole && !opt.from_ns && !opt.to_ns && diag.steps.source != "none" &&
        diag.critical_rank >= 0) {
      int64_t step = -1, shown = -1;
      for (const auto& r : diag.ranks)
        if (r.rank == diag.critical_rank) {
          step = r.steps[r.typical].step;
          shown = r.steps[r.typical].shown_step();
        }
      for (const auto& r : diag.ranks)
        for (const auto& p : r.steps)
          if (p.step == step) {
            to.from_ns = to.from_ns ? std::min(*to.from_ns, p.begin_ns) : p.begin_ns;
            to.to_ns = to.to_ns ? std::max(*to.to_ns, p.end_ns) : p.end_ns;
          }
      if (to.from_ns)
        drawn = fmt::format("step {} (the typical step; --whole draws the whole trace)", shown);
    }
    if (a.width > 0) to.width = a.width;
    to.title = a.title.empty() ? "ccoverlap timeline: " + t.source +
                                     (drawn.empty() ? "" : ", " + drawn.substr(0, drawn.find(" (")))
                               : a.title;
    report::timeline_svg(t, to).write(a.svg);
  }
  if (!a.json_file.empty()) write_text(a.json_file, j.dump(2) + "\n");
  // The traces as one file Perfetto and chrome://tracing open: one process track per rank.
  if (!a.merge.empty()) write_text(a.merge, trace::trace_text(t));
  const auto f = table_format(a);
  if (a.kernels && a.json_stdout)
    std::fputs((j["kernels"].dump(2) + "\n").c_str(), stdout);
  else if (a.json_stdout)
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  else if (a.kernels && groups.empty() && f == report::TableFormat::Text)
    std::fputs("# no kernels in the window\n", stdout);
  else if (a.kernels)
    std::fputs(f == report::TableFormat::Text ? format_breakdown(groups, true).substr(1).c_str()
                                              : breakdown_table(groups, f).c_str(),
               stdout);
  else if (f != report::TableFormat::Text)
    std::fputs(report::format_diagnosis(diag, f).c_str(), stdout);
  else
    std::fputs((report::format_diagnosis(diag, f) + format_analysis(t, an, origin, a, opt) +
                format_breakdown(groups)).c_str(),
               stdout);
  if (!a.merge.empty() && !a.json_stdout)
    std::printf("# merged trace (%zu ranks) written to %s\n", t.ranks.size(), a.merge.c_str());
  if (!a.svg.empty() && !a.json_stdout && f == report::TableFormat::Text)
    std::printf("# timeline written to %s%s\n", a.svg.c_str(),
                drawn.empty() ? "" : (": " + drawn).c_str());
  return 0;
}

/// FILE.svg -> FILE.half.svg: one chart per type.
std::string typed_path(const std::string& path, const std::string& type) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + "." + type;
  return path.substr(0, dot) + "." + type + path.substr(dot);
}

report::TableFormat table_format(const Args& a) {
  return a.format == "csv"  ? report::TableFormat::Csv
         : a.format == "md" ? report::TableFormat::Markdown
                            : report::TableFormat::Text;
}

/// Two results of one kind (bench, step or tune), row by row (report/compare.hpp).
int report_compare(const Args& a, const json& ja, const json& jb) {
  if (a.from_us || a.to_us || !a.range.empty() || !a.merge.empty())
    throw Usage("--from, --to, --range and --merge do not apply to a comparison");
  refuse_step_options(a, "a comparison");
  const auto sa = report::result_from_json(ja, a.files[0]);
  const auto sb = report::result_from_json(jb, a.files[1]);
  const auto f = table_format(a);
  const auto base = [](const std::string& p) { return std::filesystem::path(p).filename().string(); };
  const std::string title = a.title.empty() ? "B (" + base(a.files[1]) + ") against A (" + base(a.files[0]) + ")" : a.title;
  std::vector<std::string> charts;  // --svg: the chart of the rows compared (one per type)
  if (sa.kind == report::ResultKind::Bench) {
    // Several collective types between them (cco bench -d all): compared type by type.
    const auto ga = report::split_by_dtype(sa), gb = report::split_by_dtype(sb);
    if (ga.size() > 1 || gb.size() > 1) {
      const auto c = report::compare_by_dtype(ga, gb, f);
      if (!a.svg.empty())
        for (const auto& [type, sweep_a] : ga)
          for (const auto& [type_b, sweep_b] : gb)
            if (type == type_b) {
              charts.push_back(typed_path(a.svg, type));
              write_text(charts.back(), report::compare_results_svg(sweep_a, sweep_b, title + " (" + type + ")"));
            }
      if (!a.json_file.empty()) write_text(a.json_file, c.json.dump(2) + "\n");
      std::fputs((a.json_stdout ? c.json.dump(2) + "\n" : c.text).c_str(), stdout);
      for (const auto& chart : charts)
        if (!a.json_stdout && f == report::TableFormat::Text) std::printf("# chart written to %s\n", chart.c_str());
      return 0;
    }
  }
  if (!a.json_file.empty()) write_text(a.json_file, report::compare_json(sa, sb).dump(2) + "\n");
  if (!a.svg.empty()) write_text(a.svg, report::compare_results_svg(sa, sb, title));
  if (a.json_stdout)
    std::fputs((report::compare_json(sa, sb).dump(2) + "\n").c_str(), stdout);
  else
    std::fputs(report::format_compare(sa, sb, f).c_str(), stdout);
  if (!a.svg.empty() && !a.json_stdout && f == report::TableFormat::Text)
    std::printf("# chart written to %s\n", a.svg.c_str());
  return 0;
}

int report_bench(const Args& a, const json& j) {
  refuse_step_options(a, "a bench result");
  if (!a.merge.empty()) throw Usage("--merge applies to traces, not to a bench result");
  if (a.from_us || a.to_us) throw Usage("--from/--to apply to traces, not to a bench result");
  if (!a.range.empty()) throw Usage("--range applies to traces, not to a bench result");
  // Several collective types (cco bench -d all): a table, rows and a chart (FILE.TYPE.svg) each.
  const auto groups = report::split_by_dtype(report::sweep_from_json(j, a.files.front()));
  const bool typed = groups.size() > 1;
  const auto f = table_format(a);
  std::string text;
  std::vector<std::string> charts;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& [type, s] = groups[gi];
    if (!a.svg.empty()) {
      report::SweepOptions so;
      so.axis = a.axis;
      if (a.width > 0) so.width = a.width;
      so.title = a.title;
      charts.push_back(typed ? typed_path(a.svg, type) : a.svg);
      report::sweep_svg(s, so).write(charts.back());
    }
    const std::string table = report::format_sweep(s, f);
    text += typed ? report::typed_table(table, f, type, gi == 0) : table;
    if (f == report::TableFormat::Text) text += report::in_place_lines(s);
  }
  const json out = report::sweep_report_json(groups, a.files.front());
  if (!a.json_file.empty()) write_text(a.json_file, out.dump(2) + "\n");
  if (a.json_stdout)
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  else
    std::fputs(text.c_str(), stdout);
  if (!a.json_stdout)
    for (const auto& c : charts) std::printf("# chart written to %s\n", c.c_str());
  return 0;
}

/// One step or tune result: its rows and, with --svg, their chart (report/results.hpp).
int report_result(const Args& a, const json& j) {
  const auto s = report::result_from_json(j, a.files.front());
  const std::string what = std::string("a ") + report::kind_name(s.kind) + " result";
  refuse_step_options(a, what);
  if (!a.merge.empty()) throw Usage("--merge applies to traces, not to " + what);
  if (a.from_us || a.to_us) throw Usage("--from/--to apply to traces, not to " + what);
  if (!a.range.empty()) throw Usage("--range applies to traces, not to " + what);
  if (a.axis != report::SweepAxis::Auto)
    throw Usage("--x applies to a bench sweep's chart, not to " + what);
  const json out = report::result_json(s);
  if (!a.svg.empty()) {
    report::SweepOptions so;
    if (a.width > 0) so.width = a.width;
    so.title = a.title;
    report::result_svg(s, so).write(a.svg);
  }
  if (!a.json_file.empty()) write_text(a.json_file, out.dump(2) + "\n");
  if (a.json_stdout)
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  else
    std::fputs(report::format_result(s, table_format(a)).c_str(), stdout);
  if (!a.svg.empty() && !a.json_stdout) std::printf("# chart written to %s\n", a.svg.c_str());
  return 0;
}

}  // namespace

// What cco run writes beside its table: a comparison (--compare-json, ccoverlap.run_compare) or
// a process's step file (--steps-out, ccoverlap.steps), read back (with the names of earlier
// versions, cco.compare/1 and cco.steps/1). Only the text applies to them.
// *schema: the kind; a file of another version is refused here with one line.
bool is_run_output(const json& doc, const std::string& path, std::string* schema) {
  std::string found;
  for (const auto& [name, legacy] : {std::pair{steps::kCompareSchema, steps::kCompareSchemaLegacy},
                                     std::pair{steps::kStepSchema, steps::kStepSchemaLegacy}}) {
    const auto m = model::match_schema(doc, name, legacy, &found);
    if (m == model::SchemaMatch::kNo) continue;
    if (m == model::SchemaMatch::kOtherVersion)
      throw model::Error(path + ": " + found + " is a version this cco does not read (" + name +
                         " 1.x): written by another version of cco?");
    *schema = name;
    return true;
  }
  return false;
}

int report_run_output(const Args& a, const json& doc, const std::string& schema) {
  const std::string& path = a.files.front();
  const bool compare = schema == steps::kCompareSchema;
  refuse_step_options(a, path + " (" + schema + ")");
  if (!a.merge.empty())
    throw Usage("--merge does not apply to " + path + " (" + schema + "): it merges traces");
  if (!a.svg.empty() && !compare)
    throw Usage("--svg does not apply to " + path + " (" + schema +
                "): the chart is of a comparison (--compare-json)");
  // A malformed file is bad input (exit 2), as for every other file cco report reads.
  const auto parsed = [&](auto parse) {
    try {
      return parse(doc.dump(), path);
    } catch (const std::runtime_error& e) {
      throw model::Error(e.what());
    }
  };
  std::string text, json_text;
  if (compare) {
    const steps::CompareReport r =
        parsed([](const std::string& t, const std::string& w) { return steps::parse_compare(t, w); });
    text = report::format_compare(r, table_format(a));
    json_text = steps::to_json(r);
    if (!a.svg.empty()) write_text(a.svg, report::compare_svg(r, "cco run --compare: " + path));
  } else {
    const steps::StepFile f = parsed(
        [](const std::string& t, const std::string& w) { return steps::parse_step_file(t, w); });
    text = report::format_step_file(f, table_format(a));
    json_text = steps::to_json(f);
  }
  if (!a.json_file.empty()) write_text(a.json_file, json_text);
  std::fputs((a.json_stdout ? json_text : text).c_str(), stdout);
  if (!a.svg.empty() && !a.json_stdout) std::printf("# chart written to %s\n", a.svg.c_str());
  return 0;
}

int report_main(const std::vector<std::string>& args) {
  const Args a = parse_report_args(args);
  // Never overwrite an input: an output that names one (the same file, by device and inode) is
  // refused before anything is read or written.
  for (const auto& [flag, out] : {std::pair<const char*, const std::string*>{"--merge", &a.merge},
                                  {"--svg", &a.svg},
                                  {"--json", &a.json_file}}) {
    if (out->empty()) continue;
    std::vector<std::string> inputs = a.files;
    inputs.insert(inputs.end(), a.alone.begin(), a.alone.end());
    refuse_input(flag, *out, inputs, "cco report");
  }
  std::vector<trace::JsonOrTrace> files;
  std::vector<json> docs;  // a trace's without its events
  std::vector<std::optional<report::ResultKind>> kinds;
  std::size_t results = 0, benches = 0;
  for (const auto& f : a.files) {
    // --merge keeps every event of another tool's traces (their CPU side too), not only what the
    // analysis reads.
    files.push_back(read_json_file(f, trace::ReadOptions{.keep_events = !a.merge.empty()}));
    docs.push_back(files.back().doc);
    if (std::string schema; is_run_output(docs.back(), f, &schema)) {
      if (a.files.size() > 1)
        throw Usage(f + " (" + schema + ") is read alone: give it as the only file");
      return report_run_output(a, docs.back(), schema);
    }
    // The other files cco writes (a decision file, the JSON of report, doctor, info, plan):
    // printed as text, alone.
    if (auto text = report::describe_written(docs.back(), f)) {
      refuse_step_options(a, f + " (" + docs.back()["schema"].get<std::string>() + ")");
      if (a.files.size() > 1)
        throw Usage(f + " (" + docs.back()["schema"].get<std::string>() +
                    ") is read alone: give it as the only file");
      for (const auto& [flag, given] :
           {std::pair<const char*, bool>{"--svg", !a.svg.empty()}, {"--merge", !a.merge.empty()},
            {"--json", a.json_stdout || !a.json_file.empty()},
            {"--format", !a.format.empty() && a.format != "text"}})
        if (given)
          throw Usage(std::string(flag) + " does not apply to " + f + " (" +
                      docs.back()["schema"].get<std::string>() + "): it is printed as text");
      std::fputs(text->c_str(), stdout);
      return 0;
    }
    kinds.push_back(report::result_kind(docs.back()));
    results += kinds.back().has_value();
    benches += kinds.back() == report::ResultKind::Bench;
  }
  if (results == 2 && docs.size() == 2) {
    if (*kinds[0] != *kinds[1])
      throw Usage(fmt::format("cannot compare a {} result ({}) with a {} result ({}): give two "
                              "results of one kind",
                              report::kind_name(*kinds[0]), a.files[0],
                              report::kind_name(*kinds[1]), a.files[1]));
    return report_compare(a, docs[0], docs[1]);
  }
  if (results > 0 && docs.size() > 1)
    throw Usage(benches == results
                    ? "give one bench result, two to compare, or only trace files (got " +
                          std::to_string(benches) + " bench results among " +
                          std::to_string(docs.size()) + " files)"
                    : "give one result (bench, step or tune), two of one kind to compare, or "
                      "only trace files (got " +
                          std::to_string(results) + " results among " +
                          std::to_string(docs.size()) + " files)");
  if (kinds.front() == report::ResultKind::Bench) return report_bench(a, docs.front());
  if (kinds.front()) return report_result(a, docs.front());
  if (a.axis != report::SweepAxis::Auto) throw Usage("--x applies to a bench result, not traces");
  return report_trace(a, files);
}

}  // namespace cco::cli
