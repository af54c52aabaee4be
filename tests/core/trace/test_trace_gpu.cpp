// CUPTI tracing of real kernels (label gpu): kernels on two streams of different priority (and
// the NULL stream) come back with the right names, categories, streams, priorities and launch
// details; a second session is refused while one is active; dropped records are never silently
// lost; a session never started loads nothing; NVTX ranges pushed after start() are recorded
// (the last test: the process's first NVTX call must come after a start()).
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "trace/analysis.hpp"
#include "trace/format.hpp"
#include "trace/session.hpp"
#include "trace_kernels.hpp"

namespace {

#define CHECK_CUDA(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

// NVTX_INJECTION64_PATH as the user set it, read before any Session could set it.
const std::string g_user_nvtx_injection = [] {
  const char* e = std::getenv("NVTX_INJECTION64_PATH");
  return std::string(e ? e : "");
}();

double us(int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

constexpr long long kCycles = 200'000;  // ~0.1 ms per block at ~2 GHz

// Runs first (gtest keeps the order of a file): nothing may load CUPTI before start().
TEST(GpuTrace, SessionNeverStartedLoadsNothing) {
  {
    cco::trace::Session s;
    EXPECT_FALSE(s.active());
    EXPECT_EQ(s.kernel_count(), 0u);
  }
  EXPECT_EQ(cco::trace::cupti_library(), "") << "CUPTI was loaded without start()";
}

TEST(GpuTrace, KernelsStreamsAndPriorities) {
  CHECK_CUDA(cudaSetDevice(0));
  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  ASSERT_NE(least, greatest) << "this device has a single stream priority";
  int* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(int)));
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());

  // One stream exists before tracing starts (CUPTI must dump it), one is created after.
  cudaStream_t lo = nullptr, hi = nullptr, unnamed = nullptr;
  CHECK_CUDA(cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least));
  // Never named: its priority can only come from CUPTI's dump of existing streams.
  CHECK_CUDA(cudaStreamCreateWithPriority(&unnamed, cudaStreamNonBlocking, greatest));
  cco::trace::Session s;
  ASSERT_TRUE(s.start()) << s.warning();
  std::printf("CUPTI: %s\n", cco::trace::cupti_library().c_str());
  CHECK_CUDA(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
  s.name_stream(lo, "compute");
  s.name_stream(hi, "comm");

  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int blocks = 2 * prop.multiProcessorCount;
  const std::size_t dyn = 40 * 1024;
  s.mark("before the launches");
  for (int i = 0; i < 3; ++i)
    CHECK_CUDA(cco::test::launch_compute(lo, blocks, 256, dyn, kCycles, counter));
  for (int i = 0; i < 2; ++i)
    CHECK_CUDA(cco::test::launch_fake_nccl(hi, 24, 640, kCycles, counter));
  CHECK_CUDA(cco::test::launch_compute(nullptr, 4, 128, 0, kCycles / 10, counter));
  CHECK_CUDA(cco::test::launch_compute(unnamed, 4, 64, 0, kCycles / 10, counter));
  CHECK_CUDA(cudaDeviceSynchronize());
  s.stop();
  EXPECT_FALSE(s.active());
  EXPECT_EQ(s.dropped_records(), 0u);

  cudaFuncAttributes fa{};
  CHECK_CUDA(cco::test::compute_attributes(&fa));
  int occ = 0;
  CHECK_CUDA(cco::test::compute_occupancy(256, dyn, &occ));

  const cco::trace::Trace t = s.trace();
  const std::string file = ::testing::TempDir() + "cco_gpu_trace.json";
  s.write(file, 0);
  std::printf("trace: %zu kernels, %zu streams, written to %s\nnotes:", t.kernels.size(),
              t.streams.size(), file.c_str());
  for (const auto& n : t.notes) std::printf(" [%s]", n.c_str());
  std::printf("\n");

  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].device, 0);
  EXPECT_EQ(t.ranks[0].sm_count, prop.multiProcessorCount);
  EXPECT_EQ(t.ranks[0].arch, "sm_" + std::to_string(prop.major) + std::to_string(prop.minor));

  std::map<std::string, int64_t> stream_of_label;
  for (const auto& st : t.streams)
    if (!st.label.empty()) stream_of_label[st.label] = st.stream;
  ASSERT_EQ(stream_of_label.count("compute"), 1u);
  ASSERT_EQ(stream_of_label.count("comm"), 1u);
  EXPECT_NE(stream_of_label["compute"], stream_of_label["comm"]);

  int compute = 0, comm = 0, null_stream = 0, dumped = 0;
  std::set<int64_t> compute_streams;
  for (const auto& k : t.kernels) {
    std::printf(
        "  %-16s stream %3lld prio %3s  %8.1f us  grid %d block %d regs %d smem %lld+%lld "
        "bps %d  launch %s  %s\n",
        cco::trace::to_string(k.category), static_cast<long long>(k.stream),
        k.priority ? std::to_string(*k.priority).c_str() : "?",
        static_cast<double>(k.duration_ns()) / 1e3, k.grid.x, k.block.x, k.registers,
        static_cast<long long>(k.static_smem), static_cast<long long>(k.dynamic_smem),
        k.blocks_per_sm, k.launch_ns() > 0 ? "yes" : "no", k.name.c_str());
    EXPECT_GT(k.end_ns, k.start_ns);
    if (k.name.find("ncclKernel_ccoTraceTestFake") != std::string::npos) {
      ++comm;
      EXPECT_EQ(k.category, cco::trace::KernelCategory::Communication);
      EXPECT_EQ(k.stream, stream_of_label["comm"]);
      EXPECT_EQ(k.priority, greatest);
      EXPECT_EQ(k.grid.x, 24);
      EXPECT_EQ(k.block.x, 640);
    } else if (k.name.find("cco_trace_test_compute") != std::string::npos) {
      EXPECT_EQ(k.category, cco::trace::KernelCategory::Compute);
      EXPECT_EQ(k.name.rfind("cco_trace_test_compute(long long, int*)", 0), 0u)
          << "demangled: " << k.name;
      // CUPTI reports the registers allocated per thread, not the compiled count: measured on
      // H200 (CUPTI 13.0) 16 for a kernel compiled to 8. Never fewer than compiled.
      EXPECT_GE(k.registers, fa.numRegs);
      EXPECT_LE(k.registers, std::max(16, fa.numRegs + 8));
      EXPECT_EQ(k.static_smem, static_cast<int64_t>(fa.sharedSizeBytes));
      if (k.block.x == 256) {
        ++compute;
        compute_streams.insert(k.stream);
        EXPECT_EQ(k.stream, stream_of_label["compute"]);
        EXPECT_EQ(k.priority, least);
        EXPECT_EQ(k.grid.x, blocks);
        EXPECT_EQ(k.dynamic_smem, static_cast<int64_t>(dyn));
        EXPECT_EQ(k.blocks_per_sm, occ) << "occupancy model vs cudaOccupancy... on this device";
      } else if (k.block.x == 64) {
        ++dumped;
        EXPECT_EQ(k.priority, greatest) << "stream created before start(): CUPTI's dump";
      } else {
        ++null_stream;
        EXPECT_EQ(k.priority, 0) << "the NULL stream has the default priority";
      }
    }
  }
  EXPECT_EQ(compute, 3);
  EXPECT_EQ(comm, 2);
  EXPECT_EQ(null_stream, 1);
  EXPECT_EQ(dumped, 1);
  EXPECT_EQ(compute_streams.size(), 1u);
  // The mark is on the kernels' clock: before every kernel, and not long before.
  ASSERT_EQ(t.marks.size(), 1u);
  int64_t first = t.kernels.front().start_ns;
  for (const auto& k : t.kernels) first = std::min(first, k.start_ns);
  EXPECT_LE(t.marks[0].ts_ns, first);
  EXPECT_GT(t.marks[0].ts_ns, first - 1'000'000'000) << "mark and kernels on different clocks?";

  // The analysis sees both categories; the file reads back the same.
  const auto an = cco::trace::analyze(t);
  EXPECT_GT(an.ranks[0].compute_busy_ns, 0);
  EXPECT_GT(an.ranks[0].comm_busy_ns, 0);
  std::printf(
      "overlap: compute %.1f us, comm %.1f us, overlapped %.1f us, longest wait %.1f us "
      "(%s)\n",
      us(an.ranks[0].compute_busy_ns), us(an.ranks[0].comm_busy_ns), us(an.ranks[0].overlapped_ns),
      us(an.ranks[0].longest_comm_wait.length()), an.ranks[0].longest_comm_wait.method.c_str());
  const auto back = cco::trace::read_trace_file(file);
  EXPECT_EQ(back.kernels.size(), t.kernels.size());

  CHECK_CUDA(cudaStreamDestroy(lo));
  CHECK_CUDA(cudaStreamDestroy(hi));
  CHECK_CUDA(cudaStreamDestroy(unnamed));
  CHECK_CUDA(cudaFree(counter));
}

TEST(GpuTrace, SecondSessionIsRefusedAndTheProgramRunsOn) {
  cco::trace::Options quiet;
  quiet.print_warnings = false;
  cco::trace::Session a, b(quiet);
  ASSERT_TRUE(a.start()) << a.warning();
  EXPECT_FALSE(b.start());
  EXPECT_NE(b.warning().find("another trace session"), std::string::npos) << b.warning();
  CHECK_CUDA(cco::test::launch_compute(nullptr, 1, 32, 0, 1000, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  a.stop();
  EXPECT_GE(a.kernel_count(), 1u);
  EXPECT_EQ(b.kernel_count(), 0u);
  ASSERT_TRUE(b.start()) << b.warning();  // free again once a stopped
  b.stop();
}

TEST(GpuTrace, DroppedRecordsAreCountedNeverSilentlyLost) {
  cco::trace::Options o;
  o.buffer_bytes = 16 * 1024;  // ~60 kernel records a buffer
  o.max_buffers = 1;
  cco::trace::Session s(o);
  ASSERT_TRUE(s.start()) << s.warning();
  const int n = 20000;
  for (int i = 0; i < n; ++i) CHECK_CUDA(cco::test::launch_compute(nullptr, 1, 32, 0, 10, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  s.stop();
  std::printf("launched %d, recorded %zu, dropped %llu; warning: %s\n", n, s.kernel_count(),
              static_cast<unsigned long long>(s.dropped_records()), s.warning().c_str());
  EXPECT_GE(s.kernel_count() + s.dropped_records(), static_cast<uint64_t>(n));
  if (s.dropped_records() > 0) {
    EXPECT_NE(s.warning().find("dropped"), std::string::npos);
    EXPECT_EQ(s.trace().dropped_records, s.dropped_records());
  }
}

// The kernel cap (Options::max_kernels, the preload library's diagnosis session): records over it
// are counted as dropped, and the trace says it is incomplete.
TEST(GpuTrace, KernelCapDropsAndSaysSo) {
  cco::trace::Options o;
  o.max_kernels = 5;
  cco::trace::Session s(o);
  ASSERT_TRUE(s.start()) << s.warning();
  for (int i = 0; i < 40; ++i) CHECK_CUDA(cco::test::launch_compute(nullptr, 1, 32, 0, 10, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  s.stop();
  EXPECT_EQ(s.kernel_count(), 5u);
  EXPECT_GE(s.dropped_records(), 35u);
  EXPECT_NE(s.warning().find("dropped"), std::string::npos) << s.warning();
  EXPECT_EQ(s.trace().dropped_records, s.dropped_records());
}

std::string label_of(const void* arg) {
  return *static_cast<const std::string*>(arg);
}

// Library calls: the kernels launched between push_call and pop_call carry the call's label, one
// launched outside carries none; a nested push is the innermost call; an id seen again keeps its
// first label (label() is asked once).
TEST(GpuTrace, KernelsCarryTheLibraryCallThatLaunchedThem) {
  CHECK_CUDA(cudaSetDevice(0));
  cco::trace::Session s;
  ASSERT_TRUE(s.start()) << s.warning();
  ASSERT_TRUE(s.calls_on()) << "this CUPTI records no library calls: "
                            << ::testing::PrintToString(s.trace().notes);
  const std::string big = "cublasGemmEx bf16 NN m=4096 n=4096 k=4096";
  const std::string small = "cublasGemmEx bf16 NN m=64 n=64 k=64";
  const std::string other = "never asked";
  CHECK_CUDA(cco::test::launch_compute(nullptr, 1, 32, 0, 10, nullptr));  // outside
  ASSERT_TRUE(s.push_call(1, label_of, &big));
  CHECK_CUDA(cco::test::launch_compute(nullptr, 2, 32, 0, 10, nullptr));
  ASSERT_TRUE(s.push_call(2, label_of, &small));
  CHECK_CUDA(cco::test::launch_compute(nullptr, 3, 32, 0, 10, nullptr));
  s.pop_call();
  CHECK_CUDA(cco::test::launch_compute(nullptr, 4, 32, 0, 10, nullptr));
  s.pop_call();
  ASSERT_TRUE(s.push_call(1, label_of, &other));  // seen before: the first label stays
  CHECK_CUDA(cco::test::launch_compute(nullptr, 5, 32, 0, 10, nullptr));
  s.pop_call();
  CHECK_CUDA(cco::test::launch_compute(nullptr, 6, 32, 0, 10, nullptr));  // outside again
  CHECK_CUDA(cudaDeviceSynchronize());
  s.stop();
  EXPECT_FALSE(s.calls_on());
  const auto t = s.trace();
  std::map<int, std::string> call_by_blocks;
  for (const auto& k : t.kernels) call_by_blocks[k.grid.x] = k.call;
  ASSERT_EQ(call_by_blocks.size(), 6u);
  EXPECT_EQ(call_by_blocks[1], "");
  EXPECT_EQ(call_by_blocks[2], big);
  EXPECT_EQ(call_by_blocks[3], small);
  EXPECT_EQ(call_by_blocks[4], big);
  EXPECT_EQ(call_by_blocks[5], big);
  EXPECT_EQ(call_by_blocks[6], "");
  // The label travels through the file.
  const auto back = cco::trace::trace_from_json(cco::trace::trace_to_json(t), "t.json");
  std::size_t labelled = 0;
  for (const auto& k : back.kernels) labelled += !k.call.empty();
  EXPECT_EQ(labelled, 4u);
}

// Runs last: this process's first NVTX call happens here, after start() named libcupti as NVTX's
// injection library (earlier tests started sessions too; none made an NVTX call).
TEST(GpuTrace, NvtxRangesAroundAKernel) {
  CHECK_CUDA(cudaSetDevice(0));
  int* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(int)));
  cco::trace::Session s;
  ASSERT_TRUE(s.start()) << s.warning();
  {
    std::string why = s.warning();
    for (const auto& n : s.trace().notes)
      if (n.find("NVTX ranges not recorded") != std::string::npos) why = n;
    if (why.find("NVTX ranges are off") != std::string::npos ||
        why.find("NVTX ranges not recorded") != std::string::npos)
      GTEST_SKIP() << "this CUPTI records no NVTX ranges: " << why;
  }
  const char* inj = std::getenv("NVTX_INJECTION64_PATH");
  ASSERT_NE(inj, nullptr);
  if (g_user_nvtx_injection.empty())
    EXPECT_EQ(std::string(inj), cco::trace::cupti_library()) << "start() names its libcupti";
  else
    EXPECT_EQ(std::string(inj), g_user_nvtx_injection) << "a value the user set is kept";
  s.set_rank(0, 7);  // this thread is rank 7's: its ranges and device 0's kernels are rank 7's
  const uint64_t tid = static_cast<uint64_t>(::syscall(SYS_gettid));
  const uint64_t pt = static_cast<uint32_t>(pthread_self());

  nvtxRangePushA("cco outer");
  nvtxRangePushA("cco inner");
  CHECK_CUDA(cco::test::launch_compute(nullptr, 4, 128, 0, kCycles, counter));
  nvtxRangePop();
  nvtxRangePop();
  const nvtxRangeId_t id = nvtxRangeStartA("cco start/end");
  CHECK_CUDA(cco::test::launch_compute(nullptr, 2, 96, 0, kCycles / 10, counter));
  CHECK_CUDA(cudaDeviceSynchronize());
  nvtxRangeEnd(id);
  nvtxRangePushA("cco left open");  // still open at stop(): a note, not a range
  s.stop();
  nvtxRangePop();

  const cco::trace::Trace t = s.trace();
  std::printf("trace: %zu kernels, %zu NVTX ranges; notes:", t.kernels.size(), t.ranges.size());
  for (const auto& n : t.notes) std::printf(" [%s]", n.c_str());
  std::printf("\n");
  std::map<std::string, const cco::trace::NvtxRange*> by_name;
  for (const auto& r : t.ranges) {
    std::printf("  range '%s' domain '%s' rank %d thread %llu: %lld .. %lld ns (%.1f us)\n",
                r.name.c_str(), r.domain.c_str(), r.rank, static_cast<unsigned long long>(r.thread),
                static_cast<long long>(r.start_ns), static_cast<long long>(r.end_ns),
                us(r.duration_ns()));
    EXPECT_EQ(by_name.count(r.name), 0u) << "twice: " << r.name;
    by_name[r.name] = &r;
  }
  for (const char* n : {"cco outer", "cco inner", "cco start/end"}) {
    ASSERT_EQ(by_name.count(n), 1u) << n;
    const auto& r = *by_name[n];
    EXPECT_LT(r.start_ns, r.end_ns) << n;
    EXPECT_EQ(r.domain, "") << n;
    EXPECT_EQ(r.rank, 7) << n;
    EXPECT_TRUE(r.thread == tid || r.thread == pt) << n << ": thread " << r.thread;
  }
  EXPECT_EQ(by_name.count("cco left open"), 0u);
  const auto& outer = *by_name["cco outer"];
  const auto& inner = *by_name["cco inner"];
  EXPECT_LE(outer.start_ns, inner.start_ns);
  EXPECT_GE(outer.end_ns, inner.end_ns);
  EXPECT_EQ(s.range_count(), t.ranges.size());
  std::string notes;
  for (const auto& n : t.notes) notes += n + "\n";
  EXPECT_NE(notes.find("'cco left open'"), std::string::npos) << notes;
  EXPECT_NE(notes.find("NVTX ranges on"), std::string::npos) << notes;

  // The kernels are still traced, on the same clock (printed: launch inside the inner range).
  int launched = 0;
  for (const auto& k : t.kernels) {
    if (k.name.find("cco_trace_test_compute") == std::string::npos) continue;
    EXPECT_EQ(k.rank, 7);
    if (k.block.x == 128) {
      ++launched;
      std::printf("  kernel launched at %lld ns (inner range %lld .. %lld), ran %lld .. %lld\n",
                  static_cast<long long>(k.launch_ns()), static_cast<long long>(inner.start_ns),
                  static_cast<long long>(inner.end_ns), static_cast<long long>(k.start_ns),
                  static_cast<long long>(k.end_ns));
    }
    if (k.block.x == 96) ++launched;
  }
  EXPECT_EQ(launched, 2);

  // The file keeps them.
  const std::string file = ::testing::TempDir() + "cco_gpu_trace_nvtx.json";
  s.write(file);
  const auto back = cco::trace::read_trace_file(file);
  EXPECT_EQ(back.ranges.size(), t.ranges.size());
  EXPECT_EQ(back.kernels.size(), t.kernels.size());
  CHECK_CUDA(cudaFree(counter));
}

}  // namespace
