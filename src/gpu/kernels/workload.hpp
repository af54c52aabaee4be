// The two parts of an overlap experiment: a compute part and a communication part.
//
// Stream contract: enqueue()/verify() only enqueue work on the given stream. Construction
// allocates and initialises device memory on the current device and synchronises.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "model/metrics.hpp"
#include "model/occupancy.hpp"
#include "model/types.hpp"
#include "runtime/comm.hpp"

namespace cco::wl {

using model::DType;

using model::ComputeKind;

struct ComputeSpec {
  ComputeKind kind = ComputeKind::CublasLt;
  DType dtype = DType::BF16;
  int64_t m = 4096, n = 4096, k = 4096;  ///< GEMM shape (row-major C[MxN] = A[MxK] B[KxN])
  int count = 4;                         ///< GEMMs (or memory-bound passes) per compute part
  int64_t mem_bytes = int64_t{1} << 30;  ///< bytes per array of the memory-bound kernel
  int sm_count_target = 0;               ///< cuBLASLt SM-count target (0: all SMs)
  uint64_t seed = 1;
};

/// One compute part: `count` GEMMs or memory-bound passes, back to back on one stream.
class ComputeOp {
 public:
  virtual ~ComputeOp() = default;
  virtual std::string describe() const = 0;
  /// Enqueues the whole compute part.
  virtual void enqueue(cudaStream_t s) = 0;
  /// Floating-point operations of one enqueue() (0 for the memory-bound kernel).
  virtual double flops() const = 0;
  /// Device-memory bytes one enqueue() must move at least.
  virtual double bytes() const = 0;
  /// True when the launches are ours, so extra dynamic shared memory can be applied.
  virtual bool shapeable() const = 0;
  /// The launch footprint (threads, registers, static and dynamic shared memory) when shapeable.
  virtual model::Footprint footprint() const = 0;
  /// The kernel whose launches are shaped (for the driver's occupancy query); nullptr when not
  /// shapeable.
  virtual const void* kernel() const = 0;
  /// Extra dynamic shared memory per block for later enqueue()s (shapeable only).
  virtual void set_extra_smem(int64_t bytes) = 0;
  /// Overwrites the output with NaN bytes, so a part that did not run fails verify().
  virtual void poison(cudaStream_t s) = 0;
  /// Keeps a copy of the current output: the answer computed alone, for bitwise comparison.
  virtual void snapshot(cudaStream_t s) = 0;
  /// Adds to *wrong the elements of the current output that differ from the snapshot (bitwise),
  /// and, when `reference` is set, that differ from an independent reference beyond tolerance.
  virtual void verify(unsigned long long* wrong, bool reference, cudaStream_t s) = 0;
};

std::unique_ptr<ComputeOp> make_compute(const ComputeSpec& spec);

struct CommSpec {
  model::Collective coll = model::Collective::AllReduce;
  DType dtype = DType::F32;
  model::RedOp op = model::RedOp::Sum;
  int64_t bytes = int64_t{256} << 20;  ///< the nccl-tests "size" of the collective
  int root = 0;                        ///< broadcast / reduce / gather / scatter root
  /// All-to-all as one ncclAlltoAll call (NCCL 2.28+; the only form NCCL can run on the copy
  /// engines) instead of grouped ncclSend/ncclRecv pairs (what nccl-tests' alltoall_perf does).
  bool alltoall_call = false;
  /// Buffers from cudaMalloc (None), or from ncclMemAlloc and registered with the communicator
  /// (Buffer: ncclCommRegister; Window: ncclCommWindowRegister, symmetric, which is collective:
  /// every rank constructs its CommOps in the same order).
  model::CommRegister reg = model::CommRegister::None;
  /// All-reduce split in two (issue 18): a reduce-scatter on SMs over the CommOp's communicator,
  /// then an in-place all-gather over this one (a zero-CTA communicator: the copy engines), with
  /// the receive buffer in a symmetric window of it. Null: one ncclAllReduce. `reg` is ignored.
  const rt::Comm* allgather_comm = nullptr;
  /// Also runs in place (enqueue_in_place), in a buffer of its own allocated and registered like
  /// the others, laid out as nccl-tests does: allreduce, broadcast, reduce recv == send;
  /// allgather send = recv + rank * count; reducescatter recv = send + rank * recvcount. The
  /// out-of-place buffers are never touched by it. Other collectives, or a split: model::Error.
  bool in_place = false;
};

/// One collective over a communicator, with input set to a known pattern so results are checked.
class CommOp {
 public:
  CommOp(const CommSpec& spec, const rt::Comm& comm);
  ~CommOp();
  CommOp(const CommOp&) = delete;
  CommOp& operator=(const CommOp&) = delete;

  void enqueue(cudaStream_t s);
  /// Adds to *wrong the output elements that differ from what the collective must produce.
  void verify(unsigned long long* wrong, cudaStream_t s);
  /// Poisons the output so a collective that did not run fails verify().
  void poison(cudaStream_t s);
  /// In place (spec.in_place): refills the input where the collective reads it and poisons the
  /// rest of the output (a run overwrites its input: refill before a run that is verified).
  void refill_in_place(cudaStream_t s);
  void enqueue_in_place(cudaStream_t s);
  /// Adds to *wrong the in-place output elements that differ from what the collective must
  /// produce (the same exact pattern as verify()).
  void verify_in_place(unsigned long long* wrong, cudaStream_t s);
  static bool in_place_applies(model::Collective c);
  int64_t bytes() const { return spec_.bytes; }
  size_t count() const { return count_; }  ///< the element count passed to NCCL
  const CommSpec& spec() const { return spec_; }
  /// Whether verify() can check this reduction (sum, min, max; not prod or avg).
  static bool checkable(const CommSpec& spec);
  /// Why verify() on `nranks` ranks is not exact ("" when it is): an unchecked reduction, or a
  /// sum over so many ranks that its small integers leave the range the type holds exactly
  /// (bfloat16 beyond 22 ranks, half beyond 63).
  static std::string unchecked_reason(const CommSpec& spec, int nranks);
  /// The rounding the size must have: a multiple of element size x ranks where needed.
  static int64_t granule(const CommSpec& spec, int nranks);

 private:
  CommSpec spec_;
  const rt::Comm& comm_;
  size_t count_ = 0;  // elements per NCCL call argument
  size_t send_elems_ = 0, recv_elems_ = 0;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  rt::Registration reg_send_;  // by spec_.reg (recv: the all-gather's window with a split)
  rt::Registration reg_recv_;
  void* in_place_ = nullptr;      // spec_.in_place: input and output of the in-place run
  rt::Registration reg_in_place_;  // its registration, by spec_.reg
  size_t in_place_elems_ = 0;
  int mod_ = 7;
  void alloc_in_place();
  /// One call of the single-call collectives (all-reduce, all-gather, reduce-scatter, broadcast,
  /// reduce) from `send` into `recv`: out of place, or in place by the buffers given.
  void enqueue_one(const void* send, void* recv, cudaStream_t s);
  /// Wrong elements of the collective's output at `out` (recv out of place; the in-place run's
  /// output inside its buffer), against the pattern every rank's input was filled with.
  void check_output(const void* out, unsigned long long* wrong, cudaStream_t s);
  void release() noexcept;
};

}  // namespace cco::wl
