// Rank setup behind one interface: how ranks come up (threads in one process today; processes
// from a launcher's environment and MPI later) and the few host-side exchanges the harness needs
// (barrier, broadcast of bytes such as the NCCL unique id, reductions of timing samples).
//
// GPU-free: nothing here touches CUDA or NCCL, so it is tested anywhere.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace cco::boot {

/// Raised in every rank when another rank failed, so none waits forever.
class Aborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What one rank sees of its group. Every collective call here must be made by all ranks in the
/// same order (like MPI); each blocks until all ranks have arrived.
class Group {
 public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The GPU this rank uses (CUDA device index local to the process).
  virtual int device() const = 0;
  virtual void barrier() = 0;
  /// Copies `bytes` bytes at `data` from `root` into every rank's `data`.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// Element-wise max / min / sum of v over all ranks, written back into every rank's v. All
  /// ranks must pass vectors of the same length (Aborted otherwise).
  enum class Op { Max, Min, Sum };
  virtual void allreduce(std::vector<double>& v, Op op) = 0;
  /// Every rank's string, in rank order, on every rank (hosts, device names).
  virtual std::vector<std::string> allgather(const std::string& s) = 0;
};

/// Starts the ranks and runs `body` in each; returns when all have returned. If any rank throws,
/// the others are released from their next (or current) group call with Aborted, and the first
/// failure is rethrown here.
class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual int size() const = 0;
  virtual std::string mode() const = 0;
  virtual void run(const std::function<void(Group&)>& body) = 0;
};

/// One process, one thread per GPU: rank i uses device first_device + i.
class ThreadLauncher final : public Launcher {
 public:
  explicit ThreadLauncher(int nranks, int first_device = 0);
  int size() const override { return n_; }
  std::string mode() const override { return "threads"; }
  void run(const std::function<void(Group&)>& body) override;

 private:
  int n_;
  int first_device_;
};

}  // namespace cco::boot
