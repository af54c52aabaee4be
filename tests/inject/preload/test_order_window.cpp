// The launch-order communication window: collectives open it, event markers, joins inside and
// outside NCCL, newer collectives after a marker, syncs, several streams and devices, followers
// (NCCL's own streams), bounded maps, threads.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/log.hpp"
#include "preload/order_window.hpp"

namespace {

using cco::preload::OrderWindow;
using cco::preload::StreamRef;

StreamRef S(uintptr_t v, int dev = -1, uint64_t thread = 0) {
  return StreamRef{reinterpret_cast<const void*>(v), dev, thread};
}
const void* E(uintptr_t v) {
  return reinterpret_cast<const void*>(v);
}

TEST(OrderWindow, ClosedUntilACollective) {
  OrderWindow w;
  EXPECT_FALSE(w.open(0));
  EXPECT_TRUE(w.idle());
  // Events and joins without any collective change nothing.
  w.record(E(1), S(0xA));
  w.wait(S(0xB), E(1), false);
  w.wait(S(0xB), E(1), true);
  EXPECT_FALSE(w.open(0));
  EXPECT_TRUE(w.idle());
  w.collective(0, S(0xA));
  EXPECT_TRUE(w.open(0));
  EXPECT_FALSE(w.open(1));
  EXPECT_FALSE(w.open(-1));
  EXPECT_FALSE(w.open(64));
  EXPECT_TRUE(w.is_open(S(0xA)));
  EXPECT_FALSE(w.idle());
}

// PyTorch DDP: the collective on ncclStream, its end event recorded there, then work.wait() makes
// the compute stream wait on it: the window is open in between, closed after.
TEST(OrderWindow, DdpJoinOutsideNcclCloses) {
  OrderWindow w;
  const StreamRef compute = S(0xC0), nccl = S(0xD0);
  w.record(E(0x1), compute);  // syncStream: ncclStream waits on the compute stream first
  w.wait(nccl, E(0x1), false);
  EXPECT_FALSE(w.open(0));
  w.collective(0, nccl);
  w.record(E(0x2), nccl);  // ncclEndEvent
  EXPECT_TRUE(w.is_marker(E(0x2)));
  EXPECT_TRUE(w.open(0));  // backward GEMMs here run inside the window
  w.wait(compute, E(0x2), false);  // work.wait()
  EXPECT_FALSE(w.open(0));
  EXPECT_FALSE(w.is_marker(E(0x2)));
  EXPECT_TRUE(w.idle());
}

TEST(OrderWindow, NewerCollectiveKeepsItOpen) {
  OrderWindow w;
  const StreamRef nccl = S(0xD0);
  w.collective(0, nccl);
  w.record(E(1), nccl);  // bucket 1's end event
  w.collective(0, nccl);
  w.record(E(2), nccl);  // bucket 2's
  w.wait(S(0xC0), E(1), false);
  EXPECT_TRUE(w.open(0)) << "bucket 2 is still pending";
  w.wait(S(0xC0), E(2), false);
  EXPECT_FALSE(w.open(0));
  // A marker recorded before a newer collective never closes it, even joined last.
  w.collective(0, nccl);
  w.record(E(3), nccl);
  w.collective(0, nccl);
  w.wait(S(0xC0), E(3), false);
  EXPECT_TRUE(w.open(0));
  w.stream_sync(nccl);
  EXPECT_FALSE(w.open(0));
}

TEST(OrderWindow, RecordElsewhereUnmarks) {
  OrderWindow w;
  w.collective(0, S(0xD0));
  w.record(E(1), S(0xD0));
  w.record(E(1), S(0xC0));  // the same event re-recorded on a stream with no collective
  EXPECT_FALSE(w.is_marker(E(1)));
  w.wait(S(0xC0), E(1), false);
  EXPECT_TRUE(w.open(0));
}

TEST(OrderWindow, JoinInsideNcclOpensTheWaitingStream) {
  OrderWindow w;
  const StreamRef user = S(0xA0), internal = S(0xB0);
  w.collective(0, user);
  // NCCL: its device stream waits on the user stream (inside the call), records, and the user
  // stream waits back.
  w.record(E(1), user);
  w.wait(internal, E(1), true);
  EXPECT_TRUE(w.is_open(internal));
  w.record(E(2), internal);
  w.wait(user, E(2), true);
  EXPECT_TRUE(w.open(0));
  // The program joins the user stream: NCCL's stream, a follower of it, closes too.
  w.record(E(3), user);
  w.wait(S(0xC0), E(3), false);
  EXPECT_FALSE(w.is_open(user));
  EXPECT_FALSE(w.is_open(internal));
  EXPECT_FALSE(w.open(0));
}

TEST(OrderWindow, FollowerOfAnotherOriginStaysOpen) {
  OrderWindow w;
  w.collective(0, S(0xA0));
  w.collective(0, S(0xA1));
  w.record(E(1), S(0xA0));
  w.wait(S(0xB0), E(1), true);  // follower of A0
  w.record(E(2), S(0xA1));
  w.wait(S(0xB0), E(2), true);  // already open: keeps origin A0, newer seq
  w.record(E(3), S(0xA1));
  w.wait(S(0xC0), E(3), false);  // A1 joined
  EXPECT_FALSE(w.is_open(S(0xA1)));
  EXPECT_TRUE(w.is_open(S(0xA0)));
  EXPECT_TRUE(w.is_open(S(0xB0)));
  w.record(E(4), S(0xA0));
  w.wait(S(0xC0), E(4), false);
  // B0's latest collective (A1's) is newer than A0's joined one: it stays until a sync.
  EXPECT_TRUE(w.is_open(S(0xB0)));
  w.stream_sync(S(0xB0));
  EXPECT_FALSE(w.open(0));
}

TEST(OrderWindow, Syncs) {
  OrderWindow w;
  w.collective(0, S(0xA0));
  w.collective(0, S(0xA1));
  w.collective(1, S(0xA2));
  w.stream_sync(S(0xA0));
  EXPECT_FALSE(w.is_open(S(0xA0)));
  EXPECT_TRUE(w.open(0));
  w.device_sync(0);
  EXPECT_FALSE(w.open(0));
  EXPECT_TRUE(w.open(1));
  // cuEventSynchronize on a marker closes its stream; on a stale marker it does not.
  w.record(E(7), S(0xA2));
  w.event_sync(E(7));
  EXPECT_FALSE(w.open(1));
  w.collective(1, S(0xA2));
  w.record(E(8), S(0xA2));
  w.collective(1, S(0xA2));
  w.event_sync(E(8));
  EXPECT_TRUE(w.open(1));
  w.event_sync(E(9));  // not a marker
  EXPECT_TRUE(w.open(1));
  w.stream_sync(S(0xEE));  // not open
  EXPECT_TRUE(w.open(1));
}

TEST(OrderWindow, DevicesAndDefaultStreamsApart) {
  OrderWindow w;
  // The legacy stream handle of two devices, the per-thread one of two threads.
  w.collective(0, S(0x1, 0));
  w.collective(1, S(0x1, 1));
  w.collective(0, S(0x2, 0, 11));
  w.stream_sync(S(0x1, 0));
  EXPECT_TRUE(w.open(0));  // the per-thread stream of thread 11
  EXPECT_TRUE(w.open(1));
  w.stream_sync(S(0x2, 0, 12));  // another thread's: not this one
  EXPECT_TRUE(w.open(0));
  w.stream_sync(S(0x2, 0, 11));
  EXPECT_FALSE(w.open(0));
  EXPECT_TRUE(w.open(1));
  EXPECT_EQ(w.collectives(), 3u);
}

TEST(OrderWindow, MarkersOfClosedStreamsAreDropped) {
  OrderWindow w;
  for (uintptr_t i = 1; i <= 100; ++i) {
    w.collective(0, S(0xD0));
    w.record(E(i), S(0xD0));
  }
  EXPECT_EQ(w.markers(), 100u);
  w.stream_sync(S(0xD0));
  EXPECT_EQ(w.markers(), 0u);
  EXPECT_TRUE(w.idle());
}

std::vector<std::string> g_lines;
void keep(const std::string& l) {
  g_lines.push_back(l);
}

TEST(OrderWindow, BoundedByLaunchOrder) {
  g_lines.clear();
  cco::preload::reset_warnings();
  cco::preload::set_log_sink(keep);
  OrderWindow w(4, 3);
  for (uintptr_t i = 1; i <= 6; ++i) w.collective(0, S(0x100 + i));
  EXPECT_EQ(w.streams(), 4u);
  EXPECT_FALSE(w.is_open(S(0x101)));  // the two opened first went
  EXPECT_FALSE(w.is_open(S(0x102)));
  EXPECT_TRUE(w.is_open(S(0x106)));
  for (uintptr_t i = 3; i <= 6; ++i) w.record(E(i), S(0x100 + i));
  EXPECT_EQ(w.markers(), 3u);
  EXPECT_FALSE(w.is_marker(E(3)));  // recorded first, forgotten first
  EXPECT_TRUE(w.is_marker(E(6)));
  EXPECT_EQ(w.evictions(), 3u);
  cco::preload::set_log_sink(nullptr);
  EXPECT_EQ(g_lines.size(), 2u);  // one warning per map
  // Still a working window.
  w.device_sync(0);
  EXPECT_FALSE(w.open(0));
}

TEST(OrderWindow, SameOrderSameAnswers) {
  auto run = [] {
    OrderWindow w(8, 8);
    std::vector<bool> got;
    for (uintptr_t i = 0; i < 200; ++i) {
      const uintptr_t s = 0x10 + (i * 7) % 13, e = 0x1000 + (i * 5) % 11;
      switch (i % 5) {
        case 0: w.collective(static_cast<int>(i % 2), S(s)); break;
        case 1: w.record(E(e), S(s)); break;
        case 2: w.wait(S(s + 1), E(e), i % 3 == 0); break;
        case 3: w.record(E(e + 1), S(s)); break;
        default: if (i % 15 == 4) w.stream_sync(S(s)); else w.wait(S(s), E(e), false);
      }
      got.push_back(w.open(0));
      got.push_back(w.open(1));
    }
    return got;
  };
  EXPECT_EQ(run(), run());
}

TEST(OrderWindow, Threads) {
  OrderWindow w;
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&w, t] {
      const StreamRef s = S(0x1000 + t), c = S(0x2000 + t);
      for (uintptr_t i = 0; i < 2000; ++i) {
        const void* e = E(0x10000 * (t + 1) + i);
        w.collective(t % 2, s);
        w.record(e, s);
        w.wait(c, e, false);
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_FALSE(w.open(0));
  EXPECT_FALSE(w.open(1));
  EXPECT_TRUE(w.idle());
  EXPECT_EQ(w.collectives(), 16000u);
}

}  // namespace
