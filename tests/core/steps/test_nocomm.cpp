// What a skipped collective leaves in its output (the measuring configuration "nocomm"): every
// kind against the values a real collective's layout implies, on host buffers standing in for
// device memory, so the test checks the bytes that land and not only the list of operations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "steps/nocomm.hpp"

using namespace cco::steps;

namespace {

uintptr_t A(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// Applies the operations as the preload library does on the device, here with memcpy/memset.
void apply(const std::vector<FillOp>& ops) {
  for (const auto& op : ops) {
    if (op.what == FillOp::What::Copy)
      std::memmove(reinterpret_cast<void*>(op.dst), reinterpret_cast<const void*>(op.src), op.bytes);
    else
      std::memset(reinterpret_cast<void*>(op.dst), 0, op.bytes);
  }
}

CollCall call(CollKind k, const void* send, void* recv, std::size_t count, int nranks, int rank,
              int root = -1) {
  CollCall c;
  c.kind = k;
  c.send = A(send);
  c.recv = A(recv);
  c.count = count;
  c.elem = sizeof(float);
  c.nranks = nranks;
  c.rank = rank;
  c.root = root;
  return c;
}

constexpr float kPoison = -7.5f;

}  // namespace

TEST(NoComm, AllReduceOutOfPlaceCopiesTheRanksOwnInput) {
  std::vector<float> in = {1, 2, 3}, out(3, kPoison);
  const auto ops = nocomm_fill(call(CollKind::AllReduce, in.data(), out.data(), 3, 4, 1));
  ASSERT_EQ(ops.size(), 1u);
  apply(ops);
  EXPECT_EQ(out, in);
  EXPECT_EQ(ops[0], (FillOp{FillOp::What::Copy, A(out.data()), A(in.data()), 3 * sizeof(float)}));
}

TEST(NoComm, InPlaceCallsMoveNothing) {
  std::vector<float> buf = {1, 2, 3, 4};
  EXPECT_TRUE(nocomm_fill(call(CollKind::AllReduce, buf.data(), buf.data(), 4, 2, 0)).empty());
  EXPECT_TRUE(nocomm_fill(call(CollKind::AlltoAll, buf.data(), buf.data(), 2, 2, 0)).empty());
  // In-place reduce-scatter: the rank's slot of the input is its output.
  EXPECT_TRUE(nocomm_fill(call(CollKind::ReduceScatter, buf.data(), buf.data() + 2, 2, 2, 1)).empty());
  // In-place all-gather: the rank's own slot needs no copy, the others do.
  const auto ops = nocomm_fill(call(CollKind::AllGather, buf.data() + 2, buf.data(), 2, 2, 1));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].dst, A(buf.data()));
  apply(ops);
  EXPECT_EQ(buf, (std::vector<float>{3, 4, 3, 4}));
}

TEST(NoComm, AllGatherFillsEverySlotWithTheRanksInput) {
  std::vector<float> in = {5, 6}, out(6, kPoison);
  apply(nocomm_fill(call(CollKind::AllGather, in.data(), out.data(), 2, 3, 2)));
  EXPECT_EQ(out, (std::vector<float>{5, 6, 5, 6, 5, 6}));
}

TEST(NoComm, ReduceScatterTakesTheRanksOwnSlot) {
  std::vector<float> in = {1, 2, 3, 4, 5, 6}, out(2, kPoison);
  apply(nocomm_fill(call(CollKind::ReduceScatter, in.data(), out.data(), 2, 3, 1)));
  EXPECT_EQ(out, (std::vector<float>{3, 4}));
}

TEST(NoComm, AlltoAllKeepsEverySlotInPlace) {
  std::vector<float> in = {1, 2, 3, 4}, out(4, kPoison);
  apply(nocomm_fill(call(CollKind::AlltoAll, in.data(), out.data(), 2, 2, 0)));
  EXPECT_EQ(out, in);
}

TEST(NoComm, RootedCollectives) {
  std::vector<float> in = {1, 2}, out(4, kPoison);
  // Reduce: the root's output is its input; elsewhere nothing is written.
  EXPECT_TRUE(nocomm_fill(call(CollKind::Reduce, in.data(), out.data(), 2, 2, 1, 0)).empty());
  apply(nocomm_fill(call(CollKind::Reduce, in.data(), out.data(), 2, 2, 0, 0)));
  EXPECT_EQ(out, (std::vector<float>{1, 2, kPoison, kPoison}));
  // Gather at the root: every slot its own input.
  std::fill(out.begin(), out.end(), kPoison);
  apply(nocomm_fill(call(CollKind::Gather, in.data(), out.data(), 2, 2, 1, 1)));
  EXPECT_EQ(out, (std::vector<float>{1, 2, 1, 2}));
  EXPECT_TRUE(nocomm_fill(call(CollKind::Gather, in.data(), out.data(), 2, 2, 0, 1)).empty());
  // Broadcast: the root copies, the others get zeros (never what the buffer held before).
  std::vector<float> b(2, kPoison);
  apply(nocomm_fill(call(CollKind::Broadcast, in.data(), b.data(), 2, 2, 0, 0)));
  EXPECT_EQ(b, in);
  std::fill(b.begin(), b.end(), kPoison);
  apply(nocomm_fill(call(CollKind::Broadcast, in.data(), b.data(), 2, 2, 1, 0)));
  EXPECT_EQ(b, (std::vector<float>{0, 0}));
  // Scatter: the root keeps its own slot, the others get zeros.
  std::vector<float> s = {1, 2, 3, 4};
  std::fill(b.begin(), b.end(), kPoison);
  apply(nocomm_fill(call(CollKind::Scatter, s.data(), b.data(), 2, 2, 1, 1)));
  EXPECT_EQ(b, (std::vector<float>{3, 4}));
  std::fill(b.begin(), b.end(), kPoison);
  apply(nocomm_fill(call(CollKind::Scatter, nullptr, b.data(), 2, 2, 0, 1)));
  EXPECT_EQ(b, (std::vector<float>{0, 0}));
}

TEST(NoComm, PointToPoint) {
  std::vector<float> b(3, kPoison);
  EXPECT_TRUE(nocomm_fill(call(CollKind::Send, b.data(), nullptr, 3, 2, 0, 1)).empty());
  apply(nocomm_fill(call(CollKind::Recv, nullptr, b.data(), 3, 2, 0, 1)));
  EXPECT_EQ(b, (std::vector<float>{0, 0, 0}));
}

TEST(NoComm, EmptyAndBadCallsMoveNothingAndSayWhy) {
  std::vector<float> in = {1}, out = {kPoison};
  std::string why = "stale";
  EXPECT_TRUE(nocomm_fill(call(CollKind::AllReduce, in.data(), out.data(), 0, 2, 0), &why).empty());
  EXPECT_EQ(why, "");
  EXPECT_TRUE(nocomm_fill(call(CollKind::AllReduce, in.data(), out.data(), 1, 2, 2), &why).empty());
  EXPECT_EQ(why, "the rank is outside its communicator");
  CollCall huge = call(CollKind::AllGather, in.data(), out.data(), SIZE_MAX / 2, 4, 0);
  EXPECT_TRUE(nocomm_fill(huge, &why).empty());
  EXPECT_EQ(why, "its size overflows");
  EXPECT_EQ(out[0], kPoison);
}
