// `cco bench` on GPUs: runs the compute part, the collective, both in sequence and both at once
// under each mode, on every rank, and fills a Report.
#pragma once

#include <functional>
#include <iosfwd>
#include <stdexcept>

#include "bench/options.hpp"
#include "bench/report.hpp"

namespace cco::bench {

/// No usable GPU: the CLI prints what() and exits 1 (not a usage error).
class NoGpu : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs the benchmark. `on_row` is called on the calling side of rank 0 as each size's rows are
/// complete (for printing as results arrive); `progress` receives one line per measured row
/// unless options.quiet. Throws UsageError for input only a device can judge (more GPUs than
/// present, padding over the opt-in maximum), NoGpu, or rt::Error on a failed GPU call.
Report run(const Options& options, const std::function<void(const Report&, std::size_t first_row)>& on_size_done,
           std::ostream& progress);

}  // namespace cco::bench
