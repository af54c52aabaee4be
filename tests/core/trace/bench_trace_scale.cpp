// What reading and diagnosing a long trace costs (issue 46 item 1), without a GPU: a two-rank
// trace of N kernels in cco's own format (training steps of 20 compute kernels, 4 of them
// overlapped by an all-reduce, step marks as the preload library writes them) is written as
// gzip, then, in a process of its own (so the writer's memory is not counted), read back
// (trace::read_trace_file) and diagnosed (trace::diagnose), as cco report does. Prints the file's
// size, and per phase the wall time and the peak resident memory (VmHWM) after it: the targets
// are 1M kernels in at most 6 s, 10M in at most 60 s and 4 GB, and time per kernel within 1.5x
// from 1M to 10M.
//   build/tests/cco.bench.trace_scale [N] [DIR]     both, the second as a child process
//   build/tests/cco.bench.trace_scale write N FILE  /  read FILE
// With "%r" in FILE, write makes one file per rank, as `cco run --trace 't_%r.json'` does (the
// files other tools read, Holistic Trace Analysis among them).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "trace/diagnosis.hpp"
#include "trace/format.hpp"

namespace {

long peak_rss_kib() {  // VmHWM of this process
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

cco::trace::Trace make(long n) {
  using namespace cco::trace;
  Trace t;
  for (int r = 0; r < 2; ++r) {
    t.ranks.push_back({r, r, "NVIDIA H200", "sm_90", 132, 4.8e12, "host", 100 + r});
    t.streams.push_back({r, r, 7, 0, "compute"});
    t.streams.push_back({r, r, 13, -5, "nccl"});
  }
  t.kernels.reserve(static_cast<std::size_t>(n));
  const long per_rank = n / 2;
  for (int r = 0; r < 2; ++r) {
    int64_t now = 1'000'000'000 + r * 3'000;
    for (long k = 0, step = 0; k < per_rank; ++step) {
      t.marks.push_back({now - 100, r, "cco step, epoch 1, config 0"});
      for (int i = 0; i < 20 && k < per_rank; ++i, ++k) {
        KernelEvent e;
        e.name = i % 3 ? "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_tn_align8>(Params)"
                       : "void at::native::vectorized_elementwise_kernel<4, at::native::GeluFunctor<c10::BFloat16>>";
        e.rank = r;
        e.device = r;
        e.stream = 7;
        e.priority = 0;
        e.start_ns = now;
        e.end_ns = now + 40'000 + (k % 7) * 1'000;
        e.queued_ns = now - 5'000;
        e.submitted_ns = now - 4'000;
        e.grid = {132, 2, 1};
        e.block = {256, 1, 1};
        e.registers = 128;
        e.dynamic_smem = 65536;
        e.correlation_id = static_cast<uint64_t>(k + 1);
        now = e.end_ns + 2'000;
        t.kernels.push_back(std::move(e));
        if (i % 5 == 4 && k < per_rank) {  // an all-reduce beside the next kernels
          KernelEvent c;
          c.name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
          c.category = KernelCategory::Communication;
          c.rank = r;
          c.device = r;
          c.stream = 13;
          c.priority = -5;
          c.start_ns = now;
          c.end_ns = now + 90'000;
          c.queued_ns = now - 3'000;
          c.submitted_ns = now - 2'000;
          c.grid = {16, 1, 1};
          c.block = {640, 1, 1};
          c.correlation_id = static_cast<uint64_t>(k + 1) << 20;
          t.kernels.push_back(std::move(c));
          ++k;
        }
      }
    }
  }
  t.normalize();
  return t;
}

int read_and_diagnose(const std::string& path) {
  using C = std::chrono::steady_clock;
  std::ifstream sz(path, std::ios::binary | std::ios::ate);
  const long bytes = static_cast<long>(sz.tellg());
  const long rss0 = peak_rss_kib();
  const auto a = C::now();
  const cco::trace::Trace t = cco::trace::read_trace_file(path);
  const double read_s = std::chrono::duration<double>(C::now() - a).count();
  const long rss1 = peak_rss_kib();
  const auto b = C::now();
  const cco::trace::Diagnosis d = cco::trace::diagnose(t);
  const double diag_s = std::chrono::duration<double>(C::now() - b).count();
  const long rss2 = peak_rss_kib();
  const auto n = static_cast<double>(t.kernels.size());
  std::printf("file: %.1f MB gzip\n", static_cast<double>(bytes) / 1e6);
  std::printf("read: %zu kernels in %.2f s (%.2f us a kernel), peak memory %.2f GB (%.2f before)\n",
              t.kernels.size(), read_s, read_s * 1e6 / n, static_cast<double>(rss1) / 1e6,
              static_cast<double>(rss0) / 1e6);
  std::printf("diagnose: %zu ranks in %.2f s, peak memory %.2f GB\n", d.ranks.size(), diag_s,
              static_cast<double>(rss2) / 1e6);
  std::printf("total: %.2f s (%.2f us a kernel)\n", read_s + diag_s, (read_s + diag_s) * 1e6 / n);
  return 0;
}

int write(long n, const std::string& path) {
  const auto a = std::chrono::steady_clock::now();
  const cco::trace::Trace t = make(n);
  const auto at = path.find("%r");
  if (at == std::string::npos) {
    cco::trace::write_trace_file(t, path);
  } else {
    for (const auto& r : t.ranks) {
      cco::trace::Trace one;
      one.ranks = {r};
      for (const auto& s : t.streams)
        if (s.rank == r.rank) one.streams.push_back(s);
      for (const auto& k : t.kernels)
        if (k.rank == r.rank) one.kernels.push_back(k);
      for (const auto& m : t.marks)
        if (m.rank == r.rank) one.marks.push_back(m);
      std::string p = path;
      p.replace(at, 2, std::to_string(r.rank));
      cco::trace::write_trace_file(one, p);
    }
  }
  std::printf("write: %ld kernels, %.1f s\n", n,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc == 4) return write(std::atol(argv[2]), argv[3]);
    if (mode == "read" && argc == 3) return read_and_diagnose(argv[2]);
    const long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
    const std::string dir = argc > 2 ? argv[2] : "/tmp";
    if (n < 1000) {
      std::fprintf(stderr, "usage: cco.bench.trace_scale [N >= 1000] [DIR] | write N FILE | read FILE\n");
      return 2;
    }
    const std::string path = dir + "/cco_bench_trace_" + std::to_string(::getpid()) + ".json.gz";
    write(n, path);
    std::fflush(stdout);
    std::string cmd = "'";
    cmd.append(argv[0]).append("' read '").append(path).append("'");
    const int rc = std::system(cmd.c_str());
    std::remove(path.c_str());
    return rc == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cco.bench.trace_scale: %s\n", e.what());
    return 1;
  }
}
