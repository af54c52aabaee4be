// The preload library's configurations (entry.hpp): the hooks, made at the first launch or
// collective from the environment (CCO_POLICY / CCO_PLAN, or one per CCO_COMPARE item sharing
// one communication window), the one in force and its switch (the step clock's rotation or
// search, ccoverlap.policy()), the GEMM controls' state, statistics at exit, and the C API
// (cco_api.h) with the NVTX injection entry (nvtx_steps.hpp).
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "model/controls.hpp"
#include "model/env_names.hpp"
#include "model/types.hpp"
#include "preload/cco_api.h"
#include "common/config.hpp"
#include "preload/entry.hpp"
#include "common/log.hpp"
#include "preload/nvtx_steps.hpp"
#include "preload/resolve.hpp"
#include "preload/trace_hook.hpp"
#include "preload/trace_path.hpp"
#include "preload/window.hpp"

#define CCO_EXPORT extern "C" __attribute__((visibility("default")))

using namespace cco::preload;
using namespace cco::preload::entry;
namespace plan = cco::plan;

namespace cco::preload::entry {

// ---- the hook, made at the first launch or collective ----------------------------------------
std::mutex g_init_mu;
std::atomic<bool> g_init_final{false};  // true: no hook for this process (disabled)
std::atomic<Hook*> g_hook{nullptr};      // the hook in force (one of g_hooks)
std::atomic<int> g_hook_index{-1};       // its index in g_hooks (cco_config_index)
// Every configuration's hook (cco run --compare, ccoverlap.policy()): g_hook switches between
// them at step boundaries. Slots are written once, under g_init_mu, and never freed.
std::array<std::atomic<Hook*>, kMaxHooks> g_hooks{};
std::atomic<int> g_nhooks{0};
std::atomic<int> g_ncompare{0};  // > 1: a rotation owns the switch (ccoverlap.policy refused)
std::atomic<int> g_nocomm_index{-1};  // the measuring configuration's hook (-1: none)
// The item each hook was made from (heap strings, never freed: no static initialiser here).
std::array<std::atomic<const std::string*>, kMaxHooks> g_hook_names{};
// Puts hook i in force: its index first, so that whoever sees the new hook sees its index.
void set_hook(int i) {
  if (Hook* h = g_hooks[static_cast<std::size_t>(i)].load()) {
    g_hook_index.store(i, std::memory_order_release);
    g_hook.store(h, std::memory_order_release);
  }
}
std::string hook_name(int i) {
  const std::string* n = g_hook_names[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
  return n ? *n : std::string();
}
std::atomic<StepClock*> g_clock{nullptr};
CommWindow* g_shared_window = nullptr;
HookOptions g_hook_opts;
DriverApi g_api;  // the hooks' driver table (set before the first hook is published)
std::atomic<NcclStreams*> g_streams{nullptr};
std::atomic<int> g_stats_level{0};

// ---- the compute SM budget and its launch-order window (blas.hpp, order_window.hpp) ----------
// g_order exists only once a plan has `gemm.when: overlap`: otherwise the window's driver
// wrappers cost one load and one branch. g_wapi is the driver as the window, the step clock and
// the GEMM decisions need it (written once in init_hook, before any hook is published).
// g_gemm_any: some configuration has an SM target (until then the cuBLAS wrappers forward at
// once); set before that configuration's hook can be switched to.
std::atomic<OrderWindow*> g_order{nullptr};
std::atomic<bool> g_gemm_any{false};
DriverApi g_wapi;

// Under g_init_mu: what a plan's gemm section needs, before its hook can be in force.
void gemm_controls_for(const plan::Plan& p) {
  if (!p.gemm.active()) return;
  if (p.gemm.when == plan::When::Overlap && !g_order.load(std::memory_order_acquire))
    g_order.store(new OrderWindow(), std::memory_order_release);  // never freed
  g_gemm_any.store(true, std::memory_order_release);
}

void steps_at_exit() {
  if (g_forked_child.load()) return;
  StepClock* c = g_clock.load(std::memory_order_acquire);
  if (!c) return;
  std::string err;
  if (!c->write("exit", &err)) warn_once("steps-write", "cannot write the step file: " + err);
}

// The step clock (step_clock.hpp): when steps are recorded or configurations compared.
void init_step_clock(const EnvConfig& env, const std::vector<std::string>& names,
                     const DriverApi& api, bool must_agree) {
  StepClockOptions o;
  o.configs = names;
  o.warmup = env.warmup;
  o.rank = env.rank;
  if (env.tune && names.size() > 1) {
    o.tune.on = true;
    o.tune.budget = env.tune_steps;
    o.tune.time_ns = env.tune_time_s * 1000000000ULL;
    o.tune.wait_ns = env.tune_wait_s * 1000000000ULL;
    o.tune.decider = !env.rank || *env.rank == 0;
    o.tune.path = env.steps_dir + "/tune.json";
    o.tune.must_agree = must_agree;
    // cco tune -- CMD without --online: every rank ends itself at the final decision's step
    // (step file written), status 0: a signal would make a launcher like torchrun print a
    // traceback, and would reach the ranks at different steps.
    if (env.tune_exit)
      o.tune.end_process = [] {
        std::fflush(nullptr);
        ::_exit(0);
      };
  }
  // cco run --compare's check after the rotation's first rounds (CCO_COMPARE_DIAGNOSE): the
  // search's decision plumbing, with the decision file DIR/check.json.
  // One host only: cco run's temporary folder, where the decision file is, is not seen from
  // another (every rank answers alike, from the launcher's variables).
  const bool check = !env.tune && env.compare_diagnose && names.size() > 1 && !env.steps_dir.empty();
  const bool one_host = ranks_on_one_host([](const char* n) { return std::getenv(n); });
  if (check && !one_host && (!env.rank || *env.rank == 0))
    warn_once("compare-hosts", "compare: the ranks run on several hosts: no check after the first "
                               "rounds (its decision file is not shared); the comparison runs to "
                               "the end");
  if (check && one_host) {
    o.check_rounds = kCheckRounds;
    o.tune.wait_ns = env.tune_wait_s * 1000000000ULL;
    o.tune.decider = !env.rank || *env.rank == 0;
    o.tune.path = env.steps_dir + "/check.json";
    o.tune.must_agree = must_agree;
  }
  if (!env.steps_dir.empty())
    o.path = env.steps_dir + "/steps-" +
             (env.rank ? "rank" + std::to_string(*env.rank) : "pid" + std::to_string(getpid())) +
             ".json";
  // Under CCO_TRACE every step boundary is a mark in the trace (cco report finds steps by it);
  // so too for cco tune's diagnosis of its first stage, which finds candidate 0's steps by them.
  const bool diagnose =
      (o.tune.on || o.check_rounds > 0) && o.tune.decider && diagnose_requested();
  if (trace_requested() || diagnose)
    o.on_boundary = [](const char* name, int dev) { trace_mark(name, dev); };
  if (diagnose) {
    o.tune.diagnose = [](bool settled) { return diagnosis_verdict(settled); };
    o.tune.search_done = [] { diagnosis_trace_done(); };
    o.tune.launches = [] {  // every configuration's hook counts the launches it saw
      uint64_t n = 0;
      const int k = std::min(g_nhooks.load(std::memory_order_acquire), kMaxHooks);
      for (int i = 0; i < k; ++i)
        if (const Hook* h = g_hooks[static_cast<std::size_t>(i)].load(std::memory_order_acquire))
          n += h->stats().seen.load(std::memory_order_relaxed);
      return n;
    };
  }
  auto* c = new StepClock(api, std::move(o),  // never freed
                          [](int i) { set_hook(i); },
                          now_ns);
  g_clock.store(c, std::memory_order_release);
  // Registered after the CUDA runtime's own exit handler (the runtime is up by the first launch
  // or collective), so it runs first: events can still be queried.
  std::atexit(steps_at_exit);
}

// Why the plan's made_for does not match the current device ("" when it does): the device's
// name and SM count and the driver's version, asked of the driver; "no current device ..." when
// the driver cannot say.
std::string made_for_problem(const plan::Plan& p, const DriverApi& api) {
  CUdevice dev = 0;
  char name[256] = {};
  int sms = 0, ver = 0;
  if (!api.ctxGetDevice || api.ctxGetDevice(&dev) != CUDA_SUCCESS || !api.deviceGetName ||
      api.deviceGetName(name, sizeof name, dev) != CUDA_SUCCESS || !api.deviceGetAttribute ||
      api.deviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS)
    return "no current device to check it against";
  std::vector<std::pair<std::string, std::string>> versions;
  if (api.driverGetVersion && api.driverGetVersion(&ver) == CUDA_SUCCESS)
    versions.push_back({"cuda_driver", model::cuda_version_from_code(ver)});
  std::string list;
  for (const auto& d : plan::made_for_mismatch(p.made_for, name, sms, versions))
    list += (list.empty() ? "" : "; ") + d;
  return list;
}

// Called under g_init_mu. Makes the hook, or decides there is none (CCO_DISABLE), or -- when
// the driver is not loaded yet (an NCCL call before any CUDA call) -- leaves it for the next try.
void init_hook() {
  // Once the library starts, a forked child must not take its locks (see g_forked_child).
  static bool atfork = false;
  if (!atfork) atfork = pthread_atfork(nullptr, nullptr, on_fork_child) == 0;
  EnvConfig env = read_env([](const char* n) { return static_cast<const char*>(std::getenv(n)); });
  for (const auto& w : env.warnings) warn_once(w, w);
  g_stats_level.store(env.stats);
  if (env.disabled) {
    g_init_final.store(true, std::memory_order_release);
    return;
  }
  trace_start_once();  // the first launch or collective (never a lookup: trace_hook.hpp)
  const GetProcAddressV2Fn gpa = real_get_proc_v2();
  if (!gpa) return;
  std::vector<std::string> warns;
  plan::Plan p = resolve_plan(env, &warns);
  for (const auto& w : warns) warn_once(w, w);
  DriverApi api;
  if (!load_driver_api(gpa, &api))
    warn_once("driver-api",
              "the CUDA driver lacks calls the library needs (cuGetProcAddress, "
              "cuFuncGetName, cuFuncGetAttribute, ...); launches are left unchanged");
  if (env.compare.empty() && p.made_for.set && !env.plan_force) {
    // A plan made elsewhere, set by hand: refused as cco run refuses it (its tuned settings do
    // not carry over blindly), unless CCO_PLAN_FORCE=1.
    if (const std::string why = made_for_problem(p, api); !why.empty()) {
      warn_once("made-for", "CCO_PLAN: plan " + env.plan_path + " was made for " +
                                p.made_for.device + ", not this device (" + why +
                                "); running unshaped (CCO_PLAN_FORCE=1, or cco run --force, "
                                "applies it anyway)");
      p = plan::from_policy("off");
      p.policy = "off (plan made for another device)";
    }
  }
  // A comparison: one plan per item, all switchable at run time, or no comparison at all.
  std::vector<plan::Plan> plans;
  std::vector<std::string> names;
  if (!env.compare.empty()) {
    if (!env.plan_path.empty() || !env.policy.empty())
      warn_once("compare-policy", "CCO_COMPARE is set: CCO_POLICY and CCO_PLAN are ignored");
    for (const auto& item : env.compare) {
      std::string why;
      try {
        plans.push_back(resolve_compare_item(item, env.method));
        why = plan::rotation_refusal(plans.back());
        if (model::is_nocomm(item) && plans.size() == 1)
          why = "the measuring configuration cannot be the baseline (compare a policy with it: "
                "off,nocomm)";
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty()) {
        warn_once("compare-item", "CCO_COMPARE: '" + item + "' cannot rotate: " + why +
                                      "; no comparison, the program runs under 'off'");
        plans.assign(1, plan::from_policy("off"));
        names.assign(1, "off");
        break;
      }
      names.push_back(item);
    }
  }
  if (plans.empty()) {
    names.push_back(p.policy);
    plans.push_back(std::move(p));
  }
  const bool stream_method = plans[0].priority.uses_stream();
  bool channels = false;  // a configuration caps NCCL channels (the tuner plugin follows g_hook_index)
  for (const auto& q : plans) channels = channels || q.nccl.uses_tuner();
  g_api = api;
  load_driver_api(gpa, &g_wapi);  // what it lacks stays null (checked at each use)
  g_hook_opts = HookOptions{env.stats, env.verbose};
  if (plans.size() > 1) {
    // Every hook must see every NCCL launch: one window, shared, when any plan uses it.
    bool any_overlap = false;
    for (const auto& q : plans)
      any_overlap = any_overlap || (q.shaping.active() && q.shaping.when == plan::When::Overlap);
    if (any_overlap) g_shared_window = new CommWindow(api, new Stats());  // never freed
    g_hook_opts.shared_window = g_shared_window;
  }
  for (std::size_t i = 0; i < plans.size(); ++i) {
    // The measuring configuration (cco run --compare says before the start that the run's
    // answers are not kept).
    if (plans.size() > 1 && model::is_nocomm(names[i]))
      g_nocomm_index.store(static_cast<int>(i), std::memory_order_release);
    gemm_controls_for(plans[i]);  // the cuBLAS SM budget and its launch-order window (blas.hpp)
    g_hook_names[i].store(new std::string(names[i]));
    g_hooks[i].store(new Hook(api, std::move(plans[i]), g_hook_opts));  // never freed
  }
  g_nhooks.store(static_cast<int>(names.size()));
  g_ncompare.store(static_cast<int>(names.size()));
  Hook* h = g_hooks[0].load();
  if (!env.steps_dir.empty() || names.size() > 1 || trace_requested())
    init_step_clock(env, names, api, channels && plans.size() > 1);
  if (stream_method) {
    // The companion priority is the current context's greatest, read when the first companion
    // is made (a context exists by then).
    g_streams.store(new NcclStreams(api, h->stats(), [h] { return h->greatest_priority(); }));
  }
  set_hook(0);
  // Registered after the CUDA runtime's own exit handler, so the trace is written before it.
  trace_register_late_exit();
}

Hook* make_hooks() {
  if (Hook* h = g_hook.load(std::memory_order_acquire)) return h;
  if (g_init_final.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (Hook* h = g_hook.load(std::memory_order_acquire)) return h;
  if (!g_init_final.load(std::memory_order_acquire)) init_hook();
  return g_hook.load(std::memory_order_acquire);
}

void check_made_for_library(const char* key, const char* what, const std::string& loaded) {
  const int n = std::min(g_nhooks.load(std::memory_order_acquire), kMaxHooks);
  for (int i = 0; i < n; ++i) {
    const Hook* h = g_hooks[i].load(std::memory_order_acquire);
    if (!h) continue;
    const std::string line = plan::made_for_library(h->plan(), key, what, loaded);
    if (line.empty()) continue;
    warn_once(std::string("made-for-") + key, line);
    return;
  }
}

NcclStreams* streams() {
  hook();
  return g_streams.load(std::memory_order_acquire);
}

void report_at_exit() {
  if (g_forked_child.load()) return;  // the parent's counts are not the child's
  int level = g_stats_level.load();
  Hook* h = g_hook.load();
  // A gemm SM budget that nothing reached: cuBLAS linked statically (or not used).
  if (h && h->stats().gemm_active.load() && h->stats().gemm_calls.load() == 0 &&
      h->stats().seen.load() > 0)
    warn_once("gemm-unseen",
              "the plan sets a GEMM SM target, but no cuBLAS/cuBLASLt call reached the library "
              "(statically linked cuBLAS?); GEMMs ran with their own SM target");
  if (!h) {
    // Nothing was launched; CCO_STATS=2 still asks for a line.
    const char* v = std::getenv(cco::env::kStats);
    if (!v || std::strcmp(v, "2") != 0 || disabled()) return;
    log_line("stats pid=" + std::to_string(getpid()) +
             " seen=0 (no kernel launch reached the library)");
    return;
  }
  const int n = g_nhooks.load();
  for (int i = 0; i < std::max(n, 1); ++i) {
    Hook* hi = n > 0 ? g_hooks[static_cast<std::size_t>(i)].load() : h;
    if (!hi || level <= 0 || (level == 1 && !hi->stats().any())) continue;
    log_line(hi->stats().summary(hi->plan().policy, plan::to_string(hi->plan().priority.method),
                                 getpid()));
    if (level >= 2)
      for (const auto& line : hi->kernel_report()) log_line(line);
  }
}

// ccoverlap.policy(): the index of the hook of a named policy or plan, made on first use (under
// g_init_mu). Returns -1 and sets *why when it cannot be used.
int hook_for(const std::string& item, std::string* why) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  const int n = g_nhooks.load();
  for (int i = 0; i < n; ++i)
    if (hook_name(i) == item) return i;
  if (n >= kMaxHooks) {
    *why = "too many policies (" + std::to_string(kMaxHooks) + " at most)";
    return -1;
  }
  plan::Plan p;
  try {
    p = resolve_item(item, std::nullopt);
  } catch (const std::exception& e) {
    *why = e.what();
    return -1;
  }
  if (std::string r = plan::rotation_refusal(p); !r.empty()) {
    *why = "'" + item + "' cannot be switched at run time: " + r;
    return -1;
  }
  if (p.nccl.uses_tuner()) {
    // A rank's own call may come at a different collective than another rank's: only a rotation
    // (switched at the same collective on every rank) may change what NCCL does.
    *why = "'" + item + "' caps NCCL channels, which switch only in a comparison or a tuning "
           "run (cco run --compare, cco tune), at the same collective on every rank";
    return -1;
  }
  gemm_controls_for(p);
  // A hook made after the start cannot share a window the others lack: one made now sees NCCL
  // launches from now on (its own window, if its plan uses one).
  auto* h = new Hook(g_api, std::move(p), g_hook_opts);  // never freed
  g_hook_names[static_cast<std::size_t>(n)].store(new std::string(item));
  g_hooks[static_cast<std::size_t>(n)].store(h);
  g_nhooks.store(n + 1);
  return n;
}

// `text` into buf (NUL-terminated, cut to len - 1 bytes); its full length (the C API's contract).
long copy_out(const std::string& text, char* buf, unsigned long len) {
  if (buf && len > 0) {
    const std::size_t k = std::min<std::size_t>(text.size(), len - 1);
    std::memcpy(buf, text.data(), k);
    buf[k] = '\0';
  }
  return static_cast<long>(text.size());
}

thread_local char t_api_error[512];  // trivially constructed: no TLS initialiser

int api_fail(int code, const std::string& why) {
  copy_out(why, t_api_error, sizeof t_api_error);
  return code;
}

}  // namespace cco::preload::entry

// ---- the C API (cco_api.h) --------------------------------------------------------------------

CCO_EXPORT int cco_api_version() {
  return CCO_API_VERSION;
}

CCO_EXPORT int cco_config_index() {
  if (disabled()) return -1;
  return g_hook_index.load(std::memory_order_acquire);
}

CCO_EXPORT int cco_step_mark(void* stream) {
  if (disabled()) return api_fail(CCO_API_DISABLED, "the library is disabled in this process");
  if (!hook()) return api_fail(CCO_API_DISABLED, "the library is not active (no CUDA driver yet?)");
  StepClock* c = g_clock.load(std::memory_order_acquire);
  if (!c) return api_fail(CCO_API_NO_STEPS, "steps are not recorded (set CCO_STEPS_DIR, or use "
                                            "cco run --steps-out or --compare)");
  const auto s = static_cast<CUstream>(stream);
  c->mark(current_device(), s, is_capturing(s));
  return CCO_API_OK;
}

// NVTX's injection entry (nvtx_steps.hpp): called by every copy of NVTX in the process at its
// first call when NVTX_INJECTION64_PATH names this library (cco run --step-nvtx). Only with
// CCO_STEP_NVTX; otherwise 0, which leaves that copy of NVTX idle, as it is without an injection.
namespace {
void nvtx_step() {
  if (disabled() || !hook()) return;  // before the driver is loaded: no step yet
  if (StepClock* c = g_clock.load(std::memory_order_acquire))
    c->mark(current_device(), nullptr, is_capturing(nullptr));  // the legacy default stream
}
}  // namespace

CCO_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (disabled()) return 0;
  static const NvtxStepNames* names = [] {  // read once; never freed
    const EnvConfig env =
        read_env([](const char* n) { return static_cast<const char*>(std::getenv(n)); });
    return env.step_nvtx.empty() ? nullptr : new NvtxStepNames(env.step_nvtx);
  }();
  if (!names) return 0;
  if (!install_nvtx_steps(get, names, nvtx_step)) {
    warn_once("nvtx-install", "CCO_STEP_NVTX: this NVTX has no callback tables the library "
                              "knows; its ranges mark no steps");
    return 0;
  }
  return 1;
}

CCO_EXPORT int cco_policy_set(const char* name) {
  if (!name) return api_fail(CCO_API_BAD_ARGUMENT, "no policy name");
  if (disabled()) return api_fail(CCO_API_DISABLED, "the library is disabled in this process");
  if (!hook()) return api_fail(CCO_API_DISABLED, "the library is not active (no CUDA driver yet?)");
  if (g_ncompare.load() > 1)
    return api_fail(CCO_API_BUSY, "a comparison (CCO_COMPARE) is switching policies");
  std::string why;
  const int i = hook_for(name, &why);
  if (i < 0) return api_fail(CCO_API_BAD_ARGUMENT, why);
  set_hook(i);
  return CCO_API_OK;
}

CCO_EXPORT long cco_policy_get(char* buf, unsigned long len) {
  Hook* h = disabled() ? nullptr : g_hook.load(std::memory_order_acquire);
  std::string name = "(none)";
  if (h) {
    const int n = g_nhooks.load();
    for (int i = 0; i < n; ++i)
      if (g_hooks[static_cast<std::size_t>(i)].load() == h) name = hook_name(i);
  }
  return copy_out(name, buf, len);
}

CCO_EXPORT long cco_stats(char* buf, unsigned long len) {
  std::string out;
  if (!disabled()) {
    const int n = g_nhooks.load();
    for (int i = 0; i < n; ++i) {
      Hook* h = g_hooks[static_cast<std::size_t>(i)].load();
      if (!h) continue;
      out += h->stats().summary(hook_name(i),
                                plan::to_string(h->plan().priority.method), getpid());
      out += '\n';
    }
  }
  return copy_out(out, buf, len);
}

CCO_EXPORT const char* cco_last_error() {
  return t_api_error;
}

// Statistics at exit (CCO_STATS). Only counters are read: no CUDA call, no stdio.
__attribute__((destructor)) static void cco_preload_fini() {
  report_at_exit();
}
