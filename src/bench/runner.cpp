#include "bench/runner.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <ostream>

#include "bootstrap/bootstrap.hpp"
#include "model/occupancy.hpp"
#include "runtime/check.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "workloads/workload.hpp"

namespace cco::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

/// Times of one measured run on one rank, in microseconds.
struct Sample {
  double total = 0, comp = 0, comm = 0;
};

/// What one rank needs to measure: its streams, events and the two parts.
class RankBench {
 public:
  RankBench(wl::ComputeOp& comp, wl::CommOp& comm)
      : comp_(comp), comm_(comm), plain_(rt::Priority::Default), low_(rt::Priority::Low),
        high_(rt::Priority::High), side_(rt::Priority::Default) {}

  Sample compute_alone() {
    e0_.record(plain_.get());
    comp_.enqueue(plain_.get());
    e1_.record(plain_.get());
    e1_.synchronize();
    const double t = 1e3 * e1_.elapsed_ms_since(e0_);
    return {t, t, 0};
  }
  Sample comm_alone() {
    e0_.record(plain_.get());
    comm_.enqueue(plain_.get());
    e1_.record(plain_.get());
    e1_.synchronize();
    const double t = 1e3 * e1_.elapsed_ms_since(e0_);
    return {t, 0, t};
  }
  Sample sequential() {
    e0_.record(plain_.get());
    comp_.enqueue(plain_.get());
    ec_.record(plain_.get());
    comm_.enqueue(plain_.get());
    e1_.record(plain_.get());
    e1_.synchronize();
    // The collective's own duration here: it starts when the compute part is done.
    return {1e3 * e1_.elapsed_ms_since(e0_), 1e3 * ec_.elapsed_ms_since(e0_),
            1e3 * e1_.elapsed_ms_since(ec_)};
  }
  /// Compute on one stream and the collective on another, forked from one event and joined.
  /// With `priority` the collective's stream has the device's greatest priority and the
  /// compute's the least; otherwise both have the default.
  Sample overlapped(bool priority) {
    cudaStream_t sc = priority ? low_.get() : plain_.get();
    cudaStream_t sm = priority ? high_.get() : side_.get();
    e0_.record(sc);
    CCO_CUDA_CHECK(cudaStreamWaitEvent(sm, e0_.get(), 0));
    comp_.enqueue(sc);
    ec_.record(sc);
    comm_.enqueue(sm);
    em_.record(sm);
    CCO_CUDA_CHECK(cudaStreamWaitEvent(sc, em_.get(), 0));
    e1_.record(sc);
    e1_.synchronize();
    return {1e3 * e1_.elapsed_ms_since(e0_), 1e3 * ec_.elapsed_ms_since(e0_),
            1e3 * em_.elapsed_ms_since(e0_)};
  }
  void poison() {
    comp_.poison(plain_.get());
    comm_.poison(plain_.get());
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
  }
  /// Wrong elements of both parts' current outputs.
  unsigned long long verify(bool reference) {
    CCO_CUDA_CHECK(cudaMemsetAsync(counter_, 0, sizeof(unsigned long long), plain_.get()));
    comp_.verify(counter_, reference, plain_.get());
    comm_.verify(counter_, plain_.get());
    unsigned long long wrong = 0;
    CCO_CUDA_CHECK(cudaMemcpyAsync(&wrong, counter_, sizeof wrong, cudaMemcpyDeviceToHost, plain_.get()));
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
    return wrong;
  }
  void snapshot() {
    comp_.snapshot(plain_.get());
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
  }
  ~RankBench() { cudaFree(counter_); }
  void init_counter() { CCO_CUDA_CHECK(cudaMalloc(&counter_, sizeof(unsigned long long))); }

 private:
  wl::ComputeOp& comp_;
  wl::CommOp& comm_;
  rt::Stream plain_, low_, high_, side_;
  rt::Event e0_, e1_, ec_, em_;
  unsigned long long* counter_ = nullptr;
};

/// A measurement slot of the round-robin: which run, with which shaping.
struct Slot {
  enum Kind { Comp, Comm, Seq, Overlap, CompShaped };
  Slot(Kind k, std::size_t r = 0) : kind(k), row(r) {}
  Kind kind;
  std::size_t row;  // for Overlap / CompShaped: index into the planned rows
  std::vector<double> total, comp, comm;
};

/// A row as planned on a device: the spec and the padding that realises it.
struct Planned {
  RowSpec spec;
  int64_t pad = 0;
  int bps = 0;
};

}  // namespace

Report run(const Options& o, const std::function<void(const Report&, std::size_t)>& on_size_done,
           std::ostream& progress) {
  std::string why;
  const int ndev = rt::device_count(&why);
  if (ndev == 0) throw NoGpu("cco bench needs a CUDA GPU and none is usable here (" + why + ")");
  const int ngpus = o.ngpus == 0 ? ndev : o.ngpus;
  if (ngpus > ndev)
    throw UsageError("-g " + std::to_string(ngpus) + ": only " + std::to_string(ndev) +
                     " GPU(s) visible");

  Report rep;
  rep.argv = o.argv;
  rep.date = iso_now();
  rep.host = hostname();
  rep.nranks = ngpus;
  rep.config = options_json(o);
  rep.collective = model::to_string(o.coll);
  rep.dtype = model::to_string(o.dtype);
  rep.redop = model::to_string(o.op);
  const auto v = rt::versions();
  rep.versions = {{"cuda_driver", v.driver}, {"cuda_runtime", v.runtime}, {"nccl", v.nccl},
                  {"cublaslt", v.cublas}, {"ccoverlap", "0.1.0"}};

  wl::ComputeSpec cs;
  cs.kind = o.compute;
  cs.dtype = o.gemm_dtype;
  cs.m = o.m;
  cs.n = o.n;
  cs.k = o.k;
  cs.count = o.count;
  cs.mem_bytes = o.mem_bytes;
  cs.sm_count_target = o.gemm_sms;
  rt::CommConfig cc;
  cc.min_ctas = o.nccl_min_ctas;
  cc.max_ctas = o.nccl_max_ctas;
  cc.cta_policy = o.nccl_cta_policy;
  cc.cga_cluster_size = o.nccl_cga_cluster;
  if (o.check) {
    wl::CommSpec probe;
    probe.coll = o.coll;
    probe.op = o.op;
    if (!wl::CommOp::checkable(probe))
      throw UsageError(std::string("-c 1 cannot verify reduction '") + model::to_string(o.op) +
                       "' (checked: sum, min, max); use -c 0");
  }

  boot::ThreadLauncher launcher(ngpus);
  rep.bootstrap = launcher.mode();
  const auto all_sizes = sizes(o);

  launcher.run([&](boot::Group& g) {
    const bool lead = g.rank() == 0;
    CCO_CUDA_CHECK(cudaSetDevice(g.device()));
    const auto info = rt::device_info(g.device());
    const auto& lim = info.limits;
    {
      nlohmann::json d = {{"rank", g.rank()},       {"device", g.device()},
                          {"name", info.name},      {"pci_bus_id", info.pci_bus_id},
                          {"sms", lim.sm_count},    {"arch", lim.arch},
                          {"host", rep.host},       {"memory_bytes", info.total_mem},
                          {"stream_priority_range", {info.least_priority, info.greatest_priority}}};
      const auto all = g.allgather(d.dump());
      if (lead)
        for (const auto& s : all) rep.devices.push_back(nlohmann::json::parse(s));
    }
    ncclUniqueId id{};
    if (lead) id = rt::make_unique_id();
    g.broadcast(&id, sizeof id, 0);
    rt::Comm comm(id, g.size(), g.rank(), cc);
    auto comp = wl::make_compute(cs);

    // Rows: shape targets are planned from the kernel's real footprint on this device, and the
    // model's blocks per SM is checked against the driver's for every padding used.
    std::vector<std::string> notes;
    int natural = 0;
    model::Footprint fp;
    if (comp->shapeable()) {
      fp = comp->footprint();
      natural = model::occupancy(lim, fp).blocks_per_sm;
      notes.push_back("compute kernel: " + std::to_string(fp.threads) + " threads, " +
                      std::to_string(fp.regs) + " registers, " + std::to_string(fp.static_smem) +
                      " B static shared memory: " + std::to_string(natural) +
                      " blocks per SM as launched");
    }
    std::vector<Planned> planned;
    for (const auto& s : expand_rows(o, comp->shapeable(), natural, &notes)) {
      Planned p{s, 0, natural};
      if (is_shape(s.mode)) {
        if (s.pad >= 0) {
          p.pad = s.pad;
        } else {
          const auto plan = model::plan_padding(lim, fp, s.blocks_per_sm);
          if (!plan.reachable) notes.push_back(plan.note);
          p.pad = plan.extra;
        }
        model::Footprint padded = fp;
        padded.dynamic_smem = fp.dynamic_smem + p.pad;
        try {
          p.bps = model::occupancy(lim, padded).blocks_per_sm;
        } catch (const model::Error& e) {
          throw UsageError("--pad " + model::format_bytes(p.pad) + ": " + e.what());
        }
        comp->set_extra_smem(p.pad);
        const int drv = rt::driver_occupancy(comp->kernel(), fp.threads, padded.dynamic_smem);
        if (drv != p.bps) {
          notes.push_back("pad " + std::to_string(p.pad) + ": model says " + std::to_string(p.bps) +
                          " blocks per SM, the driver " + std::to_string(drv) + "; using the driver's");
          p.bps = drv;
        }
      }
      planned.push_back(p);
    }
    comp->set_extra_smem(0);
    if (lead) {
      rep.compute = comp->describe();
      rep.notes = notes;
    }

    for (std::size_t si = 0; si < all_sizes.size(); ++si) {
      wl::CommSpec ms;
      ms.coll = o.coll;
      ms.dtype = o.dtype;
      ms.op = o.op;
      const int64_t gran = wl::CommOp::granule(ms, g.size());
      ms.bytes = all_sizes[si] / gran * gran;
      if (ms.bytes == 0)
        throw UsageError("size " + std::to_string(all_sizes[si]) + " B is below one element per rank (" +
                         std::to_string(gran) + " B)");
      wl::CommOp mop(ms, comm);
      RankBench rb(*comp, mop);
      rb.init_counter();

      // Answers computed alone: the references every overlapped run must reproduce exactly.
      unsigned long long wrong_alone = 0;
      if (o.check) {
        rb.poison();
        g.barrier();
        rb.compute_alone();
        rb.comm_alone();
        rb.snapshot();
        wrong_alone = rb.verify(true);
      }

      std::vector<Slot> slots = {{Slot::Comp}, {Slot::Comm}, {Slot::Seq}};
      for (std::size_t r = 0; r < planned.size(); ++r) {
        if (planned[r].spec.mode != Mode::Seq) slots.push_back({Slot::Overlap, r});
        if (planned[r].pad > 0) slots.push_back({Slot::CompShaped, r});
      }
      std::vector<unsigned long long> wrong(planned.size(), 0), wrong_seq(1, 0);
      const int total_iters = o.warmup + o.iters;
      auto last_print = Clock::now();
      for (int it = 0; it < total_iters; ++it) {
        const bool last = it == total_iters - 1;
        for (auto& slot : slots) {
          const bool shaped = slot.kind == Slot::Overlap || slot.kind == Slot::CompShaped;
          comp->set_extra_smem(shaped ? planned[slot.row].pad : 0);
          const bool verify = o.check && last && (slot.kind == Slot::Overlap || slot.kind == Slot::Seq);
          if (verify) rb.poison();
          g.barrier();
          Sample s;
          switch (slot.kind) {
            case Slot::Comp:
            case Slot::CompShaped: s = rb.compute_alone(); break;
            case Slot::Comm: s = rb.comm_alone(); break;
            case Slot::Seq: s = rb.sequential(); break;
            case Slot::Overlap: s = rb.overlapped(is_priority(planned[slot.row].spec.mode)); break;
          }
          if (verify) (slot.kind == Slot::Seq ? wrong_seq[0] : wrong[slot.row]) += rb.verify(false);
          if (it >= o.warmup) {
            slot.total.push_back(s.total);
            slot.comp.push_back(s.comp);
            slot.comm.push_back(s.comm);
          }
        }
        if (lead && !o.quiet && (Clock::now() - last_print > std::chrono::seconds(3) || last)) {
          last_print = Clock::now();
          progress << "# [size " << si + 1 << "/" << all_sizes.size() << " " << model::format_bytes(ms.bytes)
                   << "] iteration " << it + 1 << "/" << total_iters << " (" << slots.size()
                   << " runs each)" << std::endl;
        }
      }
      comp->set_extra_smem(0);

      // A sample is the max over ranks of the same iteration; wrong elements add up.
      for (auto& slot : slots) {
        g.allreduce(slot.total, boot::Group::Op::Max);
        g.allreduce(slot.comp, boot::Group::Op::Max);
        g.allreduce(slot.comm, boot::Group::Op::Max);
      }
      std::vector<double> w(wrong.begin(), wrong.end());
      w.push_back(static_cast<double>(wrong_seq[0] + wrong_alone));
      g.allreduce(w, boot::Group::Op::Sum);

      if (!lead) continue;
      const std::size_t first = rep.rows.size();
      for (std::size_t r = 0; r < planned.size(); ++r) {
        Row row;
        row.bytes = ms.bytes;
        row.count = static_cast<int64_t>(mop.count());
        row.spec = planned[r].spec;
        row.pad = planned[r].pad;
        row.blocks_per_sm = planned[r].bps;
        row.t_comp.samples = slots[0].total;
        row.t_comm.samples = slots[1].total;
        row.t_seq.samples = slots[2].total;
        row.t_comp_alone.samples = slots[0].total;
        row.flops = comp->flops();
        row.comm_busbw_factor = model::busbw_factor(o.coll, g.size());
        row.checked = o.check;
        if (row.spec.mode == Mode::Seq) {
          row.t = row.t_seq;
          row.t_comp_part.samples = slots[2].comp;
          row.t_comm_part.samples = slots[2].comm;
          row.wrong = static_cast<unsigned long long>(w.back());
        } else {
          row.wrong = static_cast<unsigned long long>(w[r]);
        }
        for (const auto& slot : slots) {
          if (slot.row != r) continue;
          if (slot.kind == Slot::Overlap) {
            row.t.samples = slot.total;
            row.t_comp_part.samples = slot.comp;
            row.t_comm_part.samples = slot.comm;
          } else if (slot.kind == Slot::CompShaped) {
            row.t_comp_alone.samples = slot.total;
          }
        }
        rep.rows.push_back(std::move(row));
      }
      on_size_done(rep, first);
    }
  });
  return rep;
}

}  // namespace cco::bench
