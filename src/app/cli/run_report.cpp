// What cco run prints after the program (--compare, --steps-out): the step files read back, the
// comparison of the configurations, and with --trace the bounds per kind of control beside each
// configuration's measured gain. GPU-free.
#include "cli/run_cmd.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "cli/output.hpp"
#include "cli/run_support.hpp"
#include "preload/trace_path.hpp"
#include "report/diagnosis_text.hpp"
#include "steps/compare.hpp"
#include "steps/record.hpp"
#include "trace/diagnosis.hpp"
#include "trace/format.hpp"

namespace cco::cli {

// The step files of a folder (bounded), with one note per file that could not be read.
std::vector<steps::StepFile> read_step_files(const std::string& dir,
                                             std::vector<std::string>* notes) {
  std::vector<steps::StepFile> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("steps-", 0) != 0 || n.size() < 11 || n.compare(n.size() - 5, 5, ".json") != 0)
        continue;
      try {
        files.push_back(steps::read_step_file(dir + "/" + n));
      } catch (const std::exception& ex) {
        if (notes) notes->push_back(std::string("skipped ") + ex.what());
      }
      if (files.size() > 4096) break;
    }
    ::closedir(d);
  }
  return files;
}

bool report_steps(const std::string& dir, bool compare, const std::string& json_path,
                  std::FILE* out, steps::CompareReport* report,
                  std::vector<steps::StepFile>* files_out) {
  std::vector<std::string> notes;
  const std::vector<steps::StepFile> files = read_step_files(dir, &notes);
  if (files_out) *files_out = files;
  if (files.empty() && !notes.empty()) {
    // Files were written but none could be read: not "no step file was written".
    for (const auto& n : notes) std::fprintf(out, "cco: steps: %s\n", n.c_str());
    std::fprintf(out, "cco: steps: %zu step file(s) found, none readable: no comparison\n",
                 notes.size());
    return false;
  }
  for (const auto& f : files)
    if (f.ended != "exit")
      notes.push_back(steps::process_name(f) + ": the process did not exit normally; its steps "
                                               "until the last flush are used (partial)");
  for (const auto& n : notes) std::fprintf(out, "cco: steps: %s\n", n.c_str());
  if (!compare) {
    for (const auto& f : files)
      std::fprintf(out, "cco: steps: %s: %zu steps (%s%s)\n", steps::process_name(f).c_str(),
                   f.steps.size(), f.source.c_str(),
                   f.period > 0 ? (", " + std::to_string(f.period) + " collectives each").c_str()
                                : "");
    return true;
  }
  const steps::CompareReport r = steps::compare(files);
  if (report) *report = r;
  std::fputs(steps::format_report(r).c_str(), out);
  try {
    write_output(json_path, steps::to_json(r));  // whole or not at all
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cco run: error: %s\n", e.what());
    return false;  // the comparison was asked for as a file: exit 3, not 0
  }
  return r.refused.empty();
}

namespace {

// The kinds of control a compared item holds (docs/TRACE.md, the bounds per lever): priority
// and shaping; SM budgets, channel caps and CTA settings. A plan file may hold both.
std::pair<bool, bool> lever_kinds(const std::string& item) {
  const bool plan_file = item.find('/') != std::string::npos || item.find(".json") != std::string::npos;
  if (plan_file) return {true, true};
  const bool prio = item.find("priority") != std::string::npos ||
                    item.find("shape") != std::string::npos;
  const bool sms = item.find("sm-target") != std::string::npos ||
                   item.find("channels") != std::string::npos ||
                   item.find("cta") != std::string::npos;
  return {prio, sms};
}

// The price split in the trace (issue 43): the first item's steps against nocomm's steps of the
// same run. Both ran traced, so what tracing costs the program is on both sides of the difference,
// which is set beside the comparison's paired price of the same run.
void print_twin(const trace::Diagnosis& d, const steps::CompareReport& r, std::size_t twin,
                std::FILE* out) {
  const std::string base = r.configs.front().name;
  if (d.versus_alone.empty()) {
    std::string why = "no steps of nocomm in the trace";
    for (const auto& n : d.notes)
      if (n.find("alone trace") != std::string::npos) why = n;
    std::fprintf(out, "# the price in the trace: nocomm's steps could not be set against %s's, no "
                      "split (%s)\n", base.c_str(), why.c_str());
    return;
  }
  std::fprintf(out, "# the price in the trace, %s's steps against nocomm's of the same run (both "
                    "traced), by rank:\n", base.c_str());
  double sum = 0, sum_medians = 0;
  for (const auto& v : d.versus_alone) {
    std::fputs(report::versus_alone_line(v, "nocomm's steps").c_str(), out);
    sum += v.difference_ms();
    sum_medians += v.time_median_ms - v.alone_time_median_ms;
  }
  const double n = static_cast<double>(d.versus_alone.size());
  const auto& p = r.configs[twin].vs_first;
  std::fprintf(out, "#   the difference, mean of %zu of %zu ranks: %.3f ms (of the step medians: "
                    "%.3f ms; where they differ, a few slow steps move the parts)",
               d.versus_alone.size(), d.ranks.size(), sum / n, sum_medians / n);
  if (p.enough)
    std::fprintf(out, "; the comparison's paired price of this run: %.3f ms [%.3f, %.3f]",
                 -p.median, -p.hi, -p.lo);
  std::fputs("\n", out);
}

}  // namespace

void report_trace_bounds(const std::string& pattern, const steps::CompareReport& r,
                         const std::vector<steps::StepFile>& files, std::FILE* out) {
  if (r.configs.size() < 2) return;
  const bool by_rank = pattern.find("%r") != std::string::npos;
  const bool by_pid = pattern.find("%p") != std::string::npos;
  if (!by_rank && !by_pid) {
    std::fprintf(out, "cco: trace: name the files with %%r (or %%p) to see here what the controls "
                      "can win at most; or run cco report on them\n");
    return;
  }
  std::vector<trace::Trace> parts;
  for (const auto& f : files) {
    const std::string path = preload::expand_trace_path(pattern, f.pid, f.rank, false);
    try {
      parts.push_back(trace::read_trace_file(path));
    } catch (const std::exception& e) {
      std::fprintf(out, "cco: trace: %s\n", e.what());
    }
  }
  if (parts.empty()) return;
  try {
    const trace::Trace t = parts.size() == 1 ? parts.front() : trace::merge_traces(parts);
    trace::DiagnosisOptions o;
    o.steps.config = 0;
    o.steps.warmup = 0;  // the rotation's warm-up steps are marked as such and left out already
    // nocomm compared: its steps are the twin of the first item's, their kernels' times alone.
    const std::optional<std::size_t> twin = steps::nocomm_item(r);
    if (twin) {
      o.alone = {&t};
      trace::StepOptions ts;
      ts.source = "marks";
      ts.config = static_cast<int>(*twin);
      ts.warmup = 0;
      o.alone_steps = ts;
    }
    const trace::Diagnosis d = trace::diagnose(t, o);
    std::fprintf(out, "# the steps under %s, from the trace (docs/TRACE.md): %s\n",
                 r.configs.front().name.c_str(), d.sentence.c_str());
    if (twin) print_twin(d, r, *twin, out);
    if (d.ranks.empty()) return;
    // A step is as slow as its slowest rank: the largest bound over ranks.
    trace::LeverBounds b;
    for (const auto& rk : d.ranks) {
      const auto lb = trace::lever_bounds(rk.steps[rk.typical]);
      b.priority_shaping_ns = std::max(b.priority_shaping_ns, lb.priority_shaping_ns);
      b.sm_budget_ns = std::max(b.sm_budget_ns, lb.sm_budget_ns);
    }
    for (std::size_t i = 1; i < r.configs.size(); ++i) {
      const auto& c = r.configs[i];
      const auto [prio, sms] = lever_kinds(c.name);
      const int64_t bound =
          (prio ? b.priority_shaping_ns : 0) + (sms ? b.sm_budget_ns : 0);
      if (!prio && !sms) continue;
      const double gain = -c.vs_first.median;
      const double noise = c.vs_first.enough ? (c.vs_first.hi - c.vs_first.lo) / 2 : 0;
      const double bound_ms = static_cast<double>(bound) / 1e6;
      std::fprintf(out, "#   %-28s measured gain %+.3f ms, at most %.3f ms by its kind of control%s\n",
                   c.name.c_str(), gain, bound_ms,
                   gain > bound_ms + noise ? " -- ABOVE the bound: please report it" : "");
    }
  } catch (const std::exception& e) {
    std::fprintf(out, "cco: trace: %s\n", e.what());
  }
}

}  // namespace cco::cli
