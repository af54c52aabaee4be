#include "tune/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "tune/space.hpp"

namespace cco::tune {

using bench::Mode;
using bench::RowSpec;

std::vector<RowSpec> choose_finalists(const std::vector<Screened>& screened, const RowSpec& predicted,
                                      int top) {
  const auto order = fastest_first(screened);
  std::vector<RowSpec> finalists = {{Mode::Seq}, {Mode::Concurrent}, {Mode::Priority}};
  for (std::size_t i = 0; i < order.size() && finalists.size() < 3 + static_cast<std::size_t>(top); ++i)
    add_unique(finalists, screened[order[i]].spec);
  // The paper's controls alone: the best shape and shape+priority rows on NCCL's own CTAs.
  for (Mode m : {Mode::Shape, Mode::ShapePriority})
    for (auto i : order)
      if (screened[i].spec.mode == m && screened[i].spec.default_variant()) {
        add_unique(finalists, screened[i].spec);
        break;
      }
  add_unique(finalists, predicted);
  // The best that `cco run` can apply whole: the plan hands it to programs (tuning.applied).
  for (auto i : order)
    if (run_applicable(screened[i].spec)) {
      add_unique(finalists, screened[i].spec);
      break;
    }
  return finalists;
}

int final_samples(int warmup, int iters, double left_s, double per_iter_s, bool same_path) {
  if (same_path || per_iter_s <= 0 || (warmup + iters) * per_iter_s <= left_s) return iters;
  const double fit = left_s / per_iter_s - warmup;
  const int fits = fit < 0 ? 0 : fit > iters ? iters : static_cast<int>(fit);
  return std::max(fits, std::min(5, iters));
}

namespace {

/// One neighbour round: the unscreened neighbours of the best `refine`. Returns the rows to
/// screen, seq first (just seq when there is none).
std::vector<RowSpec> neighbour_rows(const SearchSubject& s, const std::vector<Screened>& screened,
                                    int refine) {
  const auto by_time = fastest_first(screened);
  std::vector<RowSpec> rows = {{Mode::Seq}};
  for (std::size_t i = 0; i < by_time.size() && static_cast<int>(i) < refine; ++i)
    for (const auto& n : s.neighbours(screened[by_time[i]].spec)) {
      const bool seen = std::any_of(screened.begin(), screened.end(),
                                    [&](const Screened& x) { return x.spec == n; });
      if (!seen) add_unique(rows, n);
    }
  return rows;
}

}  // namespace

SearchResult search(const SearchSubject& s, const SearchOptions& o, std::ostream* progress) {
  SearchResult res;
  auto say = [&](const std::string& line) {
    if (progress) *progress << "# tune: " << line << std::endl;
  };
  say(fmt::format("screening the search space ({} samples each)...", o.screen_iters));
  res.screened = s.screen_space(res.predicted, res.space_size);
  res.screen_s = s.elapsed_s();
  say(fmt::format("screened {} candidates in {:.1f} s", res.space_size, res.screen_s));

  for (int round = 0; s.neighbours && o.refine > 0 && round < o.rounds; ++round) {
    if (!o.same_path && s.elapsed_s() >= o.budget_s / 2) {
      say(fmt::format("no time left for {} neighbours of the best (budget {} s)",
                      round == 0 ? "the" : "more", o.budget_s));
      break;
    }
    const auto by_time = fastest_first(res.screened);
    RowSpec best_before;
    if (!by_time.empty()) best_before = res.screened[by_time.front()].spec;
    auto rows = neighbour_rows(s, res.screened, o.refine);
    const std::size_t added = rows.size() - 1;
    if (added == 0 && !o.same_path) break;
    // Under a launcher every rank joins each round (only rank 0 knows the rows): it needs a row.
    if (added == 0) rows.push_back({Mode::Concurrent});
    const auto got = s.screen(rows);
    ++res.rounds_run;
    if (added == 0) continue;
    // Times of runs seconds apart: good enough to choose finalists, which the final round
    // measures side by side again.
    res.screened.insert(res.screened.end(), got.begin(), got.end());
    res.refined += added;
    const RowSpec best_after = res.screened[fastest_first(res.screened).front()].spec;
    say(fmt::format("round {}: screened {} neighbours of the best {}; best so far {}", round + 1,
                    added, o.refine, best_after.label()));
    if (!o.same_path && best_after == best_before) break;
  }

  res.finalists = choose_finalists(res.screened, res.predicted, o.top);
  const double left = o.budget_s - s.elapsed_s();
  const double per_iter_s = s.iteration_us ? 1.25e-6 * s.iteration_us(res.finalists, res.screened) : 0;
  res.final_iters = final_samples(o.warmup, o.iters, left, per_iter_s, o.same_path);
  if (res.final_iters < o.iters)
    say(fmt::format("{:.0f} s of the budget left; final round with {} samples instead of {}",
                    std::max(0.0, left), res.final_iters, o.iters));
  return res;
}

SearchOptions search_options(int top, int refine, int rounds, double budget_s, int warmup, int iters,
                             int screen_iters) {
  SearchOptions so;
  so.top = top;
  so.refine = refine;
  so.rounds = rounds;
  so.budget_s = budget_s;
  so.warmup = warmup;
  so.iters = iters;
  so.screen_iters = screen_iters;
  return so;
}

nlohmann::json search_json(const SearchResult& r, int screen_iters, double seconds) {
  return {{"space_size", r.space_size},
          {"neighbours_screened", r.refined},
          {"neighbour_rounds", r.rounds_run},
          {"finalists", r.finalists.empty() ? 0 : r.finalists.size() - 1},
          {"screen_iters", screen_iters},
          {"final_iters", r.final_iters},
          {"seconds", seconds}};
}

}  // namespace cco::tune
