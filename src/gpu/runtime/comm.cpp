#include "runtime/comm.hpp"

#include <utility>

#include "runtime/check.hpp"
#include "runtime/lazy.hpp"

namespace cco::rt {

std::string describe(const CommConfig& c) {
  std::string s;
  auto add = [&](const char* k, std::optional<int> v) {
    if (!v) return;
    if (!s.empty()) s += ' ';
    s += k;
    s += '=';
    s += std::to_string(*v);
  };
  add("minCTAs", c.min_ctas);
  add("maxCTAs", c.max_ctas);
  add("cgaClusterSize", c.cga_cluster_size);
  if (c.cta_policy) add("CTAPolicy", model::cta_policy_number(c.cta_policy));
  return s.empty() ? "default" : s;
}

Comm::Comm(const ncclUniqueId& id, int nranks, int rank, const CommConfig& cfg)
    : nranks_(nranks), rank_(rank) {
  require(Lib::Nccl, "an NCCL communicator");
  ncclConfig_t conf = NCCL_CONFIG_INITIALIZER;
  conf.blocking = cfg.blocking ? 1 : 0;
  if (cfg.min_ctas) conf.minCTAs = *cfg.min_ctas;
  if (cfg.max_ctas) conf.maxCTAs = *cfg.max_ctas;
  if (cfg.cga_cluster_size) conf.cgaClusterSize = *cfg.cga_cluster_size;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  if (cfg.cta_policy) conf.CTAPolicy = static_cast<int>(*cfg.cta_policy);  // NCCL_CTA_POLICY_*
#else
  if (cfg.cta_policy) throw Error("CTAPolicy needs NCCL 2.27 or newer");
#endif
  CCO_NCCL_CHECK(ncclCommInitRankConfig(&c_, nranks, id, rank, &conf));
}

Comm::~Comm() {
  if (c_) ncclCommDestroy(c_);
}
Comm::Comm(Comm&& o) noexcept
    : c_(std::exchange(o.c_, nullptr)), nranks_(o.nranks_), rank_(o.rank_) {}
Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    if (c_) ncclCommDestroy(c_);
    c_ = std::exchange(o.c_, nullptr);
    nranks_ = o.nranks_;
    rank_ = o.rank_;
  }
  return *this;
}

Registration::Registration(ncclComm_t comm, void* buf, std::size_t bytes, model::CommRegister how)
    : comm_(comm), how_(how) {
  if (how == model::CommRegister::Buffer) {
    CCO_NCCL_CHECK(ncclCommRegister(comm, buf, bytes, &handle_));
  } else if (how == model::CommRegister::Window) {
    ncclWindow_t w = nullptr;
    CCO_NCCL_CHECK(ncclCommWindowRegister(comm, buf, bytes, &w, NCCL_WIN_COLL_SYMMETRIC));
    handle_ = w;
  }
}

Registration::Registration(Registration&& o) noexcept
    : comm_(o.comm_), handle_(std::exchange(o.handle_, nullptr)), how_(o.how_) {}

Registration& Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    reset();
    comm_ = o.comm_;
    handle_ = std::exchange(o.handle_, nullptr);
    how_ = o.how_;
  }
  return *this;
}

void Registration::reset() noexcept {
  if (!handle_) return;
  if (how_ == model::CommRegister::Window)
    ncclCommWindowDeregister(comm_, static_cast<ncclWindow_t>(handle_));
  else
    ncclCommDeregister(comm_, handle_);
  handle_ = nullptr;
}

ncclUniqueId make_unique_id() {
  require(Lib::Nccl, "an NCCL communicator");
  ncclUniqueId id;
  CCO_NCCL_CHECK(ncclGetUniqueId(&id));
  return id;
}

}  // namespace cco::rt
