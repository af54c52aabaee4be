// FSDP2's re-gathers (trace/regather.hpp) on hand-built steps with known answers: the backward
// all-gathers beyond the reduce-scatters' count, their exposed time, the compute slowed beside
// them and the copies out of their buffers; nothing where all-gathers do not outnumber
// reduce-scatters (reshard already off, DDP, tensor parallelism).
#include <gtest/gtest.h>

#include "diagnosis_test_helpers.hpp"
#include "report/diagnosis_text.hpp"
#include "trace/levers.hpp"
#include "trace/regather.hpp"

namespace {

using namespace cco::test;
using cco::trace::Interval;

const char* kRs = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const char* kCopyOut =
    "at::native::detail::split_with_sizes_copy_out_contiguous_no_cast_kernel<int>(int)";

std::vector<const KernelEvent*> ptrs(const std::vector<KernelEvent>& v) {
  std::vector<const KernelEvent*> out;
  for (const auto& k : v) out.push_back(&k);
  return out;
}

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
  // AG 70-80 (compute 70-80 beside it), RS 80-90. Re-gathers: the last 2 of 4 all-gathers, all
  // of one size (cco's labels).
  const std::string ag = "nccl AllGather bf16 count=8 ranks=2";
  const std::vector<KernelEvent> ks = {
      kernel(kAg, 0, 10, ag), kernel(kAg, 20, 30, ag), kernel(kAg, 50, 60, ag), kernel(kRs, 60, 70),
      kernel(kAg, 70, 80, ag), kernel(kRs, 80, 90)};
  // Copy-outs after each all-gather: 10-12, 30-32, 60-63, 80-84 (the last two are backward's).
  const std::vector<KernelEvent> co = {kernel(kCopyOut, 10, 12), kernel(kCopyOut, 30, 32),
                                       kernel(kCopyOut, 60, 63), kernel(kCopyOut, 80, 84)};
  const std::vector<Interval> comp = {{50 * us, 55 * us}, {70 * us, 80 * us}};
  const std::vector<Interval> exposed = {{0, 10 * us}, {20 * us, 30 * us}, {55 * us, 70 * us},
                                         {80 * us, 90 * us}};
  // Compute overlapped communication 15 us in all (50-55, 70-80), slowed 6 us: the re-gathers
  // hold all 15, so all 6.
  const auto r = cco::trace::regathers(ptrs(ks), ptrs(co), exposed, comp, 15 * us, 6 * us,
                                       {0, 100 * us});
  EXPECT_EQ(r.all_gathers, 4);
  EXPECT_EQ(r.reduce_scatters, 2);
  EXPECT_EQ(r.regathers, 2);
  EXPECT_EQ(r.exposed_ns, 5 * us);  // 55-60 of the first re-gather; 70-80 is hidden
  EXPECT_EQ(r.slowed_ns, 6 * us);
  EXPECT_EQ(r.copies_ns, 7 * us);   // 60-63 and 80-84
  EXPECT_EQ(r.cost_ns(), 18 * us);
  // Never more than the step (here a compute slowed beyond it: the terms may overlap).
  EXPECT_EQ(cco::trace::regathers(ptrs(ks), ptrs(co), exposed, comp, 15 * us, 1000 * us,
                                  {0, 100 * us}).cost_ns(),
            100 * us);
}

// A gather of another size once a step (the example's losses, gathered after the step) is not a
// parameter gather: with reshard off nothing is bounded, with it on the two backward gathers are.
TEST(Regather, AOneOffGatherIsNotAParameterGather) {
  const std::string ag = "nccl AllGather bf16 count=8 ranks=2";
  const std::string loss = "nccl AllGather f32 count=1 ranks=2";
  const std::vector<KernelEvent> kept = {kernel(kAg, 0, 10, ag), kernel(kAg, 20, 30, ag),
                                         kernel(kRs, 40, 50), kernel(kRs, 60, 70),
                                         kernel(kAg, 90, 99, loss)};
  const std::vector<KernelEvent> co = {kernel(kCopyOut, 10, 12), kernel(kCopyOut, 30, 32)};
  const std::vector<Interval> all = {{0, 100 * us}};
  EXPECT_EQ(cco::trace::regathers(ptrs(kept), ptrs(co), all, {}, 0, 0, {0, 100 * us}).regathers, 0);
  const std::vector<KernelEvent> on = {kernel(kAg, 0, 5, ag),   kernel(kAg, 10, 15, ag),
                                       kernel(kAg, 40, 50, ag), kernel(kRs, 50, 55),
                                       kernel(kAg, 60, 70, ag), kernel(kRs, 70, 75),
                                       kernel(kAg, 90, 99, loss)};
  const auto r = cco::trace::regathers(ptrs(on), ptrs(co), all, {}, 0, 0, {0, 100 * us});
  EXPECT_EQ(r.regathers, 2);
  EXPECT_EQ(r.exposed_ns, 20 * us);  // 40-50 and 60-70, not the loss gather's 90-99
}

// A reduce-scatter running beside a re-gather keeps the time they share.
TEST(Regather, OnlyWhereNoOtherCollectiveRuns) {
  const std::vector<KernelEvent> ks = {kernel(kAg, 0, 10), kernel(kAg, 20, 40), kernel(kRs, 30, 50)};
  const std::vector<KernelEvent> co = {kernel(kCopyOut, 10, 12)};
  const auto r = cco::trace::regathers(ptrs(ks), ptrs(co), {{0, 100 * us}}, {}, 0, 0, {0, 100 * us});
  EXPECT_EQ(r.regathers, 1);
  EXPECT_EQ(r.exposed_ns, 10 * us);  // 20-30; 30-40 is the reduce-scatter's too
}

TEST(Regather, NoneWhereTheStepIsNotFsdpSeenWhole) {
  const std::vector<KernelEvent> fsdp_kept = {kernel(kAg, 0, 10), kernel(kAg, 20, 30),
                                              kernel(kRs, 40, 50), kernel(kRs, 60, 70)};
  const std::vector<KernelEvent> tp = {kernel(kAg, 0, 10), kernel(kAg, 20, 30)};  // no RS
  const std::vector<KernelEvent> ddp = {kernel(kAr, 0, 10), kernel(kAr, 20, 30)};
  // A window from the collectives' period that starts mid-step, at a reduce-scatter.
  const std::vector<KernelEvent> mid = {kernel(kRs, 0, 10), kernel(kAg, 20, 30), kernel(kAg, 40, 50)};
  const std::vector<KernelEvent> co = {kernel(kCopyOut, 10, 12)};
  for (const auto* set : {&fsdp_kept, &tp, &ddp, &mid}) {
    const auto r = cco::trace::regathers(ptrs(*set), ptrs(co), {{0, 100 * us}}, {}, 0, 0, {0, 100 * us});
    EXPECT_EQ(r.regathers, 0);
    EXPECT_EQ(r.cost_ns(), 0);
  }
  // No FSDP2 copy-outs (tensor parallelism's gathers beside reduce-scatters): none either.
  const std::vector<KernelEvent> sp = {kernel(kAg, 0, 10), kernel(kAg, 20, 30), kernel(kRs, 40, 50)};
  EXPECT_EQ(cco::trace::regathers(ptrs(sp), {}, {{0, 100 * us}}, {}, 0, 0, {0, 100 * us}).regathers, 0);
}

// Through the diagnosis: FSDP-like steps, the re-gathers in the step's parts and said in the
// text with the setting that drops them.
TEST(Regather, InTheStepsAndTheText) {
  Builder b;
  for (int s = 0; s < 8; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 40);    // forward
    b.kernel(0, s, kAg, 0, 10);
    b.kernel(0, s, kAg, 10, 20);
    b.kernel(0, s, kCopyOut, 20, 22);  // FSDP2's copy-outs (inside GEMMs: no new busy time)
    b.kernel(0, s, kAg, 40, 60);     // backward re-gather, exposed 20 us
    b.kernel(0, s, kGemm, 60, 80);
    b.kernel(0, s, kCopyOut, 60, 62);
    b.kernel(0, s, kRs, 60, 70);
    b.kernel(0, s, kGemm, 80, 100);
    b.kernel(0, s, kCopyOut, 95, 97);
    b.kernel(0, s, kRs, 100, 110);   // exposed tail
    b.kernel(0, s, kAg, 85, 95);     // a second re-gather, hidden
  }
  const Diagnosis d = cco::trace::diagnose(b.done());
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.regathers, 2);
  // The exposed 40-60, and the last 2 of 3 copy-outs (60-62, 95-97); no GEMM ran alone, so no
  // compute slowed is known beside 85-95.
  EXPECT_EQ(p.regather_ns, 24 * us);
  // Said in the text, with the setting that drops them; not a lever's bound (it leaves out the
  // host's work, which the setting also saves).
  const std::string text = cco::report::format_diagnosis(d);
  EXPECT_NE(text.find("# rank 0 re-gathers 2 all-gathers in backward (FSDP2 freeing parameters "
                      "after forward): 0.02 ms of that step on the GPU"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fsdp.reshard=off"), std::string::npos);
  for (const auto& l : cco::trace::ranked_levers(d, 0)) EXPECT_EQ(l.name.find("regather"), std::string::npos);
}

}  // namespace
