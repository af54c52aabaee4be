#include "report/diagnosis_text.hpp"

#include <fmt/format.h>

#include "trace/levers.hpp"

namespace cco::report {
namespace {

std::string ms(int64_t ns) {
  return fmt::format("{:.2f}", static_cast<double>(ns) / 1e6);
}

// The split of a step, in the order it adds up, and the figures beside it.
struct Col {
  const char* name;
  const char* text;  // the text table's header
  int64_t trace::StepParts::*field;
};
const Col kParts[] = {
    {"compute_alone_ms", "compute_alone", &trace::StepParts::compute_alone_ns},
    {"compute_slowed_ms", "compute_slowed", &trace::StepParts::compute_slowed_ns},
    {"exposed_rank_wait_ms", "rank_wait", &trace::StepParts::exposed_rank_wait_ns},
    {"exposed_slowed_ms", "comm_slowed", &trace::StepParts::exposed_slowed_ns},
    {"exposed_tail_ms", "tail", &trace::StepParts::exposed_tail_ns},
    {"exposed_dependent_ms", "dependent", &trace::StepParts::exposed_dependent_ns},
    {"idle_ms", "idle", &trace::StepParts::idle_ns},
};
const Col kBeside[] = {
    {"compute_busy_ms", "compute_busy", &trace::StepParts::compute_busy_ns},
    {"comm_busy_ms", "comm_busy", &trace::StepParts::comm_busy_ns},
    {"overlapped_ms", "overlapped", &trace::StepParts::overlapped_ns},
    {"exposed_ms", "exposed", &trace::StepParts::exposed_ns},
    {"comm_slowed_all_ms", "comm_slowed_all", &trace::StepParts::comm_slowed_ns},
    {"sm_wait_ms", "sm_wait", &trace::StepParts::sm_wait_ns},
    {"copy_engine_ms", "copy_engine", &trace::StepParts::copy_engine_ns},
    {"compute_copies_ms", "compute_copies", &trace::StepParts::compute_copies_ns},
    {"compute_slowed_memory_ms", "slowed_memory", &trace::StepParts::compute_slowed_memory_ns},
    {"compute_slowed_sms_ms", "slowed_sms", &trace::StepParts::compute_slowed_sms_ns},
    {"compute_slowed_other_ms", "slowed_other", &trace::StepParts::compute_slowed_other_ns},
};

// The bounds' columns: trace::kBoundColumns (trace/levers.hpp), spelled there once.
constexpr const auto& kBounds = trace::kBoundColumns;

std::string steps_line(const trace::Diagnosis& d) {
  std::size_t kept = d.ranks.empty() ? 0 : d.ranks.front().steps.size();
  if (d.steps.source == "none") return "# steps: none found: " + d.steps.detail + "\n";
  return fmt::format("# steps: {}: {} found, {} left out as warm-up, {} per rank analysed\n",
                     d.steps.detail, d.steps.found, d.steps.warmup, kept);
}

std::string csv(const trace::Diagnosis& d) {
  std::string o = "rank,step,typical,begin_ns,time_ms";
  for (const auto& c : kParts) o += std::string(",") + c.name;
  for (const auto& c : kBeside) o += std::string(",") + c.name;
  o += ",compute_slowed_spread_ms,compute_estimated";
  for (const auto& b : kBounds) o += std::string(",") + b.csv;
  o += ",slowest_peer,slowest_peer_lag_ms\n";
  for (const auto& r : d.ranks)
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const auto& p = r.steps[i];
      const auto lb = trace::lever_bounds(p);
      o += fmt::format("{},{},{},{},{}", p.rank, p.shown_step(), i == r.typical ? 1 : 0, p.begin_ns,
                       ms(p.time_ns));
      for (const auto& c : kParts) o.append(",").append(ms(p.*(c.field)));
      for (const auto& c : kBeside) o.append(",").append(ms(p.*(c.field)));
      o += fmt::format(",{},{:.3f}", ms(p.compute_slowed_spread_ns), p.compute_estimated);
      for (const auto& b : kBounds) o.append(",").append(ms(lb.*(b.field)));
      o += fmt::format(",{},{}\n", p.slowest_peer >= 0 ? std::to_string(p.slowest_peer) : "",
                       ms(p.slowest_peer_lag_ns));
    }
  return o;
}

std::string markdown(const trace::Diagnosis& d) {
  std::string o = (d.headline.empty() ? "" : "**" + d.headline + "**\n\n") + d.sentence + "\n\n";
  o += steps_line(d).substr(2) + "\n";
  o += "Typical step (median time) per rank, ms; the parts add up to the step time:\n\n"
       "| rank | step | time";
  for (const auto& c : kParts) o += std::string(" | ") + c.text;
  o += " | sm_wait |\n|---:|---:|---:";
  for (std::size_t i = 0; i <= std::size(kParts); ++i) o += "|---:";
  o += "|\n";
  for (const auto& r : d.ranks) {
    const auto& p = r.steps[r.typical];
    o += fmt::format("| {} | {} | {}", p.rank, p.shown_step(), ms(p.time_ns));
    for (const auto& c : kParts) o += " | " + ms(p.*(c.field));
    o += " | " + ms(p.sm_wait_ns) + " |\n";
  }
  o += "\nWhat each control can win at most in that step, ms:\n\n| rank";
  for (const auto& b : kBounds) o += std::string(" | ") + b.text;
  o += " |\n|---:";
  for (std::size_t i = 0; i < std::size(kBounds); ++i) o += "|---:";
  o += "|\n";
  for (const auto& r : d.ranks) {
    const auto lb = trace::lever_bounds(r.steps[r.typical]);
    o += fmt::format("| {}", r.rank);
    for (const auto& b : kBounds) o += " | " + ms(lb.*(b.field));
    o += " |\n";
  }
  if (!d.versus_alone.empty()) {
    o += "\nAgainst the alone trace, means over the steps, ms; the parts add up to the "
         "difference:\n\n| rank | alone trace | step | alone | difference | compute slowed | "
         "compute only here | exposed communication | host idle |\n"
         "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& v : d.versus_alone)
      o += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:+.2f} | {:.2f} | {:+.2f} | {:+.2f} | {:+.2f} |\n",
                       v.rank, v.alone_source, v.time_ms, v.alone_time_ms, v.difference_ms(),
                       v.compute_slowed_ms, v.compute_only_here_ms, v.exposed_ms, v.idle_ms);
  }
  for (const auto& n : d.notes) o += "\n- " + n;
  if (!d.notes.empty()) o += "\n";
  return o;
}

}  // namespace

std::string versus_alone_line(const trace::VersusAlone& v, const std::string& against) {
  return fmt::format(
      "# rank {} against {} (means of {} and {} steps): {:.2f} ms against {:.2f}, {:+.2f} ms = "
      "compute slowed {:.2f} (device-memory bandwidth {:.2f}, SMs {:.2f}, other {:.2f}) + compute "
      "only here {:+.2f} + exposed communication {:+.2f} + host idle {:+.2f}\n",
      v.rank, against.empty() ? "the alone trace " + v.alone_source : against, v.steps,
      v.alone_steps, v.time_ms, v.alone_time_ms, v.difference_ms(), v.compute_slowed_ms,
      v.compute_slowed_memory_ms, v.compute_slowed_sms_ms, v.compute_slowed_other_ms,
      v.compute_only_here_ms, v.exposed_ms, v.idle_ms);
}

namespace {

std::string text(const trace::Diagnosis& d) {
  std::string o = (d.headline.empty() ? "" : "# " + d.headline + "\n") + "# " + d.sentence + "\n";
  o += steps_line(d);
  o += "# typical step (the step of median time) per rank, ms; the parts from compute_alone to "
       "idle add up to the step time (docs/TRACE.md, 'Steps: where the time goes')\n";
  o += fmt::format("#{:>4} {:>6} {:>9}", "rank", "step", "time");
  for (const auto& c : kParts) o += fmt::format(" {:>14}", c.text);
  o += fmt::format(" | {:>9} {:>9} {:>9} {:>6}\n", "sm_wait", "comm_busy", "on_CE", "est%");
  for (const auto& r : d.ranks) {
    const auto& p = r.steps[r.typical];
    o += fmt::format(" {:>4} {:>6} {:>9}", p.rank, p.shown_step(), ms(p.time_ns));
    for (const auto& c : kParts) o += fmt::format(" {:>14}", ms(p.*(c.field)));
    o += fmt::format(" | {:>9} {:>9} {:>9} {:>6.0f}\n", ms(p.sm_wait_ns), ms(p.comm_busy_ns),
                     ms(p.copy_engine_ns), 100 * p.compute_estimated);
  }
  o += "# what each control can win at most in that step, ms: priority/shaping <= min(sm_wait, "
       "exposed - rank_wait); SM budgets, NCCL channel caps, copy engines <= compute_slowed but "
       "its memory part + comm_slowed + the priority bound (less what they cost the other side); "
       "memory-traffic (fewer bytes beside compute: zero-copy collectives) <= compute_slowed's "
       "memory part; scheduling (bucket sizes, prefetch: the "
       "program's) <= tail + dependent; rank skew (no overlap control: host stalls, data loading, "
       "a slower GPU) = rank_wait; all_hidden: the step if no communication were exposed; ideal: "
       "compute at its speed alone, nothing exposed; copies/bucket-view: the program's own device "
       "copies on its compute stream (DDP's bucket copies: cco run --framework ddp.bucket_view)\n";
  o += fmt::format("#{:>4}", "rank");
  for (const auto& b : kBounds) o += fmt::format(" {:>22}", b.text);
  o += "\n";
  for (const auto& r : d.ranks) {
    const auto lb = trace::lever_bounds(r.steps[r.typical]);
    o += fmt::format(" {:>4}", r.rank);
    for (const auto& b : kBounds) o += fmt::format(" {:>22}", ms(lb.*(b.field)));
    o += "\n";
  }
  // The same bounds as a list to act on: the lever that can win the most first.
  if (const std::string levers = trace::levers_text(trace::ranked_levers(d)); !levers.empty())
    o += "# levers, largest bound first (bounds, not measured: cco run --compare and cco tune -- "
         "measure them): " + levers + "\n";
  for (const auto& r : d.ranks) {
    if (r.steps.size() < 2) continue;
    auto sp = [&](const char* k) {
      const auto& s = r.spread.at(k);
      return fmt::format("{} {:.2f} [{:.2f}, {:.2f}]", k, s.median, s.q1, s.q3);
    };
    o += fmt::format("# rank {} over {} steps, median [q1, q3] ms: {}; {}; {}; {}\n", r.rank,
                     r.steps.size(), sp("time"), sp("compute_slowed"), sp("exposed"),
                     sp("sm_wait"));
  }
  for (const auto& v : d.versus_alone)
    o += versus_alone_line(v);
  for (const auto& r : d.ranks) {
    const auto& p = r.steps[r.typical];
    if (p.compute_slowed_ns <= 0) continue;
    o += fmt::format("# rank {} compute slowed {} ms, by cause (estimated): device-memory bandwidth "
                     "the collectives took {}, SMs their CTAs held {}, other {}",
                     r.rank, ms(p.compute_slowed_ns), ms(p.compute_slowed_memory_ns),
                     ms(p.compute_slowed_sms_ns), ms(p.compute_slowed_other_ns));
    if (p.comm_unsized_kernels > 0)
      o += fmt::format(" ({} of {} collectives of unknown size take no memory share: traced "
                       "without cco run)",
                       p.comm_unsized_kernels, p.comm_kernels);
    o += "\n";
  }
  for (const auto& r : d.ranks) {
    const auto& p = r.steps[r.typical];
    if (p.regathers > 0)
      o += fmt::format("# rank {} re-gathers {} all-gathers in backward (FSDP2 freeing parameters "
                       "after forward): {} ms of that step on the GPU (exposed, compute slowed "
                       "beside them, their copy-outs), and their host work; cco run --framework "
                       "fsdp.reshard=off keeps the parameters instead (more memory)\n",
                       r.rank, p.regathers, ms(p.regather_ns));
  }
  for (const auto& r : d.ranks) {
    const auto& p = r.steps[r.typical];
    if (p.slowest_peer >= 0 && p.exposed_rank_wait_ns > 0)
      o += fmt::format("# rank {} waited {} ms for rank {} at one collective of that step (the "
                       "longest wait for a peer)\n",
                       r.rank, ms(p.slowest_peer_lag_ns), p.slowest_peer);
  }
  for (const auto& n : d.notes) o += "# note: " + n + "\n";
  return o;
}

}  // namespace

std::string format_diagnosis(const trace::Diagnosis& d, TableFormat f) {
  if (d.ranks.empty()) return f == TableFormat::Csv ? std::string() : "# " + d.sentence + "\n";
  switch (f) {
    case TableFormat::Csv: return csv(d);
    case TableFormat::Markdown: return markdown(d);
    case TableFormat::Text: break;
  }
  return text(d);
}

}  // namespace cco::report
