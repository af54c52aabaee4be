// Private to the pair runner (runner.cpp): what one rank measures of a compute part and a
// collective -- its streams and events (RankBench), the round-robin's slots, the rows as planned
// on its device, and its runs at one (type, size) as the engine's Subject (PairSubject).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/engine.hpp"
#include "bench/options.hpp"
#include "bench/ranks.hpp"
#include "runtime/check.hpp"
#include "runtime/device.hpp"
#include "runtime/green.hpp"
#include "trace/session.hpp"
#include "kernels/workload.hpp"

namespace cco::bench::pair {

/// Times of one measured run on one rank, in microseconds.
struct Sample {
  double total = 0, comp = 0, comm = 0;
};

/// One run's CUDA graph (-G), made at its first run and kept for the size's runs.
struct RunGraph {
  bool overlapped = false;  ///< compute and collective on two streams (else one after the other)
  cudaGraphExec_t exec = nullptr;
  explicit RunGraph(bool two_streams) : overlapped(two_streams) {}
  RunGraph(RunGraph&& o) noexcept : overlapped(o.overlapped), exec(std::exchange(o.exec, nullptr)) {}
  RunGraph& operator=(RunGraph&&) = delete;
  RunGraph(const RunGraph&) = delete;
  ~RunGraph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

/// What one rank needs to measure: its streams and events. The parts are passed per run, so
/// rows with their own compute budget or communicator share the streams.
class RankBench {
 public:
  RankBench()
      : plain_(rt::Priority::Default), low_(rt::Priority::Low), high_(rt::Priority::High),
        side_(rt::Priority::Default) {
    CCO_CUDA_CHECK(cudaMalloc(&counter_, sizeof(unsigned long long)));
  }
  ~RankBench() { cudaFree(counter_); }
  RankBench(const RankBench&) = delete;
  RankBench& operator=(const RankBench&) = delete;

  /// `part`: a green-context SM partition for the compute part (nullptr: the whole device).
  Sample compute_alone(wl::ComputeOp& c, const rt::SmPartition* part = nullptr) {
    cudaStream_t s = part ? part->stream() : plain_.get();
    e0_.record(s);
    c.enqueue(s);
    e1_.record(s);
    e1_.synchronize();
    const double t = 1e3 * e1_.elapsed_ms_since(e0_);
    return {t, t, 0};
  }
  cudaStream_t stream() const { return plain_.get(); }
  /// `in_place`: the collective's in-place run (wl::CommSpec::in_place).
  Sample comm_alone(wl::CommOp& m, bool in_place = false) {
    e0_.record(plain_.get());
    if (in_place) {
      m.enqueue_in_place(plain_.get());
    } else {
      m.enqueue(plain_.get());
    }
    e1_.record(plain_.get());
    e1_.synchronize();
    const double t = 1e3 * e1_.elapsed_ms_since(e0_);
    return {t, 0, t};
  }
  Sample sequential(wl::ComputeOp& c, wl::CommOp& m) {
    e0_.record(plain_.get());
    c.enqueue(plain_.get());
    ec_.record(plain_.get());
    m.enqueue(plain_.get());
    e1_.record(plain_.get());
    e1_.synchronize();
    // The collective's own duration here: it starts when the compute part is done.
    return {1e3 * e1_.elapsed_ms_since(e0_), 1e3 * ec_.elapsed_ms_since(e0_),
            1e3 * e1_.elapsed_ms_since(ec_)};
  }
  /// Compute on one stream and the collective on another, forked from one event and joined.
  /// With `priority` the collective's stream has the device's greatest priority and the
  /// compute's the least; otherwise both have the default.
  Sample overlapped(wl::ComputeOp& c, wl::CommOp& m, bool priority,
                    const rt::SmPartition* part = nullptr) {
    cudaStream_t sc = part ? part->stream() : priority ? low_.get() : plain_.get();
    cudaStream_t sm = priority ? high_.get() : side_.get();
    e0_.record(sc);
    CCO_CUDA_CHECK(cudaStreamWaitEvent(sm, e0_.get(), 0));
    c.enqueue(sc);
    ec_.record(sc);
    m.enqueue(sm);
    em_.record(sm);
    CCO_CUDA_CHECK(cudaStreamWaitEvent(sc, em_.get(), 0));
    e1_.record(sc);
    e1_.synchronize();
    return {1e3 * e1_.elapsed_ms_since(e0_), 1e3 * ec_.elapsed_ms_since(e0_),
            1e3 * em_.elapsed_ms_since(e0_)};
  }

  /// A run as a CUDA graph (-G): what the run enqueues, captured once from the stream it starts
  /// on into `g` (its fork and join become the graph's edges, each stream's priority its kernel
  /// nodes' priority), then replayed `launches` times back to back. The whole is timed from
  /// outside; the parts (compute done, collective done, from the run's start) are those of the
  /// last replay, from event nodes the graph records. The same runs as the stream methods above,
  /// with the launch overheads out.
  Sample graphed(RunGraph& g, int launches, wl::ComputeOp* c, wl::CommOp* m, bool priority) {
    cudaStream_t origin = c && m && g.overlapped && priority ? low_.get() : plain_.get();
    if (!g.exec) capture(g, origin, c, m, priority);
    e0_.record(origin);
    for (int i = 0; i < launches; ++i) CCO_CUDA_CHECK(cudaGraphLaunch(g.exec, origin));
    e1_.record(origin);
    e1_.synchronize();
    const double total = 1e3 * e1_.elapsed_ms_since(e0_) / launches;
    if (c && m && g.overlapped)
      return {total, 1e3 * ec_.elapsed_ms_since(g0_), 1e3 * em_.elapsed_ms_since(g0_)};
    if (c && m)  // sequential: the collective starts when the compute part is done
      return {total, 1e3 * ec_.elapsed_ms_since(g0_), 1e3 * gend_.elapsed_ms_since(ec_)};
    return {total, c ? total : 0, c ? 0 : total};
  }

  /// `in_place`: the collective's in-place run alone, whose input is refilled instead (the run
  /// overwrote it) and the rest of its output poisoned.
  void poison(wl::ComputeOp& c, wl::CommOp& m, bool in_place = false) {
    if (in_place) {
      m.refill_in_place(plain_.get());
    } else {
      c.poison(plain_.get());
      m.poison(plain_.get());
    }
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
  }
  /// Wrong elements of both parts' current outputs (`in_place`: the in-place run's output alone).
  unsigned long long verify(wl::ComputeOp& c, wl::CommOp& m, bool reference,
                            bool in_place = false) {
    CCO_CUDA_CHECK(cudaMemsetAsync(counter_, 0, sizeof(unsigned long long), plain_.get()));
    if (in_place) {
      m.verify_in_place(counter_, plain_.get());
    } else {
      c.verify(counter_, reference, plain_.get());
      m.verify(counter_, plain_.get());
    }
    unsigned long long wrong = 0;
    CCO_CUDA_CHECK(cudaMemcpyAsync(&wrong, counter_, sizeof wrong, cudaMemcpyDeviceToHost, plain_.get()));
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
    return wrong;
  }
  /// Labels the streams in a kernel trace (with their priorities).
  void name_streams(trace::Session& tr) {
    bench::name_streams(tr, plain_.get(), side_.get(), low_.get(), high_.get());
  }
  void snapshot(wl::ComputeOp& c) {
    c.snapshot(plain_.get());
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
  }

 private:
  // An event node of the graph being captured (an external record: its time can be read).
  static void mark(rt::Event& e, cudaStream_t s) {
    CCO_CUDA_CHECK(cudaEventRecordWithFlags(e.get(), s, cudaEventRecordExternal));
  }
  // Captures the run of `c` and/or `m` (both: sequential, or overlapped when g.overlapped) from
  // `origin` into g.exec. Thread-local capture: ranks that are threads capture at once.
  void capture(RunGraph& g, cudaStream_t origin, wl::ComputeOp* c, wl::CommOp* m, bool priority) {
    cudaGraph_t graph = nullptr;
    CCO_CUDA_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    try {
      mark(g0_, origin);
      if (c && m && g.overlapped) {
        cudaStream_t sm = priority ? high_.get() : side_.get();
        fork_.record(origin);
        CCO_CUDA_CHECK(cudaStreamWaitEvent(sm, fork_.get(), 0));
        c->enqueue(origin);
        mark(ec_, origin);
        m->enqueue(sm);
        mark(em_, sm);
        join_.record(sm);
        CCO_CUDA_CHECK(cudaStreamWaitEvent(origin, join_.get(), 0));
      } else {
        if (c) c->enqueue(origin);
        if (c && m) mark(ec_, origin);
        if (m) m->enqueue(origin);
      }
      mark(gend_, origin);
    } catch (...) {
      cudaStreamEndCapture(origin, &graph);  // leaves the stream usable; the error goes on
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    CCO_CUDA_CHECK(cudaStreamEndCapture(origin, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
    cudaGraphDestroy(graph);
    if (made == cudaSuccess) made = cudaGraphUpload(exec, origin);
    if (made != cudaSuccess && exec) cudaGraphExecDestroy(exec);
    CCO_CUDA_CHECK(made);
    g.exec = exec;  // only a graph that is ready to replay
  }

  rt::Stream plain_, low_, high_, side_;
  rt::Event e0_, e1_, ec_, em_;
  rt::Event g0_, gend_, fork_, join_;  // a graph's start and end marks, its fork and join
  unsigned long long* counter_ = nullptr;
};

/// A measurement slot of the round-robin: which run, with which parts and shaping.
struct Slot {
  enum Kind { Comp, Comm, Seq, CommInPlace, Overlap, CompAlone, CommAlone };
  Slot(Kind k, std::size_t r = 0) : kind(k), row(r) {}
  Kind kind;
  std::size_t row;  // for Overlap / CompAlone / CommAlone: index into the planned rows
  std::vector<double> total, comp, comm;
  std::string name;  // in traces: the mark and the NVTX ranges ("concurrent", "seq", ...)
};

/// A row as planned on a device: the spec, the padding that realises it and its parts.
struct Planned {
  RowSpec spec;
  int64_t pad = 0;
  int bps = 0;
  std::size_t comp = 0;  // index into the rank's compute parts (0: the run's own)
  std::size_t comm = 0;  // index into the rank's communicators (0: the run's own)
  std::size_t green = 0;  // index into the rank's SM partitions (0: none)
};


/// The rows as planned on a rank's device, and the distinct budget variants they need (index 0
/// of each list is the run's own setting).
struct RowPlan {
  std::vector<Planned> planned;
  std::vector<std::optional<int>> sms_keys = {std::nullopt};
  std::vector<std::optional<int>> green_keys = {std::nullopt};
  /// A communicator per distinct (CTA count, buffer registration, CTA policy).
  std::vector<CommKey> comm_keys = {CommKey{}};
};

/// One rank's runs of a pair at one size, as the engine's Subject (engine.hpp): the slots of
/// make_slots, each with its parts (the row's compute variant and communicator, or the run's
/// own) and its padding from before() to after(), timed by RankBench; seq, the overlapped rows
/// and the in-place run are verified. Each run is an NVTX range "<slot><suffix>, iteration <i>",
/// the slot's last one a trace mark (RunRange).
class PairSubject final : public Subject {
 public:
  PairSubject(RankBench& rb, const std::vector<Slot>& slots, const std::vector<Planned>& planned,
              const std::vector<std::unique_ptr<wl::ComputeOp>>& comps,
              const std::vector<std::unique_ptr<wl::CommOp>>& mops,
              const std::vector<std::unique_ptr<rt::SmPartition>>& parts, trace::Session* tr,
              bool lead, std::string suffix, int graph_launches = 0)
      : rb_(rb), slots_(slots), planned_(planned), comps_(comps), mops_(mops), parts_(parts),
        tr_(tr), lead_(lead), suffix_(std::move(suffix)), launches_(graph_launches) {
    if (launches_ > 0)
      for (const Slot& slot : slots_) graphs_.emplace_back(slot.kind == Slot::Overlap);
  }

  std::size_t slots() const override { return slots_.size(); }
  bool verified(std::size_t k) const override {
    const auto kind = slots_[k].kind;
    return kind == Slot::Overlap || kind == Slot::Seq || kind == Slot::CommInPlace;
  }
  void before(std::size_t k, bool verify) override {
    const Slot& slot = slots_[k];
    const Parts x = parts_of(slot);
    const int64_t pad = x.p && slot.kind != Slot::CommAlone ? x.p->pad : 0;
    if (x.comp.shapeable()) x.comp.set_extra_smem(pad);
    if (verify) rb_.poison(x.comp, x.mop, slot.kind == Slot::CommInPlace);
  }
  RunTimes run(std::size_t k, int it, bool last) override {
    const Slot& slot = slots_[k];
    const Parts x = parts_of(slot);
    const RunRange range(tr_, lead_, slot.name, suffix_, it, last);
    rt::SmPartition* part = x.p ? parts_[x.p->green].get() : nullptr;
    if (launches_ > 0 && slot.kind != Slot::CommInPlace) {
      // -G (options.cpp refuses it with --in-place 1 and --green-sms, which cannot be captured)
      if (part) throw UsageError("-G: a run in a green partition cannot be captured as a graph");
      const bool comp = slot.kind != Slot::Comm && slot.kind != Slot::CommAlone;
      const bool comm = slot.kind != Slot::Comp && slot.kind != Slot::CompAlone;
      const bool prio = slot.kind == Slot::Overlap && is_priority(x.p->spec.mode);
      const Sample s = rb_.graphed(graphs_[k], launches_, comp ? &x.comp : nullptr,
                                   comm ? &x.mop : nullptr, prio);
      return {s.total, s.comp, s.comm};
    }
    Sample s;
    switch (slot.kind) {
      case Slot::Comp:
      case Slot::CompAlone: s = rb_.compute_alone(x.comp, part); break;
      case Slot::Comm:
      case Slot::CommAlone: s = rb_.comm_alone(x.mop); break;
      case Slot::CommInPlace: s = rb_.comm_alone(x.mop, true); break;
      case Slot::Seq: s = rb_.sequential(x.comp, x.mop); break;
      case Slot::Overlap: s = rb_.overlapped(x.comp, x.mop, is_priority(x.p->spec.mode), part); break;
    }
    return {s.total, s.comp, s.comm};
  }
  std::vector<unsigned long long> after(std::size_t k, bool verify) override {
    const Parts x = parts_of(slots_[k]);
    if (x.comp.shapeable()) x.comp.set_extra_smem(0);
    std::vector<unsigned long long> w;
    if (verify) w.push_back(rb_.verify(x.comp, x.mop, false, slots_[k].kind == Slot::CommInPlace));
    return w;
  }

  /// Each compute part's answer computed alone (with the run's collective alone beside it, every
  /// rank together), kept as the reference every overlapped run must reproduce exactly; the
  /// wrong elements of each reference check.
  std::vector<unsigned long long> reference(boot::Group& g) {
    std::vector<unsigned long long> wrong(comps_.size(), 0);
    wl::CommOp& mop0 = *mops_[0];
    for (std::size_t c = 0; c < comps_.size(); ++c) {
      rb_.poison(*comps_[c], mop0);
      g.barrier();
      rb_.compute_alone(*comps_[c]);
      rb_.comm_alone(mop0);
      rb_.snapshot(*comps_[c]);
      wrong[c] = rb_.verify(*comps_[c], mop0, true);
    }
    return wrong;
  }

 private:
  struct Parts {
    const Planned* p;  // null for the size's baselines (the run's own parts)
    wl::ComputeOp& comp;
    wl::CommOp& mop;
  };
  Parts parts_of(const Slot& slot) const {
    const Planned* p = slot.kind >= Slot::Overlap ? &planned_[slot.row] : nullptr;
    return {p, *comps_[p ? p->comp : 0], *mops_[p ? p->comm : 0]};
  }

  RankBench& rb_;
  const std::vector<Slot>& slots_;
  const std::vector<Planned>& planned_;
  const std::vector<std::unique_ptr<wl::ComputeOp>>& comps_;
  const std::vector<std::unique_ptr<wl::CommOp>>& mops_;
  const std::vector<std::unique_ptr<rt::SmPartition>>& parts_;
  trace::Session* tr_;
  bool lead_;
  std::string suffix_;
  int launches_ = 0;               // -G: replays per run (0: runs on streams)
  std::vector<RunGraph> graphs_;   // -G: one per slot, captured at its first run
};

}  // namespace cco::bench::pair
