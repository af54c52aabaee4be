// What both runners (pairs: runner.cpp; training steps: workload_bench.cpp) do on each rank around
// the measuring loop (engine.hpp), written once: launching the ranks (one thread per GPU, or one
// process per GPU from torchrun, Slurm or MPI), the device list every report records, the
// communicators (the run's own and one per budget variant, made in the same order on every
// rank), green-context SM partitions, and the padding that realises a shape target (the model's
// choice, checked against the driver's occupancy). A new way to run ranks, or a new per-row
// variant, lands here once for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/engine.hpp"
#include "bench/nvtx.hpp"
#include "bench/options.hpp"
#include "bootstrap/bootstrap.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/green.hpp"
#include "trace/session.hpp"

namespace cco::bench {

/// The ranks of a run and the GPUs this process sees.
struct Ranks {
  std::unique_ptr<boot::Launcher> launcher;
  int ndev = 0;         ///< CUDA devices this process sees
  bool threads = true;  ///< one thread per GPU in this process (else one process per rank)
  int size() const { return launcher->size(); }
  /// The device a rank drives: its thread's GPU, or in process modes the local rank mapped onto
  /// the GPUs this process sees.
  int device_of(const boot::Group& g) const { return threads ? g.device() : g.device() % ndev; }
};

/// Makes the launcher for -g / --bootstrap / --bootstrap-timeout. `job_key` is what the ranks
/// compare when they meet (every rank must run the same job). Throws NoGpu without a usable GPU,
/// UsageError for -g beyond the visible GPUs, -g > 1 under a launcher, or a bad launcher setup.
Ranks launch_ranks(const Options& o, const std::string& job_key);

/// Every rank's device record ({rank, device, name, pci_bus_id, sms, arch, host, memory_bytes,
/// stream_priority_range}), gathered in rank order; every rank gets the whole list.
nlohmann::json gather_devices(boot::Group& g, int device, const rt::DeviceInfo& info,
                              const std::string& host);

/// Where a rank stands once it has entered the run: the first thing both runners do on every
/// rank (the device made current, the trace told the rank, the ranks' devices gathered).
struct RankSetup {
  bool lead = false;  ///< rank 0: chooses the rows, writes the report
  int device = 0;
  rt::DeviceInfo info;
  nlohmann::json devices;  ///< gather_devices: every rank's, in rank order
};
RankSetup enter_rank(boot::Group& g, const Ranks& ranks, trace::Session* tr, const std::string& host);

/// Rows chosen on rank 0 only (`choose` runs there) and sent to every rank as JSON, so every rank
/// runs the same rows in the same order even where devices differ. A collective of the group.
std::vector<RowSpec> rows_from_lead(boot::Group& g, const std::function<std::vector<RowSpec>()>& choose);

/// A budget variant's communicator, the key rows share one by, pairs and steps alike: NCCL
/// minCTAs = maxCTAs (nullopt: the run's own), the collective's buffer registration (nullopt: the
/// run's own; pairs only, a step registers its arena) and the CTA policy (nullopt: the run's
/// own). Keys compare field by field (key_index).
struct CommKey {
  std::optional<int> ctas = std::nullopt;
  std::optional<model::CommRegister> reg = std::nullopt;
  std::optional<model::CtaPolicy> policy = std::nullopt;
  auto operator<=>(const CommKey&) const = default;
};
/// One communicator per key after the first (keys[0] is the run's own, opened by the caller; the
/// result's [0] is left empty), in the same order on every rank: the run's config with the key's
/// CTAs as min = max and its policy (the registration is the collective's, not the
/// communicator's). A collective of the group.
std::vector<rt::Comm> open_variants(boot::Group& g, const rt::CommConfig& cc,
                                    const std::vector<CommKey>& keys);
/// The CTA policy the communicator of `key` runs with: its own, else the run's (`cc`; nullopt:
/// NCCL's default).
std::optional<model::CtaPolicy> policy_of(const CommKey& key, const rt::CommConfig& cc);

/// The engine's options from the run's (-w, -n, -c, -a) and its progress: rank 0 prints
/// "# [<what()>] iteration i/n (<per()>)" every 3 s and at the last iteration, unless -q.
RoundsOptions rounds_options(const Options& o, bool lead, std::ostream& progress,
                             std::function<std::string()> what, std::function<std::string()> per);

/// Wrong elements per output, summed over the ranks (a collective of the group).
std::vector<double> sum_over_ranks(boot::Group& g, const std::vector<unsigned long long>& counts);

/// One measured run as the tools see it, pairs and steps alike: the NVTX range
/// "<name><suffix>, iteration <it>" for its lifetime, and on rank 0 the slot's last run marked
/// in the trace with its name.
class RunRange {
 public:
  RunRange(trace::Session* tr, bool lead, const std::string& name, const std::string& suffix,
           int it, bool last);
  RunRange(const RunRange&) = delete;
  RunRange& operator=(const RunRange&) = delete;

 private:
  std::string text_;  // before nvtx_: the range's name lives as long as the range
  NvtxScope nvtx_;
};

/// The run's communicator settings (--nccl-min-ctas, --nccl-max-ctas, --nccl-cta-policy,
/// --nccl-cga-cluster-size).
rt::CommConfig comm_config(const Options& o);
/// A communicator of the group's ranks with `cc`: rank 0 makes the id and sends it to all.
/// Every rank must call it at the same point (it is a collective of the group).
rt::Comm open_comm(boot::Group& g, const rt::CommConfig& cc);

/// One green-context partition per key after the first (keys[0] is nullopt: none; parts[0] stays
/// empty), with a note where the driver's granularity changed the size.
std::vector<std::unique_ptr<rt::SmPartition>> green_partitions(
    int device, const std::vector<std::optional<int>>& keys, std::vector<std::string>* notes);

/// The padding that realises a shape target k (or an explicit --pad) for one kernel: the
/// model's choice (model::shape_choice), then the driver's own occupancy at that padding.
struct PadPlan {
  int64_t pad = 0;
  int model_bps = 0;   ///< blocks per SM the model predicts
  int driver_bps = 0;  ///< blocks per SM the driver reports (what the launch gets)
  std::string note;    ///< the model's remark (a target it cannot reach exactly), or empty
};
/// `pad`: exactly this much (a row's --pad), or std::nullopt to plan it for k = `blocks_per_sm`.
/// Throws UsageError naming `what` (the flag or the kernel) when the padding cannot be had.
/// Leaves the kernel's dynamic shared memory limit raised to the padding.
PadPlan plan_padding(const model::DeviceLimits& lim, const model::Footprint& fp, const void* fn,
                     int blocks_per_sm, std::optional<int64_t> pad, const std::string& what);

/// A CUPTI kernel trace of the run (--trace PATH), started before the first CUDA call so launch
/// timestamps are recorded too; nullptr when no trace was asked for or CUPTI refused (the
/// session printed why; the run goes on untraced).
std::unique_ptr<trace::Session> start_trace(const std::string& path);

/// Stops the trace and writes it: one file for threads, one per process otherwise (rank_path).
/// Appends what was written (and any records CUPTI dropped) to `notes`.
void finish_trace(trace::Session& tr, const std::string& path, const Ranks& ranks,
                  std::vector<std::string>& notes);

/// Names the four streams of a rank in its trace, with their priorities (pairs and steps alike).
void name_streams(trace::Session& tr, cudaStream_t plain, cudaStream_t side, cudaStream_t low,
                  cudaStream_t high);

/// What every rank must agree on before a CTA policy row is kept or refused
/// (model::cta_policy_refusal): the lowest NCCL version the ranks loaded and whether they share
/// one host. A collective of the group; the same on every rank.
struct CommFacts {
  int nccl_version = 0;
  bool one_host = true;
};
CommFacts agree_comm_facts(boot::Group& g, const nlohmann::json& devices);

/// Runs each collective once more under a kernel trace, between two marks per collective
/// (comm_path.hpp), to see where NCCL ran it. Uses the run's --trace session when there is one,
/// else a session of its own, on only for the probe (the timed runs are never traced by it).
/// One per process, shared by the ranks of the process; probe() is a collective of the group.
class PathProbe {
 public:
  explicit PathProbe(trace::Session* run_trace) : run_trace_(run_trace) {}
  struct Item {
    std::string label;
    std::function<void(cudaStream_t)> enqueue;
    bool split = false;  ///< an all-reduce split (comm_path_json)
  };
  /// One {"path", ...} object per item (comm_path_json), the same on every rank.
  std::vector<nlohmann::json> probe(boot::Group& g, cudaStream_t s, const std::vector<Item>& items);

 private:
  trace::Session* run_trace_;
  std::unique_ptr<trace::Session> own_;
  std::mutex mu_;
  trace::Session* session_ = nullptr;  // the one in use during a probe
};

/// The library versions every report records.
nlohmann::json versions_json();

/// Index of `k` in `keys`, appended when new (keys[0] is the run's own setting): how rows with
/// the same budget share one variant, numbered alike on every rank.
template <class K>
std::size_t key_index(std::vector<K>& keys, const K& k) {
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == k) return i;
  keys.push_back(k);
  return keys.size() - 1;
}

}  // namespace cco::bench
