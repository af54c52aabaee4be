// Workload files (cco::workload::parse_step, what load_step calls on a file's text): `cco bench
// --workload FILE`. Contract: returns a Step or throws workload::StepError (a model::Error); what a
// parsed step is then used for (layout, summary, JSON, T_ideal) never fails on it.
#include "fuzz_common.hpp"
#include "workload/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  // Options vary with the input's length so the corpus covers 1, 2, 4 and 8 ranks, with and
  // without verification buffers and the memory check, without consuming the JSON's bytes.
  workload::StepLoadOptions opt;
  opt.nranks = 1 << (size % 4);
  opt.check = (size / 4) % 2 == 0;
  opt.gpu_memory = (size / 8) % 2 == 0 ? int64_t{141} << 30 : 0;
  workload::Step step;
  try {
    step = workload::parse_step(fuzz::as_text(data, size), "fuzz.json", opt);
  } catch (const workload::StepError&) {
    return 0;
  }
  (void)workload::layout_step(step, opt.check);
  (void)workload::validation_summary(step, opt.check);
  (void)workload::to_json(step).dump();
  const std::vector<double> times(step.ops.size(), 1.0);
  const double ideal = workload::ideal_time(step, times);
  if (!(ideal >= 0) || ideal > static_cast<double>(step.ops.size()))
    fuzz::violated("T_ideal outside [0, number of ops] with unit op times");
  for (const auto& op : step.ops)
    if (!op.is_compute()) {
      (void)op.send_elements(step.nranks);
      (void)op.recv_elements(step.nranks);
      (void)op.nccl_count(step.nranks);
    }
  return 0;
}
