#include "steps/nocomm.hpp"

#include <limits>

namespace cco::steps {

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// a * b, or false on overflow.
bool mul(std::size_t a, std::size_t b, std::size_t* out) {
  if (a != 0 && b > kMax / a) return false;
  *out = a * b;
  return true;
}

struct Filler {
  std::vector<FillOp> ops;
  void copy(uintptr_t dst, uintptr_t src, std::size_t bytes) {
    if (bytes == 0 || dst == src || dst == 0 || src == 0) return;
    ops.push_back({FillOp::What::Copy, dst, src, bytes});
  }
  void zero(uintptr_t dst, std::size_t bytes) {
    if (bytes == 0 || dst == 0) return;
    ops.push_back({FillOp::What::Zero, dst, 0, bytes});
  }
};

}  // namespace

const char* to_string(CollKind k) {
  switch (k) {
    case CollKind::AllReduce: return "AllReduce";
    case CollKind::Broadcast: return "Broadcast";
    case CollKind::Reduce: return "Reduce";
    case CollKind::AllGather: return "AllGather";
    case CollKind::ReduceScatter: return "ReduceScatter";
    case CollKind::AlltoAll: return "AlltoAll";
    case CollKind::Gather: return "Gather";
    case CollKind::Scatter: return "Scatter";
    case CollKind::Send: return "Send";
    case CollKind::Recv: return "Recv";
  }
  return "?";
}

std::vector<FillOp> nocomm_fill(const CollCall& c, std::string* why) {
  auto refuse = [&](const char* reason) {
    if (why) *why = reason;
    return std::vector<FillOp>{};
  };
  if (c.nranks < 1 || c.rank < 0 || c.rank >= c.nranks)
    return refuse("the rank is outside its communicator");
  const auto n = static_cast<std::size_t>(c.nranks);
  const auto r = static_cast<std::size_t>(c.rank);
  std::size_t bytes = 0;  // one rank's part
  std::size_t whole = 0;  // every rank's parts
  if (!mul(c.count, c.elem, &bytes) || !mul(bytes, n, &whole))
    return refuse("its size overflows");
  const bool root = c.root == c.rank;
  Filler f;
  switch (c.kind) {
    case CollKind::AllReduce:
      f.copy(c.recv, c.send, bytes);
      break;
    case CollKind::Reduce:
      if (root) f.copy(c.recv, c.send, bytes);
      break;
    case CollKind::AllGather:
      for (std::size_t j = 0; j < n; ++j) f.copy(c.recv + j * bytes, c.send, bytes);
      break;
    case CollKind::ReduceScatter:
      f.copy(c.recv, c.send + r * bytes, bytes);
      break;
    case CollKind::AlltoAll:
      f.copy(c.recv, c.send, whole);
      break;
    case CollKind::Gather:
      if (root)
        for (std::size_t j = 0; j < n; ++j) f.copy(c.recv + j * bytes, c.send, bytes);
      break;
    case CollKind::Broadcast:
      if (root) f.copy(c.recv, c.send, bytes);
      else f.zero(c.recv, bytes);
      break;
    case CollKind::Scatter:
      if (root) f.copy(c.recv, c.send + r * bytes, bytes);
      else f.zero(c.recv, bytes);
      break;
    case CollKind::Recv:
      f.zero(c.recv, bytes);
      break;
    case CollKind::Send:
      break;
  }
  if (why) why->clear();
  return std::move(f.ops);
}

}  // namespace cco::steps
