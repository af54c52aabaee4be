#include "model/limits.hpp"

#include "model/ascii.hpp"

namespace cco::model {
namespace {

constexpr int64_t KiB = 1024;

std::vector<int64_t> kib(std::initializer_list<int> steps) {
  std::vector<int64_t> out;
  for (int s : steps) out.push_back(s * KiB);
  return out;
}

std::vector<DeviceLimits> make_table() {
  std::vector<DeviceLimits> t;
  // NVIDIA figures: CUDA C++ Programming Guide, "Compute Capabilities" table, and the tuning guides
  // of Ampere and Hopper (shared memory per SM, carveout steps, opt-in maximum, 1 KB reserved).
  DeviceLimits a100;
  a100.name = "sm_80 (A100 SXM)";
  a100.arch = "sm_80";
  a100.cc_major = 8;
  a100.cc_minor = 0;
  a100.sm_count = 108;
  a100.warp_size = 32;
  a100.max_threads_per_block = 1024;
  a100.max_threads_per_sm = 2048;
  a100.max_blocks_per_sm = 32;
  a100.regs_per_sm = 65536;
  a100.regs_per_block = 65536;
  a100.max_regs_per_thread = 255;
  a100.reg_alloc_unit = 256;
  a100.reg_sub_partitions = 4;
  a100.smem_per_sm = 164 * KiB;
  a100.smem_carveouts = kib({0, 8, 16, 32, 64, 100, 132, 164});
  a100.smem_per_block_default = 48 * KiB;
  a100.smem_per_block_optin = 163 * KiB;
  a100.smem_reserved_per_block = 1 * KiB;
  a100.smem_alloc_unit = 128;
  t.push_back(a100);

  DeviceLimits a40 = a100;
  a40.name = "sm_86 (A40)";
  a40.arch = "sm_86";
  a40.cc_minor = 6;
  a40.sm_count = 84;
  a40.max_threads_per_sm = 1536;
  a40.max_blocks_per_sm = 16;
  a40.smem_per_sm = 100 * KiB;
  a40.smem_carveouts = kib({0, 8, 16, 32, 64, 100});
  a40.smem_per_block_optin = 99 * KiB;
  t.push_back(a40);

  DeviceLimits h100 = a100;
  h100.name = "sm_90 (H100 SXM / H200)";
  h100.arch = "sm_90";
  h100.cc_major = 9;
  h100.cc_minor = 0;
  h100.sm_count = 132;
  h100.smem_per_sm = 228 * KiB;
  h100.smem_carveouts = kib({0, 8, 16, 32, 64, 100, 132, 164, 196, 228});
  h100.smem_per_block_optin = 227 * KiB;
  t.push_back(h100);

  // AMD CDNA2, one GCD of an MI250X: 110 CUs, 4 SIMDs per CU with 8 wavefronts each, a unified
  // 512-entry VGPR file per SIMD lane (allocated in steps of 8), 64 KB LDS per CU and per
  // workgroup. The CUDA-style calculator treats a wavefront as a warp; LDS granularity is the
  // figure of the CDNA2 ISA guide (128 dwords). Not checked against a live MI250X.
  DeviceLimits mi250x;
  mi250x.name = "gfx90a (MI250X, one GCD)";
  mi250x.arch = "gfx90a";
  mi250x.sm_count = 110;
  mi250x.warp_size = 64;
  mi250x.max_threads_per_block = 1024;
  mi250x.max_threads_per_sm = 2048;
  mi250x.max_blocks_per_sm = 32;
  mi250x.regs_per_sm = 4 * 512 * 64;
  mi250x.regs_per_block = 4 * 512 * 64;
  mi250x.max_regs_per_thread = 512;
  mi250x.reg_alloc_unit = 8 * 64;
  mi250x.reg_sub_partitions = 4;
  mi250x.smem_per_sm = 64 * KiB;
  mi250x.smem_carveouts = kib({64});
  mi250x.smem_per_block_default = 64 * KiB;
  mi250x.smem_per_block_optin = 64 * KiB;
  mi250x.smem_reserved_per_block = 0;
  mi250x.smem_alloc_unit = 512;
  t.push_back(mi250x);
  return t;
}


struct Alias {
  const char* name;
  const char* arch;
};
constexpr Alias kAliases[] = {{"sm_80", "sm_80"}, {"a100", "sm_80"},  {"sm_86", "sm_86"},
                              {"a40", "sm_86"},   {"sm_90", "sm_90"}, {"h100", "sm_90"},
                              {"h200", "sm_90"},  {"gfx90a", "gfx90a"}, {"mi250x", "gfx90a"}};

}  // namespace

const std::vector<DeviceLimits>& builtin_architectures() {
  // Never destroyed: the preload library's exit-time trace writer computes blocks per SM after
  // static destructors of objects made later than its exit handler have run.
  static const auto* table = new std::vector<DeviceLimits>(make_table());
  return *table;
}

std::vector<std::string> architecture_names() {
  std::vector<std::string> out;
  for (const auto& a : kAliases) out.emplace_back(a.name);
  return out;
}

const DeviceLimits& find_architecture(std::string_view name) {
  const std::string key = ascii_lower(name);
  for (const auto& a : kAliases) {
    if (key != a.name) continue;
    for (const auto& d : builtin_architectures())
      if (d.arch == a.arch) return d;
  }
  std::string list;
  for (const auto& n : architecture_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown architecture '" + std::string(name) + "' (known: " + list + ", live)");
}

}  // namespace cco::model
