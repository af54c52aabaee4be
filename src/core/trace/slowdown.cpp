// Compute slowed, by cause (trace/slowdown.hpp). GPU-free.
#include "trace/slowdown.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "model/ascii.hpp"

namespace cco::trace {

namespace {

struct KindName {
  std::string_view nccl;  // NCCL's name of the kind, as the label spells it
  model::Collective kind;
  bool times_ranks;       // NCCL's count is per rank of the nccl-tests size
};
constexpr std::array<KindName, 10> kKinds = {{
    {"AllReduce", model::Collective::AllReduce, false},
    {"Broadcast", model::Collective::Broadcast, false},
    {"Reduce", model::Collective::Reduce, false},
    {"AllGather", model::Collective::AllGather, true},
    {"ReduceScatter", model::Collective::ReduceScatter, true},
    {"AlltoAll", model::Collective::AllToAll, true},
    {"Gather", model::Collective::Gather, true},
    {"Scatter", model::Collective::Scatter, true},
    {"Send", model::Collective::SendRecv, false},
    {"Recv", model::Collective::SendRecv, false},
}};

// "key=123" -> 123 (whole token, digits only), or nullopt.
std::optional<uint64_t> field(std::string_view tok, std::string_view key) {
  if (tok.size() <= key.size() + 1 || tok.substr(0, key.size()) != key || tok[key.size()] != '=')
    return std::nullopt;
  const std::string_view digits = tok.substr(key.size() + 1);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// Bytes per element of a type as the label spells it (bf16, f32, ...), 0 when not known.
int elem_bytes(std::string_view t) {
  if (t == "i8" || t == "u8" || t == "f8e4m3" || t == "f8e5m2") return 1;
  if (t == "f16" || t == "bf16") return 2;
  if (t == "i32" || t == "u32" || t == "f32") return 4;
  if (t == "i64" || t == "u64" || t == "f64") return 8;
  return 0;
}

struct KnownPart {
  std::string_view name;  // a substring of the device's name
  int sms;
  double mem_bandwidth;   // bytes/s, the vendor's peak
};
// Longest names first where one contains another ("H100 PCIe" before "H100").
constexpr std::array<KnownPart, 8> kKnownParts = {{
    {"H200", 132, 4.8e12},
    {"H100 PCIe", 114, 2.0e12},
    {"H100 NVL", 132, 3.9e12},
    {"H100", 132, 3.35e12},
    {"A100-SXM4-80GB", 108, 2.039e12},
    {"A100", 108, 1.555e12},
    {"A40", 84, 0.696e12},
    {"MI250X", 110, 1.6384e12},
}};

}  // namespace

std::string collective_call_label(std::string_view kind, std::string_view dtype, std::size_t count,
                                  int nranks) {
  return fmt::format("nccl {} {} count={} ranks={}", kind, dtype, count, nranks);
}

std::optional<CollectiveSize> collective_size(std::string_view call) {
  // "nccl AllReduce bf16 count=N ranks=R"
  std::array<std::string_view, 5> tok{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < call.size() && n <= tok.size();) {
    const std::size_t j = std::min(call.find(' ', i), call.size());
    if (j > i) {
      if (n == tok.size()) return std::nullopt;  // more than five tokens: not ours
      tok[n++] = call.substr(i, j - i);
    }
    i = j + 1;
  }
  if (n != tok.size() || tok[0] != "nccl") return std::nullopt;
  const auto kind = std::find_if(kKinds.begin(), kKinds.end(),
                                 [&](const KindName& k) { return k.nccl == tok[1]; });
  const int elem = elem_bytes(tok[2]);
  const auto count = field(tok[3], "count");
  const auto ranks = field(tok[4], "ranks");
  if (kind == kKinds.end() || elem == 0 || !count || !ranks || *ranks < 1 || *ranks > (1u << 20) ||
      *count > (uint64_t{1} << 48))
    return std::nullopt;
  CollectiveSize c;
  c.kind = kind->kind;
  c.nranks = static_cast<int>(*ranks);
  c.bytes = static_cast<double>(*count) * elem * (kind->times_ranks ? c.nranks : 1);
  return c;
}

double collective_traffic_bytes(const CollectiveSize& c) {
  if (c.bytes <= 0 || c.nranks < 1) return 0;
  return model::collective_min_traffic(c.kind, c.bytes) +
         2.0 * model::busbw_factor(c.kind, c.nranks) * c.bytes;
}

DeviceFacts device_facts(const RankInfo& r) {
  DeviceFacts d;
  d.sms = r.sm_count;
  d.mem_bandwidth = r.mem_bandwidth;
  for (const auto& p : kKnownParts) {
    if (r.device_name.find(p.name) == std::string::npos) continue;
    if (d.sms <= 0) d.sms = p.sms;
    if (d.mem_bandwidth <= 0) d.mem_bandwidth = p.mem_bandwidth;
    break;
  }
  return d;
}

bool likely_compute_bound(std::string_view kernel_name) {
  const std::string n = model::ascii_lower(kernel_name);
  for (const char* w : {"gemm", "xmma", "cutlass", "nvjet", "cublas", "conv", "flash", "fmha",
                        "matmul", "triton_tem"})
    if (n.find(w) != std::string::npos) return true;
  return false;
}

double comm_traffic_rate(const KernelEvent& c) {
  const int64_t d = c.duration_ns();
  if (d <= 0) return 0;
  if (c.is_copy()) return static_cast<double>(c.bytes) * (c.copy == "PtoP" ? 1.0 : 2.0) / static_cast<double>(d);
  const auto size = collective_size(c.call);
  return size ? collective_traffic_bytes(*size) / static_cast<double>(d) : 0;
}

SlowedCauses split_slowed(const KernelEvent& k, double alone_ns, double slowed_ns,
                          const std::vector<Beside>& beside, const DeviceFacts& dev) {
  SlowedCauses out;
  if (slowed_ns <= 0) return out;
  const double dur = static_cast<double>(std::max<int64_t>(k.duration_ns(), 1));
  // The collectives' SMs and memory traffic, on average over the kernel's run.
  double sm_ns = 0, bytes = 0;
  for (const auto& b : beside) {
    if (!b.comm || b.overlap_ns <= 0) continue;
    const double ov = static_cast<double>(b.overlap_ns);
    if (!b.comm->is_copy() && dev.sms > 0)
      sm_ns += ov * static_cast<double>(std::min<int64_t>(dev.sms, b.comm->grid.volume()));
    bytes += ov * comm_traffic_rate(*b.comm);
  }
  double sm_pred = 0, mem_pred = 0;
  if (dev.sms > 1 && !k.is_copy()) {
    const double c = std::min(sm_ns / dur, static_cast<double>(dev.sms - 1));
    const double per_sm = k.blocks_per_sm > 0 ? k.blocks_per_sm : 1;
    // Only a kernel whose blocks do not all fit on the SMs left runs waves on fewer SMs.
    if (static_cast<double>(k.grid.volume()) > per_sm * (dev.sms - c))
      sm_pred = alone_ns * c / (dev.sms - c);
  }
  if (dev.mem_bandwidth > 0 && (k.is_copy() || !(likely_compute_bound(k.name) ||
                                                  k.call.rfind("cublas", 0) == 0))) {
    const double share = std::min(0.9, bytes / dur / (dev.mem_bandwidth / 1e9));
    mem_pred = alone_ns * share / (1 - share);
  }
  const double pred = sm_pred + mem_pred;
  const double scale = pred > slowed_ns ? slowed_ns / pred : 1.0;
  out.sms = sm_pred * scale;
  out.memory = mem_pred * scale;
  out.other = std::max(0.0, slowed_ns - out.sms - out.memory);
  return out;
}

}  // namespace cco::trace
