// The process side of `cco run` and `cco tune -- CMD` (run_support.hpp): signals forwarded to
// the program while cco waits for it, the terminal given to a program in a group of its own, and
// cco's temporary step folder removed on every way out.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "cli/run_support.hpp"

namespace cco::cli {

namespace {

// Where Ctrl-C and termination go while cco waits for the program: its pid, or (negative) its
// process group. 0: nowhere yet.
pid_t g_signal_target = 0;
void forward_signal(int sig, siginfo_t* info, void*) {
  // From the terminal (the kernel's tty driver: SI_KERNEL) the signal went to the whole foreground
  // group, the program in it too when it shares cco's group: forwarded again it would arrive
  // twice and cut its own clean-up short (issue 46: a Ctrl-C under --compare exited 130 instead
  // of 0 in 10 of 12 runs). A program in a group of its own (cco tune) has the terminal itself.
  if (info && info->si_code == SI_KERNEL && g_signal_target > 0 &&
      ::getpgid(g_signal_target) == ::getpgrp())
    return;
  if (g_signal_target != 0) ::kill(g_signal_target, sig);
}
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_saved[4];  // what cco inherited (nohup's ignored SIGHUP, say)
bool g_have_saved = false;
}  // namespace

void forward_signals_to(pid_t target) {
  g_signal_target = target;
  struct sigaction sa {};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO;
  ::sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 4; ++i)
    ::sigaction(kForwarded[i], &sa, g_have_saved ? nullptr : &g_saved[i]);
  g_have_saved = true;
}

void restore_default_signals() {
  if (!g_have_saved) return;
  for (int i = 0; i < 4; ++i) ::sigaction(kForwarded[i], &g_saved[i], nullptr);
  g_signal_target = 0;
}

int wait_forwarding(pid_t pid) {
  forward_signals_to(pid);  // Ctrl-C and termination go to the program; cco's report still follows
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  restore_default_signals();  // from here a Ctrl-C (or timeout) ends cco's own work
  return status;
}

int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

namespace {
// cco owns the terminal: standard input is one, and its foreground group is cco's.
bool owns_terminal() {
  return ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
}
// tcsetpgrp with SIGTTOU ignored (a background caller would be stopped by it).
void set_foreground(pid_t pgid) {
  struct sigaction ign {}, old {};
  ign.sa_handler = SIG_IGN;
  ::sigemptyset(&ign.sa_mask);
  ::sigaction(SIGTTOU, &ign, &old);
  ::tcsetpgrp(STDIN_FILENO, pgid);
  ::sigaction(SIGTTOU, &old, nullptr);
}
}  // namespace

Foreground::Foreground() : active_(owns_terminal()) {}
Foreground::~Foreground() { take_back(); }
void Foreground::give(pid_t pgid) {
  // Only from the foreground: after `bg` cco runs in the background and must not take the
  // terminal from the shell.
  if (!active_ || ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return;
  set_foreground(pgid);
  given_ = pgid;
}
void Foreground::take_back() {
  // Only if the program's group still has it (the shell may have taken it meanwhile).
  if (!active_ || given_ == 0) return;
  if (::tcgetpgrp(STDIN_FILENO) == given_) set_foreground(::getpgrp());
  given_ = 0;
}

void child_take_foreground(pid_t parent_group) {
  if (::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == parent_group)
    set_foreground(::getpgrp());
}

namespace {

// The files of a folder (names only; bounded), "." and ".." left out.
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(dir + "/" + n);
      if (out.size() > 100000) break;
    }
    ::closedir(d);
  }
  return out;
}

// cco's temporary step folder while the report reads it (the program has ended: its files are
// final). A Ctrl-C or SIGTERM then removes them and ends cco by that signal: the folder stayed
// behind before (106 MB for 1M steps; issue 46). Set once, never freed.
std::vector<std::string>* g_temp_files = nullptr;
std::string* g_temp_dir = nullptr;
void remove_temp_and_end(int sig) {
  if (g_temp_files)
    for (const auto& f : *g_temp_files) ::unlink(f.c_str());  // both async-signal-safe
  if (g_temp_dir) ::rmdir(g_temp_dir->c_str());
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
}  // namespace

void remove_folder(const std::string& dir) {
  for (const auto& f : files_in(dir)) ::unlink(f.c_str());
  ::rmdir(dir.c_str());
}

void remove_temp_on_signals(const std::string& temp_dir) {
  g_temp_files = new std::vector<std::string>(files_in(temp_dir));
  g_temp_dir = new std::string(temp_dir);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;  // nohup's
    struct sigaction sa {};
    sa.sa_handler = remove_temp_and_end;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace cco::cli
