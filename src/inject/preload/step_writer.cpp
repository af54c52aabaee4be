#include "preload/step_writer.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "model/read_file.hpp"

namespace cco::preload {

StepWriter::StepWriter(std::string path, std::function<void()> before_write)
    : path_(std::move(path)), before_write_(std::move(before_write)) {}

StepWriter::~StepWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StepWriter::offer(steps::StepFile head, std::size_t from, std::vector<steps::StepTime> tail,
                       uint64_t gen) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    head.steps.clear();
    head_ = std::move(head);
    if (have_ && from >= from_) {
      // Not taken yet: this one continues the pending hand-over (or rewrites its end).
      tail_.resize(std::min(tail_.size(), from - from_));
      if (from - from_ == tail_.size())
        tail_.insert(tail_.end(), std::make_move_iterator(tail.begin()),
                     std::make_move_iterator(tail.end()));
    } else {
      from_ = from;
      tail_ = std::move(tail);
    }
    gen_ = gen;
    have_ = true;
    if (!thread_.joinable()) {
      try {
        thread_ = std::thread([this] { loop(); });
      } catch (const std::exception&) {
        have_ = false;  // no thread: the file is written at the next write_now (exit)
        return;
      }
    }
  }
  cv_.notify_one();
}

void StepWriter::loop() {
  for (;;) {
    steps::StepFile f;
    std::size_t from = 0;
    std::vector<steps::StepTime> tail;
    uint64_t gen = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return have_ || stop_; });
      if (!have_) return;  // stopped, nothing left
      f = std::move(head_);
      from = from_;
      tail = std::move(tail_);
      gen = gen_;
      have_ = false;
      tail_.clear();
    }
    if (from > copy_.size()) continue;  // a gap cannot happen (the clock hands over in order)
    copy_.resize(from);
    copy_.insert(copy_.end(), tail.begin(), tail.end());
    f.steps = copy_;  // the whole file is built here, outside the program's locks
    std::lock_guard<std::mutex> lock(file_mu_);
    if (before_write_) before_write_();
    if (write_locked(f, gen, nullptr)) {
      std::lock_guard<std::mutex> count(mu_);
      ++background_writes_;
    }
  }
}

bool StepWriter::write_locked(const steps::StepFile& f, uint64_t gen, std::string* error) {
  if (gen < written_gen_) return true;  // a newer one is on disk
  try {
    model::write_file(path_, steps::to_json(f));
  } catch (const std::exception& e) {  // a full disk; a name that is not UTF-8 in the JSON
    if (error) *error = e.what();
    return false;
  }
  written_gen_ = gen;
  return true;
}

bool StepWriter::write_now(const steps::StepFile& f, uint64_t gen, std::string* error) {
  std::lock_guard<std::mutex> lock(file_mu_);
  return write_locked(f, gen, error);
}

uint64_t StepWriter::background_writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return background_writes_;
}

}  // namespace cco::preload
