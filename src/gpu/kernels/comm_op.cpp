#include <nccl.h>

#include <algorithm>
#include <string>

#include "runtime/check.hpp"
#include "kernels/kernels.hpp"
#include "kernels/nccl228.hpp"
#include "kernels/workload.hpp"

namespace cco::wl {

using model::Collective;
using model::RedOp;

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::Sum: return ncclSum;
    case RedOp::Prod: return ncclProd;
    case RedOp::Min: return ncclMin;
    case RedOp::Max: return ncclMax;
    case RedOp::Avg: return ncclAvg;
  }
  return ncclSum;
}

/// Largest integer the type holds exactly together with every smaller one.
double exact_limit(DType t) { return t == DType::BF16 ? 256 : t == DType::F16 ? 2048 : 16777216; }

/// What a reduction of the ranks' scales (r + 1 for rank r) gives.
double reduced_scale(RedOp op, int n) {
  switch (op) {
    case RedOp::Sum: return n * (n + 1) / 2.0;
    case RedOp::Max: return n;
    case RedOp::Min: return 1;
    default: return 0;  // not checkable
  }
}


bool rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter;
}

}  // namespace

bool CommOp::checkable(const CommSpec& s) {
  const bool reduces = s.coll == Collective::AllReduce || s.coll == Collective::ReduceScatter ||
                       s.coll == Collective::Reduce;
  return !reduces || s.op == RedOp::Sum || s.op == RedOp::Min || s.op == RedOp::Max;
}

std::string CommOp::unchecked_reason(const CommSpec& s, int nranks) {
  if (!checkable(s))
    return std::string("reduction '") + model::to_string(s.op) +
           "' cannot be checked exactly (checked: sum, min, max)";
  const bool reduces = s.coll == Collective::AllReduce || s.coll == Collective::ReduceScatter ||
                       s.coll == Collective::Reduce;
  // The pattern's values are small integers times the reduced scale; a sum of more ranks than
  // the type's exact integers allow rounds in an order NCCL chooses.
  const double top = reduced_scale(s.op, nranks);
  if (reduces && s.op == RedOp::Sum && top > exact_limit(s.dtype))
    return "a " + std::string(model::to_string(s.dtype)) + " sum over " + std::to_string(nranks) +
           " ranks reaches " + std::to_string(static_cast<long long>(top)) +
           ", beyond the integers the type holds exactly (" +
           std::to_string(static_cast<long long>(exact_limit(s.dtype))) + ")";
  return {};
}

bool CommOp::in_place_applies(Collective c) {
  return c == Collective::AllReduce || c == Collective::Broadcast || c == Collective::Reduce ||
         c == Collective::AllGather || c == Collective::ReduceScatter;
}

int64_t CommOp::granule(const CommSpec& s, int nranks) {
  const auto esz = static_cast<int64_t>(model::dtype_size(s.dtype));
  switch (s.coll) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: return esz * nranks;
    default: return esz;
  }
}

CommOp::CommOp(const CommSpec& spec, const rt::Comm& comm) : spec_(spec), comm_(comm) {
  const int n = comm.nranks(), r = comm.rank();
  const auto esz = model::dtype_size(spec.dtype);
  const auto g = granule(spec, n);
  if (spec.bytes < g || spec.bytes % g != 0)
    throw model::Error("collective size " + std::to_string(spec.bytes) + " B is not a positive multiple of " +
                       std::to_string(g) + " B for " + model::to_string(spec.coll));
  const size_t total = static_cast<size_t>(spec.bytes) / esz;
  switch (spec.coll) {
    case Collective::AllGather:
      count_ = total / n;
      send_elems_ = count_;
      recv_elems_ = total;
      break;
    case Collective::ReduceScatter:
      count_ = total / n;
      send_elems_ = total;
      recv_elems_ = count_;
      break;
    case Collective::AllToAll:
      count_ = total / n;
      send_elems_ = recv_elems_ = total;
      break;
    case Collective::Gather:  // every rank sends count_; the root receives all (others: unused)
      count_ = total / n;
      send_elems_ = count_;
      recv_elems_ = total;
      break;
    case Collective::Scatter:  // the root sends all; every rank receives count_
      count_ = total / n;
      send_elems_ = total;
      recv_elems_ = count_;
      break;
    default:
      count_ = send_elems_ = recv_elems_ = total;
  }
  if (rooted(spec.coll) && (spec.root < 0 || spec.root >= n))
    throw model::Error("root " + std::to_string(spec.root) + " is not a rank of " + std::to_string(n));
  // Pattern values scale * ((i % mod) + 1) must stay exact integers through the reduction.
  const double top = spec.coll == Collective::AllReduce || spec.coll == Collective::ReduceScatter ||
                             spec.coll == Collective::Reduce
                         ? std::max(reduced_scale(spec.op, n), static_cast<double>(n))
                         : n;
  mod_ = static_cast<int>(std::clamp(exact_limit(spec.dtype) / top, 1.0, 7.0));
  if (spec.allgather_comm && spec.coll != Collective::AllReduce)
    throw model::Error("a split through a second communicator applies to allreduce only");
  if (spec.in_place && (spec.allgather_comm || !in_place_applies(spec.coll)))
    throw model::Error(std::string("the collective cannot run in place here: ") +
                       model::to_string(spec.coll) + (spec.allgather_comm ? " split" : ""));
  if (spec.allgather_comm && (count_ % static_cast<size_t>(n)) != 0)
    throw model::Error("an all-reduce split into reduce-scatter + all-gather needs a size that is a "
                       "multiple of " + std::to_string(n) + " elements");
  try {
    if (spec.allgather_comm) {
      // The all-gather on the copy engines reads and writes the receive buffer: a symmetric
      // window of its communicator. The reduce-scatter on SMs needs no registration.
      CCO_NCCL_CHECK(ncclMemAlloc(&send_, send_elems_ * esz));
      CCO_NCCL_CHECK(ncclMemAlloc(&recv_, recv_elems_ * esz));
      reg_recv_ = rt::Registration(spec.allgather_comm->get(), recv_, recv_elems_ * esz,
                                   model::CommRegister::Window);
    } else if (spec.reg == model::CommRegister::None) {
      CCO_CUDA_CHECK(cudaMalloc(&send_, send_elems_ * esz));
      CCO_CUDA_CHECK(cudaMalloc(&recv_, recv_elems_ * esz));
    } else {
      // Registration wants memory NCCL can map into its peers (cuMem, through ncclMemAlloc).
      const ncclComm_t c = comm.get();
      CCO_NCCL_CHECK(ncclMemAlloc(&send_, send_elems_ * esz));
      CCO_NCCL_CHECK(ncclMemAlloc(&recv_, recv_elems_ * esz));
      reg_send_ = rt::Registration(c, send_, send_elems_ * esz, spec.reg);
      reg_recv_ = rt::Registration(c, recv_, recv_elems_ * esz, spec.reg);
    }
    fill_pattern(send_, spec.dtype, send_elems_, r + 1, 0, mod_, nullptr);
    poison(nullptr);
    if (spec.in_place) {
      alloc_in_place();
      refill_in_place(nullptr);
    }
    CCO_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    release();
    throw;
  }
}

// The in-place buffer: as large as the larger of send and receive, from the same allocator and
// registered the same way as they are (a window registration is collective: every rank makes
// it after the other two, in the same order).
void CommOp::alloc_in_place() {
  in_place_elems_ = std::max(send_elems_, recv_elems_);
  const size_t bytes = in_place_elems_ * model::dtype_size(spec_.dtype);
  if (spec_.reg == model::CommRegister::None) {
    CCO_CUDA_CHECK(cudaMalloc(&in_place_, bytes));
    return;
  }
  CCO_NCCL_CHECK(ncclMemAlloc(&in_place_, bytes));
  reg_in_place_ = rt::Registration(comm_.get(), in_place_, bytes, spec_.reg);
}

void CommOp::release() noexcept {
  // Registrations first, then the memory they name.
  reg_send_.reset();
  reg_recv_.reset();
  reg_in_place_.reset();
  if (spec_.reg == model::CommRegister::None && !spec_.allgather_comm) {
    cudaFree(send_);
    cudaFree(recv_);
    cudaFree(in_place_);
  } else {
    if (send_) ncclMemFree(send_);
    if (recv_) ncclMemFree(recv_);
    if (in_place_) ncclMemFree(in_place_);
  }
  send_ = recv_ = in_place_ = nullptr;
}

CommOp::~CommOp() { release(); }

void CommOp::poison(cudaStream_t s) {
  CCO_CUDA_CHECK(cudaMemsetAsync(recv_, 0xff, recv_elems_ * model::dtype_size(spec_.dtype), s));
}

void CommOp::enqueue(cudaStream_t s) {
  const auto t = nccl_type(spec_.dtype);
  const ncclComm_t c = comm_.get();
  const int n = comm_.nranks(), r = comm_.rank();
  const auto esz = model::dtype_size(spec_.dtype);
  switch (spec_.coll) {
    case Collective::AllReduce:
      if (spec_.allgather_comm) {
        // Rank r's reduced chunk lands where the in-place all-gather expects it: recv + r * chunk.
        const size_t chunk = count_ / static_cast<size_t>(n);
        char* mine = static_cast<char*>(recv_) + static_cast<size_t>(r) * chunk * esz;
        CCO_NCCL_CHECK(ncclReduceScatter(send_, mine, chunk, t, nccl_op(spec_.op), c, s));
        CCO_NCCL_CHECK(ncclAllGather(mine, recv_, chunk, t, spec_.allgather_comm->get(), s));
        break;
      }
      enqueue_one(send_, recv_, s);
      break;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::Broadcast:
    case Collective::Reduce:
      enqueue_one(send_, recv_, s);
      break;
    case Collective::Gather:
      CCO_NCCL_CHECK(CCO_NCCL_228(ncclGather)(send_, recv_, count_, t, spec_.root, c, s));
      break;
    case Collective::Scatter:
      CCO_NCCL_CHECK(CCO_NCCL_228(ncclScatter)(send_, recv_, count_, t, spec_.root, c, s));
      break;
    case Collective::AllToAll: {
      if (spec_.alltoall_call) {
        CCO_NCCL_CHECK(CCO_NCCL_228(ncclAlltoAll)(send_, recv_, count_, t, c, s));
        break;
      }
      CCO_NCCL_CHECK(ncclGroupStart());
      for (int q = 0; q < n; ++q) {
        CCO_NCCL_CHECK(ncclSend(static_cast<char*>(send_) + q * count_ * esz, count_, t, q, c, s));
        CCO_NCCL_CHECK(ncclRecv(static_cast<char*>(recv_) + q * count_ * esz, count_, t, q, c, s));
      }
      CCO_NCCL_CHECK(ncclGroupEnd());
      break;
    }
    case Collective::SendRecv: {
      CCO_NCCL_CHECK(ncclGroupStart());
      CCO_NCCL_CHECK(ncclSend(send_, count_, t, (r + 1) % n, c, s));
      CCO_NCCL_CHECK(ncclRecv(recv_, count_, t, (r + n - 1) % n, c, s));
      CCO_NCCL_CHECK(ncclGroupEnd());
      break;
    }
  }
}

void CommOp::verify(unsigned long long* wrong, cudaStream_t s) { check_output(recv_, wrong, s); }

void CommOp::check_output(const void* out, unsigned long long* wrong, cudaStream_t s) {
  if (!checkable(spec_))
    throw model::Error(std::string("cannot verify reduction '") + model::to_string(spec_.op) +
                       "' (checked: sum, min, max)");
  const int n = comm_.nranks(), r = comm_.rank();
  const auto esz = model::dtype_size(spec_.dtype);
  const auto t = spec_.dtype;
  auto chunk = [&](int q) { return static_cast<const char*>(out) + q * count_ * esz; };
  switch (spec_.coll) {
    case Collective::AllReduce:
      check_pattern(out, t, count_, reduced_scale(spec_.op, n), 0, mod_, wrong, s);
      break;
    case Collective::ReduceScatter:
      check_pattern(out, t, count_, reduced_scale(spec_.op, n), r * count_, mod_, wrong, s);
      break;
    case Collective::AllGather:
      for (int q = 0; q < n; ++q) check_pattern(chunk(q), t, count_, q + 1, 0, mod_, wrong, s);
      break;
    case Collective::AllToAll:
      for (int q = 0; q < n; ++q) check_pattern(chunk(q), t, count_, q + 1, r * count_, mod_, wrong, s);
      break;
    case Collective::SendRecv:
      check_pattern(out, t, count_, (r + n - 1) % n + 1, 0, mod_, wrong, s);
      break;
    case Collective::Broadcast:
      check_pattern(out, t, count_, spec_.root + 1, 0, mod_, wrong, s);
      break;
    case Collective::Reduce:
      if (r == spec_.root) check_pattern(out, t, count_, reduced_scale(spec_.op, n), 0, mod_, wrong, s);
      break;
    case Collective::Gather:
      if (r == spec_.root)
        for (int q = 0; q < n; ++q) check_pattern(chunk(q), t, count_, q + 1, 0, mod_, wrong, s);
      break;
    case Collective::Scatter:
      check_pattern(out, t, count_, spec_.root + 1, r * count_, mod_, wrong, s);
      break;
  }
}


void CommOp::refill_in_place(cudaStream_t s) {
  if (!in_place_) throw model::Error("refill_in_place: the collective was built without in_place");
  const int r = comm_.rank();
  const auto esz = model::dtype_size(spec_.dtype);
  char* buf = static_cast<char*>(in_place_);
  switch (spec_.coll) {
    case Collective::AllReduce:
    case Collective::Reduce:
    case Collective::ReduceScatter:  // the whole input, as in the send buffer
      fill_pattern(buf, spec_.dtype, send_elems_, r + 1, 0, mod_, s);
      break;
    case Collective::Broadcast:  // the root's input; the others' output poisoned
      if (r == spec_.root) {
        fill_pattern(buf, spec_.dtype, count_, r + 1, 0, mod_, s);
      } else {
        CCO_CUDA_CHECK(cudaMemsetAsync(buf, 0xff, count_ * esz, s));
      }
      break;
    case Collective::AllGather:  // the output poisoned, then this rank's input at rank * count
      CCO_CUDA_CHECK(cudaMemsetAsync(buf, 0xff, in_place_elems_ * esz, s));
      fill_pattern(buf + static_cast<size_t>(r) * count_ * esz, spec_.dtype, count_, r + 1, 0, mod_,
                   s);
      break;
    default:
      throw model::Error("refill_in_place: not an in-place collective");
  }
}

void CommOp::enqueue_one(const void* send, void* recv, cudaStream_t s) {
  const auto t = nccl_type(spec_.dtype);
  const ncclComm_t c = comm_.get();
  switch (spec_.coll) {
    case Collective::AllReduce:
      CCO_NCCL_CHECK(ncclAllReduce(send, recv, count_, t, nccl_op(spec_.op), c, s));
      break;
    case Collective::AllGather:
      CCO_NCCL_CHECK(ncclAllGather(send, recv, count_, t, c, s));
      break;
    case Collective::ReduceScatter:
      CCO_NCCL_CHECK(ncclReduceScatter(send, recv, count_, t, nccl_op(spec_.op), c, s));
      break;
    case Collective::Broadcast:
      CCO_NCCL_CHECK(ncclBroadcast(send, recv, count_, t, spec_.root, c, s));
      break;
    case Collective::Reduce:
      CCO_NCCL_CHECK(ncclReduce(send, recv, count_, t, nccl_op(spec_.op), spec_.root, c, s));
      break;
    default:
      throw model::Error("enqueue_one: not a single-call collective");
  }
}

void CommOp::enqueue_in_place(cudaStream_t s) {
  if (!in_place_) throw model::Error("enqueue_in_place: the collective was built without in_place");
  char* buf = static_cast<char*>(in_place_);
  char* mine = buf + static_cast<size_t>(comm_.rank()) * count_ * model::dtype_size(spec_.dtype);
  switch (spec_.coll) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
      enqueue_one(buf, buf, s);
      break;
    case Collective::AllGather:  // send = recv + rank * count
      enqueue_one(mine, buf, s);
      break;
    case Collective::ReduceScatter:  // recv = send + rank * recvcount
      enqueue_one(buf, mine, s);
      break;
    default:
      throw model::Error("enqueue_in_place: not an in-place collective");
  }
}

void CommOp::verify_in_place(unsigned long long* wrong, cudaStream_t s) {
  if (!in_place_) throw model::Error("verify_in_place: the collective was built without in_place");
  const char* buf = static_cast<const char*>(in_place_);
  switch (spec_.coll) {
    case Collective::AllReduce:
    case Collective::Reduce:
    case Collective::Broadcast:
    case Collective::AllGather:  // the output is the whole buffer, as recv is out of place
      check_output(buf, wrong, s);
      break;
    case Collective::ReduceScatter:  // recv = send + rank * recvcount
      check_output(buf + static_cast<size_t>(comm_.rank()) * count_ * model::dtype_size(spec_.dtype),
                   wrong, s);
      break;
    default:
      throw model::Error("verify_in_place: not an in-place collective");
  }
}

}  // namespace cco::wl
