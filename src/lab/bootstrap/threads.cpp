#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "bootstrap/bootstrap.hpp"

namespace cco::boot {
namespace {

/// State shared by the threads of one run: a reusable barrier with an abort switch, and a
/// scratch area for the exchanges (each exchange is two barrier phases: deposit, then read).
class Shared {
 public:
  explicit Shared(int n) : n_(n), slots_(n), strs_(n) {}

  void arrive() {
    std::unique_lock lk(mu_);
    check();
    const auto gen = gen_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lk, [&] { return gen_ != gen || aborted_; });
    check();
  }
  void abort(const std::string& why) {
    std::lock_guard lk(mu_);
    if (!aborted_) why_ = why;
    aborted_ = true;
    cv_.notify_all();
  }

  int n_;
  std::vector<std::vector<double>> slots_;
  std::vector<std::string> strs_;
  std::vector<char> bytes_;

 private:
  void check() const {
    if (aborted_) throw Aborted("another rank failed: " + why_);
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  unsigned long gen_ = 0;
  bool aborted_ = false;
  std::string why_;
};

class ThreadGroup final : public Group {
 public:
  ThreadGroup(Shared& s, int rank, int device) : s_(s), rank_(rank), device_(device) {}
  int rank() const override { return rank_; }
  int size() const override { return s_.n_; }
  int device() const override { return device_; }
  void barrier() override { s_.arrive(); }

  void broadcast(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= s_.n_) throw std::invalid_argument("broadcast root out of range");
    if (rank_ == root) s_.bytes_.assign(static_cast<char*>(data), static_cast<char*>(data) + bytes);
    s_.arrive();
    if (s_.bytes_.size() != bytes) {
      s_.abort("broadcast sizes differ between ranks");
      s_.arrive();
    }
    if (rank_ != root) std::memcpy(data, s_.bytes_.data(), bytes);
    s_.arrive();
  }

  void allreduce(std::vector<double>& v, Op op) override {
    s_.slots_[rank_] = v;
    s_.arrive();
    for (const auto& o : s_.slots_)
      if (o.size() != v.size()) {
        s_.abort("allreduce lengths differ between ranks");
        s_.arrive();
      }
    std::vector<double> out = s_.slots_[0];
    for (int r = 1; r < s_.n_; ++r)
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double x = s_.slots_[r][i];
        out[i] = op == Op::Max   ? std::max(out[i], x)
                 : op == Op::Min ? std::min(out[i], x)
                                 : out[i] + x;
      }
    s_.arrive();  // everyone has read the slots before anyone overwrites them
    v = std::move(out);
  }

  std::vector<std::string> allgather(const std::string& str) override {
    s_.strs_[rank_] = str;
    s_.arrive();
    std::vector<std::string> out = s_.strs_;
    s_.arrive();
    return out;
  }

 private:
  Shared& s_;
  int rank_;
  int device_;
};

}  // namespace

ThreadLauncher::ThreadLauncher(int nranks, int first_device)
    : n_(nranks), first_device_(first_device) {
  if (nranks < 1) throw std::invalid_argument("number of ranks must be at least 1");
}

void ThreadLauncher::run(const std::function<void(Group&)>& body) {
  Shared shared(n_);
  std::vector<std::exception_ptr> errors(n_);
  std::vector<std::thread> threads;
  threads.reserve(n_);
  for (int r = 0; r < n_; ++r)
    threads.emplace_back([&, r] {
      ThreadGroup g(shared, r, first_device_ + r);
      try {
        body(g);
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        shared.abort("rank " + std::to_string(r) + ": " + e.what());
      } catch (...) {
        errors[r] = std::current_exception();
        shared.abort("rank " + std::to_string(r) + ": unknown error");
      }
    });
  for (auto& t : threads) t.join();
  // The root cause first: a rank's own failure rather than another's Aborted.
  for (auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Aborted&) {
      continue;
    } catch (...) {
      throw;
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace cco::boot
