// The step file's writer (step_clock.hpp): the file is rewritten while the program runs, from a
// thread of its own, so a step boundary never waits for it (issue 46: every 5 s the whole file was
// built and written inside the program, under the step clock's lock: 0.2 s stalls at 125k kept
// steps, 1.3 s at 875k).
//
// The clock hands over, under its own lock, only what changed: the file's head (everything but
// its steps) and its steps from the first that may have changed (`from`: the oldest step whose
// GPU time was not resolved at the last hand-over) -- O(new steps). The writer keeps its own copy
// of the steps, and builds and writes the file outside every lock the program's threads take.
// Writes the program's threads make themselves (at exit, at a tune decision or a compare check:
// rare, and wanted on disk at once) go through write_now. Every write carries a generation from
// the clock: an older one never replaces a newer one on disk.
//
// Thread-safe. The thread starts at the first hand-over and is stopped and joined by the
// destructor (the preload library never destroys its clock: the thread then ends with the
// process, idle on its condition variable).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "steps/record.hpp"

namespace cco::preload {

class StepWriter {
 public:
  /// `before_write` (tests) runs in the writer thread before each of its writes, holding the file
  /// lock; may be empty.
  explicit StepWriter(std::string path, std::function<void()> before_write = {});
  ~StepWriter();
  StepWriter(const StepWriter&) = delete;
  StepWriter& operator=(const StepWriter&) = delete;

  /// Hands over the file `head` (its steps ignored) with its steps from index `from` on (`tail`;
  /// steps before `from` as handed over earlier), as generation `gen`. Returns at once.
  void offer(steps::StepFile head, std::size_t from, std::vector<steps::StepTime> tail, uint64_t gen);

  /// Writes `f` now, in the calling thread, unless a newer generation is on disk already.
  /// Returns false (and sets *error) when it could not be written.
  bool write_now(const steps::StepFile& f, uint64_t gen, std::string* error = nullptr);

  /// Writes the writer thread made so far (tests).
  uint64_t background_writes() const;

 private:
  void loop();
  bool write_locked(const steps::StepFile& f, uint64_t gen, std::string* error);  // file_mu_ held

  std::string path_;
  std::function<void()> before_write_;
  mutable std::mutex mu_;  // the hand-over below
  std::condition_variable cv_;
  bool stop_ = false, have_ = false;
  steps::StepFile head_;
  std::size_t from_ = 0;
  std::vector<steps::StepTime> tail_;
  uint64_t gen_ = 0;
  uint64_t background_writes_ = 0;
  std::vector<steps::StepTime> copy_;  // the writer thread's steps (only it touches them)
  std::mutex file_mu_;                 // one write at a time
  uint64_t written_gen_ = 0;
  std::thread thread_;
};

}  // namespace cco::preload
