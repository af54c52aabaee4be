// One tuner context per NCCL communicator: the plan's `nccl` section read from the environment
// (CCO_PLAN / CCO_POLICY, as the preload library reads them), the decision, statistics.
// In a comparison or a tuning run (CCO_COMPARE with two or more items) every item's `nccl` section
// is kept, and each collective is capped by the configuration in force, asked of the preload
// library (cco_config_index, src/inject/preload/cco_api.h): it switches at the same collective on every
// rank, so every rank still decides alike. Without the library, or with an item the library
// would refuse to rotate, nothing is capped (one warning). Nothing
// here throws or fails towards NCCL: a bad plan or an internal error leaves NCCL's choice and
// writes one warning line per distinct problem and process.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "common/log.hpp"
#include "nccl_tuner/decide.hpp"
#include "nccl_tuner/nccl_tuner_abi.h"

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

/// Configurations of a rotation the statistics count apart (the preload library's hooks).
inline constexpr int kMaxConfigs = 16;

struct Stats {
  std::array<std::atomic<std::uint64_t>, kCollectiveSlots> calls{};
  std::array<std::atomic<std::uint64_t>, kCollectiveSlots> capped{};
  std::array<std::atomic<std::uint64_t>, kMaxConfigs> capped_by_config{};
};

/// The configuration in force (cco_config_index): >= 0, or -1 when unknown (then the first).
using ConfigIndexFn = int (*)();

class Context {
 public:
  /// Reads the configuration through `get` (getenv in the plugin). Never throws: on a bad plan
  /// or environment value the context caps nothing and one warning is written.
  /// `index` says which configuration of a rotation is in force; null: the preload library's
  /// cco_config_index, looked up with dlsym (absent: a rotation caps nothing).
  static std::unique_ptr<Context> create(const GetEnv& get, ccoNcclDebugLogger_t logger,
                                         std::uint64_t comm_id, std::size_t nranks,
                                         std::size_t nnodes,
                                         ConfigIndexFn index = nullptr) noexcept;

  /// getCollInfo's work: *n_channels lowered to the plan's cap when a rule matches. Never
  /// touches anything else; a null pointer is ignored.
  void get_coll_info(int coll_type, std::size_t bytes, int* n_channels) noexcept;

  /// The statistics line, without a newline: "cco-tuner: stats pid=P comm=HEX calls=N capped=M",
  /// then NAME=calls/capped for each collective seen (broadcast, reduce, allgather, reducescatter,
  /// allreduce, other), in a rotation configs=C0/C1/... (collectives capped under each
  /// configuration), then policy=NAME (last: a name may hold spaces).
  std::string stats_line() const;

  /// At the communicator's end: writes stats_line() when statistics are on. Never throws.
  void finalize() noexcept;

  /// The section in force now (the rotation's current configuration's, or the plan's).
  const plan::Nccl& nccl() const;
  const std::string& policy() const { return policy_; }
  bool active() const;
  /// Configurations of a rotation (0: a single plan).
  std::size_t configs() const { return configs_.size(); }
  bool stats_enabled() const { return stats_on_; }

 private:
  Context() = default;
  int config_in_force() const;
  plan::Nccl nccl_;     ///< empty channels: leave every choice to NCCL
  std::vector<plan::Nccl> configs_;  ///< a rotation's sections, in CCO_COMPARE's order
  ConfigIndexFn index_ = nullptr;
  std::string policy_;  ///< the plan's name, for the statistics
  ccoNcclDebugLogger_t logger_ = nullptr;
  std::uint64_t comm_id_ = 0;
  bool stats_on_ = false;
  Stats stats_;
};

}  // namespace cco::tuner
