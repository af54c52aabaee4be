// cco run: the preload library's launcher. See run_cmd.hpp and docs/cli/run.md.
#include "cli/run_cmd.hpp"

#include "cli/parse.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/run_framework.hpp"
#include "cli/run_support.hpp"
#include "model/controls.hpp"
#include "model/env_names.hpp"
#include "model/limits.hpp"
#include "model/read_file.hpp"
#include "preload/trace_path.hpp"
#include "steps/compare.hpp"
#include "steps/paired.hpp"
#include "steps/record.hpp"
#include "steps/search.hpp"
#include "trace/diagnosis.hpp"
#include "trace/format.hpp"
#ifdef CCO_HAVE_CUDA
#include "runtime/device.hpp"
#endif

namespace cco::cli {
namespace {

constexpr const char* kLibName = "libcco_preload.so";
constexpr const char* kTunerName = "libcco_tuner.so";
// The object NCCL 2.28 looks up first in a tuner plugin (docs/TUNER.md).
constexpr const char* kTunerSymbol = "ncclTunerPlugin_v5";
// NCCL copies NCCL_TUNER_PLUGIN into a 255-byte buffer (src/plugin/plugin_open.cc, MAX_STR_LEN):
// a longer path is cut and the plugin silently not loaded.
constexpr std::size_t kNcclPluginNameMax = 254;

// Single-quoted for a POSIX shell, only when needed.
std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          "@%_-+=:,./") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool truthy(const char* v) {
  if (!v) return false;
  const std::string s = v;
  return !(s.empty() || s == "0" || s == "false" || s == "no" || s == "off" || s == "FALSE" ||
           s == "NO" || s == "OFF");
}

}  // namespace

std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf)) return buf;
  return p;
}

bool same_file(const std::string& path, const std::string& ours) {
  return path == ours || absolute(path) == ours;
}

bool names_another(const char* value, const std::string& ours) {
  return value && *value && !same_file(value, ours);
}

std::string dir_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

// --step-nvtx NAME: a glob of at most 255 printable characters.
std::string check_step_nvtx(const std::string& name) {
  if (name.empty()) throw Usage("--step-nvtx needs a range name");
  if (name.size() > 255) throw Usage("--step-nvtx: a range name of at most 255 characters");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) throw Usage("--step-nvtx: the range name has a control character");
  return name;
}

// --step-nvtx: the library must be NVTX's injection; another tool named there would get the
// ranges instead, and no step would be found.
void refuse_foreign_nvtx(const std::string& lib) {
  const char* have = ::getenv("NVTX_INJECTION64_PATH");
  if (names_another(have, lib))
    throw Usage(std::string("--step-nvtx: NVTX_INJECTION64_PATH=") + have +
                " is set (another NVTX tool); steps from NVTX ranges need the library as the "
                "injection: unset it");
}

// --steps-out DIR: made when missing; it must be a writable folder. Returns its absolute path.
std::string steps_folder(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw Usage("--steps-out " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(dir.c_str(), W_OK) != 0)
    throw Usage("--steps-out " + dir + ": not a writable folder");
  // An earlier run's step files (other ranks or processes than this run's) would be read as this
  // run's and mixed into its comparison, or be overwritten in part: refused, whatever they hold.
  if (DIR* d = ::opendir(dir.c_str())) {
    std::string found;
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("steps-", 0) == 0 && n.size() > 11 && n.compare(n.size() - 5, 5, ".json") == 0)
        found = n;  // a step file names the earlier run best
      else if (found.empty() && n == "check.json")  // the rotation check's decision file
        found = n;
      if (found.rfind("steps-", 0) == 0) break;
    }
    ::closedir(d);
    if (!found.empty())
      throw Usage("--steps-out " + dir + " already holds step files of an earlier run (" + found +
                  "): remove them or name another folder");
  }
  return absolute(dir);
}

// The preload library (--lib, $CCO_PRELOAD_LIB or beside cco), checked to load: the dynamic
// loader only warns ("cannot be preloaded ... ignored") and runs the program without it.
std::string loadable_preload_library(const std::string& explicit_lib) {
  const std::string lib = find_preload_library(self_exe(), explicit_lib, ::getenv(cco::env::kPreloadLib));
  if (std::string bad = model::library_file_problem(lib); !bad.empty())
    throw Usage("the preload library " + bad);
  void* h = ::dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char* why = ::dlerror();
    throw std::runtime_error("cannot load " + lib + ": " + (why ? why : "unknown error"));
  }
  // Another library (libm, the tuner plugin) loads too, and the program then ran with no control
  // at all and exit 0 (review): it must be ccoverlap's.
  const bool ours = ::dlsym(h, "cco_api_version") != nullptr && ::dlsym(h, "cuLaunchKernel") != nullptr;
  ::dlclose(h);
  if (!ours)
    throw std::runtime_error(lib + " is not ccoverlap's preload library (it exports no "
                                   "cco_api_version or cuLaunchKernel)");
  return lib;
}

// In a forked child: runs the command, or says why not and exits 127 (not found) or 126.
[[noreturn]] void exec_child(const std::vector<std::string>& command, const char* who) {
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  std::fprintf(stderr, "%s: error: cannot run '%s': %s\n", who, command[0].c_str(),
               std::strerror(err));
  ::_exit(err == ENOENT ? 127 : 126);
}

// A whole number from lo to hi, or Usage: "FLAG 'V' is not WHAT" (WHAT: "a whole number from lo
// to hi" unless given).
long count_arg(const std::string& flag, const std::string& v, long lo, long hi,
               const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < lo || n > hi)
    throw Usage(flag + " '" + v + "' is not " +
                (what.empty() ? "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi)
                              : what));
  return n;
}

// The items of --compare / --candidates: 2 to 8, separated by ',', none empty.
std::vector<std::string> configuration_list(const std::string& flag, const std::string& v) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = v.find(',', start);
    const std::string item = v.substr(start, comma == std::string::npos ? comma : comma - start);
    if (item.empty()) throw Usage(flag + " '" + v + "': an empty item");
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() < 2 || out.size() > 8)
    throw Usage(flag + " needs 2 to 8 policies or plans separated by ',' (got " +
                std::to_string(out.size()) + ")");
  return out;
}

std::function<void()> add_launch_options(CLI::App& app, LaunchOptions& o) {
  auto warmup = std::make_shared<std::string>();
  app.add_option("--lib", o.lib);
  app.add_option("--tuner-lib", o.tuner_lib);
  app.add_flag("-v,--verbose", o.verbose);
  app.add_option("--steps-out", o.steps_out);
  auto* w = app.add_option("--warmup", *warmup);
  auto* nvtx = app.add_option("--step-nvtx", o.step_nvtx)->type_name("range name");
  return [&o, warmup, w, nvtx] {
    if (w->count())
      o.warmup = count_arg("--warmup", *warmup, 0, 1000000, "a step count (0 to 1000000)");
    if (nvtx->count()) o.step_nvtx = check_step_nvtx(o.step_nvtx);
  };
}

RunOptions parse_run_args(const std::vector<std::string>& args) {
  RunOptions o;
  CLI::App app{"cco run", "run"};
  app.set_help_flag();  // help text comes from docs/cli/run.md, handled by the CLI
  std::string compare;
  app.add_option("--policy", o.policy);
  app.add_option("--plan", o.plan_file);
  app.add_flag("--stats", o.stats);
  app.add_flag("--dry-run", o.dry_run);
  app.add_flag("--force", o.force);
  app.add_option("--compare", compare);
  app.add_option("--compare-json", o.compare_json);
  app.add_option("--trace", o.trace);
  std::string framework;
  app.add_option("--framework", framework);
  bool no_diagnose = false;
  app.add_flag("--no-diagnose", no_diagnose);
  const auto check_launch = add_launch_options(app, o);
  o.command = parse_until_command(app, args, false, "");
  if (app.count("--compare")) o.compare = configuration_list("--compare", compare);
  if (app.count("--framework")) {
    try {
      o.framework = model::parse_framework(framework);
    } catch (const model::Error& e) {
      throw Usage(e.what());
    }
  }
  check_launch();
  if (app.count("--trace"))
    if (const std::string bad = preload::check_trace_pattern(o.trace); !bad.empty())
      throw Usage("--trace '" + o.trace + "' " + bad);
  if (!o.policy.empty() && !o.plan_file.empty())
    throw Usage("--policy and --plan conflict: give one");
  if (!o.compare.empty() && (!o.policy.empty() || !o.plan_file.empty()))
    throw Usage("--compare conflicts with --policy and --plan: the compared items are the policies");
  if (o.compare.empty() && o.steps_out.empty() && (o.warmup >= 0 || !o.compare_json.empty()))
    throw Usage(std::string(o.warmup >= 0 ? "--warmup" : "--compare-json") +
                " needs --compare (or --steps-out)");
  if (!o.compare_json.empty() && o.compare.empty())
    throw Usage("--compare-json needs --compare");
  if (no_diagnose && o.compare.empty()) throw Usage("--no-diagnose needs --compare");
  o.diagnose = !no_diagnose;
  refuse_input("--compare-json", o.compare_json, o.compare, "cco run");  // a compared plan file
  if (!o.step_nvtx.empty() && o.compare.empty() && o.steps_out.empty())
    throw Usage("--step-nvtx needs --compare (or --steps-out): steps are only found for them");
  if (o.command.empty()) throw Usage("no command to run (cco run [options] -- CMD [ARGS...])");
  return o;
}

void apply_environment(const std::vector<EnvChange>& changes) {
  for (const auto& c : changes) {
    if (c.value)
      ::setenv(c.name.c_str(), c.value->c_str(), 1);
    else
      ::unsetenv(c.name.c_str());
  }
}

std::vector<EnvChange> run_environment(const RunOptions& opts, const plan::Plan& plan,
                                       const std::string& plan_path, const std::string& lib_path,
                                       const std::string& tuner_path,
                                       const std::function<const char*(const char*)>& getenv,
                                       std::vector<std::string>* warnings) {
  std::vector<EnvChange> out;
  // LD_PRELOAD: append (the dynamic loader takes ':' or ' ' as separators), once.
  const char* pre = getenv("LD_PRELOAD");
  std::string list = pre ? pre : "";
  bool present = false;
  {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find_first_of(": ", start);
      if (end == std::string::npos) end = list.size();
      const std::string item = list.substr(start, end - start);
      if (!item.empty() && same_file(item, lib_path)) present = true;
      start = end + 1;
    }
  }
  if (!present) out.push_back({"LD_PRELOAD", list.empty() ? lib_path : list + ":" + lib_path});
  if (!opts.compare.empty()) {
    std::string items;
    for (const auto& c : opts.compare) items += (items.empty() ? "" : ",") + c;
    out.push_back({cco::env::kCompare, items});
    // The check after the first rounds traces rank 0 in-process; a whole-run trace (--trace)
    // cannot be read while it runs, so there the bounds come after the run instead.
    // A price measurement (nocomm) runs to the end: "nothing to win" must not stop it.
    const bool price = std::any_of(opts.compare.begin(), opts.compare.end(), model::is_nocomm);
    out.push_back({cco::env::kCompareDiagnose,
                   opts.diagnose && opts.trace.empty() && !price ? "1" : "0"});
    out.push_back({cco::env::kPolicy, std::nullopt});
    out.push_back({cco::env::kPlan, std::nullopt});
  } else if (!plan_path.empty()) {
    out.push_back({cco::env::kPlan, plan_path});
    out.push_back({cco::env::kPolicy, std::nullopt});
    // Checked here against this machine (check_made_for); --force lets the library apply it too.
    if (opts.force) out.push_back({cco::env::kPlanForce, "1"});
  } else {
    out.push_back(
        {cco::env::kPolicy, opts.policy.empty() ? std::string(plan::kDefaultPolicy) : opts.policy});
    out.push_back({cco::env::kPlan, std::nullopt});
  }
  if (!opts.steps_out.empty()) out.push_back({cco::env::kStepsDir, opts.steps_out});
  if (!opts.step_nvtx.empty()) {
    // The library is NVTX's injection (run_main refused another one named in the environment).
    out.push_back({cco::env::kStepNvtx, opts.step_nvtx});
    out.push_back({"NVTX_INJECTION64_PATH", lib_path});
    if (warnings && !opts.trace.empty())
      warnings->push_back("--step-nvtx makes the library NVTX's injection: the trace has no NVTX "
                          "ranges (one injection per process)");
  }
  if (opts.warmup >= 0) out.push_back({cco::env::kWarmupSteps, std::to_string(opts.warmup)});
  if (opts.stats) out.push_back({cco::env::kStats, "1"});
  if (opts.verbose) out.push_back({cco::env::kVerbose, "1"});
  if (!opts.trace.empty()) {
    out.push_back({cco::env::kTrace, opts.trace});
    out.push_back({cco::env::kTracePid, std::to_string(::getpid())});
  }
  if (warnings && truthy(getenv(cco::env::kDisable)))
    warnings->push_back(std::string("CCO_DISABLE=") + getenv(cco::env::kDisable) +
                        " is set: the library will change nothing" +
                        (opts.trace.empty() ? "" : " and trace nothing"));
  if (!tuner_path.empty()) {
    const char* have = getenv("NCCL_TUNER_PLUGIN");
    if (names_another(have, tuner_path)) {
      if (warnings)
        warnings->push_back(std::string("keeping NCCL_TUNER_PLUGIN=") + have +
                            " from the environment (the plan's nccl.channels need " + tuner_path +
                            "): NCCL channels will not be capped");
    } else if (!have || have != tuner_path) {
      out.push_back({"NCCL_TUNER_PLUGIN", tuner_path});
    }
  }
  // The nccl section's variables, then the plan's own (a name in both holds the same value: the
  // plan parser refuses conflicts).
  auto vars = plan.nccl.environment();
  for (const auto& v : plan.environment) {
    bool dup = false;
    for (const auto& w : vars) dup = dup || w.first == v.first;
    if (!dup) vars.push_back(v);
  }
  for (const auto& [name, value] : vars) {
    const char* have = getenv(name.c_str());
    if (have && value != have) {
      if (warnings)
        warnings->push_back("keeping " + name + "=" + have +
                            " from the environment (the plan asks for " + value + ")");
      continue;
    }
    if (!have) out.push_back({name, value});
  }
  return out;
}

std::string trace_pattern_path(const std::string& pattern) {
#ifndef CCO_TRACE_HAS_ZLIB
  if (pattern.size() > 3 && pattern.compare(pattern.size() - 3, 3, ".gz") == 0)
    throw Usage("--trace " + pattern + ": a .gz trace, and this cco was built without zlib (name "
                "a .json file)");
#endif
  std::string path = pattern;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd)) throw Usage("--trace: cannot read the current folder");
    path = std::string(cwd) + "/" + path;
  }
  const std::string dir = path.rfind('/') == 0 ? std::string(1, '/') : dir_of(path);
  if (dir.find('%') == std::string::npos) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw Usage("--trace " + pattern + ": folder " + dir + " does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw Usage("--trace " + pattern + ": folder " + dir + " is not writable");
  }
  // A folder is no file name: the trace would fail to open at the program's exit, after the run.
  // (A trailing '/' was refused by check_trace_pattern already.)
  if (path.find('%') == std::string::npos) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw Usage("--trace '" + pattern + "' names a folder, not a file (e.g. " + path +
                  "/trace_%r.json)");
  }
  return path;
}

// No output of the run replaces what it reads: the plan, a compared plan file, or a file the
// command names (its program, script or data), checked before anything runs (issue 46: `--plan
// p.json --trace p.json` replaced the plan, `--trace train.py -- python3 train.py` the script).
// A trace pattern with %p or %r may name a file of any pid or rank.
void refuse_run_inputs(const RunOptions& o) {
  std::vector<std::string> inputs = command_files(o.command);
  if (!o.plan_file.empty()) inputs.push_back(o.plan_file);
  for (const auto& c : o.compare)
    if (plan::is_plan_file(c)) inputs.push_back(c);
  refuse_input("--compare-json", o.compare_json, inputs, "cco run");
  if (o.trace.empty()) return;
  const std::string dir = dir_of(o.trace);
  const std::string pattern = dir.find('%') == std::string::npos
                                  ? absolute(dir) + o.trace.substr(dir.size())
                                  : o.trace;
  for (const auto& in : inputs)
    if (preload::trace_pattern_may_name(pattern, absolute(in)))
      throw Usage("--trace " + o.trace + " may name the input " + in +
                  ": cco run never overwrites its inputs");
  if (!preload::trace_pattern_has_placeholder(o.trace))
    if (const std::string why = model::output_problem(o.trace); !why.empty())
      throw Usage("--trace " + o.trace + ": " + why);
}

namespace {
// The library named by the option (`flag PATH`) or else the variable (`var=PATH`): that file,
// absolute, or "" when neither names one. Throws when the named file does not exist.
std::string named_library(const char* flag, const std::string& explicit_lib, const char* var,
                          const char* env_lib) {
  // "no such file", or what it is instead of a library (a FIFO, a folder, a device).
  auto why = [](const std::string& p) {
    const std::string bad = model::library_file_problem(p.find('/') == std::string::npos ? "./" + p : p);
    return bad.empty() ? std::string(": no such file") : ": " + bad.substr(bad.find(": ") + 2);
  };
  if (!explicit_lib.empty()) {
    if (!model::is_regular_file(explicit_lib))
      throw std::runtime_error(std::string(flag) + " " + explicit_lib + why(explicit_lib));
    return absolute(explicit_lib);
  }
  if (env_lib && *env_lib) {
    if (!model::is_regular_file(env_lib))
      throw std::runtime_error(std::string(var) + "=" + env_lib + why(env_lib));
    return absolute(env_lib);
  }
  return "";
}
}  // namespace

std::string find_preload_library(const std::string& exe, const std::string& explicit_lib,
                                 const char* env_lib) {
  if (std::string p = named_library("--lib", explicit_lib, cco::env::kPreloadLib, env_lib); !p.empty())
    return p;
  const std::string dir = dir_of(exe);
  std::string looked;
  for (const char* rel : {"", "../../inject/preload/", "../lib/ccoverlap/", "../lib/", "../lib64/"}) {
    const std::string p = dir + "/" + rel + kLibName;
    if (model::is_regular_file(p)) return absolute(p);
    looked += (looked.empty() ? "" : ", ") + (dir + "/" + rel);
  }
  throw std::runtime_error(std::string(kLibName) + " not found (looked in " + looked +
                           "); pass --lib PATH or set CCO_PRELOAD_LIB");
}

std::string find_tuner_library(const std::string& preload_lib, const std::string& exe,
                               const std::string& explicit_lib, const char* env_lib) {
  if (std::string p = named_library("--tuner-lib", explicit_lib, cco::env::kTunerLib, env_lib);
      !p.empty())
    return p;
  std::string looked;
  auto look = [&](const std::string& dir, std::initializer_list<const char*> rels) -> std::string {
    for (const char* rel : rels) {
      const std::string p = dir + "/" + rel + kTunerName;
      if (model::is_regular_file(p)) return absolute(p);
      looked += (looked.empty() ? "" : ", ") + (dir + "/" + rel);
    }
    return {};
  };
  if (auto p = look(dir_of(preload_lib), {"", "../nccl_tuner/"}); !p.empty()) return p;
  if (auto p = look(dir_of(exe), {"", "../../inject/nccl_tuner/", "../lib/ccoverlap/", "../lib/", "../lib64/"});
      !p.empty())
    return p;
  throw std::runtime_error(std::string(kTunerName) + " not found (looked in " + looked +
                           "); the plan caps NCCL channels (nccl.channels) with it: pass "
                           "--tuner-lib PATH or set CCO_TUNER_LIB");
}

// A rotation whose items cap channels needs ccoverlap's tuner plugin in NCCL: another one named
// in the environment would leave every configuration's channels alike, and the comparison would
// compare nothing. (A single plan only warns: it still gets its other controls.)
void refuse_foreign_tuner(const std::string& flag, const std::string& tuner_path) {
  const char* have = ::getenv("NCCL_TUNER_PLUGIN");
  if (names_another(have, tuner_path))
    throw Usage(flag + ": its channel caps need ccoverlap's tuner plugin (" + tuner_path +
                "), but NCCL_TUNER_PLUGIN=" + have + " is set: unset it");
}

/// NCCL would only note a plugin it cannot use in its INFO log and run uncapped: check here.
void check_tuner_library(const std::string& path) {
  if (path.size() > kNcclPluginNameMax)
    throw std::runtime_error("the tuner plugin's path " + path + " is " +
                             std::to_string(path.size()) + " characters long; NCCL reads at most " +
                             std::to_string(kNcclPluginNameMax) + ": pass a shorter --tuner-lib");
  if (std::string bad = model::library_file_problem(path); !bad.empty())
    throw std::runtime_error("the tuner plugin " + bad);
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = ::dlerror();
    throw std::runtime_error("cannot load " + path + ": " + (why ? why : "unknown error"));
  }
  const bool ok = ::dlsym(h, kTunerSymbol) != nullptr;
  ::dlclose(h);
  if (!ok)
    throw std::runtime_error(path + " is not an NCCL tuner plugin (no " + kTunerSymbol + ")");
}


/// A plan measured elsewhere (made_for) is refused on another device, SM count or driver, unless
/// --force: tuned settings do not carry over blindly. NCCL, cuBLASLt and the CUDA runtime are
/// the program's own (PyTorch's wheels, say), not cco's: the preload library compares those once
/// the program has loaded them, and warns (plan::made_for_library).
void check_made_for(const plan::Plan& plan, const RunOptions& o) {
  if (!plan.made_for.set || o.force) return;
  std::vector<std::string> diff;
#ifdef CCO_HAVE_CUDA
  if (rt::device_count() > 0) {
    const auto info = rt::device_info(0);
    const auto v = rt::versions();
    diff = plan::made_for_mismatch(plan.made_for, info.name, info.limits.sm_count,
                                   {{"cuda_driver", v.driver}});
  } else {
    diff.push_back("no GPU visible to check it against");
  }
#else
  diff.push_back("this cco was built without CUDA and cannot check it");
#endif
  if (diff.empty()) return;
  std::string list;
  for (const auto& d : diff) list += (list.empty() ? "" : "; ") + d;
  throw Usage("plan " + o.plan_file + " was made for " + plan.made_for.device +
              ", not this machine (" + list +
              "): re-tune with `cco tune`, or pass --force to apply it anyway");
}

std::vector<std::string> check_compare_items(const std::vector<std::string>& items,
                                             bool* channels, const std::string& flag) {
  std::vector<std::string> out;
  *channels = false;
  for (const auto& item : items) {
    if (flag == "--compare" && model::is_nocomm(item)) {
      // The measuring configuration: measured against the policy before it, once.
      if (out.empty())
        throw Usage(flag + ": 'nocomm' cannot be the first item: it is measured against the "
                           "policy before it (--compare off,nocomm)");
      if (std::any_of(out.begin(), out.end(), model::is_nocomm))
        throw Usage(flag + ": 'nocomm' is named twice");
      out.push_back(std::string(model::kNoComm));
      continue;
    }
    plan::Plan p;
    try {
      p = plan::load_item(item);
    } catch (const plan::Error& e) {
      throw Usage(flag + ": " + std::string(e.what()));
    }
    if (const std::string why = plan::rotation_refusal(p); !why.empty())
      throw Usage(flag + ": '" + item + "' cannot switch between steps: " + why);
    *channels = *channels || p.nccl.uses_tuner();
    const std::string name = plan::is_plan_file(item) ? absolute(item) : item;
    if (name.find(',') != std::string::npos)
      throw Usage(flag + ": '" + item + "': a plan path with ',' cannot be passed on");
    out.push_back(name);
  }
  return out;
}


namespace {

// A folder of cco's own under $TMPDIR (or /tmp), removed after the run.
std::string make_temp_folder(const std::string& prefix) {
  const char* tmp = ::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot make a folder for cco's files (" + pattern +
                             "): " + std::strerror(errno));
  return pattern;
}

// --compare / --steps-out / --framework: the program runs as a child; its step files are read when it ends.
int run_and_report(const RunOptions& o, const std::string& temp_dir,
                   const std::string& framework_dir) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    exec_child(o.command, "cco run");
  }
  const int status = wait_forwarding(pid);
  if (!temp_dir.empty()) remove_temp_on_signals(temp_dir);  // a Ctrl-C now removes cco's folder
  const int rc = exit_code(status);
  if (rc == 126 || rc == 127) {
    if (!temp_dir.empty()) remove_folder(temp_dir);
    return rc;
  }
  if (WIFSIGNALED(status))
    std::fprintf(stderr, "cco run: the program ended by signal %d\n", WTERMSIG(status));
  steps::CompareReport report;
  std::vector<steps::StepFile> files;
  bool ok = true;
  if (!o.compare.empty() || !o.steps_out.empty()) {
    ok = report_steps(o.steps_out, !o.compare.empty(), o.compare_json, stdout, &report, &files);
    if (ok && !o.compare.empty() && !o.trace.empty())
      report_trace_bounds(o.trace, report, files, stdout);
  }
  std::fflush(stdout);
  if (!o.framework.empty())
    std::fputs(format_framework_summary(o.framework, read_framework_reports(framework_dir)).c_str(),
               stderr);
  if (!temp_dir.empty()) remove_folder(temp_dir);
  // The program's own failure first; else a comparison that could not be made is a failure.
  if (rc != 0) return rc;
  return ok ? 0 : 3;
}

}  // namespace

int run_main(const std::vector<std::string>& args) {
  RunOptions o = parse_run_args(args);
  if (!o.trace.empty()) o.trace = trace_pattern_path(o.trace);

  plan::Plan plan;
  std::string plan_path;
  bool compare_channels = false;
  if (!o.compare.empty()) {
    o.compare = check_compare_items(o.compare, &compare_channels);
    if (std::any_of(o.compare.begin(), o.compare.end(), model::is_nocomm))
      std::fprintf(stderr, "cco run: nocomm: in its steps the program's collectives move no data, "
                           "to measure what communication costs each step; this run's answers "
                           "(losses, weights) are not kept\n");
    plan = plan::from_policy("off");  // nothing of a single plan applies (all are switchable)
  } else if (!o.plan_file.empty()) {
    try {
      plan = plan::load(o.plan_file);
    } catch (const plan::Error& e) {
      throw model::Error(e.what());
    }
    plan_path = absolute(o.plan_file);
    check_made_for(plan, o);
  } else {
    try {
      plan = plan::from_policy(o.policy.empty() ? plan::kDefaultPolicy : o.policy);
    } catch (const plan::Error& e) {
      throw Usage(std::string("--policy: ") + e.what());
    }
  }

  if (!plan.framework.empty()) {  // a plan's framework controls, as --framework
    if (!o.framework.empty())
      throw Usage("--framework conflicts with the framework controls of plan " + o.plan_file +
                  ": give them in one place");
    o.framework = plan.framework;
  }
  refuse_run_inputs(o);
  const std::string lib = loadable_preload_library(o.lib);
  if (!o.step_nvtx.empty()) refuse_foreign_nvtx(lib);

  std::string tuner;
  if (plan.nccl.uses_tuner() || compare_channels) {
    tuner = find_tuner_library(lib, self_exe(), o.tuner_lib, ::getenv(cco::env::kTunerLib));
    check_tuner_library(tuner);
    if (compare_channels) refuse_foreign_tuner("--compare", tuner);
  }

  // --compare without --steps-out: the step files go to a folder of our own, removed after.
  std::string temp_dir;
  if (!o.compare.empty() && o.steps_out.empty() && !o.dry_run) {
    temp_dir = o.steps_out = make_temp_folder("cco-steps");
  } else if (!o.steps_out.empty()) {
    o.steps_out = steps_folder(o.steps_out);
  }
  // --framework: the start-up hook reports what it did in each process to a folder read after.
  std::string startup_dir, framework_dir;
  if (!o.framework.empty()) {
    startup_dir = find_startup_dir(self_exe());
    for (const auto& r : model::framework_rounding(o.framework))
      std::fprintf(stderr, "cco run: framework: %s (asked for by name: answers may differ)\n",
                   r.c_str());
    if (!o.dry_run) {
      if (temp_dir.empty()) temp_dir = make_temp_folder("cco-run");
      framework_dir = temp_dir;
    }
  }
  std::vector<std::string> warnings;
  const auto getenv_fn = [](const char* n) { return static_cast<const char*>(::getenv(n)); };
  auto changes = run_environment(o, plan, plan_path, lib, tuner, getenv_fn, &warnings);
  if (!o.framework.empty())
    for (auto& c : framework_environment(o.framework, startup_dir, framework_dir, getenv_fn))
      changes.push_back(std::move(c));
  for (const auto& w : warnings) std::fprintf(stderr, "cco run: warning: %s\n", w.c_str());

  if (o.dry_run) {
    for (const auto& c : changes) {
      if (c.value)
        std::printf("%s=%s\n", c.name.c_str(), shell_quote(*c.value).c_str());
      else
        std::printf("unset %s\n", c.name.c_str());
    }
    std::string line;
    for (const auto& a : o.command) {
      if (!line.empty()) line.push_back(' ');
      line.append(shell_quote(a));
    }
    std::printf("%s\n", line.c_str());
    return 0;
  }

  apply_environment(changes);
  if (!o.compare.empty() || !o.steps_out.empty() || !o.framework.empty())
    return run_and_report(o, temp_dir, framework_dir);
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  std::fprintf(stderr, "cco run: error: cannot run '%s': %s\n", o.command[0].c_str(),
               std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace cco::cli

// ---- cco tune -- CMD: the program tuned online ---------------------------------------------------
