// One tuner context per NCCL communicator: the plan's `nccl` section read from the environment
// (CCO_PLAN / CCO_POLICY, as the preload library reads them), the decision, statistics. Nothing
// here throws or fails towards NCCL: a bad plan or an internal error leaves NCCL's choice and
// writes one warning line per distinct problem and process.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "plan/plan.hpp"
#include "preload/log.hpp"
#include "tuner/decide.hpp"
#include "tuner/nccl_tuner_abi.h"

namespace cco::tuner {

using GetEnv = std::function<const char*(const char*)>;

/// Where the plugin's lines go. Tests install a sink that keeps them; the default writes to fd 2.
using LineSink = preload::LogSink;
void set_line_sink(LineSink sink);  ///< nullptr restores the default

/// Writes "cco-tuner: warning: <msg>" once per distinct `msg` in this process: through NCCL's
/// logger (level WARN) when given, else to standard error. Thread-safe, never throws. Returns
/// true when it wrote.
bool warn_once(ccoNcclDebugLogger_t logger, const std::string& msg) noexcept;

/// Forgets the warnings already written (tests only).
void reset_warnings() noexcept;

struct Stats {
  std::array<std::atomic<std::uint64_t>, kCollectiveSlots> calls{};
  std::array<std::atomic<std::uint64_t>, kCollectiveSlots> capped{};
};

class Context {
 public:
  /// Reads the configuration through `get` (getenv in the plugin). Never throws: on a bad plan
  /// or environment value the context caps nothing and one warning is written.
  static std::unique_ptr<Context> create(const GetEnv& get, ccoNcclDebugLogger_t logger,
                                         std::uint64_t comm_id, std::size_t nranks,
                                         std::size_t nnodes) noexcept;

  /// getCollInfo's work: *n_channels lowered to the plan's cap when a rule matches. Never
  /// touches anything else; a null pointer is ignored.
  void get_coll_info(int coll_type, std::size_t bytes, int* n_channels) noexcept;

  /// The statistics line, without a newline: "cco-tuner: stats pid=P comm=HEX calls=N capped=M",
  /// then NAME=calls/capped for each collective seen (broadcast, reduce, allgather, reducescatter,
  /// allreduce, other), then policy=NAME (last: a name may hold spaces).
  std::string stats_line() const;

  /// At the communicator's end: writes stats_line() when statistics are on. Never throws.
  void finalize() noexcept;

  const plan::Nccl& nccl() const { return nccl_; }
  const std::string& policy() const { return policy_; }
  bool active() const { return !nccl_.channels.empty(); }
  bool stats_enabled() const { return stats_on_; }

 private:
  Context() = default;
  plan::Nccl nccl_;     ///< empty channels: leave every choice to NCCL
  std::string policy_;  ///< the plan's name, for the statistics
  ccoNcclDebugLogger_t logger_ = nullptr;
  std::uint64_t comm_id_ = 0;
  bool stats_on_ = false;
  Stats stats_;
};

}  // namespace cco::tuner
