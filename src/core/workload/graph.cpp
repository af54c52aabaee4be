// A step's graph: dependency order and the memory layout on one GPU (layout_step, check_memory),
// finish times, T_ideal as the critical path, and the compute and communication sums.
#include "workload/workload.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "workload/detail.hpp"

namespace cco::workload {

using namespace cco::model;
using detail::align_up;
using detail::human;

// ---- layout -----------------------------------------------------------------------------------

StepLayout layout_step(const Step& s, bool check) {
  StepLayout L;
  int64_t off = 0;
  std::map<std::string, int64_t> cat;
  std::vector<std::string> cat_order;
  auto alloc = [&](int64_t bytes, const std::string& what) {
    const Region r{off, bytes};
    const int64_t sz = align_up(std::max<int64_t>(bytes, 1), StepLayout::kAlign);
    off += sz;
    if (!cat.count(what)) cat_order.push_back(what);
    cat[what] += sz;
    return r;
  };
  auto esz = [](DType t) { return static_cast<int64_t>(dtype_size(t)); };
  for (const auto& b : s.buffers) L.named.push_back(alloc(b.bytes(), "named buffers"));

  std::array<int64_t, 3> rnd{}, pat{};
  int64_t mem = 0, ref = 0;
  bool lt = false;
  for (const auto& o : s.ops) {
    const auto t = static_cast<std::size_t>(o.dtype);
    if (o.kind == OpKind::Gemm) {
      if (o.a < 0) rnd[t] = std::max(rnd[t], o.m * o.k);
      if (o.b < 0) rnd[t] = std::max(rnd[t], o.k * o.n);
      ref = std::max(ref, o.m * o.n * 4);
      lt = lt || o.engine == GemmEngine::CublasLt;
    } else if (o.is_membound()) {
      mem = std::max(mem, o.bytes);
    } else if (o.send < 0) {
      pat[t] = std::max(pat[t], o.send_elements(s.nranks));
    }
  }
  for (std::size_t t = 0; t < 3; ++t) {
    if (rnd[t] > 0) L.random[t] = alloc(rnd[t] * esz(static_cast<DType>(t)), "shared inputs");
    if (pat[t] > 0) L.pattern[t] = alloc(pat[t] * esz(static_cast<DType>(t)), "shared inputs");
  }
  if (mem > 0) {
    L.mem_x = alloc(mem, "shared inputs");
    L.mem_y = alloc(mem, "shared inputs");
  }
  auto prefix = [](Region r, int64_t bytes) { return Region{r.offset, bytes}; };
  for (const auto& o : s.ops) {
    StepLayout::OpRegions R;
    const auto t = static_cast<std::size_t>(o.dtype);
    if (o.kind == OpKind::Gemm) {
      const int64_t e = esz(o.dtype);
      R.a = o.a >= 0 ? L.named[static_cast<std::size_t>(o.a)] : prefix(L.random[t], o.m * o.k * e);
      R.b = o.b >= 0 ? L.named[static_cast<std::size_t>(o.b)] : prefix(L.random[t], o.k * o.n * e);
      R.c = o.c >= 0 ? L.named[static_cast<std::size_t>(o.c)] : alloc(o.m * o.n * e, "op outputs");
      if (check) R.snap = alloc(o.m * o.n * e, "snapshots (-c)");
    } else if (o.is_membound()) {
      R.x = prefix(L.mem_x, o.bytes);
      R.y = prefix(L.mem_y, o.bytes);
      R.z = alloc(o.bytes, "op outputs");
    } else {
      const int64_t e = esz(o.dtype);
      R.send = o.send >= 0 ? L.named[static_cast<std::size_t>(o.send)]
                           : prefix(L.pattern[t], o.send_elements(s.nranks) * e);
      R.recv = o.recv >= 0 ? L.named[static_cast<std::size_t>(o.recv)]
                           : alloc(o.recv_elements(s.nranks) * e, "op outputs");
    }
    L.ops.push_back(R);
  }
  if (check && ref > 0) L.reference = alloc(ref, "reference scratch (-c)");
  if (lt) {
    L.workspace[0] = alloc(StepLayout::kWorkspaceBytes, "cuBLASLt workspaces");
    L.workspace[1] = alloc(StepLayout::kWorkspaceBytes, "cuBLASLt workspaces");
  }
  L.total = off;
  for (const auto& c : cat_order) L.breakdown.emplace_back(c, cat[c]);
  return L;
}

bool has_collective(const Step& step, model::Collective c) {
  for (const auto& op : step.ops)
    if (op.kind == OpKind::Collective && op.coll == c) return true;
  return false;
}

void check_memory(const Step& s, int64_t gpu_memory, bool check) {
  const StepLayout L = layout_step(s, check);
  const int64_t limit = gpu_memory - kStepMemoryReserve;
  if (L.total <= limit) return;
  // Point at the largest single part: a named buffer or an op's own output (and snapshot).
  SourcePos where;
  std::string what;
  int64_t most = -1;
  for (std::size_t i = 0; i < s.buffers.size(); ++i)
    if (s.buffers[i].bytes() > most) {
      most = s.buffers[i].bytes();
      where = s.buffers[i].pos;
      what = "buffer '" + s.buffers[i].name + "'";
    }
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const auto& R = L.ops[i];
    const auto& o = s.ops[i];
    int64_t own = 0;
    if (o.kind == OpKind::Gemm)
      own = (o.c < 0 ? R.c.bytes : 0) + R.snap.bytes;
    else if (o.is_membound())
      own = R.z.bytes;
    else
      own = o.recv < 0 ? R.recv.bytes : 0;
    if (own > most) {
      most = own;
      where = o.pos;
      what = "the output of op '" + o.id + "'" +
             (o.kind == OpKind::Gemm && check ? " with its snapshot" : "");
    }
  }
  std::string parts;
  for (const auto& [c, b] : L.breakdown) parts += (parts.empty() ? "" : ", ") + c + " " + human(b);
  throw StepError(s.file, where,
                  "the step needs " + human(L.total) + " of device memory per GPU (" + parts +
                      "), more than the " + human(std::max<int64_t>(limit, 0)) + " a " +
                      human(gpu_memory) + " GPU leaves after " + human(kStepMemoryReserve) +
                      " for CUDA, NCCL and cuBLASLt; its largest part is " + what + " (" +
                      human(most) + ")" + (check ? "; -c 0 needs no snapshots" : ""));
}

// ---- times ------------------------------------------------------------------------------------

std::vector<double> schedule_finish(const Step& s, const std::vector<double>& times) {
  if (times.size() != s.ops.size())
    throw Error("schedule_finish: " + std::to_string(times.size()) + " times for " +
                std::to_string(s.ops.size()) + " ops");
  std::vector<double> fin(s.ops.size(), 0.0);
  for (int v : s.order) {
    const auto i = static_cast<std::size_t>(v);
    if (!(times[i] >= 0))
      throw Error("schedule_finish: op '" + s.ops[i].id + "' has a negative time");
    double start = 0;
    for (int d : s.ops[i].after) start = std::max(start, fin[static_cast<std::size_t>(d)]);
    if (s.stream_prev[i] >= 0)
      start = std::max(start, fin[static_cast<std::size_t>(s.stream_prev[i])]);
    fin[i] = start + times[i];
  }
  return fin;
}

double ideal_time(const Step& s, const std::vector<double>& times) {
  const auto fin = schedule_finish(s, times);
  double t = 0;
  for (double f : fin) t = std::max(t, f);
  return t;
}

double compute_time(const Step& s, const std::vector<double>& times) {
  if (times.size() != s.ops.size()) throw Error("compute_time: one time per op expected");
  double t = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].is_compute()) t += times[i];
  return t;
}

double comm_time(const Step& s, const std::vector<double>& times) {
  if (times.size() != s.ops.size()) throw Error("comm_time: one time per op expected");
  double t = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (!s.ops[i].is_compute()) t += times[i];
  return t;
}

}  // namespace cco::workload
