// cco bench: parse, run, print the table as sizes complete, write JSON/CSV, exit non-zero on
// wrong results.
#include <cstdio>
#include <iostream>

#include "bench/options.hpp"
#include "bench/report.hpp"
#include "bench/workload_bench.hpp"
#ifdef CCO_HAVE_CUDA
#include "bench/runner.hpp"
#endif
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "workload/workload.hpp"
#include "bench/workload_args.hpp"

namespace cco::cli {

/// `cco bench --workload FILE`: a training step from a workload file (docs/WORKLOADS.md).
/// --validate needs no GPU.
int workload_main(const std::vector<std::string>& args, const bench::StepArgs& sa) {
  // --validate parses exactly what the run parses: a flag the run refuses is refused here too.
  // --validate and --gpu-memory (which goes with it: the memory of the GPU to check against) are
  // the validation's own; everything else is parsed as the run parses it.
  std::vector<std::string> run_args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--validate") continue;
    if (sa.validate && args[i] == "--gpu-memory") {
      ++i;  // and its value
      continue;
    }
    if (sa.validate && args[i].rfind("--gpu-memory=", 0) == 0) continue;
    run_args.push_back(args[i]);
  }
  const auto so = bench::parse_step_options(run_args);  // checked in a build without CUDA too
  refuse_input("--json", so.common.json_path, {sa.workload}, "cco bench");
  refuse_input("--csv", so.common.csv_path, {sa.workload}, "cco bench");
  if (sa.validate) {
    const auto step = workload::load_step(sa.workload, sa.load_options());
    // With the JSON on stdout, the summary goes to stderr so stdout stays parseable.
    std::fputs(workload::validation_summary(step, sa.check).c_str(),
               sa.json_path == "-" ? stderr : stdout);
    if (!sa.json_path.empty()) {
      auto j = workload::to_json(step);
      const auto layout = workload::layout_step(step, sa.check);
      j["memory_per_gpu_bytes"] = layout.total;
      write_output(sa.json_path, bench::json_text(j) + "\n");
    }
    return 0;
  }
#ifndef CCO_HAVE_CUDA
  (void)so;
  throw std::runtime_error(kNoCudaBuild);
#else
  const auto rep = bench::run_step(so, std::cerr);
  if (!rep.writer) return 0;  // another process (rank 0) prints and writes the report
  const auto& c = so.common;
  FILE* table = (c.json_path == "-" || c.csv_path == "-") ? stderr : stdout;
  std::fputs(bench::format_step_report(rep).c_str(), table);
  write_output(c.json_path, bench::json_text(bench::step_report_json(rep)) + "\n");
  write_output(c.csv_path, bench::step_report_csv(rep));
  if (rep.wrong() > 0) {
    std::fprintf(stderr, "cco bench: error: %llu wrong elements under overlap (see #wrong)\n", rep.wrong());
    return 1;
  }
  return 0;
#endif
}

int bench_main(const std::vector<std::string>& args) {
  bench::StepArgs sa;
  try {
    sa = bench::split_step_args(args);
  } catch (const model::Error& e) {  // bad arguments, worded as the other bench errors
    throw bench::UsageError(e.what());
  }
  if (!sa.workload.empty()) return workload_main(args, sa);
  const auto opt = bench::parse_options(args);
  refuse_input("--json", opt.json_path, {}, "cco bench");  // writable, checked before the run
  refuse_input("--csv", opt.csv_path, {}, "cco bench");
#ifndef CCO_HAVE_CUDA
  throw std::runtime_error(kNoCudaBuild);
#else
  // With a machine-readable format on stdout, the table goes to stderr so stdout stays parseable.
  FILE* table = (opt.json_path == "-" || opt.csv_path == "-") ? stderr : stdout;
  bool header_done = false;
  const auto rep = bench::run(
      opt,
      [&](const bench::Report& r, std::size_t first) {
        if (!header_done) {
          std::fputs((bench::format_header(r) + bench::format_table_header()).c_str(), table);
          header_done = true;
        }
        for (std::size_t i = first; i < r.rows.size(); ++i)
          std::fputs(bench::format_row(r.rows[i], r).c_str(), table);
        std::fflush(table);
      },
      std::cerr);
  if (!rep.writer) return 0;  // another process (rank 0) prints and writes the report
  std::fputs(bench::format_footer(rep).c_str(), table);
  write_output(opt.json_path, bench::json_text(bench::to_json(rep)) + "\n");
  write_output(opt.csv_path, bench::to_csv(rep));
  unsigned long long wrong = 0;
  for (const auto& r : rep.rows) wrong += r.wrong;
  if (wrong > 0) {
    std::fprintf(stderr, "cco bench: error: %llu wrong elements under overlap%s (see #wrong)\n",
                 wrong, rep.in_place == "measured" ? " or in place" : "");
    return 1;
  }
  return 0;
#endif
}

}  // namespace cco::cli
