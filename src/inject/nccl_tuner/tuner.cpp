#include "nccl_tuner/tuner.hpp"


#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "common/log.hpp"

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

namespace {
// The preload library's cco_config_index, when it is loaded (dlsym: never linked).
ConfigIndexFn library_index() {
  return reinterpret_cast<ConfigIndexFn>(::dlsym(RTLD_DEFAULT, "cco_config_index"));
}
}  // namespace

const plan::Nccl& Context::nccl() const {
  if (configs_.empty()) return nccl_;
  return configs_[static_cast<std::size_t>(config_in_force())];
}

bool Context::active() const {
  for (const auto& c : configs_)
    if (!c.channels.empty()) return true;
  return !nccl_.channels.empty();
}

int Context::config_in_force() const {
  const int i = index_ ? index_() : -1;
  return i >= 0 && static_cast<std::size_t>(i) < configs_.size() ? i : 0;
}

std::unique_ptr<Context> Context::create(const GetEnv& get, ccoNcclDebugLogger_t logger,
                                         std::uint64_t comm_id, std::size_t nranks,
                                         std::size_t nnodes, ConfigIndexFn index) noexcept {
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
    if (env.compare.size() > 1) {
      // A rotation: every item's section, as the preload library resolves them (it runs 'off'
      // throughout when any item cannot rotate, and so does this).
      std::string name;
      for (const auto& item : env.compare) name += (name.empty() ? "" : ",") + item;
      c->policy_ = "compare(" + name + ")";
      std::vector<plan::Nccl> configs;
      for (const auto& item : env.compare) {
        plan::Plan p;
        std::string why;
        try {
          p = preload::resolve_compare_item(item, env.method);
          why = plan::rotation_refusal(p);
        } catch (const std::exception& e) {
          why = e.what();
        }
        if (!why.empty()) {
          warn_once(logger, "CCO_COMPARE: '" + item + "' cannot rotate: " + why +
                                "; NCCL's channel choice is kept");
          return c;
        }
        configs.push_back(std::move(p.nccl));
      }
      if (configs.size() > static_cast<std::size_t>(kMaxConfigs)) {
        warn_once(logger, "CCO_COMPARE has more than " + std::to_string(kMaxConfigs) +
                              " items; NCCL's channel choice is kept");
        return c;
      }
      bool any = false;
      for (const auto& n : configs) any = any || n.uses_tuner();
      if (!any) return c;
      c->index_ = index ? index : library_index();
      if (!c->index_) {
        warn_once(logger, "the preload library (cco_config_index) is not loaded: the "
                          "comparison's channel caps cannot follow its configurations; NCCL's "
                          "channel choice is kept");
        return c;
      }
      c->configs_ = std::move(configs);
      if (logger)
        logger(ccoNcclLogInfo, CCO_NCCL_SUBSYS_INIT | CCO_NCCL_SUBSYS_TUNING, __FILE__, __LINE__,
               "cco-tuner: %s: channel caps per configuration for comm %" PRIx64
               " (%zu ranks, %zu nodes)",
               c->policy_.c_str(), comm_id, nranks, nnodes);
      return c;
    }
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
    if (c) {
      c->nccl_.channels.clear();
      c->configs_.clear();
    }
    warn_once(logger,
              std::string("internal error: ") + e.what() + "; NCCL's channel choice is kept");
  } catch (...) {
    if (c) {
      c->nccl_.channels.clear();
      c->configs_.clear();
    }
    warn_once(logger, "internal error; NCCL's channel choice is kept");
  }
  return c;
}

void Context::get_coll_info(int coll_type, std::size_t bytes, int* n_channels) noexcept {
  const int slot = collective_index(coll_type);
  stats_.calls[slot].fetch_add(1, std::memory_order_relaxed);
  if (!n_channels) return;
  const int config = configs_.empty() ? 0 : config_in_force();
  const plan::Nccl& n = configs_.empty() ? nccl_ : configs_[static_cast<std::size_t>(config)];
  const Decision d = decide(n, coll_type, bytes, *n_channels);
  if (!d.set) return;
  *n_channels = d.channels;
  stats_.capped[slot].fetch_add(1, std::memory_order_relaxed);
  stats_.capped_by_config[static_cast<std::size_t>(config)].fetch_add(1, std::memory_order_relaxed);
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
  if (!configs_.empty()) {
    line += " configs=";
    for (std::size_t i = 0; i < configs_.size(); ++i) {
      if (i) line += '/';
      line += std::to_string(stats_.capped_by_config[i].load(std::memory_order_relaxed));
    }
  }
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
