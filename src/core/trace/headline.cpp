#include "trace/headline.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace cco::trace {

namespace {

// Milliseconds, or microseconds under one (a bench step of 50 us is not "0.1 ms").
std::string ms(int64_t ns) {
  return ns < 1000000 ? fmt::format("{:.0f} us", static_cast<double>(ns) / 1e3)
                      : fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
}

}  // namespace

std::size_t word_count(const std::string& s) {
  std::size_t n = 0;
  bool in = false;
  for (char c : s) {
    const bool blank = c == ' ' || c == '\n' || c == '\t';
    if (!blank && !in) ++n;
    in = !blank;
  }
  return n;
}

std::string headline(const StepParts& p) {
  const std::string step = ms(p.time_ns);
  // The parts beyond compute at its own speed, and the program's own copies (part of compute).
  struct Cause {
    int64_t ns;
    int which;
  };
  std::vector<Cause> causes = {{p.idle_ns, 0},
                               {p.compute_slowed_ns, 1},
                               {p.exposed_rank_wait_ns, 2},
                               {p.exposed_tail_ns + p.exposed_dependent_ns, 3},
                               {p.exposed_slowed_ns, 4},
                               {p.compute_copies_ns, 5}};
  if (p.comm_busy_ns == 0) causes.resize(1);  // without communication only host waits matter
  const Cause top = *std::max_element(causes.begin(), causes.end(),
                                      [](const Cause& a, const Cause& b) { return a.ns < b.ns; });
  if (top.ns < p.time_ns / 100)
    return p.comm_busy_ns == 0
               ? fmt::format("This {} step runs no communication and the GPU is busy: nothing for "
                             "overlap to win.", step)
               : fmt::format("This {} step is compute at its own speed: communication is hidden; "
                             "nothing for overlap to win.", step);
  const std::string x = ms(top.ns);
  switch (top.which) {
    case 0:
      return fmt::format("The GPU waits for the host {} of this {} step: not overlap; look at "
                         "data loading and launch overhead (CUDA graphs, torch.compile).",
                         x, step);
    case 1:
      return fmt::format("Compute runs {} slower beside communication in this {} step: cut the "
                         "collectives' bytes first (cco run --framework), then SM budgets.",
                         x, step);
    case 2:
      return fmt::format("Collectives wait {} for {} in this {} step: not overlap; look at that "
                         "rank's data loading, host stalls or GPU.",
                         x, p.slowest_peer >= 0 ? fmt::format("rank {}", p.slowest_peer) : "a slower rank",
                         step);
    case 3:
      return fmt::format("Communication is exposed {} of this {} step, where nothing hides it: try "
                         "larger buckets or earlier prefetch.",
                         x, step);
    case 4:
      return fmt::format("Collectives run {} slower beside compute, exposed, in this {} step: try "
                         "NCCL priority (cco's default) or fewer SMs for compute.",
                         x, step);
    default:
      return fmt::format("The program's own device copies take {} of this {} step: with DDP, try "
                         "cco run --framework ddp.bucket_view.",
                         x, step);
  }
}

}  // namespace cco::trace
