// The search both tuners run (`cco tune` for pairs, tune.cpp; `cco tune --workload` for training
// steps, tune_workload.cpp): GPU-free, it drives a SearchSubject that measures rows, so the order
// of rounds, the hill climb, the finalists and the final round's samples are decided in one place
// and tested with a fake subject (tests/lab/tune/test_search.cpp).
//
//   1. screen the whole space (a few samples per candidate, unverified);
//   2. a hill climb: screen the unscreened neighbours (one step in one control) of the best
//      `refine` so far, for at most `rounds` rounds; it stops when a round adds no neighbour, and
//      (threads mode only, see same_path) when a round leaves the best unchanged or half the
//      budget is spent;
//   3. the finalists: seq, concurrent and priority, the best `top` screened, the best shape and
//      shape+priority rows on NCCL's own CTAs (the paper's controls alone), the model's default,
//      and the best row `cco run` can apply whole;
//   4. the final round's samples: -n, fewer when the estimate of one iteration times -w + -n
//      exceeds the budget left (threads mode only), never below 5.
// The final round itself (verified, side by side), the choice and the plan are the subject's.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "tune/space.hpp"

namespace cco::tune {

/// One candidate's screened median.
struct Screened {
  bench::RowSpec spec;
  double t_us = 0;
};

/// What a tuner measures, as functions (the runners' state lives in the tuners' scopes).
struct SearchSubject {
  /// Round 1: builds the space on the devices, sets the model's default and the space's size,
  /// screens seq and every candidate; returns each candidate's median (seq left out).
  std::function<std::vector<Screened>(bench::RowSpec& predicted, std::size_t& space_size)> screen_space;
  /// The neighbours of a screened candidate; empty function: no hill climb.
  std::function<std::vector<bench::RowSpec>(const bench::RowSpec&)> neighbours;
  /// Screens `rows` (seq first); returns each non-seq row's median. Called with {seq} alone, or
  /// seq and rows never screened before.
  std::function<std::vector<Screened>(const std::vector<bench::RowSpec>&)> screen;
  /// Microseconds one iteration of the final round of `rows` takes, estimated from the screened
  /// medians (0: unknown, no shrinking).
  std::function<double(const std::vector<bench::RowSpec>& rows, const std::vector<Screened>&)> iteration_us;
  /// Seconds since the tuning began (the budget's clock).
  std::function<double()> elapsed_s;
};

/// What both tuners' screening subject (screening_subject) keeps for after the search: the
/// model's default and the space's notes, from round 1, and the estimate of one final-round
/// iteration that each screening round updates: fixed_us (the runs that are not rows: the parts
/// alone, seq) plus, per row, its screened median and row_us.
struct Screening {
  bench::RowSpec predicted;
  std::vector<std::string> notes;
  double fixed_us = 0, row_us = 0;
};

/// The SearchSubject of both tuners, but for its neighbours. `run(provider)` screens the rows a
/// row provider (bench::RowProvider, bench::StepRowProvider) gives, unverified, and returns each
/// non-seq row's median, setting s.fixed_us and s.row_us; `space(ctx, notes)` builds the space on
/// rank 0's device context and returns it with the model's default (a std::pair). The budget's
/// clock starts at `t0`.
template <class Run, class Space>
SearchSubject screening_subject(Screening& s, Run run, Space space,
                                std::chrono::steady_clock::time_point t0) {
  SearchSubject subject;
  subject.screen_space = [&s, run, space](bench::RowSpec& predicted, std::size_t& space_size) {
    return run([&](const auto& ctx, std::vector<std::string>& notes) {
      const auto [candidates, model_default] = space(ctx, notes);
      s.predicted = predicted = model_default;
      const auto rows = screening_rows(candidates, model_default);
      space_size = rows.size() - 1;
      s.notes = notes;
      return rows;
    });
  };
  subject.screen = [run](const std::vector<bench::RowSpec>& rows) {
    return run([&](const auto&, std::vector<std::string>&) { return rows; });
  };
  subject.iteration_us = [&s](const std::vector<bench::RowSpec>& rows,
                              const std::vector<Screened>& screened) {
    double t = s.fixed_us;
    for (const auto& r : rows)
      for (const auto& x : screened)
        if (x.spec == r) {
          t += x.t_us + s.row_us;
          break;
        }
    return t;
  };
  subject.elapsed_s = [t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  return subject;
}

struct SearchOptions {
  int top = 6;            ///< screened candidates kept for the final round (plus references)
  int refine = 3;         ///< screened candidates whose neighbours are screened (0: no climb)
  int rounds = 3;         ///< neighbour rounds at most
  double budget_s = 110;  ///< wall-clock budget of the whole tuning
  int warmup = 0, iters = 1;  ///< the final round's -w and -n as asked
  int screen_iters = 6;       ///< for the progress line
  /// One process per rank: every rank must take the same path through the rounds (their clocks
  /// differ near the budget's edge, and only rank 0 knows the results), so no choice depends on
  /// time or on measured results; every round runs.
  bool same_path = false;
};

/// The options of a search as the tuners' flags give them (--top, --refine, --rounds, --budget,
/// -w, -n, --screen-iters).
SearchOptions search_options(int top, int refine, int rounds, double budget_s, int warmup, int iters,
                             int screen_iters);

struct SearchResult {
  std::vector<Screened> screened;        ///< every screened candidate, in screening order
  bench::RowSpec predicted;              ///< the model's default
  std::size_t space_size = 0;            ///< candidates of round 1
  std::size_t refined = 0;               ///< neighbours screened in the climb
  int rounds_run = 0;                    ///< neighbour rounds run
  double screen_s = 0;                   ///< seconds spent when the first round ended
  std::vector<bench::RowSpec> finalists; ///< seq first
  int final_iters = 1;                   ///< the final round's samples
};

/// The record of a search in a plan's tuning.search: space_size, neighbours_screened,
/// neighbour_rounds, finalists (without seq), screen_iters, final_iters, seconds.
nlohmann::json search_json(const SearchResult& r, int screen_iters, double seconds);

/// Step 3 above, from the screened candidates.
std::vector<bench::RowSpec> choose_finalists(const std::vector<Screened>& screened,
                                             const bench::RowSpec& predicted, int top);

/// Step 4 above: the samples the final round takes when one iteration takes `per_iter_s`.
int final_samples(int warmup, int iters, double left_s, double per_iter_s, bool same_path);

/// Runs steps 1 to 4. Progress lines go to `progress` when it is not null.
SearchResult search(const SearchSubject& subject, const SearchOptions& o, std::ostream* progress);

}  // namespace cco::tune
