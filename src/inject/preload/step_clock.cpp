#include "preload/step_clock.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <utility>

#include "model/read_file.hpp"
#include "model/types.hpp"
#include "common/log.hpp"
#include "steps/schedule.hpp"

namespace cco::preload {
namespace {

// Write-then-rename (model::write_file): a reader sees the old file or the new one, never a part.
// Never throws: the library must not fail the program. `text` makes the file's text inside the
// try (a JSON dump throws on a name that is not UTF-8).
template <class Text>
bool write_atomic(const std::string& path, const Text& text, std::string* error) {
  try {
    model::write_file(path, text());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

// This host's name ("" when unknown).
std::string host_name() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0) return {};
  return h;
}

}  // namespace

std::string decider_file(const std::string& decision_path) {
  const auto slash = decision_path.rfind('/');
  return (slash == std::string::npos ? std::string() : decision_path.substr(0, slash + 1)) +
         "decider";
}

bool StepClock::decider_ended() const {
  // "PID HOST" of the deciding process (written at its first boundary): ended when it runs on
  // this host and no process has its pid. Another host's, or a file not yet written: not known
  // to have ended.
  try {
    const std::string text = model::read_file(decider_file(o_.tune.path), 4096);
    const auto space = text.find(' ');
    if (space == std::string::npos) return false;
    const int pid = std::stoi(text.substr(0, space));
    std::string host = text.substr(space + 1);
    while (!host.empty() && (host.back() == '\n' || host.back() == '\r')) host.pop_back();
    if (pid <= 0 || host.empty() || host != host_name()) return false;
    return ::kill(pid, 0) != 0 && errno == ESRCH;
  } catch (...) {
    return false;
  }
}

StepClock::StepClock(const DriverApi& api, StepClockOptions o, std::function<void(int)> switch_to,
                     std::function<uint64_t()> now)
    : api_(api), o_(std::move(o)), switch_to_(std::move(switch_to)), now_(std::move(now)),
      det_(o_.period) {
  if (o_.configs.empty()) o_.configs = {"(one)"};
  if (!o_.path.empty()) writer_ = std::make_unique<StepWriter>(o_.path, o_.before_write);
  if (o_.tune.on) {
    tune_.stages = steps::layout(steps::SearchOptions{static_cast<int>(o_.configs.size()),
                                                      o_.warmup, o_.tune.budget,
                                                      o_.tune.min_rounds});
    layout_ = tune_.stages;
    tune_.candidates = o_.configs;
    tune_.warmup = o_.warmup;
    tune_.decider.rank = o_.rank;
    tune_.decider.pid = static_cast<int>(::getpid());
  }
}

int StepClock::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

void StepClock::set_active(int c) {
  if (c == active_) return;
  active_ = c;
  if (switch_to_) switch_to_(c);
}

void StepClock::restart() {
  // A new period (or the first mark): earlier steps were of another unit; start again.
  steps_.clear();
  dropped_ = 0;
  started_ = false;
  step_ = 0;
  first_due_ = false;
  handed_ = 0;
  for (const auto& p : pending_) free_.push_back(p.ev);
  pending_.clear();
  // The search starts again too: a decision applies within its epoch only.
  ++epoch_;
  stage_ = -1;
  set_.clear();
  final_ = false;
  winner_ = 0;
  stopped_ = false;
  tune_.epoch = epoch_;
  if (o_.tune.on) {  // the search is laid out anew from the new period's first step
    tune_.stages = layout_;
    tune_.warmup = o_.warmup;
  }
  tune_.decisions.clear();
  tune_.diagnosis.clear();  // of the earlier period's steps (one diagnosis per process)
  held_verdict_.reset();
}

CUevent StepClock::take_event() {
  if (!free_.empty()) {
    CUevent e = free_.back();
    free_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (!api_.eventCreate || api_.eventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  return e;
}

void StepClock::resolve() {
  // pending_[i] starts step pending_[i].step; step s's GPU time needs the events of s and s + 1.
  if (!api_.eventQuery || !api_.eventElapsedTime) return;
  std::size_t done = 0;
  while (done + 1 < pending_.size()) {
    const Pending& a = pending_[done];
    const Pending& b = pending_[done + 1];
    if (api_.eventQuery(b.ev) != CUDA_SUCCESS) break;  // later ones are not complete either
    float ms = 0;
    if (b.step == a.step + 1 && api_.eventElapsedTime(&ms, a.ev, b.ev) == CUDA_SUCCESS) {
      // steps_ holds the steps in order from index 0; a step beyond max_steps is not kept.
      if (a.step < steps_.size() && steps_[a.step].step == a.step)
        steps_[a.step].gpu_ms = static_cast<double>(ms);
    }
    free_.push_back(a.ev);
    ++done;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
}

void StepClock::boundary(bool ends_step, bool regular, CUstream stream, bool capturing) {
  const uint64_t t = now_();
  first_due_ = true;  // the next collective on the followed device is the step's first
  // The deciding process says who it is, once, so a rank waiting for its decisions can tell
  // when it has ended (decider_ended).
  if (o_.tune.decider && !o_.tune.path.empty() && !decider_written_) {
    decider_written_ = true;
    const std::string host = host_name();
    std::string err;
    if (!host.empty() &&
        !write_atomic(decider_file(o_.tune.path),
                      [&] { return std::to_string(::getpid()) + " " + host + "\n"; }, &err))
      warn_once("decider-write", "tune: " + err);
  }
  // The diagnosis' tracing, bounded where no decision comes to use it (ask_diagnosis stops it).
  // The launches are counted only while that tracing runs.
  ++boundaries_;
  if (o_.tune.decider && o_.tune.diagnose && !diagnosed_ &&
      (boundaries_ > kDiagnosisBoundaryBudget || epoch_ > static_cast<uint64_t>(kMaxCheckTries) + 2 ||
       (o_.tune.launches && o_.tune.launches() > kDiagnosisLaunchBudget))) {
    warn_once("diagnosis-budget",
              "tune: tracing for the diagnosis stopped at step " + std::to_string(step_) +
                  " before the diagnosis was due (tracing is bounded: docs/STEPS.md); the search "
                  "runs undiagnosed");
    (void)ask_diagnosis(false);
  }
  if (ends_step && started_) {
    if (steps_.size() < o_.max_steps) {
      steps::StepTime s;
      s.step = step_;
      s.config = active_;
      s.host_ms = static_cast<double>(t - t_start_) / 1e6;
      s.regular = regular;
      steps_.push_back(s);
    } else {
      ++dropped_;
    }
    ++step_;
  }
  started_ = true;
  t_start_ = t;
  // The event that starts step_ (and ends the previous one).
  if (!capturing && api_.eventRecord && !event_failed_) {
    if (CUevent e = take_event()) {
      if (api_.eventRecord(e, stream) == CUDA_SUCCESS) {
        if (!pending_.empty() && pending_.back().step + 1 != step_) {
          // A gap (a step without an event): the older events can no longer pair.
          for (const auto& p : pending_) free_.push_back(p.ev);
          pending_.clear();
        }
        pending_.push_back({step_, e});
      } else {
        free_.push_back(e);
        event_failed_ = true;  // e.g. a stream of another context: host times only
      }
    }
  }
  if (pending_.size() > 64) {  // never unbounded, even if the GPU lags far behind
    free_.push_back(pending_.front().ev);
    pending_.erase(pending_.begin());
  }
  resolve();
  // The configuration of the step that starts now.
  set_active(o_.tune.on ? tune_config() : rotation_config());
  if (o_.on_boundary) {
    char name[80];
    // Warm-up: the rotation's, or the search's (steps held after it for the period to settle
    // are candidate 0's, and the diagnosis' steps).
    const bool warm = step_ < o_.warmup;
    std::snprintf(name, sizeof name, "cco step, epoch %llu, config %d%s",
                  static_cast<unsigned long long>(epoch_), active_, warm ? ", warm-up" : "");
    o_.on_boundary(name, device_);
  }
  if (!o_.path.empty() && o_.flush_ns > 0 && t - last_flush_ >= o_.flush_ns) {
    last_flush_ = t;
    offer_locked();  // written by the writer's thread: this boundary does not wait for it
  }
}

bool StepClock::collective(uint64_t signature, int dev, CUstream stream, bool capturing) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device_ < 0 && source_ != "marker") device_ = dev;
  if (dev != device_) return false;
  if (source_ != "marker") {
    const steps::Feed f = det_.feed(signature);
    if (f.boundary) boundary(f.ends_step, f.prev_regular, stream, capturing);
    if (f.relocked) {
      source_ = "collectives";
      restart();
      set_active(0);  // until the new period's first boundary (a relock is a new warm-up)
    }
  }
  const bool first = first_due_;
  first_due_ = false;
  return first;
}

void StepClock::mark(int dev, CUstream stream, bool capturing) {
  std::lock_guard<std::mutex> lock(mu_);
  if (source_ != "marker") {
    source_ = "marker";
    device_ = dev;
    restart();
  }
  boundary(true, true, stream, capturing);
}

steps::StepFile StepClock::build_locked(const char* ended) {
  steps::StepFile f = head_locked(ended);
  f.steps.assign(steps_.begin(), steps_.end());
  return f;
}

steps::StepFile StepClock::head_locked(const char* ended) {
  resolve();
  steps::StepFile f;
  f.pid = static_cast<int>(::getpid());
  f.rank = o_.rank;
  if (device_ >= 0) f.device = device_;
  f.source = source_;
  f.period = source_ == "collectives" ? det_.period() : 0;
  f.collectives = det_.fed();
  f.locks = det_.locks();
  f.mismatches = det_.mismatches();
  f.configs = o_.configs;
  f.warmup = o_.warmup;
  f.ended = ended;
  if (dropped_) f.note = std::to_string(dropped_) + " later steps were counted but not kept";
  f.check = check_;
  return f;
}

steps::StepFile StepClock::snapshot(const char* ended) {
  std::lock_guard<std::mutex> lock(mu_);
  return build_locked(ended);
}

bool StepClock::write_locked(const char* ended, std::string* error) {
  if (!writer_) return true;
  return writer_->write_now(build_locked(ended), ++gen_, error);
}

void StepClock::offer_locked() {
  if (!writer_) return;
  steps::StepFile head = head_locked("running");  // resolves what GPU times it can
  const std::size_t n = steps_.size();
  const std::size_t from = std::min(handed_, n);
  std::vector<steps::StepTime> tail(steps_.begin() + static_cast<std::ptrdiff_t>(from), steps_.end());
  // Steps before the oldest unresolved GPU time are final: the next hand-over starts there.
  std::size_t final_upto = n;
  if (!pending_.empty()) final_upto = std::min<std::size_t>(n, pending_.front().step);
  writer_->offer(std::move(head), from, std::move(tail), ++gen_);
  handed_ = std::max(from, final_upto);
}

bool StepClock::write(const char* ended, std::string* error) {
  if (o_.path.empty()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return write_locked(ended, error);
}

// ---- the online search -------------------------------------------------------------------------

steps::TuneFile StepClock::tune_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tune_;
}

bool StepClock::write_tune_locked(std::string* error) {
  if (!o_.tune.decider || o_.tune.path.empty()) return true;
  return write_atomic(o_.tune.path, [this] { return steps::to_json(tune_); }, error);
}

void StepClock::drain_locked() {
  // The event just recorded ends the last step; once it completed, every GPU time (and every
  // kernel record of the steps so far) resolves. Waits once per stage or check, only in the
  // decider.
  if (api_.eventSynchronize && !pending_.empty() && pending_.back().step == step_)
    api_.eventSynchronize(pending_.back().ev);
  resolve();
}

bool StepClock::period_settled(uint64_t from) const {
  // A period found from collectives may not be the step yet: DDP's equally sized buckets repeat
  // with a period of one or two until the whole step has been seen three times (docs/STEPS.md),
  // and the collectives that end each real step make such steps irregular.
  if (source_ != "collectives") return true;
  if (det_.period() < 2) return false;
  for (uint64_t k = from; k < step_ && k < steps_.size(); ++k)
    if (!steps_[k].regular) return false;
  return true;
}

bool StepClock::search_ready() const {
  if (source_ != "collectives") return true;  // marks or NVTX ranges: the program's own steps
  const auto p = static_cast<uint64_t>(det_.period());
  if (p == 0) return false;
  const uint64_t cap = static_cast<uint64_t>(o_.period.repeats) * static_cast<uint64_t>(o_.period.max_period);
  if (det_.fed() - det_.anchor() >= cap) return true;  // no longer period can be found now
  uint64_t regular = 0;  // the latest steps that repeated the period without a miss
  for (auto it = steps_.rbegin(); it != steps_.rend() && it->regular; ++it) ++regular;
  return step_ >= o_.warmup + kSettleSteps && regular >= kSettleSteps &&
         regular * p >= kSettleCollectives;
}

bool StepClock::gpu_timed(uint64_t from, uint64_t to) const {
  for (uint64_t k = from; k < to; ++k)
    if (k >= steps_.size() || (steps_[k].regular && !steps_[k].gpu_ms)) return false;
  return true;
}

std::optional<steps::StageVerdict> StepClock::ask_diagnosis(bool settled) {
  // Asked once per process (tracing stops there: longer in-process tracing hung a 4-GPU DDP run;
  // docs/STEPS.md); an unsettled period is not diagnosed, but the call still stops the tracing.
  if (!o_.tune.diagnose || diagnosed_) return std::nullopt;
  diagnosed_ = true;
  std::optional<steps::StageVerdict> v;
  try {
    v = o_.tune.diagnose(settled);
  } catch (...) {
    return std::nullopt;  // fail-open: the search or the rotation goes on without it
  }
  return settled ? v : std::nullopt;
}

steps::Decision StepClock::decide_locked(int next) {
  drain_locked();
  const steps::Stage& st = tune_.stages[static_cast<std::size_t>(stage_)];
  // GPU times when the stage has them all, else host times (a stream event could not be recorded).
  const bool gpu = gpu_timed(st.start, st.end());
  const steps::History history =
      steps::history_of(std::vector<steps::StepTime>(steps_.begin(), steps_.end()), gpu);
  const steps::StageTimes times = steps::stage_times(st, history);
  const std::string metric = gpu ? "gpu" : "host";
  // The diagnosis is asked at the first stage's end (or was made on the held steps before it).
  if (stage_ == 0) {
    if (const auto v = held_verdict_ ? held_verdict_ : ask_diagnosis(period_settled(0))) {
      tune_.diagnosis = v->sentence;
      if (v->nothing_to_win)
        return steps::decide_nothing_to_win(
            tune_.stages, stage_, set_, times, metric, step_,
            "nothing to win here: the diagnosis of candidate 0's steps before the search or in its "
            "first stage bounds what the controls can win below the step-to-step noise");
    }
  }
  const bool out_of_time = o_.tune.time_ns > 0 && now_() - search_t0_ >= o_.tune.time_ns;
  if (next < static_cast<int>(tune_.stages.size()) && !out_of_time)
    return steps::decide_next(tune_.stages, next, set_, times, metric);
  return steps::decide_final(tune_.stages, stage_, set_, times, metric, history, step_,
                             out_of_time ? "time budget" : "one left");
}

bool StepClock::wait_decision(steps::Decision* out,
                              const std::function<bool(const steps::Decision&)>& fits,
                              const std::string& what, const std::string& keeps) {
  // The real clock (now_ may be a test's, which does not move while we wait).
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t next_warning = o_.tune.wait_ns;
  std::string last_error;
  uint64_t polls = 0;
  for (;;) {
    try {
      const steps::TuneFile f = steps::read_tune_file(o_.tune.path);
      if (f.epoch == epoch_) {
        for (const steps::Decision& d : f.decisions) {
          if (d.at_step != step_) continue;
          if (!fits(d)) {
            warn_once(what + "-bad", what + ": the decision for step " + std::to_string(step_) +
                                         " does not fit this rank's layout; this rank keeps " +
                                         keeps);
            return false;
          }
          *out = d;
          return true;
        }
      }
    } catch (const std::exception& e) {
      last_error = e.what();  // not written yet (or being replaced): read again
    }
    // The deciding rank gone (issue 46: a channel comparison waited for ever when rank 0 died):
    // no decision will come, and no peer is left to disagree with; looked at every 100 reads.
    if (++polls % 100 == 0 && decider_ended()) {
      warn_once(what + "-ended", what + ": the deciding rank has ended without a decision for step " +
                                     std::to_string(step_) + "; this rank keeps " + keeps);
      return false;
    }
    const auto waited_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    if (o_.tune.must_agree && waited_ns >= next_warning) {
      // Going on alone could give this rank other NCCL channels than the decider's for the same
      // collective (a hang or wrong data): wait on, and say so now and then.
      char waited[32];
      std::snprintf(waited, sizeof waited, "%.3g s", static_cast<double>(waited_ns) / 1e9);
      warn_once(what + "-wait-" + std::to_string(next_warning),
                what + ": still no decision for step " + std::to_string(step_) +
                    " from the deciding rank after " + waited +
                    "; the candidates cap NCCL channels, which must agree on every rank, so this "
                    "rank waits on" + (last_error.empty() ? "" : " (" + last_error + ")"));
      next_warning += std::max<uint64_t>(o_.tune.wait_ns, 1'000'000'000);  // at most once a second
    } else if (!o_.tune.must_agree && waited_ns >= o_.tune.wait_ns) {
      char waited[32];
      std::snprintf(waited, sizeof waited, "%.3g s", static_cast<double>(o_.tune.wait_ns) / 1e9);
      warn_once(what + "-wait", what + ": no decision for step " + std::to_string(step_) +
                                    " from the deciding rank after " + waited +
                                    "; this rank keeps " + keeps +
                                    (last_error.empty() ? "" : " (" + last_error + ")"));
      return false;
    }
    timespec ts{static_cast<time_t>(o_.tune.poll_ns / 1000000000ULL),
                static_cast<long>(o_.tune.poll_ns % 1000000000ULL)};
    ::nanosleep(&ts, nullptr);
  }
}

int StepClock::tune_config() {
  if (stopped_) return 0;
  if (final_) return winner_;
  if (tune_.stages.empty() || step_ < tune_.stages[0].start) return 0;  // warm-up (or nothing to search)
  if (stage_ < 0) {
    if (!search_ready()) {
      // Not yet the program's steps, it seems: the warm-up goes on, and the search moves with it.
      const uint64_t by = step_ + 1 - tune_.stages[0].start;
      for (auto& st : tune_.stages) st.start += by;
      tune_.warmup += by;
      return 0;
    }
    if (source_ == "collectives" && o_.tune.decider && o_.tune.diagnose && !diagnosed_) {
      // The held steps since the warm-up are candidate 0's: diagnosed now, tracing stopped.
      drain_locked();
      held_verdict_ = ask_diagnosis(period_settled(o_.warmup));
      if (held_verdict_) tune_.diagnosis = held_verdict_->sentence;
    }
    stage_ = 0;
    set_.clear();
    for (int c = 0; c < tune_.stages[0].size; ++c) set_.push_back(c);
    search_t0_ = now_();
    if (o_.tune.decider && api_.deviceGetName && device_ >= 0) {
      char name[256] = {};
      if (api_.deviceGetName(name, sizeof name, device_) == CUDA_SUCCESS)
        tune_.decider.device_name = name;
    }
    tune_.decider.device = device_;
    if (o_.tune.decider && api_.deviceGetAttribute && device_ >= 0)
      api_.deviceGetAttribute(&tune_.decider.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                              device_);
    int v = 0;
    if (o_.tune.decider && api_.driverGetVersion && api_.driverGetVersion(&v) == CUDA_SUCCESS)
      tune_.decider.cuda_driver = model::cuda_version_from_code(v);
    std::string err;
    if (!write_tune_locked(&err)) warn_once("tune-write", "tune: " + err);
  }
  while (step_ >= tune_.stages[static_cast<std::size_t>(stage_)].end()) {
    steps::Decision d;
    if (o_.tune.decider) {
      d = decide_locked(stage_ + 1);
    } else if (!wait_decision(
                   &d,
                   [this](const steps::Decision& x) {
                     return x.final ||
                            (x.stage >= 0 && x.stage < static_cast<int>(tune_.stages.size()) &&
                             x.set.size() == static_cast<std::size_t>(
                                                 tune_.stages[static_cast<std::size_t>(x.stage)].size));
                   },
                   "tune", "candidate 0 (" + o_.configs[0] + ")")) {
      stopped_ = true;
      return 0;
    }
    tune_.decisions.push_back(d);
    if (d.final) {
      final_ = true;
      winner_ = d.set.at(0);
      if (o_.tune.decider && o_.tune.search_done) o_.tune.search_done();
      // Every rank's steps on disk before the decision is (cco tune stops the program after it).
      if (!o_.path.empty()) write_locked(o_.tune.end_process ? "exit" : "running", nullptr);
      std::string err;
      if (!write_tune_locked(&err)) warn_once("tune-write", "tune: " + err);
      if (o_.tune.end_process) o_.tune.end_process();
      return winner_;
    }
    stage_ = d.stage;
    set_ = d.set;
    std::string err;
    if (!write_tune_locked(&err)) warn_once("tune-write", "tune: " + err);
  }
  const steps::Stage& st = tune_.stages[static_cast<std::size_t>(stage_)];
  return set_.at(static_cast<std::size_t>(steps::slot_of(st, step_)));
}

// ---- the rotation and its check (cco run --compare) -------------------------------------------

int StepClock::rotation_config() {
  const int n = static_cast<int>(o_.configs.size());
  if (check_ && check_->stopped) return 0;
  // The check point is a step count of the epoch alone (warm-up plus check_rounds rounds), so every
  // rank that counts the same steps meets there; what happens there is the decider's alone.
  if (o_.check_rounds > 0 && n > 1 && !checked_ && !o_.tune.path.empty() &&
      step_ == o_.warmup + o_.check_rounds * static_cast<uint64_t>(n)) {
    const steps::RotationCheck c = check_locked();
    if (c.why.rfind(kNotYet, 0) == 0) {
      ++check_tries_;  // not settled yet: again at the next epoch's check point
    } else {
      checked_ = true;
      check_ = c;
      // Every rank's steps on disk with the check (a program that dies later keeps them).
      if (!o_.path.empty()) write_locked("running", nullptr);
      if (check_->stopped) return 0;
    }
  }
  return steps::config_of_step(step_, n, o_.warmup);
}

steps::RotationCheck StepClock::check_locked() {
  const int n = static_cast<int>(o_.configs.size());
  steps::RotationCheck c;
  c.at_step = step_;
  const std::string base = "'" + o_.configs[0] + "'";
  steps::Decision d;
  d.stage = 0;  // the one stage of the decision file: the rounds checked
  d.at_step = step_;
  if (o_.tune.decider) {
    drain_locked();
    // Settled over the rotation's rounds (the warm-up may hold the relock's irregular steps).
    const bool settled = period_settled(o_.warmup);
    d.metric = gpu_timed(o_.warmup, step_) ? "gpu" : "host";
    const bool last_try = check_tries_ + 1 >= kMaxCheckTries;
    if (!settled && !last_try) {
      d.final = false;  // tracing goes on to the next epoch's check point
      for (int i = 0; i < n; ++i) d.set.push_back(i);
      d.why = std::string(kNotYet) + ": the steps found may not be the program's steps yet (a "
              "period of one or two collectives, or an irregular step); checked again after the "
              "next relock";
    } else {
      const auto v = ask_diagnosis(settled);  // also stops the tracing; nullopt when unsettled
      d.final = true;
      if (v && v->nothing_to_win) {
        d.set = {0};
        d.why = "nothing to win here: the diagnosis of " + base +
                "'s steps in the first rounds bounds what the controls can win below the "
                "step-to-step noise; " + base + " from here on";
      } else {
        for (int i = 0; i < n; ++i) d.set.push_back(i);
        d.why = v ? "the controls may win more than the step-to-step noise: the comparison goes on"
                  : !settled ? "the steps never settled (no diagnosis): the comparison goes on"
                             : "no diagnosis (not traced, or it failed): the comparison goes on";
      }
      tune_.diagnosis = v ? v->sentence : "";
    }
    // The decision file, as the search writes it: one stage (the rounds checked), one decision.
    tune_.candidates = o_.configs;
    tune_.warmup = o_.warmup;
    tune_.decider.rank = o_.rank;
    tune_.decider.pid = static_cast<int>(::getpid());
    tune_.decider.device = device_;
    tune_.epoch = epoch_;
    tune_.stages = {steps::Stage{o_.warmup, n, static_cast<int>(o_.check_rounds)}};
    tune_.decisions = {d};
    std::string err;
    if (!write_tune_locked(&err) && !write_tune_locked(&err)) {
      // The others cannot see the decision: they give up waiting and keep the first
      // configuration, so this rank does too (whatever it decided).
      warn_once("compare-write", "compare: " + err + "; every rank keeps " + base);
      c.stopped = true;
      c.why = "the decision file could not be written: every rank keeps " + base + " from here on";
      c.diagnosis = tune_.diagnosis;
      return c;
    }
    c.diagnosis = tune_.diagnosis;
  } else {
    const bool got = wait_decision(
        &d,
        [n](const steps::Decision& x) {
          return x.set == std::vector<int>{0} || x.set.size() == static_cast<std::size_t>(n);
        },
        "compare", "configuration 0 (" + o_.configs[0] + ") from here on");
    if (!got) {
      c.stopped = true;
      c.why = "no decision from the deciding rank: this rank keeps " + base + " from here on";
      return c;
    }
    try {
      c.diagnosis = steps::read_tune_file(o_.tune.path).diagnosis;
    } catch (...) {
    }
  }
  c.stopped = d.final && d.set == std::vector<int>{0};
  c.why = d.why;
  return c;
}

}  // namespace cco::preload
