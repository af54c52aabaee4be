// What a step boundary costs the program as the step file grows (issue 46 item 2), without a GPU:
// a StepClock with a step file flushed every 5 s of a fake clock that advances 1 ms per step (a
// hand-over every 5000 steps), marked N times (default 1,000,000, the most steps kept). Prints the
// longest mark() call in the first and the last 100,000 steps, their ratio (target: at most 2),
// the longest call overall and when, and the total. Before the writer's thread, a flush built and
// wrote the whole file inside the boundary: 0.2 s at 125k kept steps, 1.3 s at 875k.
//   build/tests/cco.bench.step_clock [N] [DIR]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "preload/step_clock.hpp"

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  if (n < 200'000) {
    std::fprintf(stderr, "usage: cco.bench.step_clock [N >= 200000] [DIR]\n");
    return 2;
  }
  uint64_t now = 1'000'000'000;
  cco::preload::StepClockOptions o;
  o.path = dir + "/cco_bench_steps_" + std::to_string(::getpid()) + ".json";
  o.flush_ns = 5'000'000'000;
  o.max_steps = static_cast<uint64_t>(n);
  cco::preload::StepClock clock(cco::preload::DriverApi{}, o, [](int) {}, [&] { return now; });
  using C = std::chrono::steady_clock;
  double first = 0, last = 0, worst = 0, total = 0;
  long worst_at = 0;
  const auto t0 = C::now();
  for (long k = 0; k < n; ++k) {
    const auto a = C::now();
    clock.mark(0, nullptr, false);
    const double us = std::chrono::duration<double, std::micro>(C::now() - a).count();
    now += 1'000'000;
    if (k < 100'000) first = std::max(first, us);
    if (k >= n - 100'000) last = std::max(last, us);
    if (us > worst) {
      worst = us;
      worst_at = k;
    }
  }
  total = std::chrono::duration<double>(C::now() - t0).count();
  std::string err;
  const auto w0 = C::now();
  const bool ok = clock.write("exit", &err);
  const double exit_s = std::chrono::duration<double>(C::now() - w0).count();
  std::printf("steps %ld: longest mark() %.1f us in the first 100k, %.1f us in the last 100k "
              "(ratio %.2f; target <= 2); longest %.1f us at step %ld; total %.2f s; exit write "
              "%.2f s%s\n",
              n, first, last, last / first, worst, worst_at, total, exit_s,
              ok ? "" : (" FAILED: " + err).c_str());
  std::remove(o.path.c_str());
  return ok ? 0 : 1;
}
