// What `cco run` and `cco tune -- CMD` share to start a program under the preload library
// (run_cmd.cpp defines them): paths, the libraries and their checks, option values, step files,
// signals. Internal to src/app/cli/.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "steps/record.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace cco::cli {

struct LaunchOptions;
/// Declares the options of LaunchOptions (run_cmd.hpp) on `app`, bound into `o`: --lib,
/// --tuner-lib, -v/--verbose, --steps-out, --warmup, --step-nvtx. The function returned checks
/// --warmup and --step-nvtx after the parse (Usage, worded the same for run and tune).
std::function<void()> add_launch_options(CLI::App& app, LaunchOptions& o);

/// realpath, or `p` unchanged when it cannot be resolved.
std::string absolute(const std::string& p);
/// `path` names the file `ours` (an absolute path): as given, or once resolved.
bool same_file(const std::string& path, const std::string& ours);
/// An environment value naming another file than `ours` (set, not empty, not the same file).
bool names_another(const char* value, const std::string& ours);
std::string dir_of(const std::string& p);
/// This executable's path ("" when /proc cannot say).
std::string self_exe();

/// --step-nvtx NAME checked: a glob of at most 255 printable characters. Throws Usage.
std::string check_step_nvtx(const std::string& name);
/// Throws Usage when NVTX_INJECTION64_PATH names another tool than the library `lib`.
void refuse_foreign_nvtx(const std::string& lib);
/// --steps-out DIR: made when missing; it must be a writable folder without an earlier run's
/// step files (steps-*.json). Returns its absolute path. Throws Usage.
std::string steps_folder(const std::string& dir);
/// The preload library (--lib, CCO_PRELOAD_LIB, next to cco), checked to load. Throws.
std::string loadable_preload_library(const std::string& explicit_lib);
/// A whole number from lo to hi, or Usage: "FLAG 'V' is not WHAT" (WHAT: "a whole number from
/// lo to hi" when empty).
long count_arg(const std::string& flag, const std::string& v, long lo, long hi,
               const std::string& what = "");
/// A comma-separated list of 2 to 8 configurations (policies or plan files). Throws Usage.
std::vector<std::string> configuration_list(const std::string& flag, const std::string& v);

/// Throws Usage when NCCL_TUNER_PLUGIN names another plugin than ccoverlap's (`tuner_path`):
/// a rotation's channel caps would not differ.
void refuse_foreign_tuner(const std::string& flag, const std::string& tuner_path);
/// Loads the tuner plugin once and checks its symbol and path length. Throws.
void check_tuner_library(const std::string& path);

/// The step files of a folder (bounded), with one note per file that could not be read.
std::vector<steps::StepFile> read_step_files(const std::string& dir,
                                             std::vector<std::string>* notes);

/// In a forked child: exec `command` (PATH searched); on failure one line "WHO: cannot run ..."
/// and _exit(126 or 127), as a shell would.
[[noreturn]] void exec_child(const std::vector<std::string>& command, const char* who);

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT go to `target` (a pid, or a negative process group)
/// while cco waits for it.
void forward_signals_to(pid_t target);

/// Waits for the child `pid`, forwarding those four signals to it, then restores them
/// (restore_default_signals); returns its wait status.
int wait_forwarding(pid_t pid);

/// A child's wait status as a shell gives it: its exit status, or 128 + its signal.
int exit_code(int status);

/// Once the program is reaped: those four signals get back the disposition cco inherited (the
/// default, or an ignored SIGHUP under nohup), so a Ctrl-C or a `timeout` ends cco's own work
/// (reading and comparing step files) at once.
void restore_default_signals();

/// The terminal for a program in a process group of its own (cco tune -- CMD): when cco's
/// standard input is a terminal whose foreground is cco's group, give() makes `pgid` the
/// foreground (so the program can read the terminal and Ctrl-C reaches it) and take_back() --
/// also the destructor -- returns it to cco. Without a terminal, or in the background, both do
/// nothing. SIGTTOU is ignored around the calls (cco may not be in the foreground when it takes
/// the terminal back).
class Foreground {
 public:
  Foreground();
  ~Foreground();
  Foreground(const Foreground&) = delete;
  Foreground& operator=(const Foreground&) = delete;
  bool active() const { return active_; }
  void give(pid_t pgid);
  void take_back();

 private:
  bool active_ = false;
  pid_t given_ = 0;  // the group given the terminal (0: none)
};

/// Removes the files of `dir` (a folder cco made) and the folder.
void remove_folder(const std::string& dir);

/// Once the program is reaped and cco reads its step files from `temp_dir` (a folder of cco's
/// own): a Ctrl-C, SIGTERM, SIGHUP or SIGQUIT (unless ignored, as nohup's) removes that folder's
/// files, listed now, and the folder, then ends cco by the signal.
void remove_temp_on_signals(const std::string& temp_dir);

/// In a forked child that runs in its own group: take the terminal as the foreground group when
/// `parent_group` (the group it was born in, read before setpgid) has it, before exec, so a
/// program that reads the terminal at once is not stopped by SIGTTIN before the parent's give().
void child_take_foreground(pid_t parent_group);

}  // namespace cco::cli
