// Rank setup behind one interface: how ranks come up and the few host-side exchanges the harness
// needs (barrier, broadcast of bytes such as the NCCL unique id, reductions of timing samples,
// allgather of small strings).
//
// Three ways to bring ranks up, all behind `Launcher`/`Group`:
//   - threads: one process, one thread per GPU (`ThreadLauncher`);
//   - env:     one process per rank, started by a launcher (torchrun, srun, mpirun, or by hand with
//              CCO_* variables); ranks meet over TCP through rank 0 (`ProcessLauncher`);
//   - mpi:     one process per rank over MPI (only in builds with -DCCO_ENABLE_MPI=ON).
// `make_launcher` picks one from `LaunchOptions` and the environment. docs/MULTINODE.md is the
// user's page for all of this.
//
// GPU-free: nothing here touches CUDA or NCCL, so it is tested anywhere.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cco::boot {

/// Raised in every rank when another rank failed, timed out, died or could not be reached, so
/// none waits forever. The message is one line and names the rank and what happened, e.g.
/// "another rank failed: rank 2: out of memory" or "rank 3 did not arrive within 120 s".
class Aborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Raised for a configuration the user must fix: a malformed launcher variable
/// (non-numeric, negative, rank >= world size, port out of range), an unknown bootstrap mode, a
/// port already in use, an unresolvable master address, or ranks that disagree about the world
/// size or the workload (job key). One line; names the variable or the ranks involved. Where ranks
/// disagree, every rank that reached rank 0 gets the same ConfigError.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What one rank sees of its group. Every collective call here must be made by all ranks in the
/// same order (like MPI); each blocks until all ranks have arrived. A Group is used by one thread
/// (the rank's own). In process modes each call waits at most the bootstrap timeout for the others
/// (then Aborted); a rank that called a different operation, or none, aborts the group.
class Group {
 public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The GPU this rank uses. Threads: first_device + rank. Process modes: the local rank (rank
  /// within its node); the caller maps it onto the visible GPUs (e.g. local rank % device count,
  /// which is 0 when the launcher gives each rank one GPU through CUDA_VISIBLE_DEVICES).
  virtual int device() const = 0;
  virtual void barrier() = 0;
  /// Copies `bytes` bytes at `data` from `root` into every rank's `data`. All ranks must pass the
  /// same `bytes` and `root` (Aborted otherwise); std::invalid_argument if root is out of range.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// Element-wise max / min / sum of v over all ranks, written back into every rank's v. All
  /// ranks must pass vectors of the same length and the same op (Aborted otherwise). Sums are
  /// taken in rank order, so every mode gives the same bits.
  enum class Op { Max, Min, Sum };
  virtual void allreduce(std::vector<double>& v, Op op) = 0;
  /// Every rank's string, in rank order, on every rank (hosts, device names).
  virtual std::vector<std::string> allgather(const std::string& s) = 0;
};

/// Starts the ranks of this process and runs `body` in each; returns when all have returned.
/// Threads: all ranks live here; if any throws, the others are released from their next (or
/// current) group call with Aborted, and the first failure is rethrown here. Process modes: this
/// process holds one rank; run() first meets the other processes (rendezvous), runs `body` once,
/// then agrees with them that all succeeded. A rank's own exception is rethrown in that rank; the
/// others get Aborted naming it. run() may be called again (a new rendezvous each time).
class Launcher {
 public:
  virtual ~Launcher() = default;
  /// Ranks in the whole job (all processes).
  virtual int size() const = 0;
  /// "threads", "env:<launcher>" (e.g. "env:torchrun", "env:slurm") or "mpi"; for reports.
  virtual std::string mode() const = 0;
  /// Rank of this process's first rank: 0 for threads; the process's rank otherwise. The process
  /// where it is 0 writes the reports.
  virtual int first_rank() const { return 0; }
  /// Ranks that run in this process: size() for threads, 1 in process modes.
  virtual int local_ranks() const { return size(); }
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

// ---- the environment -------------------------------------------------------------------------

/// Environment variables, name -> value (a copy of the process's, or made up by tests).
using Env = std::map<std::string, std::string>;

/// The current process's environment.
Env current_environment();

/// Where this process stands in a job started by a launcher, as read from its environment.
struct LaunchEnv {
  /// Who started it: "cco" (CCO_RANK, CCO_WORLD_SIZE), "torchrun" (RANK, WORLD_SIZE),
  /// "openmpi" (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or "slurm" (SLURM_PROCID,
  /// SLURM_NTASKS). Checked in that order: torchrun under srun and mpirun inside a Slurm
  /// allocation are read as torchrun and openmpi.
  std::string launcher;
  int rank = 0;        ///< 0 <= rank < world_size
  int world_size = 1;  ///< >= 1
  /// Rank within the node (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
  /// CCO_LOCAL_RANK); the rank itself where the launcher gives none. Becomes Group::device().
  int local_rank = 0;
  /// Where rank 0 listens and the others connect: host name or IPv4 address. Empty with a
  /// rendezvous file and no CCO_MASTER_ADDR (rank 0 then writes its host name into the file).
  /// CCO_MASTER_ADDR wins; then torchrun, Open MPI, Slurm: MASTER_ADDR; then Slurm: the first
  /// host of SLURM_STEP_NODELIST / SLURM_JOB_NODELIST; Open MPI with all ranks on one node:
  /// 127.0.0.1. CCO_* launches: CCO_MASTER_ADDR or 127.0.0.1.
  std::string master_addr;
  /// TCP port rank 0 listens on, 1-65535 (0: any free port, only with a rendezvous file).
  /// CCO_MASTER_PORT wins; torchrun: MASTER_PORT + 1 (torchrun's own store already listens on
  /// MASTER_PORT), used only where the store below is off or cannot be used; Open MPI:
  /// MASTER_PORT, else 29510; Slurm: MASTER_PORT, else
  /// 20000 + (SLURM_JOB_ID + 997 * SLURM_STEP_ID) % 10000, so jobs sharing a node differ; CCO_*:
  /// 29510.
  int master_port = 0;
  /// torchrun's store: the c10d TCPStore its elastic agent hosts for the workers at
  /// MASTER_ADDR:MASTER_PORT. On (port > 0) only under torchrun with TORCHELASTIC_USE_AGENT_STORE
  /// set to "True" (or "true", "1"), which torchrun sets exactly when that store exists and
  /// outlives the workers, and neither CCO_MASTER_PORT nor CCO_BOOTSTRAP_FILE is set (they win,
  /// as before). Then rank 0 listens on a port the kernel picks and SETs "host:port" under
  /// `key` + n, n the rendezvous's number in the whole job (each rank ADDs 1 to `key` +
  /// "arrivals" and takes (count - 1) / world size, so a second run(), or a second cco in the
  /// same job, never reads an earlier rendezvous's address); the other ranks WAIT
  /// for that key and GET it. If the store does not answer as a TCPStore (VALIDATE and PING,
  /// within min(timeout, 5 s)), the rank prints one warning line and uses master_addr and
  /// master_port (MASTER_PORT + 1) as before, as do later rendezvous of that process.
  struct AgentStore {
    std::string addr;  ///< MASTER_ADDR (CCO_MASTER_ADDR does not move the store)
    int port = 0;      ///< MASTER_PORT; 0: no store
    /// "cco/rendezvous/<TORCHELASTIC_RESTART_COUNT>/" (restart count 0 if unset), so workers
    /// restarted by torchrun do not read their predecessors' addresses.
    std::string key;
    /// The host rank 0 publishes: CCO_MASTER_ADDR if set; else 127.0.0.1 when all ranks run on
    /// this node (LOCAL_WORLD_SIZE equals WORLD_SIZE); else empty: rank 0's host name.
    std::string advertise;
  } store;
  /// CCO_BOOTSTRAP_FILE: a path on a file system all ranks see. Rank 0 writes "host:port" there
  /// (write to a temporary name, then rename, so readers never see half a line) and removes it
  /// once all ranks have connected; the others poll it. Empty: connect to master_addr:port.
  std::string rendezvous_file;
  /// CCO_JOB_SECRET: a secret every rank of the job is given (empty: none). Each hello carries
  /// it; rank 0 takes no hello whose secret differs from its own (the connection is told why
  /// and dropped, and the job goes on), so a process that can reach the port but was not given
  /// the secret cannot join. It travels as is: it keeps out what cannot read the job's traffic.
  std::string secret;
};

/// Reads the launcher variables. std::nullopt when none is set (no launcher: threads). Throws
/// ConfigError with one line naming the variable for a malformed value: not a whole number,
/// negative, rank >= world size, local rank >= world size, port outside 1-65535, half a pair
/// (CCO_RANK without CCO_WORLD_SIZE), no way to find the master (Open MPI across nodes without
/// CCO_MASTER_ADDR or a rendezvous file), a Slurm node list too complex to take the first host
/// from. Pure: reads only `env`.
std::optional<LaunchEnv> parse_launch_env(const Env& env);

/// First host of a Slurm node list: "node[01-04]" -> "node01", "a,b" -> "a",
/// "gpu[7,9-12]-ib" -> "gpu7-ib". ConfigError where it is not that simple (nested or several
/// bracket groups in the first entry); set CCO_MASTER_ADDR then.
std::string slurm_first_host(const std::string& nodelist);

/// Default bootstrap timeout, seconds (CCO_BOOTSTRAP_TIMEOUT and the options override it).
inline constexpr double kDefaultTimeoutS = 120.0;

// ---- choosing and making a launcher ----------------------------------------------------------

/// What the caller (`cco bench`) asks for. Flags: --bootstrap, --bootstrap-timeout, -g.
struct LaunchOptions {
  /// "auto": a launcher environment (parse_launch_env) with world size > 1 -> process mode
  ///         ("mpi" if this build has MPI and the launcher is Open MPI, else "env"); otherwise
  ///         threads. A single-rank launch (srun -n1, torchrun --nproc-per-node 1) runs threads,
  ///         so one process may still drive several GPUs.
  /// "threads": ThreadLauncher(threads, first_device), whatever the environment says.
  /// "env":  ProcessLauncher from the environment; ConfigError if no launcher variable is set.
  /// "mpi":  MPI (MPI_Init, MPI_COMM_WORLD); ConfigError in builds without -DCCO_ENABLE_MPI=ON.
  /// Anything else: ConfigError.
  std::string mode = "auto";
  /// Ranks in threads mode (>= 1; the bench passes its GPU count). Ignored by process modes,
  /// where each process is one rank (the caller should reject an explicit -g > 1 there).
  int threads = 1;
  /// Threads mode: rank i uses device first_device + i.
  int first_device = 0;
  /// Seconds any rank waits for the others, in the rendezvous and in each group call, before
  /// giving up with Aborted (process modes; threads and MPI do not time out). 0: take
  /// CCO_BOOTSTRAP_TIMEOUT, else kDefaultTimeoutS. Negative or not finite: ConfigError.
  double timeout_s = 0;
  /// A string all ranks must agree on, compared at connect time (process modes): e.g. a hash of
  /// the workload arguments. Ranks that differ all fail with ConfigError "ranks disagree about
  /// the workload ...". Empty keys agree with each other only.
  std::string job_key;
};

/// The timeout make_launcher uses: opts.timeout_s if > 0, else CCO_BOOTSTRAP_TIMEOUT from `env`
/// (a positive number of seconds, fractions allowed), else kDefaultTimeoutS. ConfigError for a
/// malformed value.
double resolve_timeout(const LaunchOptions& opts, const Env& env);

/// True in builds with MPI support (-DCCO_ENABLE_MPI=ON).
bool mpi_available();

/// Makes the launcher `opts.mode` asks for (see LaunchOptions::mode), reading launcher variables
/// from `env` (pass current_environment()). Throws ConfigError for a bad mode, a malformed
/// environment or timeout, "env" without a launcher, "mpi" without MPI support. Connects nothing:
/// the rendezvous happens in run().
std::unique_ptr<Launcher> make_launcher(const LaunchOptions& opts, const Env& env);

/// One process per rank over TCP: rank 0 listens on master_port (all interfaces; under torchrun
/// with its store, on a free port it publishes in the store, see LaunchEnv::store), the others
/// connect to master_addr:master_port (or the published address; retrying until the timeout) and
/// every exchange goes through rank 0 (star) as length-prefixed messages. At connect time rank 0
/// checks that all ranks agree about the world size and the job key, and that no rank is claimed
/// twice. Failures, all bounded by the timeout:
///   - port in use on rank 0: ConfigError there at once; the others cannot reach it (Aborted);
///   - master unreachable (nothing listens, no route): Aborted after the timeout; a host name
///     that does not resolve: ConfigError at once;
///   - torchrun's store: not answering as a TCPStore: one warning line per rank on stderr and the
///     MASTER_PORT + 1 path; failing after it answered (rank 0 cannot SET, a reply out of
///     bounds, rank 0's address not published within the timeout): Aborted naming the store and
///     CCO_MASTER_PORT (which bypasses the store);
///   - a rank that never arrives: every rank that did gets Aborted after the timeout;
///   - world size or job key disagreement, a rank claimed twice: ConfigError on every rank that
///     reached rank 0 (rank 0 keeps listening until all ranks have heard it or the timeout);
///   - a rank that dies (its connection closes): the others get Aborted at their current or next
///     group call; a rank stuck outside group calls: Aborted once the others waited the timeout;
///   - a rank that throws from `body`: the others get Aborted "another rank failed: rank k: ...".
/// All hosts must share the byte order (every x86-64 and Arm64 machine does).
class ProcessLauncher final : public Launcher {
 public:
  /// `where`: this process's place (parse_launch_env, or made up by tests); `timeout_s` > 0;
  /// `job_key`: see LaunchOptions::job_key. std::invalid_argument for an inconsistent `where`.
  ProcessLauncher(LaunchEnv where, double timeout_s, std::string job_key = {});
  int size() const override { return where_.world_size; }
  std::string mode() const override { return "env:" + where_.launcher; }
  int first_rank() const override { return where_.rank; }
  int local_ranks() const override { return 1; }
  void run(const std::function<void(Group&)>& body) override;
  const LaunchEnv& where() const { return where_; }
  double timeout_s() const { return timeout_s_; }

 private:
  LaunchEnv where_;
  double timeout_s_;
  std::string job_key_;
};

}  // namespace cco::boot
