#include "bench/engine.hpp"

#include <stdexcept>

namespace cco::bench {

void combine_samples(boot::Group& g, std::vector<double>& samples, Combine c) {
  switch (c) {
    case Combine::Rank0:
      g.broadcast(samples.data(), samples.size() * sizeof(double), 0);
      break;
    case Combine::Mean:
      g.allreduce(samples, boot::Group::Op::Sum);
      for (auto& x : samples) x /= g.size();
      break;
    case Combine::Min:
      g.allreduce(samples, boot::Group::Op::Min);
      break;
    case Combine::Max:
      g.allreduce(samples, boot::Group::Op::Max);
      break;
  }
}

std::vector<SlotSamples> run_rounds(Subject& s, boot::Group& g, const RoundsOptions& o) {
  if (o.warmup < 0 || o.iters < 1) throw std::invalid_argument("run_rounds: bad iteration counts");
  const std::size_t n = s.slots();
  std::vector<SlotSamples> out(n);
  const int total = o.warmup + o.iters;
  for (int it = 0; it < total; ++it) {
    const bool last = it == total - 1;
    for (std::size_t k = 0; k < n; ++k) {
      const bool verify = o.check && last && s.verified(k);
      s.before(k, verify);
      g.barrier();
      const RunTimes t = s.run(k, it, last);
      std::vector<unsigned long long> w = s.after(k, verify);
      if (verify) out[k].wrong = std::move(w);
      if (it >= o.warmup) {
        out[k].total.push_back(t.total);
        out[k].comp.push_back(t.comp);
        out[k].comm.push_back(t.comm);
      }
    }
    if (o.on_iteration) o.on_iteration(it, total);
  }
  // Combined over ranks, in slot order on every rank; wrong elements add up (one exchange).
  std::vector<double> wrong;
  for (auto& r : out) {
    combine_samples(g, r.total, o.combine);
    combine_samples(g, r.comp, o.combine);
    combine_samples(g, r.comm, o.combine);
    for (auto x : r.wrong) wrong.push_back(static_cast<double>(x));
  }
  g.allreduce(wrong, boot::Group::Op::Sum);
  std::size_t i = 0;
  for (auto& r : out)
    for (auto& x : r.wrong) x = static_cast<unsigned long long>(wrong[i++]);
  return out;
}

}  // namespace cco::bench
