// CCO_TRACE: a CUPTI trace of every kernel of the process, written at exit. See trace_hook.hpp.
//
// Started at the library's lazy initialisation -- the first kernel launch or collective that
// reaches it -- never from a constructor and never from a driver lookup. CUPTI is loaded by
// cco::trace::Session with dlopen/dlsym; its dlsym calls reach this library's dlsym export, which
// answers every name but the wrapped driver entry points through the real dlsym (dlvsym), and a
// re-entrant trace_start_once() returns at once: no recursion.
#include "preload/trace_hook.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>

#include "model/env_names.hpp"
#include "common/config.hpp"
#include "common/log.hpp"
#include "preload/trace_path.hpp"

#ifdef CCO_PRELOAD_TRACE
#include "trace/diagnosis.hpp"
#include "trace/format.hpp"
#include "trace/session.hpp"
#endif

namespace cco::preload {
namespace {

std::atomic<bool> g_claimed{false};  // the first trace_start_once() call decides

const char* env(const char* name) {
  return std::getenv(name);
}

#ifdef CCO_PRELOAD_TRACE
std::atomic<bool> g_running{false};          // a session was started in this process
std::atomic<bool> g_written{false};          // the exit writer ran (it runs once)
std::atomic<bool> g_late_registered{false};  // trace_register_late_exit() registered it
// Tracing only for the in-process diagnosis (no CCO_TRACE): no file, stopped at the verdict.
std::atomic<bool> g_diagnosis_only{false};
// Heap objects, never freed: the exit writer needs them after static destructors may have run.
trace::Session* g_session = nullptr;
const std::string* g_pattern = nullptr;
const std::string* g_trace_pid = nullptr;  // CCO_TRACE_PID at start
const std::string* g_start_warning = nullptr;
int64_t g_pid = 0;
bool g_verbose = false;

std::string join_devices(const std::set<int>& devs) {
  std::string s;
  for (int d : devs) {
    if (!s.empty()) s += ',';
    s += std::to_string(d);
  }
  return s;
}

void write_trace() noexcept {
  if (!g_running.load(std::memory_order_acquire)) return;
  if (static_cast<int64_t>(::getpid()) != g_pid) return;  // a forked child: not its trace
  if (g_written.exchange(true)) return;
  std::string path;
  try {
    g_session->stop();  // flushes every CUPTI buffer; never throws
    if (g_verbose) log_line("trace pid=" + std::to_string(g_pid) + ": CUPTI stopped");
    trace::Trace t = g_session->trace();
    // Warnings that arose while tracing (dropped records, unreadable buffers): one line.
    std::string w = g_session->warning();
    const std::string& w0 = *g_start_warning;
    if (!w0.empty() && w.rfind(w0, 0) == 0)
      w = w.size() > w0.size() + 2 ? w.substr(w0.size() + 2) : "";
    if (!w.empty()) warn_once("trace-stop", "CCO_TRACE: " + w);
    if (t.kernels.empty()) {
      if (g_verbose)
        log_line("trace pid=" + std::to_string(g_pid) + ": no kernel ran, no file written");
      return;
    }
    const std::optional<int> rank = rank_from_env(env);
    std::set<int> devices;
    for (const auto& k : t.kernels) devices.insert(k.device);
    if (rank && devices.size() == 1) {
      // One process per rank (torchrun, MPI): its kernels, streams and row are that rank's.
      for (auto& k : t.kernels) k.rank = *rank;
      for (auto& s : t.streams) s.rank = *rank;
      for (auto& r : t.ranks) r.rank = *rank;
      for (auto& m : t.marks)
        if (m.rank >= 0) m.rank = *rank;
      for (auto& r : t.ranges) r.rank = *rank;
    } else if (rank) {
      t.notes.push_back("the process's rank variable says " + std::to_string(*rank) +
                        ", but it ran kernels on " + std::to_string(devices.size()) +
                        " devices: ranks are the device ordinals");
    }
    path =
        expand_trace_path(*g_pattern, g_pid, rank, trace_top_process(g_trace_pid->c_str(), g_pid));
    trace::write_trace_file(t, path);
    std::string ranks;
    for (const auto& r : t.ranks) {
      if (!ranks.empty()) ranks += ',';
      ranks += std::to_string(r.rank);
    }
    log_line("trace pid=" + std::to_string(g_pid) + " ranks=" + ranks +
             " devices=" + join_devices(devices) + " kernels=" + std::to_string(t.kernels.size()) +
             (t.dropped_records ? " dropped=" + std::to_string(t.dropped_records) : "") + " -> " +
             path);
  } catch (const std::exception& e) {
    warn_once("trace-write", std::string("CCO_TRACE: no trace written: ") + e.what());
  } catch (...) {
    warn_once("trace-write", "CCO_TRACE: no trace written (unknown error)");
  }
}

void at_exit() {
  if (g_verbose && g_running.load())
    log_line("trace pid=" + std::to_string(::getpid()) + ": exit handler: flushing CUPTI");
  write_trace();
}

void start() noexcept {
  try {
    const char* pattern = env(cco::env::kTrace);
    const bool for_diagnosis = (!pattern || !*pattern) && diagnose_requested();
    if ((!pattern || !*pattern) && !for_diagnosis) return;
    if (const auto d = parse_flag(env(cco::env::kDisable)); !d || *d) return;
    if (for_diagnosis) pattern = "";
    if (const std::string bad = for_diagnosis ? "" : check_trace_pattern(pattern); !bad.empty()) {
      warn_once("trace", std::string("CCO_TRACE='") + pattern + "' " + bad + "; not tracing");
      return;
    }
    const char* what = for_diagnosis ? "the diagnosis of the first steps" : cco::env::kTrace;
    const auto v = parse_flag(env(cco::env::kVerbose));
    g_verbose = v && *v;
    trace::Options o;
    o.print_warnings = false;  // ours go through warn_once, prefixed cco-preload
    if (const char* nv = env(cco::env::kNvtx); nv && *nv)  // parse_flag(unset) is false: ask only if set
      if (const auto n = parse_flag(nv); n && !*n) o.nvtx_ranges = false;
    if (const char* lt = env(cco::env::kTraceLaunchTimes); lt && *lt)
      if (const auto n = parse_flag(lt); n && !*n) o.launch_timestamps = false;
    if (const char* lc = env(cco::env::kTraceCalls); lc && *lc)
      if (const auto n = parse_flag(lc); n && !*n) o.library_calls = false;
    if (for_diagnosis) {
      // A memory cap: the first steps need about 130,000 kernels (DDP of a 1.3B GPT, 23 steps);
      // a session whose check never comes (no steps found) keeps no more than this.
      o.max_kernels = 1'000'000;
    }
    if (for_diagnosis) o.nvtx_ranges = false;  // kernels and the clock's marks suffice (and --step-nvtx
                                          // makes the library NVTX's injection)
    auto* s = new trace::Session(o);
    if (!s->start()) {
      const std::string why = s->warning();
      std::string msg = std::string(what) + ": " + (why.empty() ? std::string("tracing disabled") : why);
      if (for_diagnosis)
        msg += "; the search or comparison runs without it";
      else if (msg.find("untraced") == std::string::npos)
        msg += "; the program runs untraced";
      warn_once("trace", msg);
      delete s;  // never started: nothing of CUPTI is held
      return;
    }
    g_start_warning = new std::string(s->warning());
    if (!g_start_warning->empty()) warn_once("trace-start", std::string(what) + ": " + *g_start_warning);
    g_pattern = new std::string(pattern);
    const char* tp = env(cco::env::kTracePid);
    g_trace_pid = new std::string(tp ? tp : "");
    g_pid = static_cast<int64_t>(::getpid());
    g_session = s;
    g_diagnosis_only.store(for_diagnosis, std::memory_order_release);
    g_running.store(true, std::memory_order_release);
    if (for_diagnosis) {
      if (g_verbose)
        log_line("trace pid=" + std::to_string(g_pid) + ": tracing for the diagnosis of the first steps");
      return;  // no file: stopped at the verdict
    }
    if (std::atexit(at_exit) != 0)
      warn_once("trace", "CCO_TRACE: cannot register the exit handler; no trace will be written");
    if (g_verbose)
      log_line("trace pid=" + std::to_string(g_pid) + ": tracing with CUPTI from " +
               trace::cupti_library());
  } catch (...) {
    // Out of memory and the like: no tracing, the program goes on.
  }
}
#endif  // CCO_PRELOAD_TRACE

}  // namespace

void trace_start_once() noexcept {
  if (g_claimed.load(std::memory_order_acquire)) return;
  if (g_claimed.exchange(true, std::memory_order_acq_rel)) return;
#ifdef CCO_PRELOAD_TRACE
  start();
#else
  const char* pattern = env(cco::env::kTrace);
  const auto d = parse_flag(env(cco::env::kDisable));
  if (pattern && *pattern && d && !*d)
    warn_once("trace",
              "CCO_TRACE is set, but this libcco_preload.so was built without CUPTI headers; the "
              "program runs untraced");
#endif
}

void trace_register_late_exit() noexcept {
#ifdef CCO_PRELOAD_TRACE
  if (!g_running.load(std::memory_order_acquire) || g_diagnosis_only.load()) return;
  if (g_late_registered.exchange(true)) return;
  std::atexit(at_exit);
#endif
}

bool trace_requested() noexcept {
  const char* pattern = env(cco::env::kTrace);
  const auto d = parse_flag(env(cco::env::kDisable));
  return pattern && *pattern && d && !*d;
}

void trace_mark(const char* name, int device) noexcept {
#ifdef CCO_PRELOAD_TRACE
  if (!g_running.load(std::memory_order_acquire) || g_written.load()) return;
  if (static_cast<int64_t>(::getpid()) != g_pid) return;  // a forked child
  try {
    g_session->mark(name, device);
  } catch (...) {
  }
#else
  (void)name;
  (void)device;
#endif
}

bool trace_calls_on() noexcept {
#ifdef CCO_PRELOAD_TRACE
  if (!g_running.load(std::memory_order_acquire) || g_written.load(std::memory_order_acquire))
    return false;
  return g_session->calls_on() && static_cast<int64_t>(::getpid()) == g_pid;
#else
  return false;
#endif
}

bool trace_push_call(uint64_t id, std::string (*label)(const void* arg), const void* arg) noexcept {
#ifdef CCO_PRELOAD_TRACE
  // The caller asked trace_calls_on() (this process, a session running); push_call checks that
  // the session still records calls.
  return g_running.load(std::memory_order_acquire) && g_session->push_call(id, label, arg);
#else
  (void)id;
  (void)label;
  (void)arg;
  return false;
#endif
}

void trace_pop_call() noexcept {
#ifdef CCO_PRELOAD_TRACE
  if (g_session) g_session->pop_call();
#endif
}

bool diagnose_requested() noexcept {
  const auto on = [](const char* name) {
    const auto v = parse_flag(env(name));
    return v && *v;
  };
  const auto d = parse_flag(env(cco::env::kDisable));
  if (!d || *d) return false;
  const char* compare = env(cco::env::kCompare);
  const bool tune = on(cco::env::kTune) && on(cco::env::kTuneDiagnose);
  // The rotation's check is made on one host only (configs.cpp): no tracing for it elsewhere.
  const bool rotation = !on(cco::env::kTune) && compare && *compare &&
                        on(cco::env::kCompareDiagnose) && ranks_on_one_host(env);
  if (!tune && !rotation) return false;
  const std::optional<int> rank = rank_from_env(env);
  return !rank || *rank == 0;
}

#ifdef CCO_PRELOAD_TRACE
namespace {

// Stops the session traced only for the diagnosis (activity off, then every buffer
// flushed; from here tracing costs nothing): true when it ran until now, false for a CCO_TRACE
// session (it goes on to its file), one already stopped, or a forked child.
bool stop_diagnosis_session(const char* why) noexcept {
  if (!g_diagnosis_only.load() || !g_running.load(std::memory_order_acquire)) return false;
  if (static_cast<int64_t>(::getpid()) != g_pid) return false;  // a forked child
  g_running.store(false, std::memory_order_release);  // no more marks
  g_session->stop();
  if (g_verbose) log_line("trace pid=" + std::to_string(g_pid) + ": " + why + ", CUPTI stopped");
  return true;
}

}  // namespace
#endif

std::optional<steps::StageVerdict> diagnosis_verdict(bool diagnose) noexcept {
#ifdef CCO_PRELOAD_TRACE
  // Stopped before the records are read: CUPTI's forced flush while activity records are still
  // enabled and other threads launch kernels hung a 4-GPU DDP run (the driver and CUPTI's worker
  // thread waited on each other), so the records are never flushed while tracing runs.
  if (!stop_diagnosis_session("diagnosis traced") || !diagnose) return std::nullopt;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const trace::Trace t = g_session->trace();
    const trace::ControlVerdict v = trace::control_verdict(t, 0);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    if (g_verbose)
      log_line("diagnosis of the first steps (" + std::to_string(t.kernels.size()) +
               " kernels, " + std::to_string(ms) + " ms): " + std::to_string(v.steps) + " steps, bound " +
               std::to_string(v.bound_ms) + " ms, noise " + std::to_string(v.noise_ms) + " ms" +
               (v.nothing_to_win ? ": nothing to win" : ""));
    return steps::StageVerdict{v.nothing_to_win, v.sentence};
  } catch (const std::exception& e) {
    warn_once("diagnosis", std::string("the diagnosis of the first steps failed: ") + e.what() +
                               "; the search or comparison goes on without it");
  } catch (...) {
  }
  return std::nullopt;
#else
  (void)diagnose;
  return std::nullopt;
#endif
}

void diagnosis_trace_done() noexcept {
#ifdef CCO_PRELOAD_TRACE
  stop_diagnosis_session("search done");
#endif
}

}  // namespace cco::preload
