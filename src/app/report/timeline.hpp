// The timeline picture of a trace: one row per (rank, stream), most urgent priority first,
// compute and communication kernels in two colours, and under each rank a summary row: each pixel
// column drawn by what dominated it -- overlap, communication waiting for SMs
// (trace::communication_waits), or exposed communication -- or blank; the legend gives each
// one's total over the window.
// A rank with NVTX ranges in the window gets a thin row above its streams: nested or
// overlapping ranges stacked in up to kNvtxLanes lanes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trace/analysis.hpp"
#include "trace/format.hpp"
#include "report/svg.hpp"

namespace cco::report {

struct TimelineOptions {
  std::optional<int64_t> from_ns, to_ns;  ///< absolute window; unset: the whole trace
  double width = 1400;                    ///< pixels
  std::string title;                      ///< first line above the picture
  /// Tooltips (kernel name, launch, times) on every kernel; off automatically above 20000
  /// kernels to keep the file small.
  bool tooltips = true;
};

/// Colours, shared with the sweep chart and named in the legend.
inline constexpr const char* kComputeColour = "#4c78a8";
inline constexpr const char* kCommColour = "#f58518";
inline constexpr const char* kOverlapColour = "#54a24b";
inline constexpr const char* kWaitColour = "#e45756";
inline constexpr const char* kExposedColour = "#9d755d";
inline constexpr const char* kNvtxColour = "#b279a2";
/// Lanes of a rank's NVTX row; deeper nesting is drawn in the last lane.
inline constexpr int kNvtxLanes = 4;

/// Throws model::Error when the trace has no kernel in the window.
Svg timeline_svg(const trace::Trace& t, const TimelineOptions& opt = {});

/// The kernel name without "void ", template arguments and parameters, at most max_chars long:
/// "void gemm_kernel<float, 4>(float*, int)" -> "gemm_kernel".
std::string short_kernel_name(std::string_view name, std::size_t max_chars = 40);

}  // namespace cco::report
