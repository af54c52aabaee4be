#include "bench/ranks.hpp"

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

rt::Comm open_comm(boot::Group& g, const rt::CommConfig& cc) {
  ncclUniqueId id{};
  if (g.rank() == 0) id = rt::make_unique_id();
  g.broadcast(&id, sizeof id, 0);
  return rt::Comm(id, g.size(), g.rank(), cc);
}

std::vector<std::unique_ptr<rt::SmPartition>> green_partitions(int device,
                                                               const std::vector<int>& keys,
                                                               std::vector<std::string>* notes) {
  std::vector<std::unique_ptr<rt::SmPartition>> parts(1);
  for (std::size_t i = 1; i < keys.size(); ++i) {
    parts.push_back(std::make_unique<rt::SmPartition>(device, keys[i]));
    if (notes && parts.back()->sms() != keys[i])
      notes->push_back("green partition of " + std::to_string(keys[i]) + " SMs holds " +
                       std::to_string(parts.back()->sms()) + " (the driver's granularity is " +
                       std::to_string(parts.back()->granularity()) + ")");
  }
  return parts;
}

PadPlan plan_padding(const model::DeviceLimits& lim, const model::Footprint& fp, const void* fn,
                     int blocks_per_sm, int64_t pad, const std::string& what) {
  model::ShapeChoice sc;
  try {
    sc = model::shape_choice(lim, fp, blocks_per_sm, pad);
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

nlohmann::json versions_json() {
  const auto v = rt::versions();
  return {{"cuda_driver", v.driver}, {"cuda_runtime", v.runtime}, {"nccl", v.nccl},
          {"cublaslt", v.cublas},    {"ccoverlap", model::kVersion}};
}

}  // namespace cco::bench
