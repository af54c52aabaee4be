#include "preload/hook.hpp"

#include <algorithm>
#include <climits>
#include <ctime>

#include "common/log.hpp"

namespace cco::preload {
namespace {

// A driver call through a table entry that may be missing (treated like a failing call).
template <class F, class... A>
CUresult call(F* f, A... a) {
  return f ? f(a...) : CUDA_ERROR_NOT_SUPPORTED;
}

// A per-thread cache in front of the entry map: the steady state of a launch takes no lock.
// Keyed by the hook's id (hooks in tests come and go; an address could be reused) and its
// generation (invalidate()).
struct TlsSlot {
  uint64_t id = 0;
  uint64_t gen = 0;
  void* handle = nullptr;
  int dev = -1;
  void* entry = nullptr;
};
constexpr std::size_t kTlsSlots = 64;
thread_local std::array<TlsSlot, kTlsSlots> t_entries{};
std::atomic<uint64_t> g_next_hook_id{1};
// Set when this launch built an entry or a decision (a first-time, "cold" launch): statistics
// report the steady state apart from them.
thread_local bool t_cold = false;

std::size_t tls_index(const void* h, int dev) {
  auto v = reinterpret_cast<uintptr_t>(h);
  v ^= v >> 17;
  v ^= static_cast<uintptr_t>(dev) * 0x9e3779b9U;
  return static_cast<std::size_t>(v) & (kTlsSlots - 1);
}

std::string short_name(const KernelInfo& k) {
  std::string n = k.demangled.empty() ? k.name : k.demangled;
  if (n.size() > 120) n = n.substr(0, 117) + "...";
  return n;
}

}  // namespace

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

Hook::Hook(const DriverApi& api, plan::Plan plan, HookOptions opts)
    : api_(api), plan_(std::move(plan)), opts_(opts), id_(g_next_hook_id.fetch_add(1)) {
  shaping_ = plan_.shaping.active();
  // Each configuration's statistics say whether it sets a GEMM SM target (the summary's gemm_*
  // fields, and the warning at exit when no cuBLAS call reached the library).
  stats_.gemm_active.store(plan_.gemm.active());
  prio_attr_ = plan_.priority.uses_launch_attr();
  overlap_ = shaping_ && plan_.shaping.when == plan::When::Overlap;
  window_ = opts_.shared_window;
  if (overlap_ && !window_) {
    own_window_ = std::make_unique<CommWindow>(api_, &stats_);
    window_ = own_window_.get();
  }
}

Hook::~Hook() {
  for (auto& l : limits_) delete l.load();
}

void Hook::invalidate() {
  std::unique_lock<std::shared_mutex> lock(map_mu_);
  for (auto& [key, e] : map_) graveyard_.push_back(std::move(e));
  map_.clear();
  gen_.fetch_add(1, std::memory_order_acq_rel);
}

void Hook::add_time(uint64_t t0) {
  if (!t0) return;
  const uint64_t dt = now_ns() - t0;
  stats_.hook_ns.fetch_add(dt, std::memory_order_relaxed);
  if (t_cold) {
    stats_.hook_cold_ns.fetch_add(dt, std::memory_order_relaxed);
    stats_.cold_launches.fetch_add(1, std::memory_order_relaxed);
  }
}

int Hook::greatest_priority() {
  int g = greatest_.load(std::memory_order_acquire);
  if (g != 1) return g;
  int least = 0, greatest = 0;
  const CUresult r = call(api_.ctxGetStreamPriorityRange, &least, &greatest);
  if (r != CUDA_SUCCESS) {
    warn_once("priority-range", "cannot query the stream priority range (" + cu_error_text(r) +
                                    "); NCCL launches keep their priority");
    greatest = 0;
  }
  greatest_.store(greatest, std::memory_order_release);
  return greatest;
}

const model::DeviceLimits* Hook::limits(int dev) {
  if (dev < 0 || dev >= kMaxDevices) return nullptr;
  if (auto* l = limits_[dev].load(std::memory_order_acquire)) return l;
  if (limits_failed_[dev].load()) return nullptr;
  DeviceAttributes a;
  struct Q {
    CUdevice_attribute attr;
    int* out;
  } qs[] = {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &a.cc_major},
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &a.cc_minor},
            {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &a.sm_count},
            {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &a.warp_size},
            {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &a.max_threads_per_block},
            {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &a.max_threads_per_sm},
            {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, &a.max_blocks_per_sm},
            {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &a.regs_per_sm},
            {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &a.regs_per_block},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &a.smem_per_sm},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &a.smem_per_block},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &a.smem_per_block_optin},
            {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, &a.smem_reserved_per_block}};
  for (const auto& q : qs) {
    const CUresult r = call(api_.deviceGetAttribute, q.out, q.attr, static_cast<CUdevice>(dev));
    if (r != CUDA_SUCCESS) {
      limits_failed_[dev].store(true);
      warn_once("device-attr", "cannot query device " + std::to_string(dev) + " (attribute " +
                                   std::to_string(static_cast<int>(q.attr)) + ": " +
                                   cu_error_text(r) + "); its launches are left unchanged");
      return nullptr;
    }
  }
  auto* fresh = new model::DeviceLimits(limits_from_attributes(a));
  model::DeviceLimits* expected = nullptr;
  if (!limits_[dev].compare_exchange_strong(expected, fresh)) {
    delete fresh;
    return expected;
  }
  return fresh;
}

CUresult Hook::get_attr(Entry& e, CUfunction f, int dev, CUfunction_attribute a, int* v) {
  if (!e.is_kernel) {
    const CUresult r = call(api_.funcGetAttribute, v, a, f);
    if (r == CUDA_SUCCESS) return r;
    // The handle may be a context-less CUkernel the driver does not take as a CUfunction.
    if (call(api_.kernelGetAttribute, v, a, reinterpret_cast<CUkernel>(f),
             static_cast<CUdevice>(dev)) == CUDA_SUCCESS) {
      e.is_kernel = true;
      return CUDA_SUCCESS;
    }
    return r;
  }
  return call(api_.kernelGetAttribute, v, a, reinterpret_cast<CUkernel>(f),
              static_cast<CUdevice>(dev));
}

std::unique_ptr<Hook::Entry> Hook::make_entry(CUfunction f, int dev) {
  auto e = std::make_unique<Entry>();
  const char* name = nullptr;
  const CUresult r1 = call(api_.funcGetName, &name, f);
  if (r1 != CUDA_SUCCESS || !name) {
    name = nullptr;
    const CUresult r2 = call(api_.kernelGetName, &name, reinterpret_cast<CUkernel>(f));
    if (r2 != CUDA_SUCCESS || !name) {
      e->fail = Reason::NameFailed;
      warn_once("name", "cannot read a kernel's name (cuFuncGetName: " + cu_error_text(r1) +
                            ", cuKernelGetName: " + cu_error_text(r2) +
                            "); such launches are left unchanged");
      return e;
    }
    e->is_kernel = true;
  }
  e->info.name = name;
  e->info.demangled = demangle(name);
  e->nccl = plan::matches_any(plan_.priority.nccl_kernels, e->info.name, e->info.demangled);
  if (e->nccl) {
    if (opts_.verbose)
      log_line("kernel " + short_name(e->info) + ": NCCL, never padded" +
               (prio_attr_ ? ", launched at the greatest priority" : ""));
    return e;
  }
  if (!shaping_) return e;
  e->denied = plan::matches_any(plan_.shaping.denylist, e->info.name, e->info.demangled);
  e->rule = plan::match_rule(plan_.shaping, e->info.name, e->info.demangled);
  if (e->denied || (e->rule && e->rule->action == plan::RuleAction::Skip)) return e;

  struct Q {
    CUfunction_attribute a;
    int* out;
  };
  int regs = 0, smem = 0, maxt = 0;
  for (const Q& q :
       {Q{CU_FUNC_ATTRIBUTE_NUM_REGS, &regs}, Q{CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &smem},
        Q{CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &maxt}}) {
    const CUresult r = get_attr(*e, f, dev, q.a, q.out);
    if (r != CUDA_SUCCESS) {
      e->fail = Reason::AttrQueryFailed;
      warn_once("func-attr", "cannot query kernel attributes (" + cu_error_text(r) + ") of " +
                                 short_name(e->info) + "; such launches are left unchanged");
      return e;
    }
  }
  e->info.regs = regs;
  e->info.static_smem = smem;
  e->info.max_threads = maxt;
  // A compiled-in cluster size (__cluster_dims__). Older drivers lack these attributes: then
  // only the launch's own cluster attribute tells.
  int cw = 0, ch = 0, cd = 0;
  if (get_attr(*e, f, dev, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, &cw) == CUDA_SUCCESS &&
      get_attr(*e, f, dev, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, &ch) == CUDA_SUCCESS &&
      get_attr(*e, f, dev, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, &cd) == CUDA_SUCCESS) {
    e->info.cluster = static_cast<int64_t>(std::max(cw, 1)) * std::max(ch, 1) * std::max(cd, 1) > 1;
  }
  return e;
}

Hook::Entry* Hook::entry(CUfunction f, int dev) {
  void* const h = reinterpret_cast<void*>(f);
  const uint64_t gen = gen_.load(std::memory_order_acquire);
  TlsSlot& c = t_entries[tls_index(h, dev)];
  if (c.handle == h && c.dev == dev && c.id == id_ && c.gen == gen)
    return static_cast<Entry*>(c.entry);
  const Key key{h, dev};
  Entry* e = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(map_mu_);
    auto it = map_.find(key);
    if (it != map_.end()) e = it->second.get();
  }
  if (!e) {
    // Built outside the lock (driver calls); a racing thread's copy is dropped.
    t_cold = true;
    auto fresh = make_entry(f, dev);
    std::unique_lock<std::shared_mutex> lock(map_mu_);
    auto [it, inserted] = map_.emplace(key, std::move(fresh));
    e = it->second.get();
  }
  c = TlsSlot{id_, gen, h, dev, e};
  return e;
}

Reason Hook::allow_dynamic(Entry& e, CUfunction f, int dev, int64_t dyn) {
  std::lock_guard<std::mutex> lock(e.mu);  // raise only, never race another raise down
  int cur = 0;
  CUresult r = get_attr(e, f, dev, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &cur);
  if (r != CUDA_SUCCESS) {
    warn_once("maxdyn-query", "cannot read MAX_DYNAMIC_SHARED_SIZE_BYTES (" + cu_error_text(r) +
                                  ") of " + short_name(e.info) + "; launch left unchanged");
    return Reason::AttrQueryFailed;
  }
  if (cur >= dyn) {
    e.maxdyn_known.store(cur, std::memory_order_relaxed);
    return Reason::Shaped;
  }
  const int v = static_cast<int>(dyn);
  r = e.is_kernel
          ? call(api_.kernelSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v,
                 reinterpret_cast<CUkernel>(f), static_cast<CUdevice>(dev))
          : call(api_.funcSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v);
  if (r != CUDA_SUCCESS) {
    warn_once("maxdyn-set", "cannot raise MAX_DYNAMIC_SHARED_SIZE_BYTES to " + std::to_string(v) +
                                " (" + cu_error_text(r) + ") for " + short_name(e.info) +
                                "; launch left unchanged");
    return Reason::AttrSetFailed;
  }
  e.maxdyn_known.store(v, std::memory_order_relaxed);
  return Reason::Shaped;
}

Decision Hook::shape_decision(Entry& e, CUfunction f, int dev, const model::DeviceLimits& lim,
                              int threads, unsigned shmem) {
  {
    std::lock_guard<std::mutex> lock(e.mu);
    for (const auto& s : e.shapes)
      if (s.threads == threads && s.shmem == shmem) {
        Decision d;  // the fields the launch needs; the note stays in the cache
        d.reason = s.d.reason;
        d.target = s.d.target;
        d.dynamic_smem = s.d.dynamic_smem;
        d.needs_optin = s.d.needs_optin;
        return d;
      }
  }
  t_cold = true;
  Decision d = decide_shape(plan_.shaping, e.rule, lim, e.info, threads, shmem);
  if (d.reason == Reason::Shaped) {
    // Once per shape: the driver's occupancy with the padding must agree with the model.
    Reason a = d.needs_optin ? allow_dynamic(e, f, dev, d.dynamic_smem) : Reason::Shaped;
    if (a != Reason::Shaped) {
      d.reason = a;
    } else {
      int n = -1;
      const CUresult r = call(api_.occupancyMaxActiveBlocksPerMultiprocessor, &n, f, threads,
                              static_cast<size_t>(d.dynamic_smem));
      if (r != CUDA_SUCCESS) {
        d.reason = Reason::OccupancyFailed;
        warn_once("occupancy", "the driver's occupancy query failed (" + cu_error_text(r) +
                                   "); such launches are left unchanged");
      } else if (n < 1 || (d.target > 0 && n > d.target) || (d.target == 0 && n != d.new_blocks)) {
        d.reason = Reason::ModelMismatch;
        d.note = "driver says " + std::to_string(n) + " blocks per SM with " +
                 std::to_string(d.dynamic_smem) + " B, model " + std::to_string(d.new_blocks);
        warn_once("mismatch:" + e.info.name, "the occupancy model disagrees with the driver for " +
                                                 short_name(e.info) + " (" + d.note +
                                                 "); that kernel is left unchanged");
      }
    }
  }
  if (opts_.verbose) {
    std::string line = "kernel " + short_name(e.info) + ": " + std::to_string(threads) +
                       " threads, " + std::to_string(e.info.regs) + " regs, " +
                       std::to_string(e.info.static_smem) + "+" + std::to_string(shmem) +
                       " B smem: " + std::to_string(d.own_blocks) + " blocks/SM";
    if (d.reason == Reason::Shaped)
      line += " -> " + std::to_string(d.new_blocks) + " with dynamic " +
              std::to_string(d.dynamic_smem) + " B (k=" + std::to_string(d.target) + ")";
    else
      line += std::string(", left (") + to_string(d.reason) +
              (d.note.empty() ? "" : ": " + d.note) + ")";
    log_line(line);
  }
  std::lock_guard<std::mutex> lock(e.mu);
  for (const auto& s : e.shapes)
    if (s.threads == threads && s.shmem == shmem) return s.d;
  e.shapes.push_back(Shape{threads, shmem, d});
  return d;
}

Reason Hook::prepare(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shmem, CUstream stream, bool coop, bool cluster,
                     Prep* p) {
  p->dyn = shmem;
  if (!f) return Reason::ModelError;
  CUdevice dev = 0;
  const CUresult r = call(api_.ctxGetDevice, &dev);
  if (r != CUDA_SUCCESS) {
    warn_once("ctx-device", "cannot tell the device of a launch (" + cu_error_text(r) +
                                "); such launches are left unchanged");
    return Reason::AttrQueryFailed;
  }
  p->dev = static_cast<int>(dev);
  Entry* e = entry(f, p->dev);
  p->e = e;
  e->launches.fetch_add(1, std::memory_order_relaxed);
  if (e->fail != Reason::Shaped) return e->fail;
  if (e->nccl) return Reason::Nccl;
  if (coop) return Reason::Cooperative;
  if (!shaping_) return Reason::PolicyOff;
  if (e->denied) return Reason::Denylist;
  if (e->rule && e->rule->action == plan::RuleAction::Skip) return Reason::RuleSkip;
  if (cluster || e->info.cluster) return Reason::Cluster;
  if (overlap_) {
    // Outside the communication window the launch goes as asked: one atomic load when no NCCL
    // work was recorded since the window last closed.
    if (!window_->maybe_open(p->dev) || !window_->pending(p->dev, now_ns())) return Reason::NoComm;
    // A launch being captured replays later, when this window says nothing.
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    if (call(api_.streamIsCapturing, stream, &cap) != CUDA_SUCCESS ||
        cap != CU_STREAM_CAPTURE_STATUS_NONE)
      return Reason::Captured;
  }
  const model::DeviceLimits* lim = limits(p->dev);
  if (!lim) return Reason::AttrQueryFailed;
  const uint64_t threads = uint64_t{bx} * by * bz;
  if (threads == 0 || threads > INT_MAX) return Reason::ModelError;
  const Decision d = shape_decision(*e, f, p->dev, *lim, static_cast<int>(threads), shmem);
  if (d.reason != Reason::Shaped) return d.reason;
  if (d.target > 0 && small_grid(*lim, uint64_t{gx} * gy * gz, d.target)) return Reason::SmallGrid;
  if (d.needs_optin && e->maxdyn_known.load(std::memory_order_relaxed) < d.dynamic_smem) {
    const Reason a = allow_dynamic(*e, f, p->dev, d.dynamic_smem);
    if (a != Reason::Shaped) return a;
  }
  p->dyn = static_cast<unsigned>(d.dynamic_smem);
  p->optin = d.needs_optin;
  return Reason::Shaped;
}

bool Hook::reraise(const Prep& p, CUfunction f) {
  if (!p.optin) return false;
  // Only when the program lowered the attribute below our size: any other failure is not ours
  // to retry shaped.
  int cur = 0;
  if (get_attr(*p.e, f, p.dev, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &cur) !=
          CUDA_SUCCESS ||
      cur >= static_cast<int64_t>(p.dyn))
    return false;
  p.e->maxdyn_known.store(-1, std::memory_order_relaxed);
  return allow_dynamic(*p.e, f, p.dev, p.dyn) == Reason::Shaped;
}

template <class Shaped, class Original>
CUresult Hook::launch_shaped(const Prep& p, CUfunction f, Shaped shaped, Original original) {
  CUresult r = shaped();
  if (r != CUDA_SUCCESS && reraise(p, f)) r = shaped();
  if (r == CUDA_SUCCESS) {
    stats_.count(Reason::Shaped);
    p.e->shaped.fetch_add(1, std::memory_order_relaxed);
    return r;
  }
  stats_.count(Reason::LaunchRetried);
  warn_once("retry", "a shaped launch of " + short_name(p.e->info) + " failed (" +
                         cu_error_text(r) + "); launched it unchanged");
  return original();
}

CUresult Hook::launch(LaunchKernelFn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                      void** params, void** extra) {
  const uint64_t t0 = opts_.stats ? now_ns() : 0;
  t_cold = false;
  stats_.seen.fetch_add(1, std::memory_order_relaxed);
  Prep p;
  const Reason why = prepare(f, gx, gy, gz, bx, by, bz, shmem, stream, false, false, &p);
  if (why != Reason::Shaped) {
    // cuLaunchKernel has no attribute list: an NCCL kernel launched this way keeps its stream's
    // priority (NCCL itself uses cuLaunchKernelEx on CUDA 11.8+).
    if (why == Reason::Nccl && prio_attr_)
      stats_.nccl_not_prioritised.fetch_add(1, std::memory_order_relaxed);
    stats_.count(why);
    add_time(t0);
    const CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
    if (why == Reason::Nccl && window_ && r == CUDA_SUCCESS) window_->on_nccl_launch(p.dev, stream);
    return r;
  }
  add_time(t0);
  return launch_shaped(
      p, f, [&] { return real(f, gx, gy, gz, bx, by, bz, p.dyn, stream, params, extra); },
      [&] { return real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra); });
}

CUresult Hook::launch_ex(LaunchKernelExFn real, const CUlaunchConfig* config, CUfunction f,
                         void** params, void** extra) {
  if (!config) return real(config, f, params, extra);
  const uint64_t t0 = opts_.stats ? now_ns() : 0;
  t_cold = false;
  stats_.seen.fetch_add(1, std::memory_order_relaxed);
  bool coop = false, cluster = false;
  int prio_at = -1;
  for (unsigned i = 0; i < config->numAttrs && config->attrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.cooperative) coop = true;
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION &&
        uint64_t{a.value.clusterDim.x} * a.value.clusterDim.y * a.value.clusterDim.z > 1)
      cluster = true;
    if (a.id == CU_LAUNCH_ATTRIBUTE_PRIORITY) prio_at = static_cast<int>(i);
  }
  Prep p;
  const Reason why = prepare(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                             config->blockDimX, config->blockDimY, config->blockDimZ,
                             config->sharedMemBytes, config->hStream, coop, cluster, &p);

  if (why == Reason::Nccl) {
    stats_.count(Reason::Nccl);
    if (opts_.stats) {
      int pr = 0;
      if (call(api_.streamGetPriority, config->hStream, &pr) == CUDA_SUCCESS)
        stats_.note_stream_priority(pr);
    }
    CUresult r;
    if (!prio_attr_) {
      add_time(t0);
      r = real(config, f, params, extra);
    } else {
      const int prio = greatest_priority();
      // A copy of the configuration and its attribute list, with the priority set.
      CUlaunchConfig c = *config;
      std::array<CUlaunchAttribute, 16> small{};
      std::vector<CUlaunchAttribute> big;
      const unsigned n = config->attrs ? config->numAttrs : 0;
      const unsigned need = n + (prio_at < 0 ? 1 : 0);
      CUlaunchAttribute* attrs = small.data();
      if (need > small.size()) {
        big.resize(need);
        attrs = big.data();
      }
      for (unsigned i = 0; i < n; ++i) attrs[i] = config->attrs[i];
      CUlaunchAttribute& pa = attrs[prio_at < 0 ? n : static_cast<unsigned>(prio_at)];
      pa.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
      pa.value.priority = prio;
      c.attrs = attrs;
      c.numAttrs = need;
      add_time(t0);
      r = real(&c, f, params, extra);
      if (r == CUDA_SUCCESS) {
        stats_.nccl_prioritised.fetch_add(1, std::memory_order_relaxed);
        stats_.nccl_launch_priority.store(prio, std::memory_order_relaxed);
      } else {
        warn_once("nccl-prio",
                  "the driver rejected CU_LAUNCH_ATTRIBUTE_PRIORITY on an NCCL launch (" +
                      cu_error_text(r) + "); launched it unchanged");
        stats_.nccl_not_prioritised.fetch_add(1, std::memory_order_relaxed);
        r = real(config, f, params, extra);
      }
    }
    if (window_ && r == CUDA_SUCCESS) window_->on_nccl_launch(p.dev, config->hStream);
    return r;
  }
  if (why != Reason::Shaped) {
    stats_.count(why);
    add_time(t0);
    return real(config, f, params, extra);
  }
  CUlaunchConfig c = *config;  // never write the caller's configuration
  c.sharedMemBytes = p.dyn;
  add_time(t0);
  return launch_shaped(
      p, f, [&] { return real(&c, f, params, extra); },
      [&] { return real(config, f, params, extra); });
}

std::vector<std::string> Hook::kernel_report(std::size_t max) const {
  struct Row {
    uint64_t launches, shaped;
    std::string text;
  };
  std::vector<Row> rows;
  {
    std::shared_lock<std::shared_mutex> lock(map_mu_);
    for (const auto& [key, e] : map_) {
      Row r{e->launches.load(), e->shaped.load(), {}};
      std::string what;
      if (e->fail != Reason::Shaped)
        what = to_string(e->fail);
      else if (e->nccl)
        what = "nccl";
      else if (e->denied)
        what = "denylist";
      else {
        std::lock_guard<std::mutex> l(e->mu);
        for (const auto& s : e->shapes) {
          if (!what.empty()) what += ",";
          what += std::to_string(s.threads) + "t:" + to_string(s.d.reason);
          if (s.d.reason == Reason::Shaped)
            what += "(" + std::to_string(s.d.own_blocks) + "->" + std::to_string(s.d.new_blocks) +
                    "/SM,+" + std::to_string(s.d.dynamic_smem - s.shmem) + "B)";
          else if (s.d.own_blocks > 0)
            what += "(" + std::to_string(s.d.own_blocks) + "/SM)";
        }
        if (what.empty()) what = shaping_ ? "no-decision" : "policy-off";
      }
      r.text = "launches=" + std::to_string(r.launches) + " shaped=" + std::to_string(r.shaped) +
               " dev=" + std::to_string(key.dev) + " regs=" + std::to_string(e->info.regs) +
               " smem=" + std::to_string(e->info.static_smem) + " decision=" + what +
               " name=" + short_name(e->info);
      rows.push_back(std::move(r));
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.launches > b.launches; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < rows.size() && i < max; ++i) out.push_back("kernel " + rows[i].text);
  if (rows.size() > max) out.push_back("kernel ... " + std::to_string(rows.size() - max) + " more");
  return out;
}

}  // namespace cco::preload
