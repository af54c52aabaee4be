// Shaping planner (plan_padding / plan_all) and byte-size parsing, against hand-checked values.
//
// For a target of k blocks per SM, shared memory must bound the kernel: floor(S / A) <= k, with
// S the shared memory per SM and A the allocated size per block. The smallest such A is the
// smallest multiple of the allocation unit u that is > S / (k + 1):
//   A_k   = round_up(floor(S / (k + 1)) + 1, u)
// and the smallest request that rounds up to A_k is A_k - u + 1, so
//   dyn_k = A_k - u + 1 - static - reserved
// On sm_80/86/90 u = 128 and reserved = 1024; on gfx90a u = 512 and reserved = 0.
// S: A100 167936, A40 102400, H100 233472, MI250X 65536.
// Each value is also checked to be tight: dyn_k gives <= k blocks, dyn_k - 1 gives > k.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace {

using cco::model::DeviceLimits;
using cco::model::Error;
using cco::model::find_architecture;
using cco::model::Footprint;
using cco::model::format_bytes;
using cco::model::occupancy;
using cco::model::PaddingPlan;
using cco::model::parse_bytes;
using cco::model::plan_all;
using cco::model::plan_padding;

constexpr int64_t KiB = 1024;

Footprint fp(int threads, int regs, int64_t static_smem = 0, int64_t dynamic_smem = 0) {
  Footprint f;
  f.threads = threads;
  f.regs = regs;
  f.static_smem = static_smem;
  f.dynamic_smem = dynamic_smem;
  return f;
}

const DeviceLimits& a100() { return find_architecture("a100"); }
const DeviceLimits& a40() { return find_architecture("a40"); }
const DeviceLimits& h100() { return find_architecture("h100"); }
const DeviceLimits& mi250x() { return find_architecture("mi250x"); }

int blocks_with(const DeviceLimits& dev, Footprint f, int64_t dyn) {
  f.dynamic_smem = dyn;
  return occupancy(dev, f).blocks_per_sm;
}

// A reachable, planned (not "already") result: the expected size, and the boundary is tight.
void expect_planned(const DeviceLimits& dev, const Footprint& f, int k, int64_t want_dyn,
                    bool want_optin) {
  SCOPED_TRACE(dev.arch + " k=" + std::to_string(k));
  const PaddingPlan p = plan_padding(dev, f, k);
  EXPECT_EQ(p.target, k);
  EXPECT_TRUE(p.reachable);
  EXPECT_FALSE(p.already);
  EXPECT_EQ(p.dynamic_smem, want_dyn);
  EXPECT_EQ(p.extra, want_dyn - f.dynamic_smem);
  EXPECT_EQ(p.needs_optin, want_optin);
  EXPECT_TRUE(p.note.empty()) << p.note;
  EXPECT_LE(p.blocks_per_sm, k);
  EXPECT_GE(p.dynamic_smem, f.dynamic_smem);
  // tight: one byte less still lets more than k blocks in
  EXPECT_LE(blocks_with(dev, f, p.dynamic_smem), k);
  EXPECT_GT(blocks_with(dev, f, p.dynamic_smem - 1), k);
}

// The A100 base kernel: 128 threads (4 warps), 32 regs (1024 regs/warp).
// by_regs = floor(16384/1024)=16 * 4 = 64 / 4 = 16; by_warps = 64/4 = 16; smem 1024 -> 164.
// -> 16 blocks per SM.
Footprint a100_kernel() { return fp(128, 32); }

// ------------------------------------------------------------------------------------------
// k exactly reachable
// ------------------------------------------------------------------------------------------

TEST(PlanA100, BaseKernelHasSixteenBlocks) {
  EXPECT_EQ(occupancy(a100(), a100_kernel()).blocks_per_sm, 16);
}

TEST(PlanA100, ExactTargets) {
  // k=15: S/16 = 10496 -> 10497 -> /128 = 82.01 -> 83*128 = 10624; request 10497
  //       dyn = 10497 - 1024 = 9473. (9473+1024 -> 10624: 167936/10624 = 15.8 -> 15;
  //       9472+1024 = 10496 = 82*128: 167936/10496 = 16)
  expect_planned(a100(), a100_kernel(), 15, 9473, false);
  // k=8: S/9 = 18659.6 -> 18660 -> /128 = 145.8 -> 146*128 = 18688; request 18561; dyn 17537
  //      (18688: 8.99 -> 8; 18560 = 145*128: 9.05 -> 9)
  expect_planned(a100(), a100_kernel(), 8, 17537, false);
  // k=4: S/5 = 33587.2 -> 33588 -> /128 = 262.4 -> 263*128 = 33664; request 33537; dyn 32513
  //      (33664: 4.99 -> 4; 33536 = 262*128: 5.008 -> 5); 32513 <= 49152: no opt-in
  expect_planned(a100(), a100_kernel(), 4, 32513, false);
  // k=2: S/3 = 55978.7 -> 55979 -> /128 = 437.3 -> 438*128 = 56064; request 55937; dyn 54913
  //      (56064: 2.995 -> 2; 55936 = 437*128: 3.002 -> 3); 54913 > 49152: opt-in
  expect_planned(a100(), a100_kernel(), 2, 54913, true);
  // k=1: S/2 = 83968 -> 83969 -> /128 = 656.0 -> 657*128 = 84096; request 83969; dyn 82945
  //      (84096: 1.997 -> 1; 83968 = 656*128: exactly 2)
  expect_planned(a100(), a100_kernel(), 1, 82945, true);
}

TEST(PlanA100, ResultingBlocksEqualTarget) {
  EXPECT_EQ(plan_padding(a100(), a100_kernel(), 4).blocks_per_sm, 4);
  EXPECT_EQ(plan_padding(a100(), a100_kernel(), 1).blocks_per_sm, 1);
}

TEST(PlanA100, StaticSharedMemoryIsAccountedFor) {
  // static 8192: 8192+1024 = 9216 -> 167936/9216 = 18 > 16: still 16 blocks (regs/warps).
  // k=4: request 33537 (above) -> dyn = 33537 - 8192 - 1024 = 24321
  //      static + dyn = 32513 <= 49152: no opt-in
  expect_planned(a100(), fp(128, 32, 8192, 0), 4, 24321, false);
  // k=2: request 55937 -> dyn = 55937 - 9216 = 46721 (< 48 KB by itself)
  //      but static + dyn = 54913 > 49152: needs opt-in
  expect_planned(a100(), fp(128, 32, 8192, 0), 2, 46721, true);
}

TEST(PlanA40, ExactTargets) {
  // 128 threads, 32 regs on A40: by_regs 16, by_warps 48/4 = 12, blocks 16, smem 100 -> 12.
  const Footprint f = fp(128, 32);
  ASSERT_EQ(occupancy(a40(), f).blocks_per_sm, 12);
  // k=3: S/4 = 25600 -> 25601 -> /128 = 200.01 -> 201*128 = 25728; request 25601; dyn 24577
  //      (25728: 3.98 -> 3; 25600 = 200*128: exactly 4)
  expect_planned(a40(), f, 3, 24577, false);
  // k=1: S/2 = 51200 -> 51201 -> 401*128 = 51328; request 51201; dyn 50177 > 49152: opt-in
  //      (51328: 1.995 -> 1; 51200: exactly 2)
  expect_planned(a40(), f, 1, 50177, true);
}

TEST(PlanH100, ExactTargets) {
  // 256 threads = 8 warps, 32 regs: by_regs 64/8 = 8, by_warps 8, smem 228 -> 8.
  const Footprint f = fp(256, 32);
  ASSERT_EQ(occupancy(h100(), f).blocks_per_sm, 8);
  // k=2: S/3 = 77824 -> 77825 -> /128 = 608.01 -> 609*128 = 77952; request 77825; dyn 76801
  //      (77952: 2.995 -> 2; 77824 = 608*128: exactly 3); opt-in
  expect_planned(h100(), f, 2, 76801, true);
  // k=1: S/2 = 116736 -> 116737 -> 913*128 = 116864; request 116737; dyn 115713
  expect_planned(h100(), f, 1, 115713, true);
}

TEST(PlanMI250X, ExactTargets) {
  // 64 threads = 1 wave, 32 VGPRs: by_regs 64, by_warps 32, blocks 32, no LDS -> 32.
  const Footprint f = fp(64, 32);
  ASSERT_EQ(occupancy(mi250x(), f).blocks_per_sm, 32);
  // k=4: S/5 = 13107.2 -> 13108 -> /512 = 25.6 -> 26*512 = 13312; request 13312-511 = 12801;
  //      no reserve: dyn 12801 (13312: 4.92 -> 4; 12800 = 25*512: 5.12 -> 5)
  //      default = opt-in = 64 KB: never needs opt-in
  expect_planned(mi250x(), f, 4, 12801, false);
  // k=1: S/2 = 32768 -> 32769 -> 65*512 = 33280; request 32769; dyn 32769
  expect_planned(mi250x(), f, 1, 32769, false);
}

// ------------------------------------------------------------------------------------------
// Already satisfied, never below the launch's own size
// ------------------------------------------------------------------------------------------

TEST(PlanA100, AlreadySatisfiedKeepsTheLaunchSize) {
  // dynamic 20000: 21024 -> /128 = 164.25 -> 165*128 = 21120; 167936/21120 = 7.95 -> 7 blocks
  const Footprint f = fp(128, 32, 0, 20000);
  ASSERT_EQ(occupancy(a100(), f).blocks_per_sm, 7);
  for (int k : {7, 8, 16, 100}) {
    SCOPED_TRACE(k);
    const PaddingPlan p = plan_padding(a100(), f, k);
    EXPECT_EQ(p.target, k);
    EXPECT_TRUE(p.reachable);
    EXPECT_TRUE(p.already);
    EXPECT_EQ(p.dynamic_smem, 20000);
    EXPECT_EQ(p.extra, 0);
    EXPECT_EQ(p.blocks_per_sm, 7);
    EXPECT_FALSE(p.needs_optin);
  }
}

TEST(PlanA100, NeverBelowTheLaunchSize) {
  // same launch (7 blocks with 20000 B), k=6:
  // S/7 = 23990.9 -> 23991 -> /128 = 187.4 -> 188*128 = 24064; request 23937; dyn 22913
  // (24064: 6.98 -> 6; 23936 = 187*128: 7.02 -> 7); extra = 22913 - 20000 = 2913
  const Footprint f = fp(128, 32, 0, 20000);
  expect_planned(a100(), f, 6, 22913, false);
  EXPECT_EQ(plan_padding(a100(), f, 6).extra, 2913);
  // every target returns at least the launch's own size
  for (int k = 1; k <= 10; ++k) EXPECT_GE(plan_padding(a100(), f, k).dynamic_smem, 20000) << k;
}

TEST(PlanA100, NeedsOptInBoundaryIsStaticPlusDynamicOver48K) {
  // dynamic 49152: 50176 = 392*128 -> 167936/50176 = 3.3 -> 3 blocks; k=3 is already met.
  // static + dynamic = 49152, not > 49152: no opt-in
  const PaddingPlan at = plan_padding(a100(), fp(128, 32, 0, 49152), 3);
  EXPECT_TRUE(at.already);
  EXPECT_FALSE(at.needs_optin);
  // one byte more (49153 -> 50177 -> 50304: 3.3 -> 3 blocks): opt-in
  const PaddingPlan over = plan_padding(a100(), fp(128, 32, 0, 49153), 3);
  EXPECT_TRUE(over.already);
  EXPECT_TRUE(over.needs_optin);
  // the same split between static and dynamic
  EXPECT_TRUE(plan_padding(a100(), fp(128, 32, 40000, 9153), 3).needs_optin);
  EXPECT_FALSE(plan_padding(a100(), fp(128, 32, 40000, 9152), 3).needs_optin);
}

TEST(PlanA100, ZeroBlockKernelIsAlreadyAtOrBelowK) {
  // 1024 threads, 255 regs: cannot launch (0 blocks) -> 0 <= k
  const PaddingPlan p = plan_padding(a100(), fp(1024, 255), 1);
  EXPECT_TRUE(p.already);
  EXPECT_EQ(p.blocks_per_sm, 0);
  EXPECT_EQ(p.extra, 0);
  EXPECT_TRUE(plan_all(a100(), fp(1024, 255)).empty());
}

// ------------------------------------------------------------------------------------------
// k unreachable
// ------------------------------------------------------------------------------------------

// On every built-in architecture every k >= 1 is reachable: the need dyn_k and the room
// (opt-in - static) both shrink with the static size, so reachability depends only on
// A_1 - u + 1 - reserved <= opt-in, the hardest k being 1:
//   A100   83969 - 1024 = 82945  <= 166912
//   A40    51201 - 1024 = 50177  <= 101376
//   H100  116737 - 1024 = 115713 <= 232448
//   MI250X 32769 - 0    = 32769  <= 65536
TEST(PlanUnreachable, NeverOnBuiltinArchitectures) {
  for (const auto& dev : cco::model::builtin_architectures()) {
    for (int64_t st : {int64_t{0}, 4 * KiB, 16 * KiB, 30 * KiB}) {
      const Footprint f = fp(dev.warp_size, 32, st, 0);
      const PaddingPlan p = plan_padding(dev, f, 1);
      EXPECT_TRUE(p.reachable) << dev.arch << " static " << st << ": " << p.note;
      EXPECT_EQ(p.blocks_per_sm, 1) << dev.arch << " static " << st;
    }
  }
}

// So the unreachable path needs a device whose opt-in maximum is below half its SM:
// an A40-like SM (100 KB) with a 40 KB per-block maximum.
DeviceLimits small_optin_device() {
  DeviceLimits d = find_architecture("a40");
  d.name = "test device: 100 KB per SM, 40 KB per block";
  d.smem_per_block_default = 40 * KiB;
  d.smem_per_block_optin = 40 * KiB;
  return d;
}

TEST(PlanUnreachable, OptInMaximumTooSmall) {
  const DeviceLimits d = small_optin_device();
  // 128 threads, 32 regs: 12 blocks (warps), as on the A40.
  const Footprint f = fp(128, 32);
  ASSERT_EQ(occupancy(d, f).blocks_per_sm, 12);
  // k=1 needs dyn 50177 (A40 arithmetic above) > 40960: unreachable.
  const PaddingPlan p = plan_padding(d, f, 1);
  EXPECT_EQ(p.target, 1);
  EXPECT_FALSE(p.reachable);
  EXPECT_FALSE(p.already);
  // largest allowed: 40960; 40960 + 1024 = 41984 = 328*128 -> 102400/41984 = 2.44 -> 2 blocks
  EXPECT_EQ(p.dynamic_smem, 40960);
  EXPECT_EQ(p.extra, 40960);
  EXPECT_EQ(p.blocks_per_sm, 2);
  EXPECT_FALSE(p.needs_optin);  // 40960 is not over the (equal) default
  EXPECT_NE(p.note.find("k=1"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("50177"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("40960"), std::string::npos) << p.note;
  // k=2: S/3 = 34133.3 -> 34134 -> /128 = 266.7 -> 267*128 = 34176; request 34049;
  //      dyn 33025 <= 40960: reachable (34176: 2.996 -> 2; 34048 = 266*128: 3.008 -> 3)
  expect_planned(d, f, 2, 33025, false);
}

TEST(PlanUnreachable, WithStaticSharedMemory) {
  const DeviceLimits d = small_optin_device();
  // static 8192: 9216 -> 102400/9216 = 11.1 -> 11 (shared memory) < 12 (warps)
  const Footprint f = fp(128, 32, 8192, 0);
  ASSERT_EQ(occupancy(d, f).blocks_per_sm, 11);
  // k=1 needs 51201 - 8192 - 1024 = 41985 > 40960 - 8192 = 32768
  const PaddingPlan p = plan_padding(d, f, 1);
  EXPECT_FALSE(p.reachable);
  EXPECT_EQ(p.dynamic_smem, 32768);
  // 8192 + 32768 + 1024 = 41984 -> 2 blocks
  EXPECT_EQ(p.blocks_per_sm, 2);
  EXPECT_NE(p.note.find("41985"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("32768"), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("8192"), std::string::npos) << p.note;
}

// ------------------------------------------------------------------------------------------
// Errors, plan_all
// ------------------------------------------------------------------------------------------

TEST(Plan, KBelowOneThrows) {
  EXPECT_THROW(plan_padding(a100(), a100_kernel(), 0), Error);
  EXPECT_THROW(plan_padding(a100(), a100_kernel(), -3), Error);
}

TEST(Plan, InvalidFootprintThrows) {
  EXPECT_THROW(plan_padding(a100(), fp(0, 32), 1), Error);
  EXPECT_THROW(plan_padding(a100(), fp(128, 256), 1), Error);
  EXPECT_THROW(plan_padding(a100(), fp(128, 32, 0, 166913), 1), Error);
  EXPECT_THROW(plan_all(a100(), fp(2048, 32)), Error);
}

TEST(PlanAll, CoversCurrentDownToOneAndIsMonotone) {
  const auto plans = plan_all(a100(), a100_kernel());
  ASSERT_EQ(plans.size(), 16u);  // k = 16 .. 1
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const int k = 16 - static_cast<int>(i);
    SCOPED_TRACE(k);
    EXPECT_EQ(plans[i].target, k);
    EXPECT_TRUE(plans[i].reachable);
    EXPECT_LE(plans[i].blocks_per_sm, k);
    if (i > 0) {
      // smaller k needs at least as much padding, and never gives more blocks
      EXPECT_GE(plans[i].dynamic_smem, plans[i - 1].dynamic_smem);
      EXPECT_LE(plans[i].blocks_per_sm, plans[i - 1].blocks_per_sm);
    }
  }
  // k=16 is the current occupancy: nothing to add
  EXPECT_TRUE(plans[0].already);
  EXPECT_EQ(plans[0].dynamic_smem, 0);
  EXPECT_EQ(plans[0].blocks_per_sm, 16);
  // hand values from PlanA100.ExactTargets
  EXPECT_EQ(plans[1].dynamic_smem, 9473);    // k=15
  EXPECT_EQ(plans[8].dynamic_smem, 17537);   // k=8
  EXPECT_EQ(plans[12].dynamic_smem, 32513);  // k=4
  EXPECT_EQ(plans[14].dynamic_smem, 54913);  // k=2
  EXPECT_EQ(plans[15].dynamic_smem, 82945);  // k=1
}

TEST(PlanAll, MatchesPlanPaddingPerK) {
  const Footprint f = fp(256, 32);
  const auto plans = plan_all(h100(), f);
  ASSERT_EQ(plans.size(), 8u);
  for (const auto& p : plans) {
    const auto q = plan_padding(h100(), f, p.target);
    EXPECT_EQ(p.dynamic_smem, q.dynamic_smem) << p.target;
    EXPECT_EQ(p.blocks_per_sm, q.blocks_per_sm) << p.target;
  }
}

// ------------------------------------------------------------------------------------------
// parse_bytes / format_bytes
// ------------------------------------------------------------------------------------------

TEST(ParseBytes, PlainAndSuffixes) {
  EXPECT_EQ(parse_bytes("0"), 0);
  EXPECT_EQ(parse_bytes("1000"), 1000);
  EXPECT_EQ(parse_bytes("7B"), 7);
  EXPECT_EQ(parse_bytes("1K"), 1024);
  EXPECT_EQ(parse_bytes("64k"), 65536);
  EXPECT_EQ(parse_bytes("64KB"), 65536);
  EXPECT_EQ(parse_bytes("64KiB"), 65536);
  EXPECT_EQ(parse_bytes("64kib"), 65536);
  EXPECT_EQ(parse_bytes("256M"), 268435456);   // 256 * 2^20
  EXPECT_EQ(parse_bytes("256mb"), 268435456);
  EXPECT_EQ(parse_bytes("1G"), 1073741824);    // 2^30
  EXPECT_EQ(parse_bytes("8GiB"), 8589934592);  // 8 * 2^30
  EXPECT_EQ(parse_bytes("1T"), int64_t{1} << 40);
}

TEST(ParseBytes, BadStringsThrow) {
  for (const char* bad : {"", "K", "abc", "1.5K", "1 K", " 1K", "1K ", "1Q", "1KK", "0x10", "1e3",
                          "+5", "1iB", "--1"}) {
    EXPECT_THROW(parse_bytes(bad), Error) << "'" << bad << "'";
  }
}

TEST(ParseBytes, NegativesThrow) {
  EXPECT_THROW(parse_bytes("-1"), Error);
  EXPECT_THROW(parse_bytes("-1K"), Error);
  EXPECT_THROW(parse_bytes("-0"), Error);
}

TEST(ParseBytes, Overflow) {
  EXPECT_EQ(parse_bytes("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_THROW(parse_bytes("9223372036854775808"), Error);     // 2^63
  EXPECT_THROW(parse_bytes("99999999999999999999999"), Error);
  // 2^33 G = 2^63: over; 2^33 - 1 G = 2^63 - 2^30: fits
  EXPECT_THROW(parse_bytes("8589934592G"), Error);
  EXPECT_EQ(parse_bytes("8589934591G"),
            std::numeric_limits<int64_t>::max() - (int64_t{1} << 30) + 1);
  // 2^53 K = 2^63: over
  EXPECT_THROW(parse_bytes("9007199254740992K"), Error);
  try {
    parse_bytes("8589934592G");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("8589934592G"), std::string::npos) << e.what();
  }
}

TEST(FormatBytes, ExactUnitsOnly) {
  EXPECT_EQ(format_bytes(0), "0");
  EXPECT_EQ(format_bytes(1), "1");
  EXPECT_EQ(format_bytes(1000), "1000");
  EXPECT_EQ(format_bytes(1023), "1023");
  EXPECT_EQ(format_bytes(1024), "1K");
  EXPECT_EQ(format_bytes(64 * KiB), "64K");
  EXPECT_EQ(format_bytes(1536), "1536");          // 1.5 K: not exact
  EXPECT_EQ(format_bytes(1536 * KiB), "1536K");   // 1.5 M: exact in K only
  EXPECT_EQ(format_bytes(268435456), "256M");
  EXPECT_EQ(format_bytes(int64_t{3} << 30), "3G");
  EXPECT_EQ(format_bytes(int64_t{1} << 40), "1T");
  EXPECT_EQ(format_bytes(int64_t{1025} << 30), "1025G");
}

TEST(FormatBytes, RoundTrip) {
  for (int64_t v : {int64_t{0}, int64_t{8}, int64_t{1000}, int64_t{4096}, int64_t{1536},
                    int64_t{1} << 20, int64_t{3} << 30, int64_t{1} << 40, int64_t{123456789}}) {
    EXPECT_EQ(parse_bytes(format_bytes(v)), v) << v;
  }
}

}  // namespace

// The one shaping path every runner takes: a given pad as is, else the planner's; the model's
// blocks per SM with it; a note when k cannot be reached; an error for a pad beyond the device.
TEST(ShapeChoice, PlannedGivenUnreachableAndTooLarge) {
  const Footprint f = a100_kernel();  // 16 blocks per SM
  const auto planned = cco::model::shape_choice(a100(), f, 4, -1);
  EXPECT_EQ(planned.pad, plan_padding(a100(), f, 4).extra);
  EXPECT_EQ(planned.model_bps, 4);
  EXPECT_TRUE(planned.note.empty()) << planned.note;
  const auto given = cco::model::shape_choice(a100(), f, 4, 40 * KiB);
  EXPECT_EQ(given.pad, 40 * KiB) << "an explicit pad is used as given, whatever k";
  EXPECT_EQ(given.model_bps, blocks_with(a100(), f, 40 * KiB));
  EXPECT_TRUE(given.note.empty());
  // The planner's note comes through when k is out of reach.
  const PaddingPlan p0 = plan_padding(a100(), f, 1);
  const auto one = cco::model::shape_choice(a100(), f, 1, -1);
  EXPECT_EQ(one.note, p0.note);
  EXPECT_EQ(one.pad, p0.extra);
  EXPECT_THROW(cco::model::shape_choice(a100(), f, 4, 1 << 30), Error);
}
