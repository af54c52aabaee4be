// MPI bootstrap (builds with -DCCO_ENABLE_MPI=ON): one process per rank on MPI_COMM_WORLD. Kept
// small: the group calls map onto MPI collectives. MPI has no way to release ranks blocked in a
// collective, so a rank whose body throws prints its one-line error and calls MPI_Abort, which
// ends every rank of the job (the launcher, e.g. mpirun, reports it) instead of leaving them hung.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/detail.hpp"

namespace cco::boot {
namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING] = {};
    int n = 0;
    MPI_Error_string(rc, s, &n);
    throw Aborted(std::string("MPI ") + what + " failed: " + s);
  }
}

/// MPI_Finalize at exit, once, if this library initialized MPI.
struct Finalizer {
  bool ours = false;
  ~Finalizer() {
    int fin = 0;
    if (ours && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) MPI_Finalize();
  }
};
Finalizer g_finalizer;

void ensure_init() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  g_finalizer.ours = true;
}

class MpiGroup final : public Group {
 public:
  MpiGroup() {
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    check(MPI_Comm_rank(node, &local_), "MPI_Comm_rank");
    MPI_Comm_free(&node);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const override { return local_; }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  void broadcast(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size_) throw std::invalid_argument("broadcast root out of range");
    agree(static_cast<long long>(bytes), "broadcast sizes differ between ranks");
    agree(root, "broadcast roots differ between ranks");
    auto* p = static_cast<char*>(data);
    for (std::size_t off = 0; off < bytes;) {
      const int n = static_cast<int>(std::min<std::size_t>(bytes - off, INT_MAX));
      check(MPI_Bcast(p + off, n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
      off += static_cast<std::size_t>(n);
    }
  }

  void allreduce(std::vector<double>& v, Op op) override {
    agree(static_cast<long long>(v.size()), "allreduce lengths differ between ranks");
    agree(static_cast<long long>(op), "allreduce ops differ between ranks");
    if (v.empty()) return;
    if (op == Op::Sum) {
      // Sum in rank order on every rank, so the bits match the other modes (MPI_SUM's order is
      // the implementation's).
      std::vector<double> all(v.size() * static_cast<std::size_t>(size_));
      check(MPI_Allgather(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, all.data(),
                          static_cast<int>(v.size()), MPI_DOUBLE, MPI_COMM_WORLD),
            "MPI_Allgather");
      for (std::size_t i = 0; i < v.size(); ++i) {
        double s = all[i];
        for (int r = 1; r < size_; ++r) s += all[static_cast<std::size_t>(r) * v.size() + i];
        v[i] = s;
      }
      return;
    }
    check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE,
                        op == Op::Max ? MPI_MAX : MPI_MIN, MPI_COMM_WORLD),
          "MPI_Allreduce");
  }

  std::vector<std::string> allgather(const std::string& s) override {
    const int mine = static_cast<int>(s.size());
    std::vector<int> lens(static_cast<std::size_t>(size_)), offs(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&mine, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD),
          "MPI_Allgather");
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      offs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += lens[static_cast<std::size_t>(r)];
    }
    if (total > INT_MAX) throw std::invalid_argument("allgather of more than 2 GiB");
    std::string buf(static_cast<std::size_t>(total), '\0');
    check(MPI_Allgatherv(s.data(), mine, MPI_CHAR, buf.data(), lens.data(), offs.data(), MPI_CHAR,
                         MPI_COMM_WORLD),
          "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(buf.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
    return out;
  }

 private:
  /// Every rank passed the same x (else Aborted on all).
  void agree(long long x, const char* what) {
    long long mm[2] = {x, -x};
    check(MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD),
          "MPI_Allreduce");
    if (mm[0] != x || -mm[1] != x) throw Aborted(what);
  }

  int rank_ = 0, size_ = 1, local_ = 0;
};

class MpiLauncher final : public Launcher {
 public:
  MpiLauncher() {
    ensure_init();
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  }
  int size() const override { return size_; }
  std::string mode() const override { return "mpi"; }
  int first_rank() const override { return rank_; }
  int local_ranks() const override { return 1; }
  void run(const std::function<void(Group&)>& body) override {
    MpiGroup g;
    try {
      body(g);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cco: rank %d: %s\n", rank_, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
      throw;
    }
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Launcher> detail::make_mpi_launcher() {
  return std::make_unique<MpiLauncher>();
}

}  // namespace cco::boot
