// cco tune -- CMD: the program tuned online (docs/STEPS.md, "Tuning the program"): the search
// layout checked before anything runs, the program started under the preload library in tune
// mode, progress from the decision file, the plan written, the program stopped. Shares cco run's
// launcher (run_support.hpp).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/report.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/parse.hpp"
#include "cli/run_cmd.hpp"
#include "cli/run_framework.hpp"
#include "cli/tune_framework.hpp"
#include "cli/run_support.hpp"
#include "model/env_names.hpp"
#include "model/read_file.hpp"
#include "plan/plan.hpp"
#include "steps/paired.hpp"
#include "steps/record.hpp"
#include "steps/search.hpp"
#ifdef CCO_HAVE_CUDA
#include "runtime/device.hpp"
#endif

namespace cco::cli {
namespace {

struct TuneProgramOptions : LaunchOptions {  // --lib ... --warmup as cco run's
  std::vector<std::string> candidates = {"off", "priority", "shape:model@overlap",
                                         "shape+priority:model@overlap"};
  long steps = -1;       // search steps (-1: twice the minimum)
  long time_s = 900;     // the search ends at the next stage after this
  long wait_s = 300;     // a rank's wait for rank 0's decision
  bool online = false;
  bool diagnose = true;  // the first stage's diagnosis may end the search (--no-diagnose)
  std::string out = "cco-tune-plan.json";
  /// --framework: held fixed through the search (set where the program builds its modules), and
  /// written into the plan (docs/FRAMEWORK.md).
  model::FrameworkSettings framework;
  /// --framework-candidate SPEC (repeated): search these by whole runs instead (tune_framework).
  std::vector<model::FrameworkSettings> framework_candidates;
  long framework_rounds = 2;  ///< --framework-rounds N: rounds of whole runs
  std::vector<std::string> command;
};

TuneProgramOptions parse_tune_program(const std::vector<std::string>& args) {
  TuneProgramOptions o;
  CLI::App app{"cco tune", "tune"};
  app.set_help_flag();  // help text comes from docs/cli/tune.md, handled by the CLI
  std::string candidates, steps, time_s, wait_s;
  app.add_option("--candidates", candidates);
  app.add_option("--steps", steps);
  app.add_option("--time", time_s);
  app.add_option("--wait", wait_s);
  app.add_flag("--online", o.online);
  bool no_diagnose = false;
  app.add_flag("--no-diagnose", no_diagnose);
  app.add_option("--out", o.out);
  std::string framework;
  app.add_option("--framework", framework);
  std::vector<std::string> framework_candidates;
  app.add_option("--framework-candidate", framework_candidates)->allow_extra_args(false);  // one each
  std::string framework_rounds;
  app.add_option("--framework-rounds", framework_rounds);
  const auto check_launch = add_launch_options(app, o);  // --steps-out: see below when not given
  o.command = parse_until_command(app, args, true, " (cco tune [options] -- CMD [ARGS...])");
  if (app.count("--framework")) {
    try {
      o.framework = model::parse_framework(framework);
    } catch (const model::Error& e) {
      throw Usage(e.what());
    }
  }
  if (app.count("--framework-rounds")) {
    if (framework_candidates.empty()) throw Usage("--framework-rounds needs --framework-candidate");
    o.framework_rounds = count_arg("--framework-rounds", framework_rounds, 1, 10,
                                   "a count of rounds (1 to 10)");
  }
  if (!framework_candidates.empty()) {
    // Whole runs: the options of the online search do not apply.
    for (const char* flag : {"--candidates", "--steps", "--time", "--wait", "--online",
                             "--no-diagnose", "--framework", "--step-nvtx"})
      if (app.count(flag))
        throw Usage(std::string(flag) + " does not apply to --framework-candidate (whole runs of "
                                        "the program, under policy priority)");
    o.framework_candidates.push_back({});  // the baseline: none
    for (const auto& spec : framework_candidates) {
      try {
        auto c = model::parse_framework(spec);  // the order of a candidate's controls is no matter
        std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.row < b.row; });
        o.framework_candidates.push_back(std::move(c));
      } catch (const model::Error& e) {
        throw Usage(std::string("--framework-candidate: ") + e.what());
      }
      for (std::size_t i = 0; i + 1 < o.framework_candidates.size(); ++i)
        if (o.framework_candidates[i] == o.framework_candidates.back())
          throw Usage("--framework-candidate '" + spec + "' is named twice");
    }
    if (o.framework_candidates.size() > 8)
      throw Usage("--framework-candidate: at most 7 candidates (each runs the program twice)");
  }
  if (app.count("--candidates")) o.candidates = configuration_list("--candidates", candidates);
  if (app.count("--steps")) o.steps = count_arg("--steps", steps, 1, 10000000);
  if (app.count("--time")) o.time_s = count_arg("--time", time_s, 1, 86400 * 30);
  check_launch();
  o.diagnose = !no_diagnose;
  if (o.warmup < 0) o.warmup = 5;  // tune's default warm-up
  if (app.count("--wait")) o.wait_s = count_arg("--wait", wait_s, 1, 86400);
  if (o.command.empty()) throw Usage("no command to tune (cco tune [options] -- CMD [ARGS...])");
  if (o.steps_out.empty()) {
    std::string base = o.out;
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0)
      base.resize(base.size() - 5);
    o.steps_out = base + ".steps";
  }
  return o;
}

// Seconds since `t0` on the monotonic clock.
double seconds_since(const timespec& t0) {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec - t0.tv_sec) + static_cast<double>(t.tv_nsec - t0.tv_nsec) / 1e9;
}

std::string decision_line(const steps::TuneFile& t, const steps::Decision& d) {
  auto name = [&](int c) {
    return c >= 0 && c < static_cast<int>(t.candidates.size()) ? t.candidates[static_cast<std::size_t>(c)]
                                                                : "?";
  };
  std::string scores;
  for (const auto& [c, v] : d.scores) {
    char buf[64];
    if (std::isfinite(v))
      std::snprintf(buf, sizeof buf, "%+.3f", v);
    else
      std::snprintf(buf, sizeof buf, "unmeasured");
    scores += (scores.empty() ? "" : ", ") + name(c) + " " + buf;
  }
  std::string line;
  if (d.final) {
    line = "cco tune: step " + std::to_string(d.at_step) + ": the winner is " + name(d.set[0]) +
           " (" + d.why + ")";
  } else {
    std::string kept;
    for (int c : d.set) kept += (kept.empty() ? "" : ", ") + name(c);
    line = "cco tune: step " + std::to_string(d.at_step) + ": stage " + std::to_string(d.stage + 1) +
           " of " + std::to_string(t.stages.size()) + " keeps " + kept;
  }
  return line + "\n  scores (" + d.metric + " ms against each round's median): " + scores + "\n";
}


// What the search needs before the program starts, checked without leaving a file behind: the
// candidates, the layout within the step budget, a new folder, a writable plan, the libraries;
// then the environment the program inherits (set here, in cco's own process).
struct Prepared {
  std::vector<std::string> items;
  std::vector<steps::Stage> stages;
  std::string tune_path;
};

// The plan's path (--out), before anything runs and without leaving a file behind: a folder or a
// FIFO refused, never one of `inputs` (the files the command names, a candidate's plan), and
// writable.
void check_plan_out(const std::string& out, const std::vector<std::string>& inputs) {
  if (struct stat st {}; ::stat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Usage("--out " + out + ": " +
                (S_ISDIR(st.st_mode) ? "a folder; name the plan file (e.g. " + out +
                                           "/cco-tune-plan.json)"
                                     : std::string("not a regular file")));
  refuse_input("--out", out, inputs, "cco tune");
  if (model::is_regular_file(out) ? ::access(out.c_str(), W_OK) != 0
                                  : ::access(dir_of(absolute(out)).c_str(), W_OK) != 0)
    throw Usage("--out " + out + ": cannot be written");
}

Prepared prepare(TuneProgramOptions& o) {
  Prepared p;
  bool channels = false;
  p.items = check_compare_items(o.candidates, &channels, "--candidates");
  // Neither a candidate's plan file nor a file the command names (its program, script, data).
  std::vector<std::string> inputs = command_files(o.command);
  inputs.insert(inputs.end(), o.candidates.begin(), o.candidates.end());
  check_plan_out(o.out, inputs);
  const std::vector<std::string>& items = p.items;
  const uint64_t minimum = steps::minimum_budget(static_cast<int>(items.size()), steps::kMinRounds);
  if (o.steps >= 0 && static_cast<uint64_t>(o.steps) < minimum)
    throw Usage("--steps " + std::to_string(o.steps) + " is below the " + std::to_string(minimum) +
                " search steps that " + std::to_string(items.size()) +
                " candidates need (" + std::to_string(steps::kMinRounds) +
                " rounds per stage of successive halving)");
  const uint64_t budget = o.steps >= 0 ? static_cast<uint64_t>(o.steps) : 2 * minimum;
  p.stages = steps::layout(
      steps::SearchOptions{static_cast<int>(items.size()), static_cast<uint64_t>(o.warmup), budget});

  // The folder of the step files and the decision file: new, or one without an earlier run.
  if (model::is_regular_file(o.steps_out + "/tune.json"))
    throw Usage("--steps-out " + o.steps_out +
                " already holds a tuning run (tune.json): remove it or name another folder");
  o.steps_out = steps_folder(o.steps_out);  // refuses earlier step files too
  p.tune_path = o.steps_out + "/tune.json";

  const std::string lib = loadable_preload_library(o.lib);
  if (!o.step_nvtx.empty()) refuse_foreign_nvtx(lib);
  std::string tuner;
  if (channels) {
    tuner = find_tuner_library(lib, self_exe(), o.tuner_lib, ::getenv(cco::env::kTunerLib));
    check_tuner_library(tuner);
    refuse_foreign_tuner("--candidates", tuner);
  }
  RunOptions ro;
  static_cast<LaunchOptions&>(ro) = o;
  ro.compare = items;
  ro.command = o.command;
  std::vector<std::string> warnings;
  auto changes = run_environment(ro, plan::from_policy("off"), "", lib, tuner,
                                 [](const char* n) { return static_cast<const char*>(::getenv(n)); },
                                 &warnings);
  if (!o.framework.empty()) {  // fixed through the search; the hook reports into the step folder
    for (const auto& r : model::framework_rounding(o.framework))
      std::fprintf(stderr, "cco tune: framework: %s (asked for by name: answers may differ)\n",
                   r.c_str());
    for (auto& c : framework_environment(o.framework, find_startup_dir(self_exe()), o.steps_out,
                                         [](const char* n) { return static_cast<const char*>(::getenv(n)); }))
      changes.push_back(std::move(c));
  }
  changes.push_back({cco::env::kTune, "1"});
  changes.push_back({cco::env::kTuneSteps, std::to_string(budget)});
  changes.push_back({cco::env::kTuneTime, std::to_string(o.time_s)});
  changes.push_back({cco::env::kTuneWait, std::to_string(o.wait_s)});
  changes.push_back({cco::env::kTuneDiagnose, o.diagnose ? "1" : "0"});
  changes.push_back({cco::env::kTuneExit, o.online ? "0" : "1"});
  for (const auto& w : warnings) std::fprintf(stderr, "cco tune: warning: %s\n", w.c_str());
  apply_environment(changes);
  uint64_t search_steps = 0;
  for (const auto& s : p.stages) search_steps += s.end() - s.start;
  std::fprintf(stderr,
               "cco tune: %zu candidates, %zu stages of successive halving, %llu search steps "
               "after %ld warm-up steps (time budget %ld s); steps and decisions in %s\n",
               items.size(), p.stages.size(), static_cast<unsigned long long>(search_steps), o.warmup,
               o.time_s, o.steps_out.c_str());

  return p;
}

// Follows the decisions while the program runs and stops it (its process group) once the winner
// is known, unless --online; or when no final decision came within the time budget plus a
// margin. Returns when the program has ended.
struct Watched {
  std::optional<steps::TuneFile> tune;
  std::size_t shown = 0;  // decisions printed (of epoch `epoch`)
  uint64_t epoch = 0;     // the search's epoch they belong to (0: none seen yet)
  bool diagnosis_shown = false;
  bool stopped = false, exited = false;
  bool ending_said = false;  // the line that the ranks end at the decision's step
  int status = 0;
};

// Said once the final decision is seen (cco tune without --online): the ranks end themselves.
void say_ending(Watched& r) {
  if (r.ending_said) return;
  r.ending_said = true;
  std::fprintf(stderr, "cco tune: the search is done; every rank ends at the decision's step "
               "(--online keeps the program running with the winner)\n");
}

// What the decision file says that was not printed yet, on stderr: a new period (the program's
// steps changed: DDP's buckets give way to the whole step, and the search starts again), the
// deciding process's diagnosis of the first stage (once per period), each decision. Returns true
// when a final decision was among them.
bool show_progress(Watched& r) {
  const steps::TuneFile& t = *r.tune;
  if (t.epoch != r.epoch) {
    if (r.epoch != 0)
      std::fprintf(stderr, "cco tune: the program's steps changed (a new period); the search "
                   "starts again and the decisions above no longer hold\n");
    r.epoch = t.epoch;
    r.shown = 0;
    r.diagnosis_shown = false;
  }
  if (!r.diagnosis_shown && !t.diagnosis.empty()) {
    r.diagnosis_shown = true;
    std::fprintf(stderr, "cco tune: the steps under %s (candidate 0), diagnosed on the deciding "
                 "process: %s\n", t.candidates.empty() ? "candidate 0" : t.candidates[0].c_str(),
                 t.diagnosis.c_str());
  }
  bool final = false;
  for (; r.shown < t.decisions.size(); ++r.shown) {
    std::fputs(decision_line(t, t.decisions[r.shown]).c_str(), stderr);
    final = final || t.decisions[r.shown].final;
  }
  return final;
}

// Once the launcher is reaped: whatever is left in the program's group (workers a launcher left
// running when it died or exited) gets SIGTERM, then SIGKILL after 10 s (issue 46: they trained
// on after cco tune had ended).
void end_group(pid_t pgid) {
  if (::kill(-pgid, 0) != 0) return;  // nobody left
  std::fprintf(stderr, "cco tune: ending the processes the program left running\n");
  ::kill(-pgid, SIGTERM);
  ::kill(-pgid, SIGCONT);
  for (int i = 0; i < 100 && ::kill(-pgid, 0) == 0; ++i) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::usleep(100000);
  }
  if (::kill(-pgid, 0) == 0) ::kill(-pgid, SIGKILL);
}

// After the final decision: how long the ranks may take to reach its step and end, and how long
// the launcher may take after its ranks ended (torchrun polls its workers, then tears down its
// rendezvous), before cco tune stops what is left.
constexpr double kRanksGrace = 60, kLauncherGrace = 15;

// True when every process that wrote a step file has ended (each ended itself at the final
// decision's step). A process not reaped yet still counts as running.
bool ranks_gone(const std::string& steps_dir) {
  const auto files = read_step_files(steps_dir, nullptr);
  if (files.empty()) return false;
  for (const auto& f : files)
    if (f.pid > 0 && (::kill(f.pid, 0) == 0 || errno == EPERM)) return false;
  return true;
}

Watched watch(const TuneProgramOptions& o, pid_t pid, const timespec& t0,
              const std::string& tune_path, Foreground& fg) {
  Watched r;
  bool final_seen = false;
  double final_at = 0, term_at = -1, ranks_gone_at = -1, gone_checked = -1;
  const double hard_limit = static_cast<double>(o.time_s) + std::max(120.0, static_cast<double>(o.time_s) / 2.0);
  // SIGTERM to the program's group (SIGKILL follows after 30 s, below).
  auto stop = [&](const std::string& why, double now) {
    std::fprintf(stderr, "%s\n", why.c_str());
    ::kill(-pid, SIGTERM);
    ::kill(-pid, SIGCONT);  // a stopped program would not see SIGTERM until continued
    r.stopped = true;
    term_at = now;
  };
  for (;;) {
    int st = 0;
    const pid_t w = ::waitpid(pid, &st, WNOHANG | WUNTRACED);
    if (w == pid && WIFSTOPPED(st)) {
      // Stopped (Ctrl-Z reaches the program, which has the terminal): say so and, with a
      // terminal, stop cco too, so the shell's job control sees it; `fg` continues both.
      std::fprintf(stderr, "cco tune: the program was stopped (signal %d)%s\n", WSTOPSIG(st),
                   fg.active() ? "; cco stops too ('fg' continues both)" : "");
      if (fg.active()) {
        fg.take_back();
        ::raise(SIGTSTP);  // resumes here on SIGCONT
        fg.give(pid);
        ::kill(-pid, SIGCONT);
      }
      continue;
    }
    if (w == pid) {
      r.status = st;
      r.exited = true;
      break;
    }
    if (w < 0 && errno != EINTR) break;
    try {
      if (model::is_regular_file(tune_path)) r.tune = steps::read_tune_file(tune_path);
    } catch (const std::exception&) {
      // being replaced: read again next time
    }
    if (r.tune && show_progress(r)) {
      final_seen = true;
      final_at = seconds_since(t0);
    }
    const double now = seconds_since(t0);
    if (!r.stopped && !o.online && final_seen) {
      // Every rank ends itself at the final decision's step (CCO_TUNE_EXIT), its steps written,
      // and the launcher then ends on its own. What is left after that -- a rank that gave up
      // waiting for the decision, a launcher that goes on to other work -- is stopped.
      say_ending(r);
      if (ranks_gone_at < 0 && now - gone_checked >= 1) {  // the step files, read once a second
        gone_checked = now;
        if (ranks_gone(o.steps_out)) ranks_gone_at = now;
      }
      if ((ranks_gone_at >= 0 && now - ranks_gone_at > kLauncherGrace) ||
          now - final_at > kRanksGrace)
        stop("cco tune: the program did not end at the decision's step; stopping it", now);
    }
    if (!r.stopped && !final_seen && now > hard_limit)
      stop("cco tune: no final decision " + std::to_string(std::lround(now)) +
               " s after the start; stopping the program (partial results are kept)",
           now);
    if (r.stopped && term_at >= 0 && now - term_at > 30) {
      ::kill(-pid, SIGKILL);
      term_at = -1;
    }
    ::usleep(100000);
  }
  return r;
}

// The report: each candidate's search steps on the deciding process, and its paired difference
// to the baseline over the rounds in which both ran.
void print_search_report(const std::optional<steps::TuneFile>& tune,
                         const std::vector<steps::StepFile>& files) {
  const steps::StepFile* dec = nullptr;
  for (const auto& f : files)
    if (tune && ((tune->decider.rank && f.rank == tune->decider.rank) ||
                 (!tune->decider.rank && f.pid == tune->decider.pid)))
      dec = &f;
  const steps::Decision* fin = tune ? tune->final_decision() : nullptr;
  std::printf("# cco tune: %s\n", fin ? "search complete" : "search NOT complete (partial results)");
  if (dec && tune) {
    const bool gpu = fin ? fin->metric == "gpu" : true;
    const steps::History history = steps::history_of(dec->steps, gpu);
    const uint64_t search_end = fin ? fin->at_step : history.size();
    std::printf("# %s, %zu steps measured (%s times, ms), search steps %llu-%llu\n",
                steps::process_name(*dec).c_str(), dec->steps.size(), gpu ? "GPU" : "host",
                static_cast<unsigned long long>(tune->warmup),
                static_cast<unsigned long long>(search_end));
    std::printf("%-36s %6s %9s %9s %9s  %s\n", "candidate", "steps", "median", "q1", "q3",
                "paired vs first (95% CI)");
    for (std::size_t c = 0; c < tune->candidates.size(); ++c) {
      const steps::Summary s =
          steps::summarize(steps::times_of(history, static_cast<int>(c), tune->warmup, search_end));
      std::string diff = "-";
      if (c > 0) {
        const auto [a, b] = steps::paired_rounds(tune->stages, history, 0, static_cast<int>(c));
        const steps::PairedDiff p = steps::paired_difference(a, b);
        char buf[128];
        if (p.enough)
          std::snprintf(buf, sizeof buf, "%+.3f [%+.3f, %+.3f] over %zu rounds", p.median, p.lo,
                        p.hi, p.pairs);
        else
          std::snprintf(buf, sizeof buf, "too few rounds (%zu)", p.pairs);
        diff = buf;
      }
      std::printf("%-36s %6zu %9.3f %9.3f %9.3f  %s\n", tune->candidates[c].c_str(), s.n, s.median,
                  s.q1, s.q3, diff.c_str());
    }
  } else {
    std::printf("# no steps of the deciding process were found%s\n",
                tune ? "" : " (no decision file: the program found no steps, or ended first)");
  }
}

// The plan: the winner's, with where it was measured (the deciding process's device, SMs and
// driver), the program, the candidates and every decision.
void write_tuned_plan(const TuneProgramOptions& o, const steps::TuneFile& t,
                      const steps::Decision& fin, std::size_t ranks) {
  const std::string winner = t.candidates.at(static_cast<std::size_t>(fin.set.at(0)));
  nlohmann::json plan = nlohmann::json::parse(plan::to_json(plan::load_item(winner)));
  plan["generated_by"] = "cco tune -- CMD";
  if (!o.framework.empty()) plan["framework"] = model::framework_text(o.framework);
  nlohmann::json decisions = nlohmann::json::parse(steps::to_json(t))["decisions"];
  plan["tuning"] = {{"date", bench::iso_now()},
                    {"program", o.command},
                    {"candidates", t.candidates},
                    {"winner", winner},
                    {"why", fin.why},
                    {"metric", fin.metric},
                    {"warmup", t.warmup},
                    {"search_steps", fin.at_step - t.warmup},
                    {"ranks", ranks},
                    {"device", t.decider.device_name},
                    {"device_index", t.decider.device},
                    {"sms", t.decider.sms},
                    {"versions", {{"cuda_driver", t.decider.cuda_driver}}},
                    {"decisions", decisions},
                    {"diagnosis", t.diagnosis.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.diagnosis)},
                    {"steps_dir", o.steps_out}};
  write_output(o.out, plan.dump(2) + "\n");  // whole or not at all
  std::printf("# plan written to %s: %s (%s); apply it with `cco run --plan %s -- CMD`\n",
              o.out.c_str(), winner.c_str(), fin.why.c_str(), o.out.c_str());
}

// --framework-candidate: whole runs (tune_framework.cpp), the same checks of --out and the step
// folder before anything runs.
int search_framework(TuneProgramOptions& o) {
  check_plan_out(o.out, command_files(o.command));
  if (::mkdir(o.steps_out.c_str(), 0777) != 0)
    throw Usage("--steps-out " + o.steps_out + ": " +
                (errno == EEXIST ? std::string("exists (an earlier run's?): name a new folder")
                                 : std::string(std::strerror(errno))));
  FrameworkSearchOptions f;
  f.candidates = o.framework_candidates;
  f.warmup = o.warmup;
  f.rounds = static_cast<int>(o.framework_rounds);
  f.steps_out = absolute(o.steps_out);
  f.out = o.out;
  f.lib = o.lib;
  f.command = o.command;
  return framework_search_main(f);
}

}  // namespace

int tune_program_main(const std::vector<std::string>& args) {
  TuneProgramOptions o = parse_tune_program(args);
  if (!o.framework_candidates.empty()) return search_framework(o);
  const Prepared prep = prepare(o);

  timespec t0{};
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  std::fflush(nullptr);
  Foreground fg;  // the terminal, when cco has it: the program gets it while it runs
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    const pid_t born_in = ::getpgrp();
    ::setpgid(0, 0);  // its own group: stopping it stops its workers too (torchrun's)
    // cco killed (SIGKILL, `timeout -k`) must not leave the training running: the launcher gets
    // SIGTERM then (and ends its workers, as torchrun does). Checked after the call: cco may have
    // died before it.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
    child_take_foreground(born_in);
    exec_child(o.command, "cco tune");
  }
  ::setpgid(pid, pid);
  fg.give(pid);              // Ctrl-C and terminal reads reach the program, not cco
  forward_signals_to(-pid);  // signals sent to cco itself go to its whole group
  Watched w = watch(o, pid, t0, prep.tune_path, fg);
  fg.take_back();
  end_group(pid);  // workers the launcher left behind
  restore_default_signals();  // from here a Ctrl-C (or timeout) ends cco's own work
  const int status = w.status;
  std::optional<steps::TuneFile>& tune = w.tune;
  const int rc = w.exited ? exit_code(status) : 1;
  if (w.exited && (rc == 126 || rc == 127) && !tune) {
    ::rmdir(o.steps_out.c_str());  // made for this run and still empty
    return rc;
  }
  try {
    if (model::is_regular_file(prep.tune_path)) tune = steps::read_tune_file(prep.tune_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cco tune: %s\n", e.what());
  }
  if (tune && show_progress(w) && !o.online && !w.stopped) say_ending(w);

  std::vector<std::string> notes;
  const auto files = read_step_files(o.steps_out, &notes);
  for (const auto& n : notes) std::printf("cco tune: %s\n", n.c_str());
  print_search_report(tune, files);
  if (!o.framework.empty())
    std::fputs(format_framework_summary(o.framework, read_framework_reports(o.steps_out), "cco tune").c_str(),
               stderr);
  const steps::Decision* fin = tune ? tune->final_decision() : nullptr;
  if (!fin) {
    std::printf("# no plan written: the search did not finish (program exit %d); the step files "
                "and decisions so far are in %s\n", rc, o.steps_out.c_str());
    return rc != 0 ? rc : 3;
  }
  write_tuned_plan(o, *tune, *fin, files.size());
  // The program's own failure counts, unless we stopped it.
  if (w.stopped || rc == 0) return 0;
  std::fprintf(stderr, "cco tune: the program exited %d after the search\n", rc);
  return rc;
}

}  // namespace cco::cli
