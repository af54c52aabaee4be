// A training step (workload/workload.hpp) on one rank: its buffers in one device arena, its GEMMs
// (cuBLASLt or the built-in GEMM), memory-bound kernels and NCCL collectives, enqueued one op at
// a time, all on one stream (seq), or on a compute and a comm stream with events for the
// dependencies that cross streams (the overlapped modes). Verification reuses the workloads'
// kernels: GEMM outputs against a snapshot bit for bit (and once per shape against a naive fp32
// reference), memory-bound outputs recomputed exactly, collective outputs against the exact
// integer pattern (docs/METRICS.md, docs/WORKLOADS.md).
//
// Stream contract: enqueue_*(), poison() and snapshot() only enqueue work on the streams they are
// given and never synchronise. verify() synchronises its stream (it returns counts). The
// constructor allocates the arena, fills inputs and synchronises the device.
//
// Collective contract: every rank of the communicator must build its StepExec from the same Step
// and call the enqueue functions in the same sequence (ops are enqueued in Step::order, so the
// collectives reach NCCL in the same order on every rank).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/occupancy.hpp"
#include "workload/workload.hpp"
#include "runtime/comm.hpp"

namespace cco::wl {

struct StepExecOptions {
  bool check = true;  ///< allocate snapshots and the reference scratch (needed by verify)
  uint64_t seed = 1;  ///< random inputs (the same on every rank)
  /// The arena from ncclMemAlloc, so it can be registered as one symmetric window (the layout
  /// is the same on every rank, so every buffer has the same offset everywhere): the zero-CTA
  /// policy needs its collectives' buffers in a window.
  bool nccl_arena = false;
  /// All-to-alls as one ncclAlltoAll call (NCCL 2.28; the form the copy engines can carry)
  /// instead of grouped send/receive pairs.
  bool alltoall_call = false;
  /// cuBLASLt's SM-count target for every cuBLASLt GEMM of the step (0: all SMs), set on each
  /// shape's descriptor before its algorithm is chosen, so every run of the step (alone, seq,
  /// overlapped) computes alike under it.
  int sm_count_target = 0;
};

class StepExec {
 public:
  /// Builds the step on the current device for `comm`'s rank. `step` must have been loaded for
  /// comm.nranks() ranks (throws model::Error otherwise) and must outlive this object.
  StepExec(const workload::Step& step, const rt::Comm& comm, const StepExecOptions& opt = {});
  ~StepExec();
  StepExec(const StepExec&) = delete;
  StepExec& operator=(const StepExec&) = delete;

  const workload::Step& step() const { return step_; }
  std::size_t size() const { return step_.ops.size(); }
  int64_t arena_bytes() const { return layout_.total; }
  /// The arena's device memory (arena_bytes() long, at least 1 byte).
  void* arena() const { return arena_; }

  /// Whether op i's launches are ours (memory-bound ops, built-in GEMMs), so padding applies.
  bool shapeable(std::size_t i) const;
  /// The __global__ function op i launches when shapeable (nullptr otherwise).
  const void* kernel(std::size_t i) const;
  /// Threads per block of kernel(i).
  int threads(std::size_t i) const;
  /// Extra dynamic shared memory for later launches of op i (shapeable ops only; a non-zero pad
  /// for another op throws model::Error). Raises the kernel's opt-in attribute when needed.
  void set_extra_smem(std::size_t i, int64_t bytes);
  /// Sets the same pad on every op whose kernel is `kernel` (0 resets).
  void set_extra_smem_for_kernel(const void* kernel, int64_t bytes);

  /// Op i alone on stream s.
  void enqueue_op(std::size_t i, cudaStream_t s);
  /// Every op on stream s in issue order (the seq mode).
  void enqueue_seq(cudaStream_t s);
  /// Ops on `compute` or `comm` by their logical stream, in issue order, with an event wait
  /// where an op depends on an op of the other stream. `comm` first waits for work enqueued on
  /// `compute` before the call (fork), and `compute` ends waiting for everything on `comm`
  /// (join): an event recorded on `compute` after this call completes after the whole step.
  void enqueue_streams(cudaStream_t compute, cudaStream_t comm);

  /// Overwrites every op output (GEMM C, memory-bound z, collective output) with all-ones bits
  /// (NaN in every float type), so an op that did not run, or ran before its inputs were ready,
  /// fails verify().
  void poison(cudaStream_t s);
  /// Copies every GEMM output to its snapshot (the answer computed alone).
  void snapshot(cudaStream_t s);
  /// Wrong elements per op (indexed like Step::ops) of the current outputs: GEMMs vs snapshot
  /// bitwise (and, with `reference`, the first GEMM of each shape vs a naive fp32 GEMM within
  /// the tolerance of docs/METRICS.md), memory-bound outputs recomputed exactly, collectives vs
  /// the pattern. Needs check = true. Synchronises s.
  std::vector<unsigned long long> verify(bool reference, cudaStream_t s);

 private:
  struct LtPlan;
  const workload::Step& step_;
  const rt::Comm& comm_;
  StepExecOptions opt_;
  workload::StepLayout layout_;
  char* arena_ = nullptr;
  unsigned long long* counters_ = nullptr;  // one per op
  std::vector<int64_t> pad_;                // per op
  std::vector<cudaEvent_t> done_;           // per op: recorded after it when another stream waits
  std::vector<char> needs_event_;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  void* lt_ = nullptr;                                       // cublasLtHandle_t
  std::map<std::string, std::unique_ptr<LtPlan>> lt_plans_;  // by shape and dtype
  std::vector<LtPlan*> op_plan_;                             // per op (cuBLASLt GEMMs)

  char* at(const workload::Region& r) const { return r.valid() ? arena_ + r.offset : nullptr; }
  void fill_inputs();
  void release();  // frees what the constructor acquired (also when it throws)
};

}  // namespace cco::wl
