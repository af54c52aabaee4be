// `cco bench` on GPUs: runs the compute part, the collective, both in sequence and both at once
// under each row's mode and budgets, on every rank, and fills a Report.
#pragma once

#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <vector>

#include "bench/options.hpp"
#include "bench/report.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace cco::bench {

/// No usable GPU: the CLI prints what() and exits 1 (not a usage error).
class NoGpu : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What rank 0's device says about the compute part, for choosing rows.
struct DeviceContext {
  model::DeviceLimits limits;  ///< of rank 0's device
  bool shapeable = false;      ///< the compute launches are ours
  model::Footprint footprint;  ///< when shapeable
  int natural_bps = 0;         ///< blocks per SM as launched (0 when not shapeable)
  int nranks = 0;
};

/// Chooses the rows once the device is known (called on rank 0 only; the rows are then sent to
/// every rank). May append to `notes`.
using RowProvider = std::function<std::vector<RowSpec>(const DeviceContext&, std::vector<std::string>& notes)>;

/// Called as each size's rows are complete (on rank 0's thread), for printing as results arrive.
using SizeDone = std::function<void(const Report&, std::size_t first_row)>;

/// Runs the benchmark with the rows of expand_rows(). `progress` receives a line every few
/// seconds unless options.quiet. Throws UsageError for input only a device can judge (more GPUs
/// than present, padding over the opt-in maximum), NoGpu, or rt::Error on a failed GPU call.
Report run(const Options& options, const SizeDone& on_size_done, std::ostream& progress);

/// The same with rows chosen by `rows` (used by `cco tune`). Baselines (T_comp, T_comm, T_seq)
/// always use the run's own compute and communicator settings; rows with budgets get their own
/// compute part and communicator, measured in the same round-robin.
Report run(const Options& options, const RowProvider& rows, const SizeDone& on_size_done,
           std::ostream& progress);

}  // namespace cco::bench
