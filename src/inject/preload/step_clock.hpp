// The steps of the program, as the preload library sees them: found, timed, and used to rotate
// configurations (cco run --compare; docs/STEPS.md).
//
// Sources of steps, in this order of precedence:
//   - marks: the program calls cco_step_mark() (the C API; ccoverlap.step() in Python). From the
//     first mark on, marks alone delimit steps;
//   - collectives: the nccl* wrappers report every collective (its signature: period.hpp) and the
//     PeriodDetector finds the repeating unit. Only the first device that issues a collective is
//     followed (a process driving several GPUs is timed on that one).
// At each step boundary the clock takes the host time and records an event on the boundary's
// stream (the collective's or the mark's; not while that stream is being captured), so a step
// has a host time (between boundaries) and a GPU time (between the events, once both completed:
// resolved with cuEventQuery at later boundaries and at exit, never by waiting).
//
// Rotation: with n configurations, step k runs under config_of_step(k, n, warmup)
// (schedule.hpp); `switch_to(c)` is called at the boundary before the collective goes on, so the
// collective and everything the program launches after it run under the new configuration. A
// relock (a new period) restarts the step count, the warm-up and the rotation.
//
// Online search (`tune`, cco tune -- CMD; search.hpp): instead of the fixed rotation, stages of
// successive halving; at each stage's first step the decider (rank 0) drains the GPU up to that
// boundary, ranks the stage's candidates from its own step times and writes the decision file;
// every other rank waits there (bounded) until the decision for that step is in the file, so all
// ranks switch identically. A follower whose wait times out keeps candidate 0 and says so (unless
// the candidates cap NCCL channels, which must agree on every rank: then it waits on). At the
// final decision every rank writes its step file at once (cco tune reads them before it stops
// the program).
//
// The rotation's check (cco run --compare, CCO_COMPARE_DIAGNOSE; check_rounds > 0): at the step
// that ends the rotation's first check_rounds rounds, the decider (rank 0) drains the GPU, asks
// tune.diagnose for the diagnosis of configuration 0's steps (traced in-process until then) and
// writes its decision to tune.path: "nothing to win" stops the rotation there (configuration 0,
// the baseline, from then on), anything else lets it go on. Every other rank waits there for that
// decision, as in the search (the same decision file, wait and must_agree), so all ranks rotate or
// stop at the same step. The check point is a step count of the epoch alone (warm-up plus
// check_rounds rounds), the same on every rank; there the decider may find the steps not settled
// yet (a period from collectives that may not be the program's step, as DDP's buckets before the
// whole step was seen) and say so: the rotation goes on and the next epoch (the relock to the
// whole step) has its check point. After kMaxCheckTries such points, or once decided, no more.
// The decider's tracing for it stops at the decision, or after kDiagnosisBoundaryBudget step
// boundaries without one. The step file records the check (`check`).
//
// The step file (record.hpp) is written to `path` at exit (ended "exit") and, while the program
// runs, at most every `flush_ns` (ended "running") by the writer's own thread (step_writer.hpp: a
// boundary hands over only the steps that changed, so its cost does not grow with the steps
// kept), by write-then-rename: a program that dies keeps what was measured until its last flush,
// marked as such.
//
// Thread-safe: every entry point takes one mutex (collectives and marks are rare next to launches).
// Fail-open: a failing event call leaves that step without a GPU time.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "preload/driver_api.hpp"
#include "preload/step_writer.hpp"
#include "steps/period.hpp"
#include "steps/record.hpp"
#include "steps/search.hpp"

namespace cco::preload {

// The decision plumbing (decider, path, wait, poll, must_agree, diagnose) also serves the
// rotation's check (StepClockOptions::check_rounds), with `on` false.
struct TuneOptions {
  bool on = false;
  uint64_t budget = 0;     ///< search steps (0: the minimum)
  int min_rounds = steps::kMinRounds;
  uint64_t time_ns = 0;    ///< the search ends at the next stage after this long (0: no limit)
  bool decider = true;     ///< this process decides (rank 0, or no rank)
  std::string path;        ///< the decision file (required when on)
  uint64_t wait_ns = 300'000'000'000;  ///< a follower waits this long for a decision
  /// The candidates change what NCCL does (channel caps): a follower must never go on alone
  /// under another candidate than the decider's, so it waits on past wait_ns (one warning per
  /// wait_ns); cco tune stops a program that never decides.
  bool must_agree = false;
  uint64_t poll_ns = 1'000'000;        ///< between a follower's reads of the file
  /// The decider's diagnosis of candidate 0's steps in the first stage (cco tune -- CMD,
  /// CCO_TUNE_DIAGNOSE; trace_hook.hpp): called once per process, when that stage ends and its
  /// steps have drained, under the clock's mutex, with whether the period is settled (not found
  /// from collectives, or of 2 or more with no irregular step so far); tracing stops there, and
  /// only a settled period is diagnosed. nullopt when no diagnosis was made. Its sentence goes
  /// into the decision file; "nothing to win" ends the search there, keeping candidate 0.
  std::function<std::optional<steps::StageVerdict>(bool settled)> diagnose;
  /// Called in the decider when the final decision is made (tracing for the diagnosis stops).
  std::function<void()> search_done;
  /// The process's kernel launches so far (the preload library's hooks): the decider stops
  /// tracing for the diagnosis past kDiagnosisLaunchBudget. Unset: not bounded by launches.
  std::function<uint64_t()> launches;
  /// Called on every rank at the final decision's step, after its step file is written, before
  /// the step's first collective goes on (cco tune -- CMD without --online, CCO_TUNE_EXIT: the
  /// library ends the process there with status 0, so every rank ends at the same step and a
  /// launcher such as torchrun ends quietly, where a signal makes it print a traceback).
  std::function<void()> end_process;
};

/// The search starts only on steps that look like the program's steps: where they come from
/// the period of the collectives, the latest steps must have repeated the period without a miss
/// over at least this many collectives and kSettleSteps steps, all after the warm-up. A period
/// found early may be a unit inside the step (FSDP2's per-block all-gathers repeat with a period
/// of one collective through the whole forward pass; DDP's equally sized buckets too) until the
/// whole step has been seen `repeats` times; such a period is irregular within the step and so
/// never gathers this run. The warm-up goes on until then (a period found from marks or NVTX
/// ranges starts at once), or until repeats x max_period collectives after the lock, past which
/// no longer period can be found. The decider diagnoses those held steps (candidate 0's, after the
/// warm-up) when the search starts, and stops tracing there: tracing on through the first stage
/// of a whole-step period hung a 1.3B DDP program in the driver (docs/STEPS.md).
inline constexpr uint64_t kSettleCollectives = 256;
inline constexpr uint64_t kSettleSteps = 6;

/// Rounds of the rotation before its check (cco run --compare): 6 pairs is the fewest with a 95%
/// sign-test interval, and configuration 0 then has more steps than the diagnosis needs
/// (trace::kVerdictMinSteps).
inline constexpr uint64_t kCheckRounds = steps::kMinRounds;
/// Check points the decider may find unsettled (a period that may not be the step yet) before
/// it lets the comparison go on without a diagnosis; each epoch (relock) has one check point.
inline constexpr int kMaxCheckTries = 3;
/// The reason a check point's decision starts with when the steps are not settled yet: the
/// rotation goes on and the next epoch's check point decides again.
inline constexpr const char* kNotYet = "not settled yet";
/// The decider stops tracing for the diagnosis when no decision has used it after this many step
/// boundaries (a period of one collective makes a boundary of each), or after more relocks than
/// the check points allow: in-process tracing stays bounded (longer tracing hung a 4-GPU DDP run;
/// docs/STEPS.md), also where the check point never comes.
inline constexpr uint64_t kDiagnosisBoundaryBudget = 4000;
/// ... or after this many kernel launches of the process (TuneOptions::launches): in-process
/// tracing hung real programs in the driver after about 28 steps of a 1.3B DDP program and 45 of
/// its FSDP2 form on one H200 (about 5,600 kernels a DDP step: some 160,000 launches), whether
/// held for the period to settle or run through a first stage. 40,000 stopped DDP's tracing before
/// its search began (at step 11, about 62,000 launches), so the search ran undiagnosed. A longer
/// hold or stage goes on untraced and undiagnosed, and says so.
inline constexpr uint64_t kDiagnosisLaunchBudget = 120000;

struct StepClockOptions {
  std::vector<std::string> configs = {"(one)"};  ///< names, for the step file; >= 1
  uint64_t warmup = 5;                           ///< steps under config 0 before rotating
  steps::PeriodOptions period;
  std::string path;                 ///< the step file ("" : none written)
  uint64_t flush_ns = 5'000'000'000;  ///< flush at most this often (0: only at exit)
  uint64_t max_steps = steps::kMaxKeptSteps;  ///< steps kept (later ones are counted, not kept)
  std::optional<int> rank;          ///< for the step file
  TuneOptions tune;
  /// The rotation's check (not with tune.on): after this many rounds of the rotation, the
  /// decider's diagnosis (tune.diagnose) may stop it; 0: no check. Needs tune.path.
  uint64_t check_rounds = 0;
  /// Called at every step boundary (under the clock's mutex) with the mark's name ("cco step,
  /// epoch E, config C[, warm-up]": E counts the clock's (re)starts, so steps of an earlier period
  /// are told apart; C is the configuration the step starting here runs under; warm-up marks the
  /// rotation's warm-up steps, which run under config 0 but are not its rounds) and the device: `cco run --trace` puts these marks into the trace, where `cco
  /// report` finds the steps (trace/diagnosis.hpp). May be empty; must not throw.
  std::function<void(const char* name, int device)> on_boundary;
  /// Tests: runs in the step file writer's thread before each of its writes (step_writer.hpp).
  std::function<void()> before_write;
};

/// The file beside the decision file (DIR/decider) where the deciding process writes "PID HOST"
/// at its first step boundary: a waiting rank on that host stops waiting once no process has
/// that pid (the decider died before its decision), keeping candidate 0, instead of waiting for
/// ever where the candidates must agree.
std::string decider_file(const std::string& decision_path);

class StepClock {
 public:
  /// `switch_to` is called (under the clock's mutex) when the configuration changes; may be empty.
  /// `now` gives nanoseconds of a monotonic clock (tests pass their own).
  StepClock(const DriverApi& api, StepClockOptions o, std::function<void(int)> switch_to,
            std::function<uint64_t()> now);
  StepClock(const StepClock&) = delete;
  StepClock& operator=(const StepClock&) = delete;

  /// A collective about to be enqueued on `stream` of device `dev` (capturing: that stream is
  /// being captured). Ignored once marks are used, and for other devices than the first.
  /// Returns true for the first collective of a step on the followed device (the one that made
  /// the boundary, or under marks the first after a mark): the same collective on every rank,
  /// where the measuring configuration nocomm keeps the ranks in step (steps/nocomm.hpp).
  bool collective(uint64_t signature, int dev, CUstream stream, bool capturing);

  /// A step mark on `stream` (the program's; may be null: the legacy default stream).
  void mark(int dev, CUstream stream, bool capturing);

  /// The configuration now in force.
  int active() const;

  /// The step file as it stands (GPU times resolved as far as complete events allow).
  steps::StepFile snapshot(const char* ended);

  /// Writes the step file (no-op without a path). Returns false (and sets *error) on failure.
  bool write(const char* ended, std::string* error = nullptr);

  /// The online search's decisions so far (tune mode; empty otherwise).
  steps::TuneFile tune_state() const;

 private:
  struct Pending {
    uint64_t step;  // the step this event starts
    CUevent ev;
  };
  void boundary(bool ends_step, bool regular, CUstream stream, bool capturing);
  void restart();
  void resolve();
  CUevent take_event();
  steps::StepFile build_locked(const char* ended);
  steps::StepFile head_locked(const char* ended);  // the file without its steps
  void offer_locked();  // the running file, to the writer's thread
  bool write_locked(const char* ended, std::string* error);  // with mu_ held
  void set_active(int c);  // calls switch_to_ when c changes
  // Online search: the candidate of step_ (deciding or waiting at a stage's first step).
  int tune_config();
  steps::Decision decide_locked(int next);      // the decider's decision starting stage `next`
  // A follower's wait for the decision at step_ that `fits` (false: gave up, or none fits).
  bool wait_decision(steps::Decision* out, const std::function<bool(const steps::Decision&)>& fits,
                     const std::string& what, const std::string& keeps);
  void drain_locked();                          // the decider waits for the GPU up to step_
  bool decider_ended() const;                   // the deciding process ran here and has ended
  bool period_settled(uint64_t from) const;     // steps [from, step_) may be the program's steps
  bool search_ready() const;                    // the search may start at step_ (kSettleCollectives)
  bool gpu_timed(uint64_t from, uint64_t to) const;  // every regular step there has a GPU time
  std::optional<steps::StageVerdict> ask_diagnosis(bool settled);  // fail-open
  // The rotation: the configuration of step_, with the check after its first rounds.
  int rotation_config();
  steps::RotationCheck check_locked();          // the decider's check, or a follower's wait
  bool write_tune_locked(std::string* error);

  DriverApi api_;
  StepClockOptions o_;
  std::function<void(int)> switch_to_;
  std::function<uint64_t()> now_;
  mutable std::mutex mu_;
  steps::PeriodDetector det_;
  std::string source_ = "none";
  int device_ = -1;
  int active_ = 0;
  bool started_ = false;      // a boundary has been seen since the last (re)start
  bool first_due_ = false;    // a boundary since the last collective of the followed device
  std::unique_ptr<StepWriter> writer_;  // with a path
  uint64_t gen_ = 0;          // the step file's generation (a newer write is never replaced)
  std::size_t handed_ = 0;    // steps before this one are final at the writer
  uint64_t step_ = 0;         // index of the step now running
  uint64_t t_start_ = 0;      // host time at its boundary
  uint64_t dropped_ = 0;      // steps beyond max_steps
  std::deque<steps::StepTime> steps_;  // a deque: growing never copies the steps kept (a stall)
  std::vector<Pending> pending_;   // events of boundaries whose step's GPU time is unknown
  std::vector<CUevent> free_;     // recorded and resolved: reusable
  uint64_t last_flush_ = 0;
  bool event_failed_ = false;
  // Online search.
  uint64_t epoch_ = 0;               // restarts so far (a decision applies within its epoch)
  int stage_ = -1;                   // the stage running (-1: not started)
  std::vector<int> set_;             // its candidates
  bool final_ = false;
  int winner_ = 0;
  bool stopped_ = false;             // a follower gave up waiting: candidate 0 from then on
  uint64_t search_t0_ = 0;
  bool diagnosed_ = false;           // the decider called tune.diagnose (once per process)
  bool decider_written_ = false;     // the decider wrote decider_file (once per process)
  // The verdict on the steps held before the search (collectives), used at stage 0's end.
  std::optional<steps::StageVerdict> held_verdict_;
  bool checked_ = false;             // the rotation's check was made (once per process)
  int check_tries_ = 0;              // its check points that found the steps not settled yet
  uint64_t boundaries_ = 0;          // step boundaries seen by this process (all epochs)
  std::optional<steps::RotationCheck> check_;  // its outcome, for the step file
  steps::TuneFile tune_;            // the layout, the decisions so far (the decision file)
  std::vector<steps::Stage> layout_;  // the stages as laid out (tune_.stages moves while held)
};

}  // namespace cco::preload
