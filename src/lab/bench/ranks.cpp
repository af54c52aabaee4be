#include "bench/ranks.hpp"

#include <chrono>
#include <memory>

#include "bench/comm_path.hpp"
#include "bench/runner.hpp"
#include "model/version.hpp"
#include "runtime/check.hpp"

namespace cco::bench {

Ranks launch_ranks(const Options& o, const std::string& job_key) {
  Ranks r;
  std::string why;
  r.ndev = rt::device_count(&why);
  if (r.ndev == 0) throw NoGpu("cco bench needs a CUDA GPU and none is usable here (" + why + ")");
  boot::LaunchOptions lo;
  lo.mode = o.bootstrap;
  lo.threads = o.ngpus == 0 ? r.ndev : o.ngpus;
  lo.timeout_s = o.bootstrap_timeout;
  lo.job_key = job_key;
  try {
    r.launcher = boot::make_launcher(lo, boot::current_environment());
  } catch (const boot::ConfigError& e) {
    throw UsageError(e.what());
  }
  r.threads = r.launcher->mode() == "threads";
  if (r.threads && lo.threads > r.ndev)
    throw UsageError("-g " + std::to_string(lo.threads) + ": only " + std::to_string(r.ndev) +
                     " GPU(s) visible");
  if (!r.threads && o.ngpus > 1)
    throw UsageError("-g " + std::to_string(o.ngpus) + " conflicts with " + r.launcher->mode() +
                     ": each process drives one GPU there (leave -g out)");
  return r;
}

nlohmann::json gather_devices(boot::Group& g, int device, const rt::DeviceInfo& info,
                              const std::string& host) {
  const auto& lim = info.limits;
  const nlohmann::json d = {
      {"rank", g.rank()},       {"device", device},
      {"name", info.name},      {"pci_bus_id", info.pci_bus_id},
      {"sms", lim.sm_count},    {"arch", lim.arch},
      {"host", host},           {"memory_bytes", info.total_mem},
      {"stream_priority_range", {info.least_priority, info.greatest_priority}}};
  nlohmann::json all = nlohmann::json::array();
  for (const auto& s : g.allgather(d.dump())) all.push_back(nlohmann::json::parse(s));
  return all;
}

rt::CommConfig comm_config(const Options& o) {
  rt::CommConfig cc;
  // The options' -1 (not given) is NCCL's default: nullopt.
  cc.min_ctas = o.nccl_min_ctas;
  cc.max_ctas = o.nccl_max_ctas;
  cc.cta_policy = o.nccl_cta_policy;
  cc.cga_cluster_size = o.nccl_cga_cluster;
  return cc;
}

RankSetup enter_rank(boot::Group& g, const Ranks& ranks, trace::Session* tr, const std::string& host) {
  RankSetup r;
  r.lead = g.rank() == 0;
  r.device = ranks.device_of(g);
  CCO_CUDA_CHECK(cudaSetDevice(r.device));
  r.info = rt::device_info(r.device);
  if (tr) tr->set_rank(r.device, g.rank());
  r.devices = gather_devices(g, r.device, r.info, host);
  return r;
}

std::vector<RowSpec> rows_from_lead(boot::Group& g, const std::function<std::vector<RowSpec>()>& choose) {
  std::string text;
  if (g.rank() == 0) text = rows_to_json(choose()).dump();
  return rows_from_json(nlohmann::json::parse(g.allgather(text)[0]));
}

std::vector<rt::Comm> open_variants(boot::Group& g, const rt::CommConfig& cc,
                                    const std::vector<CommKey>& keys) {
  std::vector<rt::Comm> comms(keys.empty() ? 0 : 1);
  for (std::size_t i = 1; i < keys.size(); ++i) {
    rt::CommConfig c = cc;
    if (keys[i].ctas && *keys[i].ctas > 0) c.min_ctas = c.max_ctas = *keys[i].ctas;
    c.cta_policy = policy_of(keys[i], cc);
    comms.push_back(open_comm(g, c));
  }
  return comms;
}

std::optional<model::CtaPolicy> policy_of(const CommKey& key, const rt::CommConfig& cc) {
  return key.policy ? key.policy : cc.cta_policy;
}

RoundsOptions rounds_options(const Options& o, bool lead, std::ostream& progress,
                             std::function<std::string()> what, std::function<std::string()> per) {
  RoundsOptions r;
  r.warmup = o.warmup;
  r.iters = o.iters;
  r.check = o.check;
  r.combine = combine_of(o.average);
  if (!lead || o.quiet) return r;
  r.on_iteration = [&progress, what = std::move(what), per = std::move(per),
                    last_print = std::chrono::steady_clock::now()](int it, int total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print <= std::chrono::seconds(3) && it != total - 1) return;
    last_print = now;
    progress << "# [" << what() << "] iteration " << it + 1 << "/" << total << " (" << per() << ")"
             << std::endl;
  };
  return r;
}

std::vector<double> sum_over_ranks(boot::Group& g, const std::vector<unsigned long long>& counts) {
  std::vector<double> w(counts.begin(), counts.end());
  g.allreduce(w, boot::Group::Op::Sum);
  return w;
}

namespace {
// The range's text, after marking the slot's last run (rank 0, with a trace) before it starts.
std::string mark_and_name(trace::Session* tr, bool lead, const std::string& name,
                          const std::string& suffix, int it, bool last) {
  if (tr && last && lead) tr->mark(name);
  return name + suffix + ", iteration " + std::to_string(it);
}
}  // namespace

RunRange::RunRange(trace::Session* tr, bool lead, const std::string& name, const std::string& suffix,
                   int it, bool last)
    : text_(mark_and_name(tr, lead, name, suffix, it, last)), nvtx_(text_.c_str()) {}

rt::Comm open_comm(boot::Group& g, const rt::CommConfig& cc) {
  ncclUniqueId id{};
  if (g.rank() == 0) id = rt::make_unique_id();
  g.broadcast(&id, sizeof id, 0);
  return rt::Comm(id, g.size(), g.rank(), cc);
}

std::vector<std::unique_ptr<rt::SmPartition>> green_partitions(
    int device, const std::vector<std::optional<int>>& keys, std::vector<std::string>* notes) {
  std::vector<std::unique_ptr<rt::SmPartition>> parts(1);
  for (std::size_t i = 1; i < keys.size(); ++i) {
    const int sms = keys[i].value();  // only [0] is none: every other key is a distinct size
    parts.push_back(std::make_unique<rt::SmPartition>(device, sms));
    if (notes && parts.back()->sms() != sms)
      notes->push_back("green partition of " + std::to_string(sms) + " SMs holds " +
                       std::to_string(parts.back()->sms()) + " (the driver's granularity is " +
                       std::to_string(parts.back()->granularity()) + ")");
  }
  return parts;
}

PadPlan plan_padding(const model::DeviceLimits& lim, const model::Footprint& fp, const void* fn,
                     int blocks_per_sm, std::optional<int64_t> pad, const std::string& what) {
  model::ShapeChoice sc;
  try {
    sc = model::shape_choice(lim, fp, blocks_per_sm, pad.value_or(-1));  // the model's -1: plan it
  } catch (const model::Error& e) {
    throw UsageError(what + ": " + e.what());
  }
  PadPlan p;
  p.pad = sc.pad;
  p.model_bps = sc.model_bps;
  p.note = sc.note;
  rt::allow_dynamic_smem(fn, p.pad);
  p.driver_bps = rt::driver_occupancy(fn, fp.threads, fp.dynamic_smem + p.pad);
  return p;
}

std::unique_ptr<trace::Session> start_trace(const std::string& path) {
  if (path.empty()) return nullptr;
  auto tr = std::make_unique<trace::Session>();
  if (!tr->start()) tr.reset();
  return tr;
}

void finish_trace(trace::Session& tr, const std::string& path, const Ranks& ranks,
                  std::vector<std::string>& notes) {
  CCO_CUDA_CHECK(cudaDeviceSynchronize());
  tr.stop();
  const std::string file = ranks.threads ? path : rank_path(path, ranks.launcher->first_rank());
  tr.write(file);
  if (tr.dropped_records() > 0)
    notes.push_back("trace: CUPTI dropped " + std::to_string(tr.dropped_records()) +
                    " records; the trace is partial");
  notes.push_back("trace: " + std::to_string(tr.kernel_count()) + " kernels, " +
                  std::to_string(tr.range_count()) + " NVTX ranges in " + file);
}

void name_streams(trace::Session& tr, cudaStream_t plain, cudaStream_t side, cudaStream_t low,
                  cudaStream_t high) {
  tr.name_stream(plain, "compute (default priority)");
  tr.name_stream(side, "comm (default priority)");
  tr.name_stream(low, "compute (least priority)");
  tr.name_stream(high, "comm (greatest priority)");
}

CommFacts agree_comm_facts(boot::Group& g, const nlohmann::json& devices) {
  int v = 0;
  ncclGetVersion(&v);  // a failure leaves 0: unknown, not checked
  std::vector<double> ver = {static_cast<double>(v)};
  g.allreduce(ver, boot::Group::Op::Min);
  CommFacts f;
  f.nccl_version = static_cast<int>(ver[0]);
  for (const auto& d : devices)
    if (d.value("host", std::string()) != devices[0].value("host", std::string())) f.one_host = false;
  return f;
}

std::vector<nlohmann::json> PathProbe::probe(boot::Group& g, cudaStream_t s,
                                             const std::vector<Item>& items) {
  for (const auto& it : items) it.enqueue(s);  // the first call may set things up: not probed
  CCO_CUDA_CHECK(cudaStreamSynchronize(s));
  g.barrier();
  {
    // One thread per process starts the session (ranks as threads share it).
    std::lock_guard lk(mu_);
    if (!session_) {
      if (run_trace_ && run_trace_->active()) {
        session_ = run_trace_;
      } else {
        if (!own_) {
          trace::Options to;
          to.nvtx_ranges = false;  // never sets NVTX_INJECTION64_PATH for the probe
          to.print_warnings = false;
          own_ = std::make_unique<trace::Session>(to);
        }
        own_->start();
        session_ = own_.get();
      }
    }
  }
  g.barrier();
  trace::Session* tr = session_;
  for (const auto& it : items) {
    tr->mark(probe_mark(it.label, true), g.rank());
    it.enqueue(s);
    CCO_CUDA_CHECK(cudaStreamSynchronize(s));
    tr->mark(probe_mark(it.label, false), g.rank());
  }
  g.barrier();
  {
    std::lock_guard lk(mu_);
    if (session_ == own_.get()) {
      if (own_->active()) own_->stop();  // flushes; the records stay readable
    } else if (session_) {
      session_->flush();
    }
  }
  g.barrier();
  const trace::Trace t = tr->trace(g.rank());
  const std::string why = tr->warning();
  std::vector<CommPath> paths;
  std::vector<double> v;
  for (const auto& it : items) {
    paths.push_back(classify_comm_path(t, g.rank(), it.label));
    if (!paths.back().known && !why.empty()) paths.back().why = why;
    v.push_back(paths.back().known ? 0 : 1);
    v.push_back(paths.back().nccl_kernels);
    v.push_back(static_cast<double>(paths.back().max_ctas));
    v.push_back(paths.back().allgather_kernels);
  }
  g.allreduce(v, boot::Group::Op::Max);
  g.barrier();
  {
    std::lock_guard lk(mu_);
    session_ = nullptr;
  }
  g.barrier();
  std::vector<nlohmann::json> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    CommPath c = paths[i];
    c.known = v[4 * i] == 0;
    if (!c.known && c.why.empty()) c.why = "another rank could not trace the probe";
    c.nccl_kernels = static_cast<int>(v[4 * i + 1]);
    c.max_ctas = static_cast<int64_t>(v[4 * i + 2]);
    c.allgather_kernels = static_cast<int>(v[4 * i + 3]);
    out.push_back(comm_path_json(c, items[i].split));
  }
  return out;
}

nlohmann::json versions_json() {
  const auto v = rt::versions();
  return {{"cuda_driver", v.driver}, {"cuda_runtime", v.runtime}, {"nccl", v.nccl},
          {"cublaslt", v.cublas},    {"ccoverlap", model::kVersion}};
}

}  // namespace cco::bench
