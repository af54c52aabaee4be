// The measuring configuration "nocomm" (model::kNoComm): the price of communication in the program's own steps
// (cco run --compare POLICY,nocomm; docs/STEPS.md, "The price of communication").
//
// In a nocomm step the preload library lets the program's collectives through without moving
// data: NCCL is not called, the step's compute and launches are the program's own, and what a
// collective would have written is filled from the rank's own data by device copies on the
// collective's stream (`fill`), so no uninitialised memory enters the step:
//   AllReduce, Reduce (root)     output = the rank's own input (as if every rank held the same)
//   AllGather                    every slot of the output = the rank's own input
//   ReduceScatter                output = the rank's own slot of its input
//   AlltoAll                     output = the rank's own input (slot j of input -> slot j)
//   Gather (root)                every slot = the root's own input
//   Broadcast, Scatter           root: output = its own input (its own slot for Scatter)
//   what only another rank sends: Broadcast and Scatter (not root), Recv: output zeroed
//   Reduce and Gather (not root), Send: nothing
// Each copy is skipped where source and destination are the same bytes (in-place calls). The
// copies move at most the output's bytes once, against a ring all-reduce's several times.
//
// Ranks stay in step through one real collective per step: the first collective of each nocomm
// step is replaced by an all-reduce of one element on the same communicator and stream (the step
// clock says which one: it is the same on every rank, as the rotation is). Without it a faster
// rank would run ahead through nocomm steps and wait in the next normal one, charging its lead
// to the normal step.
//
// Answers of such a run are not kept (ranks train on their own gradients): cco run says so
// before it starts, accepts nocomm only in --compare (never as its baseline), and no plan,
// policy or tuned result holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cco::steps {

enum class CollKind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather,
                      Scatter, Send, Recv };
/// NCCL's name of the kind ("AllReduce", ..., "Recv"): the step clock's signature of a collective
/// (period.hpp) and messages.
const char* to_string(CollKind k);

/// One collective call as NCCL receives it. `count` is NCCL's count (per rank where NCCL says
/// so: AllGather's send count, ReduceScatter's receive count, AlltoAll's count per peer).
struct CollCall {
  CollKind kind = CollKind::AllReduce;
  uintptr_t send = 0;     ///< the send buffer (device address); 0 where the call has none
  uintptr_t recv = 0;     ///< the receive buffer; 0 where the call has none
  std::size_t count = 0;  ///< elements
  std::size_t elem = 0;   ///< bytes per element
  int nranks = 1;         ///< the communicator's size
  int rank = 0;           ///< this rank in it
  int root = -1;          ///< root or peer (-1: none)
};

/// A device operation that stands in for a skipped collective.
struct FillOp {
  enum class What { Copy, Zero } what = What::Copy;
  uintptr_t dst = 0;
  uintptr_t src = 0;  ///< Copy only
  std::size_t bytes = 0;
  bool operator==(const FillOp&) const = default;
};

/// What a skipped collective leaves in its output, as copies and zero fills (in order; none of
/// zero bytes, none whose source is its destination). Empty when nothing is written. A call
/// whose sizes overflow, or whose rank is outside the communicator, gets no operation and
/// `*why` says so.
std::vector<FillOp> nocomm_fill(const CollCall& c, std::string* why = nullptr);

}  // namespace cco::steps
