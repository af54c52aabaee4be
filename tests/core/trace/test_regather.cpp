// FSDP2's re-gathers (trace/regather.hpp) on hand-built steps with known answers: the backward
// all-gathers beyond the reduce-scatters' count, their exposed time, the compute slowed beside
// them and the copies out of their buffers; nothing where all-gathers do not outnumber
// reduce-scatters (reshard already off, DDP, tensor parallelism).
#include <gtest/gtest.h>

#include "diagnosis_test_helpers.hpp"
#include "trace/levers.hpp"
#include "trace/regather.hpp"

namespace {

using namespace cco::test;
using cco::trace::Interval;

const char* kRs = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const char* kCopyOut =
    "at::native::detail::split_with_sizes_copy_out_contiguous_no_cast_kernel<int>(int)";

KernelEvent kernel(const char* name, int64_t a_us, int64_t b_us, const std::string& call = "") {
  KernelEvent k;
  k.name = name;
  k.category = cco::trace::classify_kernel(name);
  k.start_ns = a_us * us;
  k.end_ns = b_us * us;
  k.call = call;
  return k;
}

TEST(Regather, TheSurplusAllGathersAtTheEnd) {
  // Forward: AG 0-10, AG 20-30. Backward: AG 50-60 (exposed 5 of it: compute 50-55), RS 60-70,
  // AG 70-80 (compute 70-80 beside it), RS 80-90. Re-gathers: the last 2 of 4 all-gathers.
  const std::vector<KernelEvent> ks = {
      kernel(kAg, 0, 10), kernel(kAg, 20, 30), kernel(kAg, 50, 60), kernel(kRs, 60, 70),
      kernel(kAg, 70, 80, "nccl AllGather bf16 count=8 ranks=2"), kernel(kRs, 80, 90)};
  std::vector<const KernelEvent*> comms;
  for (const auto& k : ks) comms.push_back(&k);
  // Copy-outs after each all-gather: 10-12, 30-32, 60-63, 80-84 (the last two are backward's).
  const std::vector<KernelEvent> co = {kernel(kCopyOut, 10, 12), kernel(kCopyOut, 30, 32),
                                       kernel(kCopyOut, 60, 63), kernel(kCopyOut, 80, 84)};
  std::vector<const KernelEvent*> copies;
  for (const auto& k : co) copies.push_back(&k);
  const std::vector<Interval> comp = {{50 * us, 55 * us}, {70 * us, 80 * us}};
  const std::vector<Interval> exposed = {{0, 10 * us}, {20 * us, 30 * us}, {55 * us, 70 * us},
                                         {80 * us, 90 * us}};
  // Compute overlapped communication 15 us in all (50-55, 70-80), slowed 6 us: the re-gathers
  // hold all 15, so all 6.
  const auto r = cco::trace::regathers(comms, copies, exposed, comp, 15 * us, 6 * us, {0, 100 * us});
  EXPECT_EQ(r.all_gathers, 4);
  EXPECT_EQ(r.reduce_scatters, 2);
  EXPECT_EQ(r.regathers, 2);
  EXPECT_EQ(r.exposed_ns, 5 * us);  // 55-60 of the first re-gather; 70-80 is hidden
  EXPECT_EQ(r.slowed_ns, 6 * us);
  EXPECT_EQ(r.copies_ns, 7 * us);   // 60-63 and 80-84
  EXPECT_EQ(r.bound_ns(), 18 * us);
}

TEST(Regather, NoneWithoutASurplus) {
  const std::vector<KernelEvent> fsdp_kept = {kernel(kAg, 0, 10), kernel(kAg, 20, 30),
                                              kernel(kRs, 40, 50), kernel(kRs, 60, 70)};
  const std::vector<KernelEvent> tp = {kernel(kAg, 0, 10), kernel(kAg, 20, 30)};  // no RS
  const std::vector<KernelEvent> ddp = {kernel(kAr, 0, 10), kernel(kAr, 20, 30)};
  for (const auto* set : {&fsdp_kept, &tp, &ddp}) {
    std::vector<const KernelEvent*> comms;
    for (const auto& k : *set) comms.push_back(&k);
    const auto r = cco::trace::regathers(comms, {}, {{0, 100 * us}}, {}, 0, 0, {0, 100 * us});
    EXPECT_EQ(r.regathers, 0);
    EXPECT_EQ(r.bound_ns(), 0);
  }
}

// Through the diagnosis: two FSDP-like steps' worth of steps, the bound in the step's parts and
// among the levers with how to try it.
TEST(Regather, InTheStepsBoundsAndLevers) {
  Builder b;
  for (int s = 0; s < 8; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 40);    // forward
    b.kernel(0, s, kAg, 0, 10);
    b.kernel(0, s, kAg, 10, 20);
    b.kernel(0, s, kAg, 40, 60);     // backward re-gather, exposed 20 us
    b.kernel(0, s, kGemm, 60, 80);
    b.kernel(0, s, kRs, 60, 70);
    b.kernel(0, s, kGemm, 80, 100);
    b.kernel(0, s, kRs, 100, 110);   // exposed tail
    b.kernel(0, s, kAg, 85, 95);     // a second re-gather, hidden
  }
  const Diagnosis d = cco::trace::diagnose(b.done());
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.regathers, 2);
  // The exposed 40-60; no GEMM ran alone, so no compute slowed is known beside 85-95.
  EXPECT_EQ(p.regather_ns, 20 * us);
  EXPECT_EQ(cco::trace::lever_bounds(p).fsdp_regather_ns, p.regather_ns);
  bool named = false;
  for (const auto& l : cco::trace::ranked_levers(d, 0))
    named = named || (l.name == "fsdp-regather" && l.how.find("fsdp.reshard=off") != std::string::npos);
  EXPECT_TRUE(named);
}

}  // namespace
