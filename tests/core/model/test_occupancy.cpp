// Occupancy calculator against hand-checked values, for every built-in architecture.
//
// Every expected number below is worked out by hand from the published limits and CUDA's
// occupancy rules (cuda_occupancy.h), never by calling the code under test:
//   warps/block   = ceil(threads / warp_size)
//   by_warps      = floor(max_warps_per_sm / warps_per_block)
//   regs/warp     = round_up(regs * warp_size, alloc_unit)            (256 on NVIDIA, 512 gfx90a)
//   block check   = regs/warp * warps/block           <= regs_per_block   (software)
//                   regs/warp * round_up(warps, 4)    <= regs_per_block   (hardware)
//   by_regs       = floor(floor(regs_per_sm / 4) / regs/warp) * 4 / warps_per_block
//   smem/block    = round_up(static + dynamic + reserved, unit)       (1 KB + 128 B on sm_8x/9x)
//   by_smem       = floor(smem_per_sm / smem/block)
//   blocks        = min(by_warps, by_blocks, by_regs, by_smem)
//
// Limits used (CUDA C++ Programming Guide, compute-capability table; CDNA2 ISA guide):
//   sm_80 A100 : 64 warps/SM, 32 blocks/SM, 65536 regs/SM and /block, 167936 B (164 KB) smem/SM
//   sm_86 A40  : 48 warps/SM, 16 blocks/SM, 65536 regs/SM and /block, 102400 B (100 KB) smem/SM
//   sm_90 H100 : 64 warps/SM, 32 blocks/SM, 65536 regs/SM and /block, 233472 B (228 KB) smem/SM
//   gfx90a     : 32 waves/CU (64 lanes), 32 blocks/CU, 131072 regs/CU and /block, 65536 B LDS,
//                VGPRs in units of 8 per lane (512 per wave), LDS in units of 512 B, no reserve.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace {

using cco::model::DeviceLimits;
using cco::model::Error;
using cco::model::find_architecture;
using cco::model::Footprint;
using cco::model::Limiter;
using cco::model::Occupancy;
using cco::model::occupancy;

constexpr int64_t KiB = 1024;

Footprint fp(int threads, int regs, int64_t static_smem = 0, int64_t dynamic_smem = 0) {
  Footprint f;
  f.threads = threads;
  f.regs = regs;
  f.static_smem = static_smem;
  f.dynamic_smem = dynamic_smem;
  return f;
}

const DeviceLimits& a100() { return find_architecture("sm_80"); }
const DeviceLimits& a40() { return find_architecture("sm_86"); }
const DeviceLimits& h100() { return find_architecture("sm_90"); }
const DeviceLimits& mi250x() { return find_architecture("gfx90a"); }

struct Expected {
  int blocks;
  Limiter limiter;
  int by_warps;
  int by_blocks;
  int by_regs;
  int by_smem;
  int64_t smem_per_block;
  int warps_per_sm;
  double occupancy;
};

void expect_occ(const Occupancy& o, const Expected& e) {
  EXPECT_EQ(o.blocks_per_sm, e.blocks);
  EXPECT_EQ(o.limiter, e.limiter) << "got " << cco::model::to_string(o.limiter) << ", expected "
                                  << cco::model::to_string(e.limiter);
  EXPECT_EQ(o.by_warps, e.by_warps);
  EXPECT_EQ(o.by_blocks, e.by_blocks);
  EXPECT_EQ(o.by_regs, e.by_regs);
  EXPECT_EQ(o.by_smem, e.by_smem);
  EXPECT_EQ(o.smem_per_block, e.smem_per_block);
  EXPECT_EQ(o.warps_per_sm, e.warps_per_sm);
  EXPECT_DOUBLE_EQ(o.occupancy, e.occupancy);
  if (e.blocks > 0) {
    EXPECT_TRUE(o.why_zero.empty()) << o.why_zero;
  }
}

// ------------------------------------------------------------------------------------------
// The built-in table holds the published limits.
// ------------------------------------------------------------------------------------------

TEST(Limits, BuiltinTableOrderAndPublishedValues) {
  const auto& t = cco::model::builtin_architectures();
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].arch, "sm_80");
  EXPECT_EQ(t[1].arch, "sm_86");
  EXPECT_EQ(t[2].arch, "sm_90");
  EXPECT_EQ(t[3].arch, "gfx90a");

  const auto& a = t[0];  // A100 SXM
  EXPECT_EQ(a.cc_major, 8);
  EXPECT_EQ(a.cc_minor, 0);
  EXPECT_EQ(a.sm_count, 108);
  EXPECT_EQ(a.warp_size, 32);
  EXPECT_EQ(a.max_threads_per_block, 1024);
  EXPECT_EQ(a.max_threads_per_sm, 2048);
  EXPECT_EQ(a.max_warps_per_sm(), 64);
  EXPECT_EQ(a.max_blocks_per_sm, 32);
  EXPECT_EQ(a.regs_per_sm, 65536);
  EXPECT_EQ(a.regs_per_block, 65536);
  EXPECT_EQ(a.max_regs_per_thread, 255);
  EXPECT_EQ(a.reg_alloc_unit, 256);
  EXPECT_EQ(a.reg_sub_partitions, 4);
  EXPECT_EQ(a.smem_per_sm, 167936);             // 164 KB
  EXPECT_EQ(a.smem_per_block_default, 49152);   // 48 KB
  EXPECT_EQ(a.smem_per_block_optin, 166912);    // 163 KB
  EXPECT_EQ(a.smem_reserved_per_block, 1024);
  EXPECT_EQ(a.smem_alloc_unit, 128);
  EXPECT_EQ(a.smem_carveouts, (std::vector<int64_t>{0, 8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB,
                                                     100 * KiB, 132 * KiB, 164 * KiB}));

  const auto& b = t[1];  // A40
  EXPECT_EQ(b.cc_major, 8);
  EXPECT_EQ(b.cc_minor, 6);
  EXPECT_EQ(b.sm_count, 84);
  EXPECT_EQ(b.max_threads_per_sm, 1536);
  EXPECT_EQ(b.max_warps_per_sm(), 48);
  EXPECT_EQ(b.max_blocks_per_sm, 16);
  EXPECT_EQ(b.regs_per_sm, 65536);
  EXPECT_EQ(b.regs_per_block, 65536);
  EXPECT_EQ(b.smem_per_sm, 102400);           // 100 KB
  EXPECT_EQ(b.smem_per_block_default, 49152);
  EXPECT_EQ(b.smem_per_block_optin, 101376);  // 99 KB
  EXPECT_EQ(b.smem_reserved_per_block, 1024);
  EXPECT_EQ(b.smem_alloc_unit, 128);
  EXPECT_EQ(b.smem_carveouts,
            (std::vector<int64_t>{0, 8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB, 100 * KiB}));

  const auto& h = t[2];  // H100 SXM / H200
  EXPECT_EQ(h.cc_major, 9);
  EXPECT_EQ(h.cc_minor, 0);
  EXPECT_EQ(h.sm_count, 132);
  EXPECT_EQ(h.max_threads_per_sm, 2048);
  EXPECT_EQ(h.max_blocks_per_sm, 32);
  EXPECT_EQ(h.regs_per_sm, 65536);
  EXPECT_EQ(h.smem_per_sm, 233472);           // 228 KB
  EXPECT_EQ(h.smem_per_block_default, 49152);
  EXPECT_EQ(h.smem_per_block_optin, 232448);  // 227 KB
  EXPECT_EQ(h.smem_reserved_per_block, 1024);
  EXPECT_EQ(h.smem_alloc_unit, 128);
  EXPECT_EQ(h.smem_carveouts.back(), 228 * KiB);

  const auto& m = t[3];  // MI250X, one GCD
  EXPECT_EQ(m.cc_major, 0);
  EXPECT_EQ(m.sm_count, 110);
  EXPECT_EQ(m.warp_size, 64);
  EXPECT_EQ(m.max_threads_per_block, 1024);
  EXPECT_EQ(m.max_warps_per_sm(), 32);     // 4 SIMDs x 8 waves
  EXPECT_EQ(m.regs_per_sm, 131072);        // 4 SIMDs x 512 VGPRs x 64 lanes
  EXPECT_EQ(m.max_regs_per_thread, 512);
  EXPECT_EQ(m.reg_alloc_unit, 512);        // 8 VGPRs x 64 lanes
  EXPECT_EQ(m.smem_per_sm, 65536);
  EXPECT_EQ(m.smem_per_block_optin, 65536);
  EXPECT_EQ(m.smem_reserved_per_block, 0);
  EXPECT_EQ(m.smem_alloc_unit, 512);
}

TEST(Limits, FindArchitectureAliasesCaseInsensitive) {
  const auto& t = cco::model::builtin_architectures();
  EXPECT_EQ(&find_architecture("sm_80"), &t[0]);
  EXPECT_EQ(&find_architecture("a100"), &t[0]);
  EXPECT_EQ(&find_architecture("A100"), &t[0]);
  EXPECT_EQ(&find_architecture("SM_80"), &t[0]);
  EXPECT_EQ(&find_architecture("sm_86"), &t[1]);
  EXPECT_EQ(&find_architecture("a40"), &t[1]);
  EXPECT_EQ(&find_architecture("A40"), &t[1]);
  EXPECT_EQ(&find_architecture("sm_90"), &t[2]);
  EXPECT_EQ(&find_architecture("h100"), &t[2]);
  EXPECT_EQ(&find_architecture("H200"), &t[2]);  // H200 has the same SM as H100
  EXPECT_EQ(&find_architecture("gfx90a"), &t[3]);
  EXPECT_EQ(&find_architecture("GFX90A"), &t[3]);
  EXPECT_EQ(&find_architecture("mi250x"), &t[3]);
  EXPECT_EQ(&find_architecture("MI250X"), &t[3]);
}

TEST(Limits, ArchitectureNames) {
  const auto names = cco::model::architecture_names();
  const std::vector<std::string> want = {"sm_80", "a100",  "sm_86",  "a40",   "sm_90",
                                         "h100",  "h200",  "gfx90a", "mi250x"};
  EXPECT_EQ(names, want);
  for (const auto& n : names) EXPECT_NO_THROW(find_architecture(n)) << n;
}

TEST(Limits, UnknownArchitectureThrowsListingKnownNames) {
  for (const char* bad : {"sm_89", "v100", "", "a100 ", "live", "sm80"}) {
    try {
      find_architecture(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
      for (const char* known : {"sm_80", "a100", "sm_86", "a40", "sm_90", "h100", "h200",
                                "gfx90a", "mi250x", "live"})
        EXPECT_NE(msg.find(known), std::string::npos) << known << " missing from: " << msg;
    }
  }
}

// ------------------------------------------------------------------------------------------
// sm_80 (A100): 64 warps, 32 blocks, 65536 regs (16384 per sub-partition), 167936 B smem.
// ------------------------------------------------------------------------------------------

TEST(OccupancyA100, RegisterLimited) {
  // 256 threads = 8 warps; 64 regs: 64*32 = 2048 regs/warp (already a multiple of 256).
  // by_regs = floor(16384/2048)=8 warps/part * 4 = 32 warps / 8 = 4
  // by_warps = 64/8 = 8; by_blocks = 32; smem: round_up(0+0+1024,128)=1024 -> 167936/1024 = 164
  // blocks = 4 (registers); warps = 4*8 = 32 -> 32/64 = 0.5
  const auto o = occupancy(a100(), fp(256, 64));
  expect_occ(o, {4, Limiter::Registers, 8, 32, 4, 164, 1024, 32, 0.5});
  // used smem 4*1024 = 4096 -> smallest carveout step >= 4096 is 8 KB.
  EXPECT_EQ(o.carveout, 8 * KiB);
}

TEST(OccupancyA100, RegisterAllocationRoundsPerWarpTo256) {
  // 128 threads = 4 warps; 33 regs: 33*32 = 1056 -> round_up(1056,256) = 1280 regs/warp.
  // by_regs = floor(16384/1280)=12 * 4 = 48 warps / 4 = 12   (unrounded would give 15)
  // by_warps = 64/4 = 16; smem 164
  expect_occ(occupancy(a100(), fp(128, 33)),
             {12, Limiter::Registers, 16, 32, 12, 164, 1024, 48, 0.75});
}

TEST(OccupancyA100, RegistersFitPerSubPartition) {
  // 96 threads = 3 warps; 40 regs: 1280 -> 1280 regs/warp.
  // by_regs = floor(16384/1280)=12 * 4 = 48 warps / 3 = 16
  //   (pooling the whole SM would give floor(65536/1280)=51 / 3 = 17: the sub-partition floor
  //    is what makes it 16)
  // by_warps = floor(64/3) = 21
  expect_occ(occupancy(a100(), fp(96, 40)),
             {16, Limiter::Registers, 21, 32, 16, 164, 1024, 48, 0.75});
}

TEST(OccupancyA100, WarpLimited) {
  // 1024 threads = 32 warps; 16 regs -> 512 regs/warp; block 32*512 = 16384 <= 65536.
  // by_regs = floor(16384/512)=32 * 4 = 128 / 32 = 4; by_warps = 64/32 = 2
  // blocks = 2 (warps); warps 64 -> occupancy 1.0
  expect_occ(occupancy(a100(), fp(1024, 16)), {2, Limiter::Warps, 2, 32, 4, 164, 1024, 64, 1.0});
}

TEST(OccupancyA100, SharedMemoryLimited) {
  // 64 threads = 2 warps; 32 regs -> 1024/warp; by_regs = 16*4 = 64 / 2 = 32; by_warps = 32
  // smem: 0 + 40000 + 1024 = 41024 -> /128 = 320.5 -> 321*128 = 41088
  // by_smem = floor(167936/41088) = 4 (4*41088 = 164352 <= 167936 < 5*41088 = 205440)
  // warps 4*2 = 8 -> 8/64 = 0.125
  const auto o = occupancy(a100(), fp(64, 32, 0, 40000));
  expect_occ(o, {4, Limiter::SharedMemory, 32, 32, 32, 4, 41088, 8, 0.125});
  // used 164352 B: 132 KB = 135168 is too small, 164 KB = 167936 holds it.
  EXPECT_EQ(o.carveout, 164 * KiB);
}

TEST(OccupancyA100, BlockLimited) {
  // 32 threads = 1 warp; 32 regs -> 1024/warp; by_regs = 16*4 = 64 / 1 = 64; by_warps = 64
  // by_smem = 164; by_blocks = 32 -> 32 (blocks); warps 32 -> 0.5
  expect_occ(occupancy(a100(), fp(32, 32)), {32, Limiter::Blocks, 64, 32, 64, 164, 1024, 32, 0.5});
}

TEST(OccupancyA100, TooManyRegistersPerBlockGivesZero) {
  // 1024 threads = 32 warps; 255 regs: 255*32 = 8160 -> 8192 regs/warp;
  // block needs 32*8192 = 262144 > 65536 -> 0 blocks ("too many resources requested").
  const auto o = occupancy(a100(), fp(1024, 255));
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.by_regs, 0);
  EXPECT_EQ(o.limiter, Limiter::Registers);
  EXPECT_EQ(o.warps_per_sm, 0);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.0);
  EXPECT_FALSE(o.why_zero.empty());
  EXPECT_NE(o.why_zero.find("register"), std::string::npos) << o.why_zero;
  EXPECT_NE(o.why_zero.find("65536"), std::string::npos) << o.why_zero;
}

TEST(OccupancyA100, SharedMemoryRoundingAndReserve) {
  // static 1 B: 1 + 1024 = 1025 -> round_up 128 -> 1152; by_smem = floor(167936/1152) = 145
  // (32 threads, 32 regs: blocks still capped at 32 by the block limit)
  const auto o = occupancy(a100(), fp(32, 32, 1, 0));
  EXPECT_EQ(o.smem_per_block, 1152);
  EXPECT_EQ(o.by_smem, 145);
  EXPECT_EQ(o.blocks_per_sm, 32);
  // static 128, dynamic 128: 128 + 128 + 1024 = 1280 (a multiple of 128): 167936/1280 = 131
  const auto p = occupancy(a100(), fp(32, 32, 128, 128));
  EXPECT_EQ(p.smem_per_block, 1280);
  EXPECT_EQ(p.by_smem, 131);
}

TEST(OccupancyA100, OptInMaximumGivesOneBlock) {
  // dynamic 166912 (163 KB): 166912 + 1024 = 167936 = whole SM -> 1 block, limited by smem
  const auto o = occupancy(a100(), fp(128, 32, 0, 166912));
  EXPECT_EQ(o.smem_per_block, 167936);
  EXPECT_EQ(o.by_smem, 1);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.limiter, Limiter::SharedMemory);
  EXPECT_EQ(o.carveout, 164 * KiB);
  // split between static (at most 48 KB) and dynamic: the same
  EXPECT_EQ(occupancy(a100(), fp(128, 32, 49152, 117760)).blocks_per_sm, 1);
}

TEST(OccupancyA100, ThreadsNotAMultipleOfTheWarpSize) {
  // 100 threads -> ceil(100/32) = 4 warps; no registers given (0 -> no register bound)
  // by_warps = 64/4 = 16 -> 16 blocks (warps), 64 warps resident
  const auto o = occupancy(a100(), fp(100, 0));
  EXPECT_EQ(o.by_warps, 16);
  EXPECT_EQ(o.blocks_per_sm, 16);
  EXPECT_EQ(o.limiter, Limiter::Warps);
  EXPECT_EQ(o.warps_per_sm, 64);
  // regs = 0 -> no register bound, reported as the block limit
  EXPECT_EQ(o.by_regs, 32);
}

TEST(OccupancyA100, TiesNameSharedMemoryThenRegistersThenWarps) {
  // 1024 threads = 32 warps, 32 regs -> 1024/warp: by_regs = 16*4 = 64/32 = 2; by_warps = 2
  // tie between registers and warps -> registers is named
  const auto o = occupancy(a100(), fp(1024, 32));
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.by_regs, 2);
  EXPECT_EQ(o.by_warps, 2);
  EXPECT_EQ(o.limiter, Limiter::Registers);
  // 128 threads = 4 warps, 32 regs: by_regs = 64/4 = 16, by_warps = 16;
  // dynamic 9472: 9472+1024 = 10496 = 82*128; 167936/10496 = 16 -> three-way tie -> smem named
  const auto p = occupancy(a100(), fp(128, 32, 0, 9472));
  EXPECT_EQ(p.by_smem, 16);
  EXPECT_EQ(p.blocks_per_sm, 16);
  EXPECT_EQ(p.limiter, Limiter::SharedMemory);
}

// ------------------------------------------------------------------------------------------
// sm_86 (A40): 48 warps, 16 blocks, 65536 regs, 102400 B smem.
// ------------------------------------------------------------------------------------------

TEST(OccupancyA40, RegisterLimited) {
  // 256 threads = 8 warps; 64 regs -> 2048/warp: by_regs = 8*4 = 32 / 8 = 4
  // by_warps = 48/8 = 6; by_blocks 16; smem 1024 -> 102400/1024 = 100
  // warps 32 -> 32/48
  expect_occ(occupancy(a40(), fp(256, 64)),
             {4, Limiter::Registers, 6, 16, 4, 100, 1024, 32, 32.0 / 48.0});
}

TEST(OccupancyA40, WarpLimited) {
  // 512 threads = 16 warps; 32 regs -> 1024/warp: by_regs = 16*4 = 64 / 16 = 4
  // by_warps = 48/16 = 3 -> 3 (warps); 48 warps -> 1.0
  expect_occ(occupancy(a40(), fp(512, 32)), {3, Limiter::Warps, 3, 16, 4, 100, 1024, 48, 1.0});
}

TEST(OccupancyA40, SharedMemoryLimited) {
  // 128 threads = 4 warps; 32 regs: by_regs = 64/4 = 16; by_warps = 48/4 = 12
  // smem: 16384 + 16384 + 1024 = 33792 (= 264*128, no rounding)
  // by_smem = floor(102400/33792) = 3 (3*33792 = 101376 <= 102400 < 135168)
  // warps 12 -> 12/48 = 0.25
  const auto o = occupancy(a40(), fp(128, 32, 16 * KiB, 16 * KiB));
  expect_occ(o, {3, Limiter::SharedMemory, 12, 16, 16, 3, 33792, 12, 0.25});
  // used 101376: 64 KB too small, 100 KB holds it
  EXPECT_EQ(o.carveout, 100 * KiB);
}

TEST(OccupancyA40, BlockLimited) {
  // 64 threads = 2 warps; 32 regs: by_regs = 64/2 = 32; by_warps = 48/2 = 24
  // by_smem = 100; by_blocks = 16 -> 16 (blocks); warps 32 -> 32/48
  expect_occ(occupancy(a40(), fp(64, 32)),
             {16, Limiter::Blocks, 24, 16, 32, 100, 1024, 32, 32.0 / 48.0});
}

TEST(OccupancyA40, RegistersPerBlockBoundary) {
  // 1024 threads = 32 warps; 64 regs -> 2048/warp; block 32*2048 = 65536 <= 65536: fits.
  // by_regs = 8*4 = 32 / 32 = 1; by_warps = 48/32 = 1 -> 1
  const auto ok = occupancy(a40(), fp(1024, 64));
  EXPECT_EQ(ok.by_regs, 1);
  EXPECT_EQ(ok.blocks_per_sm, 1);
  // 65 regs: 65*32 = 2080 -> 2304/warp; block 32*2304 = 73728 > 65536 -> cannot launch
  const auto zero = occupancy(a40(), fp(1024, 65));
  EXPECT_EQ(zero.blocks_per_sm, 0);
  EXPECT_EQ(zero.by_regs, 0);
  EXPECT_EQ(zero.limiter, Limiter::Registers);
  EXPECT_FALSE(zero.why_zero.empty());
}

TEST(OccupancyA40, OptInMaximumGivesOneBlock) {
  // 101376 + 1024 = 102400 = whole SM -> 1
  const auto o = occupancy(a40(), fp(128, 32, 0, 101376));
  EXPECT_EQ(o.smem_per_block, 102400);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.limiter, Limiter::SharedMemory);
}

// ------------------------------------------------------------------------------------------
// sm_90 (H100 / H200): 64 warps, 32 blocks, 65536 regs, 233472 B smem.
// ------------------------------------------------------------------------------------------

TEST(OccupancyH100, RegisterLimited) {
  // 128 threads = 4 warps; 128 regs -> 4096/warp: by_regs = floor(16384/4096)=4 * 4 = 16 / 4 = 4
  // by_warps = 16; smem 1024 -> 233472/1024 = 228; warps 16 -> 0.25
  expect_occ(occupancy(h100(), fp(128, 128)),
             {4, Limiter::Registers, 16, 32, 4, 228, 1024, 16, 0.25});
}

TEST(OccupancyH100, RegisterLimitedWarpSpecializedShape) {
  // 384 threads = 12 warps; 168 regs -> 168*32 = 5376 = 21*256 regs/warp
  // block: 12*5376 = 64512 <= 65536 (12 is a multiple of 4, hw check the same)
  // by_regs = floor(16384/5376)=3 * 4 = 12 / 12 = 1; by_warps = floor(64/12) = 5
  // warps 12 -> 12/64 = 0.1875
  expect_occ(occupancy(h100(), fp(384, 168)),
             {1, Limiter::Registers, 5, 32, 1, 228, 1024, 12, 0.1875});
}

TEST(OccupancyH100, WarpLimited) {
  // 1024 threads, 16 regs -> by_regs 4, by_warps 2 -> 2 (warps)
  expect_occ(occupancy(h100(), fp(1024, 16)), {2, Limiter::Warps, 2, 32, 4, 228, 1024, 64, 1.0});
}

TEST(OccupancyH100, SharedMemoryLimited) {
  // 256 threads = 8 warps; 32 regs: by_regs = 64/8 = 8; by_warps = 8
  // smem: 100000 + 1024 = 101024 -> /128 = 789.25 -> 790*128 = 101120
  // by_smem = floor(233472/101120) = 2 (2.31); warps 16 -> 0.25
  const auto o = occupancy(h100(), fp(256, 32, 0, 100000));
  expect_occ(o, {2, Limiter::SharedMemory, 8, 32, 8, 2, 101120, 16, 0.25});
  // used 202240: 196 KB = 200704 too small -> 228 KB
  EXPECT_EQ(o.carveout, 228 * KiB);
}

TEST(OccupancyH100, BlockLimited) {
  // 32 threads, 32 regs: by_regs 64, by_warps 64, by_smem 228 -> 32 (blocks)
  expect_occ(occupancy(h100(), fp(32, 32)), {32, Limiter::Blocks, 64, 32, 64, 228, 1024, 32, 0.5});
}

TEST(OccupancyH100, TooManyRegistersPerBlockGivesZero) {
  // 384 threads = 12 warps; 170 regs: 170*32 = 5440 -> 22*256 = 5632/warp;
  // block 12*5632 = 67584 > 65536 -> 0
  const auto o = occupancy(h100(), fp(384, 170));
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.by_regs, 0);
  EXPECT_EQ(o.limiter, Limiter::Registers);
  EXPECT_FALSE(o.why_zero.empty());
}

TEST(OccupancyH100, OptInMaximumGivesOneBlock) {
  // 232448 (227 KB) + 1024 = 233472 = whole SM -> 1
  const auto o = occupancy(h100(), fp(256, 32, 0, 232448));
  EXPECT_EQ(o.smem_per_block, 233472);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.carveout, 228 * KiB);
}

TEST(OccupancyH100, H200IsTheSameSm) {
  const auto a = occupancy(find_architecture("h100"), fp(256, 32, 0, 100000));
  const auto b = occupancy(find_architecture("h200"), fp(256, 32, 0, 100000));
  EXPECT_EQ(a.blocks_per_sm, 2);
  EXPECT_EQ(b.blocks_per_sm, 2);
}

// ------------------------------------------------------------------------------------------
// gfx90a (MI250X GCD): 32 waves of 64, 32 blocks, 131072 regs (32768 per SIMD), 65536 B LDS.
// ------------------------------------------------------------------------------------------

TEST(OccupancyMI250X, RegisterLimited) {
  // 256 threads = 4 waves; 128 VGPRs -> 128*64 = 8192/wave (multiple of 512)
  // by_regs = floor(32768/8192)=4 * 4 = 16 waves / 4 = 4; by_warps = 32/4 = 8
  // no LDS, no reserve -> no smem bound (reported as the block limit 32); waves 16 -> 0.5
  expect_occ(occupancy(mi250x(), fp(256, 128)),
             {4, Limiter::Registers, 8, 32, 4, 32, 0, 16, 0.5});
}

TEST(OccupancyMI250X, RegisterAllocationRoundsToEightVgprs) {
  // 64 threads = 1 wave; 65 VGPRs -> 65*64 = 4160 -> round_up 512 -> 4608 (= 72 VGPRs)
  // by_regs = floor(32768/4608)=7 * 4 = 28 / 1 = 28; by_warps = 32 -> 28 (registers)
  expect_occ(occupancy(mi250x(), fp(64, 65)),
             {28, Limiter::Registers, 32, 32, 28, 32, 0, 28, 28.0 / 32.0});
}

TEST(OccupancyMI250X, WarpLimited) {
  // 1024 threads = 16 waves; 32 VGPRs -> 2048/wave; by_regs = 16*4 = 64 / 16 = 4
  // by_warps = 32/16 = 2 -> 2 (waves); 32 waves -> 1.0
  expect_occ(occupancy(mi250x(), fp(1024, 32)), {2, Limiter::Warps, 2, 32, 4, 32, 0, 32, 1.0});
}

TEST(OccupancyMI250X, SharedMemoryLimited) {
  // 64 threads = 1 wave; 32 VGPRs: by_regs = 16*4 = 64; by_warps = 32
  // LDS: 10000 + 0 + 0 -> /512 = 19.53 -> 20*512 = 10240; by_smem = floor(65536/10240) = 6
  // waves 6 -> 6/32
  const auto o = occupancy(mi250x(), fp(64, 32, 10000, 0));
  expect_occ(o, {6, Limiter::SharedMemory, 32, 32, 64, 6, 10240, 6, 6.0 / 32.0});
  EXPECT_EQ(o.carveout, 64 * KiB);
}

TEST(OccupancyMI250X, BlockLimitTiesWithWaves) {
  // 64 threads = 1 wave; 32 VGPRs: by_regs 64, by_warps 32/1 = 32, by_blocks 32, no LDS.
  // A block has at least one wave, so the block limit (32) can only tie with the wave limit
  // (32 waves) on this CU; the tie is reported as waves ("warps").
  const auto o = occupancy(mi250x(), fp(64, 32));
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_EQ(o.by_blocks, 32);
  EXPECT_EQ(o.by_warps, 32);
  EXPECT_EQ(o.limiter, Limiter::Warps);
  // a half wave (32 threads) still takes a whole wave: the same 32
  EXPECT_EQ(occupancy(mi250x(), fp(32, 32)).blocks_per_sm, 32);
}

TEST(OccupancyMI250X, PerSimdRegisterCheckGivesZero) {
  // 320 threads = 5 waves; 300 VGPRs -> 300*64 = 19200 -> round_up 512 -> 19456/wave
  // software check: 5*19456 = 97280 <= 131072 passes
  // hardware check: round_up(5,4) = 8 waves * 19456 = 155648 > 131072 -> 0 blocks.
  // (On the CU: 5 waves over 4 SIMDs put 2 waves x 304 VGPRs = 608 > 512 on one SIMD.)
  const auto o = occupancy(mi250x(), fp(320, 300));
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.by_regs, 0);
  EXPECT_EQ(o.limiter, Limiter::Registers);
  EXPECT_FALSE(o.why_zero.empty());
  EXPECT_NE(o.why_zero.find("155648"), std::string::npos) << o.why_zero;
}

TEST(OccupancyMI250X, RegistersPerBlockBoundary) {
  // 1024 threads = 16 waves; 128 VGPRs -> 8192/wave; 16*8192 = 131072: fits, by_regs = 16/16 = 1
  EXPECT_EQ(occupancy(mi250x(), fp(1024, 128)).blocks_per_sm, 1);
  // 129 VGPRs -> 8256 -> 8704/wave; 16*8704 = 139264 > 131072 -> 0
  EXPECT_EQ(occupancy(mi250x(), fp(1024, 129)).blocks_per_sm, 0);
}

TEST(OccupancyMI250X, FullLdsGivesOneBlock) {
  // 65536 B LDS (default = opt-in on AMD) -> 65536/65536 = 1
  const auto o = occupancy(mi250x(), fp(64, 32, 0, 65536));
  EXPECT_EQ(o.smem_per_block, 65536);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.limiter, Limiter::SharedMemory);
}

// ------------------------------------------------------------------------------------------
// Validation
// ------------------------------------------------------------------------------------------

TEST(Validate, ThreadsOutOfRangeThrow) {
  for (const auto* dev : {&a100(), &a40(), &h100(), &mi250x()}) {
    EXPECT_THROW(occupancy(*dev, fp(0, 32)), Error) << dev->arch;
    EXPECT_THROW(occupancy(*dev, fp(-1, 32)), Error) << dev->arch;
    EXPECT_THROW(occupancy(*dev, fp(1025, 32)), Error) << dev->arch;
    EXPECT_NO_THROW(occupancy(*dev, fp(1, 32))) << dev->arch;
    EXPECT_NO_THROW(occupancy(*dev, fp(1024, 32))) << dev->arch;
  }
  try {
    occupancy(a100(), fp(2048, 32));
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
  }
}

TEST(Validate, RegistersOverThePerThreadMaximumThrow) {
  for (const auto* dev : {&a100(), &a40(), &h100()}) {
    EXPECT_THROW(occupancy(*dev, fp(32, 256)), Error) << dev->arch;
    EXPECT_NO_THROW(occupancy(*dev, fp(32, 255))) << dev->arch;
  }
  EXPECT_NO_THROW(occupancy(mi250x(), fp(64, 512)));
  EXPECT_THROW(occupancy(mi250x(), fp(64, 513)), Error);
  EXPECT_THROW(occupancy(a100(), fp(32, -1)), Error);
  try {
    occupancy(a100(), fp(32, 300));
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("registers"), std::string::npos) << e.what();
  }
}

TEST(Validate, NegativeSharedMemoryThrows) {
  EXPECT_THROW(occupancy(a100(), fp(128, 32, -1, 0)), Error);
  EXPECT_THROW(occupancy(a100(), fp(128, 32, 0, -1)), Error);
  EXPECT_THROW(occupancy(mi250x(), fp(128, 32, 0, -512)), Error);
}

TEST(Validate, SharedMemoryOverOptInThrows) {
  // A100: static + dynamic <= 166912
  EXPECT_THROW(occupancy(a100(), fp(128, 32, 0, 166913)), Error);
  EXPECT_THROW(occupancy(a100(), fp(128, 32, 166913, 0)), Error);
  EXPECT_THROW(occupancy(a100(), fp(128, 32, 40000, 126913)), Error);
  EXPECT_NO_THROW(occupancy(a100(), fp(128, 32, 40000, 126912)));
  // static shared memory cannot opt in: at most 48 KB whatever the dynamic part
  EXPECT_THROW(occupancy(a100(), fp(128, 32, 49153, 0)), Error);
  EXPECT_NO_THROW(occupancy(a100(), fp(128, 32, 49152, 0)));
  // A40: 101376
  EXPECT_THROW(occupancy(a40(), fp(128, 32, 0, 101377)), Error);
  // H100: 232448
  EXPECT_THROW(occupancy(h100(), fp(128, 32, 0, 232449)), Error);
  // MI250X: 65536
  EXPECT_THROW(occupancy(mi250x(), fp(128, 32, 0, 65537)), Error);
  try {
    occupancy(a40(), fp(128, 32, 1024, 101376));
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("101376"), std::string::npos) << e.what();
  }
}

TEST(Validate, ValidateAloneAcceptsAndRejects) {
  EXPECT_NO_THROW(cco::model::validate(a100(), fp(256, 64, 0, 48 * KiB)));
  EXPECT_THROW(cco::model::validate(a100(), fp(0, 64)), Error);
}

TEST(Limiter, ToString) {
  EXPECT_STREQ(cco::model::to_string(Limiter::Warps), "warps");
  EXPECT_STREQ(cco::model::to_string(Limiter::Blocks), "blocks");
  EXPECT_STREQ(cco::model::to_string(Limiter::Registers), "registers");
  EXPECT_STREQ(cco::model::to_string(Limiter::SharedMemory), "shared-memory");
  EXPECT_STREQ(cco::model::to_string(Limiter::None), "none");
}

}  // namespace
