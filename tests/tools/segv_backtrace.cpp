// A debugging aid, not part of ccoverlap: LD_PRELOAD it into a program that dies of a signal
// and it prints the native stack (glibc backtrace) and the program's executable mappings to
// stderr, then dies of the same signal (same exit status); SIGUSR2 sent to one thread prints its
// stack and lets it run on (a hang located without gdb). The GPU machines have no gdb; this is
// how `cco run --trace`'s exit-time crash was located. Symbolize the frames here with
// `addr2line -f -C -e LIB OFFSET` on the same build.
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace {

void put(const char* s) {
  ssize_t n = ::write(2, s, std::strlen(s));
  (void)n;
}

void put_num(long v) {
  char buf[24];
  int i = sizeof buf - 1;
  buf[i] = 0;
  bool neg = v < 0;
  unsigned long u = neg ? 0UL - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
  do {
    buf[--i] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u && i > 1);
  if (neg) buf[--i] = '-';
  put(buf + i);
}

void put_hex(unsigned long a) {
  char hex[20];
  for (int i = 15; i >= 0; --i, a >>= 4) hex[i] = "0123456789abcdef"[a & 15];
  hex[16] = 0;
  put("0x");
  put(hex);
}

void on_signal(int sig, siginfo_t* info, void* ctx) {
  put("\n== segv_backtrace: signal ");
  put_num(sig);
  put(" (");
  put(strsignal(sig));
  put(") pid ");
  put_num(static_cast<long>(::getpid()));
  put(" tid ");
  put_num(static_cast<long>(::gettid()));
  put(" fault address ");
  char hex[20];
  unsigned long a = reinterpret_cast<unsigned long>(info ? info->si_addr : nullptr);
  for (int i = 15; i >= 0; --i, a >>= 4) hex[i] = "0123456789abcdef"[a & 15];
  hex[16] = 0;
  put("0x");
  put(hex);
  put("\n");
  // A call through a null pointer leaves no frame the unwinder can follow: the caller's return
  // address is then the word at the stack pointer. Print it, and a few words above it.
  if (auto* uc = static_cast<ucontext_t*>(ctx)) {
    put("== pc ");
    put_hex(static_cast<unsigned long>(uc->uc_mcontext.gregs[REG_RIP]));
    put(" sp ");
    const auto sp = static_cast<unsigned long>(uc->uc_mcontext.gregs[REG_RSP]);
    put_hex(sp);
    put("\n== words at sp:");
    for (int i = 0; i < 8; ++i) {
      put(" ");
      put_hex(reinterpret_cast<const unsigned long*>(sp)[i]);
    }
    put("\n");
  }
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  put("== executable mappings:\n");
  const int fd = ::open("/proc/self/maps", O_RDONLY);
  if (fd >= 0) {
    char buf[4096];
    char line[512];
    int len = 0;
    ssize_t r;
    while ((r = ::read(fd, buf, sizeof buf)) > 0)
      for (ssize_t i = 0; i < r; ++i) {
        if (len < static_cast<int>(sizeof line) - 2) line[len++] = buf[i];
        if (buf[i] == '\n') {
          line[len] = 0;
          if (std::strstr(line, " r-xp ")) put(line);
          len = 0;
        }
      }
    ::close(fd);
  }
  put("== end of segv_backtrace\n");
  if (sig == SIGUSR2) return;  // a stack dump of a live thread (tgkill it): it runs on
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) void install() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(s, &sa, nullptr);
  // SIGUSR2 sent to one thread (tgkill) prints that thread's stack and lets it go on: how a hang
  // is located without gdb.
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigaction(SIGUSR2, &sa, nullptr);
}

}  // namespace
