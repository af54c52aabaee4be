#include "kernels/workload_exec.hpp"

#include "kernels/nccl228.hpp"

#include <cublasLt.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "runtime/check.hpp"
#include "runtime/lazy.hpp"
#include "runtime/device.hpp"
#include "kernels/kernels.hpp"

namespace cco::wl {

using model::Collective;
using workload::OpKind;
using model::RedOp;
using workload::StreamId;

namespace {

constexpr float kMemAlpha = 1.5f;  // z = alpha x + y of the memory-bound ops

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32:
      return ncclFloat32;
    case DType::F16:
      return ncclFloat16;
    case DType::BF16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::Sum:
      return ncclSum;
    case RedOp::Prod:
      return ncclProd;
    case RedOp::Min:
      return ncclMin;
    case RedOp::Max:
      return ncclMax;
    case RedOp::Avg:
      return ncclAvg;
  }
  return ncclSum;
}

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

/// What a reduction of the ranks' pattern scales (r + 1 on rank r) gives; 0: not checkable.
double reduced_scale(RedOp op, int n) {
  switch (op) {
    case RedOp::Sum:
      return n * (n + 1) / 2.0;
    case RedOp::Max:
      return n;
    case RedOp::Min:
      return 1;
    default:
      return 0;
  }
}

bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter;
}

/// FNV-1a: a stable seed per buffer name, so every rank fills a named input alike.
uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::size_t sz(int64_t v) {
  return static_cast<std::size_t>(v);
}

}  // namespace

/// A cuBLASLt GEMM of one shape: row-major C = A B computed as column-major C^T = B^T A^T, with
/// the heuristic's first algorithm chosen once, so every run of the shape computes alike.
struct StepExec::LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~LtPlan() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

StepExec::StepExec(const workload::Step& step, const rt::Comm& comm, const StepExecOptions& opt)
    : step_(step), comm_(comm), opt_(opt) {
  if (step.nranks != comm.nranks())
    throw model::Error("workload '" + step.name + "' was loaded for " +
                       std::to_string(step.nranks) + " ranks but the communicator has " +
                       std::to_string(comm.nranks()));
  const std::size_t n = step.ops.size();
  layout_ = workload::layout_step(step, opt.check);
  pad_.assign(n, 0);
  op_plan_.assign(n, nullptr);
  needs_event_.assign(n, 0);
  done_.assign(n, nullptr);
  try {
    if (opt.nccl_arena)
      CCO_NCCL_CHECK(ncclMemAlloc(reinterpret_cast<void**>(&arena_), sz(std::max<int64_t>(layout_.total, 1))));
    else
      CCO_CUDA_CHECK(cudaMalloc(&arena_, sz(std::max<int64_t>(layout_.total, 1))));
    CCO_CUDA_CHECK(
        cudaMalloc(&counters_, std::max<std::size_t>(n, 1) * sizeof(unsigned long long)));
    for (std::size_t i = 0; i < n; ++i)
      for (int d : step.ops[i].after)
        if (step.ops[sz(d)].stream != step.ops[i].stream) needs_event_[sz(d)] = 1;
    for (std::size_t i = 0; i < n; ++i)
      if (needs_event_[i])
        CCO_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    CCO_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    CCO_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));

    for (std::size_t i = 0; i < n; ++i) {
      const auto& o = step.ops[i];
      if (o.kind != OpKind::Gemm || o.engine != workload::GemmEngine::CublasLt) continue;
      if (!lt_) {
        cublasLtHandle_t h = nullptr;
        rt::require(rt::Lib::CublasLt, "a cuBLASLt GEMM");
        CCO_CUBLAS_CHECK(cublasLtCreate(&h));
        lt_ = h;
      }
      const std::string key = std::to_string(o.m) + "x" + std::to_string(o.n) + "x" +
                              std::to_string(o.k) + ":" + model::to_string(o.dtype);
      auto& plan = lt_plans_[key];
      if (!plan) {
        plan = std::make_unique<LtPlan>();
        CCO_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        const cublasOperation_t no = CUBLAS_OP_N;
        CCO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                        &no, sizeof no));
        CCO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                        &no, sizeof no));
        if (opt.sm_count_target > 0)
          CCO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
              plan->desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &opt.sm_count_target,
              sizeof opt.sm_count_target));
        const auto t = lt_type(o.dtype);
        // Column-major views: B^T is N x K (ld N), A^T is K x M (ld K), C^T is N x M (ld N).
        CCO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->la, t, static_cast<uint64_t>(o.n),
                                                    static_cast<uint64_t>(o.k), o.n));
        CCO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->lb, t, static_cast<uint64_t>(o.k),
                                                    static_cast<uint64_t>(o.m), o.k));
        CCO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->lc, t, static_cast<uint64_t>(o.n),
                                                    static_cast<uint64_t>(o.m), o.n));
        cublasLtMatmulPreference_t pref = nullptr;
        CCO_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
        const size_t ws = workload::StepLayout::kWorkspaceBytes;
        const auto st_attr = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
        int found = 0;
        cublasLtMatmulHeuristicResult_t res{};
        const auto st = st_attr != CUBLAS_STATUS_SUCCESS
                            ? st_attr
                            : cublasLtMatmulAlgoGetHeuristic(
                                  static_cast<cublasLtHandle_t>(lt_), plan->desc, plan->la,
                                  plan->lb, plan->lc, plan->lc, pref, 1, &res, &found);
        cublasLtMatmulPreferenceDestroy(pref);
        CCO_CUBLAS_CHECK(st);
        if (found < 1)
          throw rt::Error("cuBLASLt found no algorithm for gemm '" + o.id + "' (" + key + ")");
        plan->algo = res.algo;
      }
      op_plan_[i] = plan.get();
    }
    fill_inputs();
  } catch (...) {
    release();
    throw;
  }
}

StepExec::~StepExec() {
  release();
}

void StepExec::release() {
  lt_plans_.clear();
  if (lt_) cublasLtDestroy(static_cast<cublasLtHandle_t>(lt_));
  lt_ = nullptr;
  for (auto& e : done_)
    if (e) cudaEventDestroy(e);
  done_.clear();
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  fork_ = join_ = nullptr;
  if (opt_.nccl_arena) {
    if (arena_) ncclMemFree(arena_);
  } else {
    cudaFree(arena_);
  }
  cudaFree(counters_);
  arena_ = nullptr;
  counters_ = nullptr;
}

void StepExec::fill_inputs() {
  const int r = comm_.rank(), nr = comm_.nranks();
  for (std::size_t t = 0; t < 3; ++t) {
    const auto dt = static_cast<DType>(t);
    const auto esz = static_cast<int64_t>(model::dtype_size(dt));
    if (layout_.random[t].valid())
      fill_random(at(layout_.random[t]), dt, sz(layout_.random[t].bytes / esz), opt_.seed + 17 * t,
                  nullptr);
    if (layout_.pattern[t].valid())
      fill_pattern(at(layout_.pattern[t]), dt, sz(layout_.pattern[t].bytes / esz), r + 1, 0,
                   workload::pattern_mod(dt, nr), nullptr);
  }
  if (layout_.mem_x.valid()) {
    fill_random(at(layout_.mem_x), DType::F32, sz(layout_.mem_x.bytes / 4), opt_.seed + 101,
                nullptr);
    fill_random(at(layout_.mem_y), DType::F32, sz(layout_.mem_y.bytes / 4), opt_.seed + 102,
                nullptr);
  }
  for (std::size_t b = 0; b < step_.buffers.size(); ++b) {
    const auto& buf = step_.buffers[b];
    void* p = at(layout_.named[b]);
    switch (buf.fill) {
      case workload::BufferFill::Random:
        fill_random(p, buf.dtype, sz(buf.elements), opt_.seed ^ name_hash(buf.name), nullptr);
        break;
      case workload::BufferFill::Pattern:
        fill_pattern(p, buf.dtype, sz(buf.elements), r + 1, 0, workload::pattern_mod(buf.dtype, nr),
                     nullptr);
        break;
      case workload::BufferFill::Output:
        break;  // poisoned below with the other outputs
    }
  }
  poison(nullptr);
  CCO_CUDA_CHECK(cudaDeviceSynchronize());
}

bool StepExec::shapeable(std::size_t i) const {
  const auto& o = step_.ops.at(i);
  return o.is_membound() || (o.kind == OpKind::Gemm && o.engine == workload::GemmEngine::Builtin);
}

const void* StepExec::kernel(std::size_t i) const {
  const auto& o = step_.ops.at(i);
  if (o.is_membound()) return membound_kernel();
  if (o.kind == OpKind::Gemm && o.engine == workload::GemmEngine::Builtin)
    return builtin_gemm_kernel(o.dtype);
  return nullptr;
}

int StepExec::threads(std::size_t i) const {
  const auto& o = step_.ops.at(i);
  return o.is_membound() ? kMemThreads : o.kind == OpKind::Gemm ? kGemmThreads : 0;
}

void StepExec::set_extra_smem(std::size_t i, int64_t bytes) {
  if (bytes < 0) throw model::Error("negative padding");
  if (!shapeable(i)) {
    if (bytes != 0)
      throw model::Error("op '" + step_.ops.at(i).id +
                         "' launches kernels that are not ours; it cannot be padded");
    return;
  }
  if (bytes > 0) rt::allow_dynamic_smem(kernel(i), bytes);
  pad_[i] = bytes;
}

void StepExec::set_extra_smem_for_kernel(const void* k, int64_t bytes) {
  if (bytes < 0) throw model::Error("negative padding");
  if (bytes > 0 && k) rt::allow_dynamic_smem(k, bytes);  // once per kernel, not per op
  for (std::size_t i = 0; i < size(); ++i)
    if (shapeable(i) && kernel(i) == k) pad_[i] = bytes;
}

void StepExec::enqueue_op(std::size_t i, cudaStream_t s) {
  const auto& o = step_.ops.at(i);
  const auto& R = layout_.ops[i];
  switch (o.kind) {
    case OpKind::Gemm: {
      if (o.engine == workload::GemmEngine::Builtin) {
        builtin_gemm(at(R.a), at(R.b), at(R.c), o.dtype, static_cast<int>(o.m),
                     static_cast<int>(o.n), static_cast<int>(o.k), sz(pad_[i]), s);
      } else {
        const LtPlan& p = *op_plan_[i];
        const float alpha = 1.0f, beta = 0.0f;
        const auto& ws = layout_.workspace[static_cast<std::size_t>(o.stream)];
        CCO_CUBLAS_CHECK(cublasLtMatmul(static_cast<cublasLtHandle_t>(lt_), p.desc, &alpha, at(R.b),
                                        p.la, at(R.a), p.lb, &beta, at(R.c), p.lc, at(R.c), p.lc,
                                        &p.algo, at(ws), sz(ws.bytes), s));
      }
      break;
    }
    case OpKind::Elementwise:
    case OpKind::Norm:
      membound(reinterpret_cast<const float*>(at(R.x)), reinterpret_cast<const float*>(at(R.y)),
               reinterpret_cast<float*>(at(R.z)), sz(o.bytes / 4), kMemAlpha, sz(pad_[i]), s);
      break;
    case OpKind::Collective: {
      const auto t = nccl_type(o.dtype);
      const ncclComm_t c = comm_.get();
      const int n = comm_.nranks(), r = comm_.rank();
      const auto count = sz(o.nccl_count(n));
      const auto esz = model::dtype_size(o.dtype);
      char* send = at(R.send);
      char* recv = at(R.recv);
      switch (o.coll) {
        case Collective::AllReduce:
          CCO_NCCL_CHECK(ncclAllReduce(send, recv, count, t, nccl_op(o.redop), c, s));
          break;
        case Collective::AllGather:
          CCO_NCCL_CHECK(ncclAllGather(send, recv, count, t, c, s));
          break;
        case Collective::ReduceScatter:
          CCO_NCCL_CHECK(ncclReduceScatter(send, recv, count, t, nccl_op(o.redop), c, s));
          break;
        case Collective::AllToAll:
          if (opt_.alltoall_call) {
            CCO_NCCL_CHECK(CCO_NCCL_228(ncclAlltoAll)(send, recv, count, t, c, s));
            break;
          }
          CCO_NCCL_CHECK(ncclGroupStart());
          for (int q = 0; q < n; ++q) {
            CCO_NCCL_CHECK(ncclSend(send + sz(q) * count * esz, count, t, q, c, s));
            CCO_NCCL_CHECK(ncclRecv(recv + sz(q) * count * esz, count, t, q, c, s));
          }
          CCO_NCCL_CHECK(ncclGroupEnd());
          break;
        case Collective::SendRecv:
          CCO_NCCL_CHECK(ncclGroupStart());
          CCO_NCCL_CHECK(ncclSend(send, count, t, (r + 1) % n, c, s));
          CCO_NCCL_CHECK(ncclRecv(recv, count, t, (r + n - 1) % n, c, s));
          CCO_NCCL_CHECK(ncclGroupEnd());
          break;
        default:
          throw model::Error("collective '" + o.id + "': unsupported kind");
      }
      break;
    }
  }
}

void StepExec::enqueue_seq(cudaStream_t s) {
  for (int v : step_.order) enqueue_op(sz(v), s);
}

void StepExec::enqueue_streams(cudaStream_t compute, cudaStream_t comm) {
  CCO_CUDA_CHECK(cudaEventRecord(fork_, compute));
  CCO_CUDA_CHECK(cudaStreamWaitEvent(comm, fork_, 0));
  std::vector<int> position(size(), 0);
  for (std::size_t p = 0; p < step_.order.size(); ++p)
    position[sz(step_.order[p])] = static_cast<int>(p);
  // Ops of one stream run in issue order, so waiting for the latest op of the other stream that
  // an op depends on covers all earlier ones; waits already made on this stream are not repeated.
  int waited[2] = {-1, -1};
  for (int v : step_.order) {
    const auto& o = step_.ops[sz(v)];
    const int st = static_cast<int>(o.stream);
    cudaStream_t s = o.stream == StreamId::Compute ? compute : comm;
    int latest = -1;
    for (int d : o.after)
      if (static_cast<int>(step_.ops[sz(d)].stream) != st)
        latest = std::max(latest, position[sz(d)]);
    if (latest > waited[st]) {
      CCO_CUDA_CHECK(cudaStreamWaitEvent(s, done_[sz(step_.order[sz(latest)])], 0));
      waited[st] = latest;
    }
    enqueue_op(sz(v), s);
    if (needs_event_[sz(v)]) CCO_CUDA_CHECK(cudaEventRecord(done_[sz(v)], s));
  }
  CCO_CUDA_CHECK(cudaEventRecord(join_, comm));
  CCO_CUDA_CHECK(cudaStreamWaitEvent(compute, join_, 0));
}

void StepExec::poison(cudaStream_t s) {
  for (std::size_t i = 0; i < size(); ++i) {
    const auto& R = layout_.ops[i];
    for (const workload::Region* r : {&R.c, &R.z, &R.recv})
      if (r->valid()) CCO_CUDA_CHECK(cudaMemsetAsync(at(*r), 0xff, sz(r->bytes), s));
  }
}

void StepExec::snapshot(cudaStream_t s) {
  if (!opt_.check) throw model::Error("StepExec::snapshot needs check = true");
  for (std::size_t i = 0; i < size(); ++i) {
    const auto& R = layout_.ops[i];
    if (step_.ops[i].kind == OpKind::Gemm)
      CCO_CUDA_CHECK(
          cudaMemcpyAsync(at(R.snap), at(R.c), sz(R.c.bytes), cudaMemcpyDeviceToDevice, s));
  }
}

std::vector<unsigned long long> StepExec::verify(bool reference, cudaStream_t s) {
  if (!opt_.check) throw model::Error("StepExec::verify needs check = true");
  const std::size_t n = size();
  CCO_CUDA_CHECK(
      cudaMemsetAsync(counters_, 0, std::max<std::size_t>(n, 1) * sizeof(unsigned long long), s));
  const int nr = comm_.nranks(), r = comm_.rank();
  std::set<std::string> referenced;  // shapes already checked against the naive GEMM
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = step_.ops[i];
    const auto& R = layout_.ops[i];
    unsigned long long* w = counters_ + i;
    if (o.kind == OpKind::Gemm) {
      const auto elems = sz(o.m * o.n);
      count_unequal(at(R.c), at(R.snap), o.dtype, elems, w, s);
      const std::string key = std::string(workload::to_string(o.engine)) + ":" +
                              model::to_string(o.dtype) + ":" + std::to_string(o.m) + "x" +
                              std::to_string(o.n) + "x" + std::to_string(o.k);
      if (reference && referenced.insert(key).second) {
        float* ref = reinterpret_cast<float*>(at(layout_.reference));
        reference_gemm(at(R.a), at(R.b), ref, o.dtype, static_cast<int>(o.m), static_cast<int>(o.n),
                       static_cast<int>(o.k), s);
        // Inputs of magnitude up to 1 (random) give |C| ~ sqrt(K/3); the tolerance of
        // docs/METRICS.md. Pattern inputs (small integers) only make |C| larger, and rtol is
        // relative to the element as well.
        const float scale = std::sqrt(static_cast<float>(o.k) / 3.0f);
        const float rtol = o.dtype == DType::BF16 ? 1.6e-2f : o.dtype == DType::F16 ? 2e-3f : 1e-4f;
        compare_to_ref(at(R.c), o.dtype, ref, elems, rtol, rtol * scale, w, s);
      }
    } else if (o.is_membound()) {
      check_membound(reinterpret_cast<const float*>(at(R.x)),
                     reinterpret_cast<const float*>(at(R.y)),
                     reinterpret_cast<const float*>(at(R.z)), sz(o.bytes / 4), kMemAlpha, w, s);
    } else {
      if (reduces(o.coll) && reduced_scale(o.redop, nr) == 0)
        throw model::Error("collective '" + o.id + "': cannot verify reduction '" +
                           model::to_string(o.redop) + "' (checked: sum, min, max); use -c 0");
      const int mod = workload::pattern_mod(o.dtype, nr);
      const auto count = sz(o.nccl_count(nr));
      const auto esz = model::dtype_size(o.dtype);
      const auto t = o.dtype;
      char* recv = at(R.recv);
      auto chunk = [&](int q) { return recv + sz(q) * count * esz; };
      switch (o.coll) {
        case Collective::AllReduce:
          check_pattern(recv, t, count, reduced_scale(o.redop, nr), 0, mod, w, s);
          break;
        case Collective::ReduceScatter:
          check_pattern(recv, t, count, reduced_scale(o.redop, nr),
                        static_cast<uint64_t>(r) * count, mod, w, s);
          break;
        case Collective::AllGather:
          for (int q = 0; q < nr; ++q) check_pattern(chunk(q), t, count, q + 1, 0, mod, w, s);
          break;
        case Collective::AllToAll:
          for (int q = 0; q < nr; ++q)
            check_pattern(chunk(q), t, count, q + 1, static_cast<uint64_t>(r) * count, mod, w, s);
          break;
        case Collective::SendRecv:
          check_pattern(recv, t, count, (r + nr - 1) % nr + 1, 0, mod, w, s);
          break;
        default:
          break;
      }
    }
  }
  std::vector<unsigned long long> out(n, 0);
  if (n > 0)
    CCO_CUDA_CHECK(cudaMemcpyAsync(out.data(), counters_, n * sizeof(unsigned long long),
                                   cudaMemcpyDeviceToHost, s));
  CCO_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

}  // namespace cco::wl
