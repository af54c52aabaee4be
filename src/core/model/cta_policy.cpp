#include "model/cta_policy.hpp"

#include "model/limits.hpp"

namespace cco::model {

int cta_policy_min_version(CtaPolicy p) {
  switch (p) {
    case CtaPolicy::Default: return 0;
    case CtaPolicy::Efficiency: return 22700;
    case CtaPolicy::Zero: return 22800;
  }
  return 0;
}

bool copy_engine_collective(Collective c) {
  return c == Collective::AllGather || c == Collective::AllToAll || c == Collective::Gather ||
         c == Collective::Scatter;
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "unknown";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

bool zero_splits(CtaPolicy p, Collective c) {
  return p == CtaPolicy::Zero && c == Collective::AllReduce;
}

std::string cta_policy_refusal(CtaPolicy p, Collective c, int nccl_version, bool one_host,
                               bool split) {
  const int need = cta_policy_min_version(p);
  if (nccl_version > 0 && nccl_version < need)
    return std::string("CTA policy ") + to_string(p) + " needs NCCL " + nccl_version_text(need) +
           " or newer; the ranks load " + nccl_version_text(nccl_version);
  if (p != CtaPolicy::Zero) return {};
  if (!copy_engine_collective(c) && !(split && zero_splits(p, c)))
    return std::string("CTA policy zero: NCCL runs only allgather, alltoall, gather and scatter on "
                       "the copy engines; ") +
           to_string(c) + " would run on SMs" +
           (zero_splits(p, c) ? " (rows split it: --nccl-cta-policy default,zero)" : "");
  if (!one_host)
    return "CTA policy zero: the copy engines reach only peers in one NVLink domain; the ranks "
           "span several hosts";
  return {};
}

}  // namespace cco::model
