#include "tuner/tuner.hpp"


#include <cinttypes>
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "preload/config.hpp"
#include "preload/log.hpp"

namespace cco::tuner {
namespace {

// The shared configuration code words its warnings for the preload library: where it means "no
// plan" ("; running unshaped"), say what that means for the tuner. Other warnings (a bad CCO_STATS)
// do not stop the caps and stay as they are.
std::string for_tuner(std::string w) {
  constexpr std::string_view kUnshaped = "; running unshaped";
  if (w.size() >= kUnshaped.size() &&
      w.compare(w.size() - kUnshaped.size(), kUnshaped.size(), kUnshaped) == 0) {
    w.resize(w.size() - kUnshaped.size());
    w += "; NCCL's channel choice is kept";
  }
  return w;
}

}  // namespace

void set_line_sink(LineSink sink) {
  preload::set_log_sink(sink);
}

bool warn_once(ccoNcclDebugLogger_t logger, const std::string& msg) noexcept {
  try {
    if (!preload::first_time(msg)) return false;
    const std::string line = "cco-tuner: warning: " + msg;
    if (logger)
      logger(ccoNcclLogWarn, CCO_NCCL_SUBSYS_ALL, __FILE__, __LINE__, "%s", line.c_str());
    else
      preload::write_line(line + "\n");
    return true;
  } catch (...) {
    return false;
  }
}

void reset_warnings() noexcept {
  preload::reset_warnings();
}

std::unique_ptr<Context> Context::create(const GetEnv& get, ccoNcclDebugLogger_t logger,
                                         std::uint64_t comm_id, std::size_t nranks,
                                         std::size_t nnodes) noexcept {
  std::unique_ptr<Context> c;
  try {
    c.reset(new Context());
    c->logger_ = logger;
    c->comm_id_ = comm_id;
    const preload::EnvConfig env = preload::read_env(get);
    for (const auto& w : env.warnings) warn_once(logger, for_tuner(w));
    if (env.disabled) {
      c->policy_ = "disabled";
      return c;
    }
    c->stats_on_ = env.stats > 0;
    std::vector<std::string> warnings;
    plan::Plan p = preload::resolve_plan(env, &warnings);
    for (const auto& w : warnings) warn_once(logger, for_tuner(w));
    c->policy_ = p.policy;
    if (env.bad || !warnings.empty()) return c;  // the "off" plan: caps nothing
    c->nccl_ = std::move(p.nccl);
    if (logger && c->active())
      logger(ccoNcclLogInfo, CCO_NCCL_SUBSYS_INIT | CCO_NCCL_SUBSYS_TUNING, __FILE__, __LINE__,
             "cco-tuner: policy %s: %zu channel rule(s) for comm %" PRIx64
             " (%zu ranks, %zu nodes)",
             c->policy_.c_str(), c->nccl_.channels.size(), comm_id, nranks, nnodes);
  } catch (const std::exception& e) {
    if (c) c->nccl_.channels.clear();
    warn_once(logger,
              std::string("internal error: ") + e.what() + "; NCCL's channel choice is kept");
  } catch (...) {
    if (c) c->nccl_.channels.clear();
    warn_once(logger, "internal error; NCCL's channel choice is kept");
  }
  return c;
}

void Context::get_coll_info(int coll_type, std::size_t bytes, int* n_channels) noexcept {
  const int slot = collective_index(coll_type);
  stats_.calls[slot].fetch_add(1, std::memory_order_relaxed);
  if (!n_channels) return;
  const Decision d = decide(nccl_, coll_type, bytes, *n_channels);
  if (!d.set) return;
  *n_channels = d.channels;
  stats_.capped[slot].fetch_add(1, std::memory_order_relaxed);
}

std::string Context::stats_line() const {
  std::uint64_t calls = 0, capped = 0;
  std::string by;
  for (int i = 0; i < kCollectiveSlots; ++i) {
    const auto n = stats_.calls[i].load(std::memory_order_relaxed);
    const auto k = stats_.capped[i].load(std::memory_order_relaxed);
    calls += n;
    capped += k;
    if (n == 0) continue;
    by += ' ';
    by += i + 1 < kCollectiveSlots ? collective_name(i) : std::string_view("other");
    by += '=';
    by += std::to_string(n);
    by += '/';
    by += std::to_string(k);
  }
  char head[160];
  std::snprintf(head, sizeof head,
                "cco-tuner: stats pid=%d comm=%" PRIx64 " calls=%" PRIu64 " capped=%" PRIu64,
                static_cast<int>(::getpid()), comm_id_, calls, capped);
  std::string line(head);
  line += by;
  line += " policy=";
  line += policy_;
  return line;
}

void Context::finalize() noexcept {
  if (!stats_on_) return;
  try {
    preload::write_line(stats_line() + "\n");
  } catch (...) {
  }
}

}  // namespace cco::tuner
