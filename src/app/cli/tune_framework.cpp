#include "cli/tune_framework.hpp"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "bench/report.hpp"
#include "cli/output.hpp"
#include "cli/run_cmd.hpp"
#include "cli/run_framework.hpp"
#include "cli/run_support.hpp"
#include "plan/plan.hpp"
#include "steps/whole_runs.hpp"

namespace cco::cli {

std::string candidate_name(const model::FrameworkSettings& s) {
  return s.empty() ? "(none)" : model::framework_text(s);
}

namespace {

// One run of the program with candidate `c`'s controls, its steps recorded in `dir`.
int run_once(const FrameworkSearchOptions& o, const model::FrameworkSettings& c,
             const std::string& dir, const std::string& lib, const std::string& startup) {
  RunOptions ro;
  ro.lib = o.lib;
  ro.policy = o.policy;
  ro.steps_out = dir;
  ro.command = o.command;
  const auto getenv_fn = [](const char* n) { return static_cast<const char*>(::getenv(n)); };
  std::vector<std::string> warnings;
  auto changes = run_environment(ro, plan::from_policy(o.policy), "", lib, "", getenv_fn, &warnings);
  // The hook also for the baseline: it reports each process's peak device memory at exit.
  for (auto& e : framework_environment(c, startup, dir, getenv_fn)) changes.push_back(std::move(e));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // cco killed: the run does not go on alone
    apply_environment(changes);
    exec_child(o.command, "cco tune");
  }
  return exit_code(wait_forwarding(pid));
}

void write_plan(const FrameworkSearchOptions& o, const std::vector<steps::WholeRun>& runs,
                const steps::WholeRunDecision& d) {
  plan::Plan p = plan::from_policy(o.policy);
  p.framework = o.candidates[d.winner];
  nlohmann::json j = nlohmann::json::parse(plan::to_json(p));
  j["generated_by"] = "cco tune --framework-candidate -- CMD";
  nlohmann::json cands = nlohmann::json::array(), rs = nlohmann::json::array();
  for (const auto& c : o.candidates) cands.push_back(candidate_name(c));
  for (const auto& r : runs)
    rs.push_back({{"candidate", candidate_name(o.candidates[r.candidate])},
                  {"round", r.round},
                  {"steps", r.step_ms.size()},
                  {"median_ms", steps::summarize(r.step_ms).median},
                  {"memory_fraction", r.memory_fraction}});
  j["tuning"] = {{"date", bench::iso_now()},          {"program", o.command},
                 {"framework_candidates", cands}, {"policy", o.policy},
                 {"warmup", o.warmup},    {"runs", rs},
                 {"winner", candidate_name(o.candidates[d.winner])},
                 {"why", d.why},          {"steps_dir", o.steps_out}};
  write_output(o.out, j.dump(2) + "\n");
}

// The comparison: each candidate's runs, its paired difference to the baseline, memory, verdict.
void print_table(const FrameworkSearchOptions& o, const steps::WholeRunDecision& d) {
  std::printf("# cco tune: framework candidates, %d rounds of whole runs; against the baseline: the "
              "median of step i of its run minus step i of the baseline's in the same round, 95%% "
              "sign-test interval; memory: the most device memory a process held, of its device's\n",
              o.rounds);
  std::printf("%-44s %-22s %-30s %-7s %s\n", "candidate", "runs' medians, ms", "vs (none), ms [95%]",
              "memory", "verdict");
  for (const auto& v : d.verdicts) {
    std::string meds;
    for (double m : v.run_medians) {
      char b[24] = "-";  // a run without steps has no median
      if (!std::isnan(m)) std::snprintf(b, sizeof b, "%.3f", m);
      meds += (meds.empty() ? "" : ", ") + std::string(b);
    }
    char diff[64] = "";
    if (v.candidate != 0 && v.vs_baseline.enough)
      std::snprintf(diff, sizeof diff, "%+.3f [%+.3f, %+.3f]", v.vs_baseline.median,
                    v.vs_baseline.lo, v.vs_baseline.hi);
    char mem[16] = "-";
    if (v.memory_fraction > 0) std::snprintf(mem, sizeof mem, "%.0f%%", 100 * v.memory_fraction);
    std::printf("%-44s %-22s %-30s %-7s %s\n", candidate_name(o.candidates[v.candidate]).c_str(),
                meds.c_str(), diff, mem, v.candidate == 0 ? "baseline" : v.why.c_str());
  }
}

}  // namespace

int framework_search_main(const FrameworkSearchOptions& o) {
  const std::string lib = loadable_preload_library(o.lib);
  const std::string startup = find_startup_dir(self_exe());
  for (const auto& c : o.candidates)
    for (const auto& r : model::framework_rounding(c))
      std::fprintf(stderr, "cco tune: framework: %s (asked for by name: answers may differ)\n",
                   r.c_str());
  const auto order = steps::whole_run_order(o.candidates.size(), o.rounds);
  std::fprintf(stderr,
               "cco tune: %zu framework candidates (the first: none), %zu whole runs of the "
               "program in %d alternating rounds under policy %s; steps in %s\n",
               o.candidates.size(), order.size(), o.rounds, o.policy.c_str(), o.steps_out.c_str());
  std::vector<steps::WholeRun> runs;
  std::vector<int> failed(o.candidates.size(), 0);  // a candidate's run's exit status, once failed
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t c = order[i];
    if (failed[c] != 0) continue;
    const std::string dir = o.steps_out + "/run-" + std::to_string(i + 1);
    if (::mkdir(dir.c_str(), 0777) != 0)
      throw std::runtime_error("cannot make " + dir + ": " + std::strerror(errno));
    const std::string name = candidate_name(o.candidates[c]);
    std::fprintf(stderr, "cco tune: run %zu of %zu: %s\n", i + 1, order.size(), name.c_str());
    const int rc = run_once(o, o.candidates[c], dir, lib, startup);
    if (rc != 0 && c == 0) {
      std::printf("# no plan written: run %zu (%s, the baseline) exited %d; the step files so far "
                  "are in %s\n",
                  i + 1, name.c_str(), rc, o.steps_out.c_str());
      return rc;
    }
    if (rc != 0) {  // out of memory, say: the candidate is ruled out, the search goes on
      failed[c] = rc;
      std::fprintf(stderr, "cco tune: run %zu of %zu: %s exited %d: ruled out\n", i + 1,
                   order.size(), name.c_str(), rc);
      continue;
    }
    std::vector<std::string> notes;
    const auto files = read_step_files(dir, &notes);
    for (const auto& n : notes) std::fprintf(stderr, "cco tune: %s\n", n.c_str());
    steps::WholeRun r;
    r.candidate = c;
    r.round = static_cast<int>(i / o.candidates.size());
    r.step_ms = steps::run_step_times(files, static_cast<uint64_t>(o.warmup), &r.step_index);
    const FrameworkSummary sum = read_framework_reports(dir);
    std::string memory;
    if (sum.device_bytes > 0) {
      r.memory_fraction = static_cast<double>(sum.peak_reserved_bytes) /
                          static_cast<double>(sum.device_bytes);
      memory = ", peak memory " + memory_text(sum);
    }
    if (r.step_ms.empty())
      std::fprintf(stderr, "cco tune: run %zu of %zu: %s: no steps after %ld (%zu step %s: the "
                   "program ran no collectives, marked no steps, or ended first)%s\n",
                   i + 1, order.size(), name.c_str(), o.warmup, files.size(),
                   files.size() == 1 ? "file" : "files", memory.c_str());
    else
      std::fprintf(stderr, "cco tune: run %zu of %zu: %s: %zu steps after %ld, median %.3f ms (%zu %s)%s\n",
                   i + 1, order.size(), name.c_str(), r.step_ms.size(), o.warmup,
                   steps::summarize(r.step_ms).median, files.size(),
                   files.size() == 1 ? "process" : "processes", memory.c_str());
    if (!o.candidates[c].empty() && r.round == 0)
      std::fputs(format_framework_summary(o.candidates[c], sum, "cco tune").c_str(), stderr);
    runs.push_back(std::move(r));
  }
  auto d = steps::decide_whole_runs(runs, o.candidates.size());
  for (auto& v : d.verdicts)
    if (failed[v.candidate] != 0) {
      v.wins = false;
      v.why = "a run of it exited " + std::to_string(failed[v.candidate]) + ": ruled out";
    }
  print_table(o, d);
  if (d.verdicts.size() > 1 &&
      std::all_of(d.verdicts.begin() + 1, d.verdicts.end(),
                  [](const steps::WholeRunVerdict& v) { return v.why.rfind("too few", 0) == 0; })) {
    std::printf("# no plan written: no candidate had enough steps to compare (the step files are "
                "in %s)\n", o.steps_out.c_str());
    return 3;
  }
  write_plan(o, runs, d);
  std::printf("# the winner: %s (%s)\n# plan written to %s: policy %s%s; apply it with `cco run "
              "--plan %s -- CMD`\n",
              candidate_name(o.candidates[d.winner]).c_str(), d.why.c_str(), o.out.c_str(),
              o.policy.c_str(),
              d.winner == 0 ? ", no framework control"
                            : (" with framework " + candidate_name(o.candidates[d.winner])).c_str(),
              o.out.c_str());
  return 0;
}

}  // namespace cco::cli
