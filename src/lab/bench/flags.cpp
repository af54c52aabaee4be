#include "bench/flags.hpp"

#include <stdexcept>

#include "bench/options.hpp"
#include "model/controls.hpp"

namespace cco::bench {
namespace {

constexpr unsigned kAll = kPair | kStep | kTunePair | kTuneStep;
constexpr unsigned kPairs = kPair | kTunePair;
constexpr unsigned kTunes = kTunePair | kTuneStep;

constexpr const char* kSizes = "the workload file sets sizes and types (use --param NAME=VALUE)";
constexpr const char* kEverySm =
    "cco tune --workload searches no GEMM SM budget (cco bench --workload takes one --gemm-sms "
    "for every run)";
constexpr const char* kRegister =
    "cco tune --workload does not search buffer registration (cco bench --workload takes "
    "--nccl-register for the step's arena)";
constexpr const char* kThreads = "cco tune --workload runs in one process with a thread per GPU";
constexpr const char* kModes = "cco tune chooses the modes itself";
// A control's flag and tune list, spelled once in the control table (model/controls.hpp).
constexpr const char* flag_of(model::Control c) { return model::spelled(c, model::Spelling::Flag); }
constexpr const char* list_of(model::Control c) { return model::spelled(c, model::Spelling::TuneList); }
using C = model::Control;

constexpr const char* kValidate = "it belongs to cco bench --workload FILE --validate";

const std::vector<FlagSpec>& table() {
  static const std::vector<FlagSpec> t = {
      {F::MinBytes, "-b,--minbytes", true, kPairs, false, kSizes, nullptr},
      {F::MaxBytes, "-e,--maxbytes", true, kPairs, false, kSizes, nullptr},
      {F::StepFactor, "-f,--stepfactor", true, kPairs, false, kSizes, nullptr},
      {F::Datatype, "-d,--datatype", true, kPairs, false, kSizes, nullptr},
      {F::Op, "-o,--op", true, kPairs, false, kSizes, nullptr},
      {F::Collective, "--collective", true, kPairs, false, kSizes, nullptr},
      {F::Compute, "--compute", true, kPairs, false, kSizes, nullptr},
      {F::Gemm, "--gemm", true, kPairs, false, kSizes, nullptr},
      {F::GemmDtype, "--gemm-dtype", true, kPairs, false, kSizes, nullptr},
      {F::Count, "--count", true, kPairs, false, kSizes, nullptr},
      {F::MemBytes, "--mem-bytes", true, kPairs, false, kSizes, nullptr},
      {F::InPlace, "--in-place", true, kPair, false,
       "a step's collectives run as the file says (out of place)",
       "cco tune measures the collective out of place (cco bench --in-place 1 times both)"},
      {F::CudaGraph, "-G,--cudagraph", true, kPair, false,
       "a step's runs are timed on streams (cco bench -G times a pair's runs as CUDA graphs)",
       "cco tune times runs on streams (cco bench -G times CUDA graphs)"},
      {F::Ngpus, "-g,--ngpus", true, kAll, false, nullptr, nullptr},
      {F::Iters, "-n,--iters", true, kAll, false, nullptr, nullptr},
      {F::Warmup, "-w,--warmup_iters", true, kAll, false, nullptr, nullptr},
      {F::Check, "-c,--check", true, kAll, false, nullptr, nullptr},
      {F::Average, "-a,--average", true, kAll, false, nullptr, nullptr},
      {F::Bootstrap, "--bootstrap", true, kPairs | kStep, false, kThreads, nullptr},
      {F::BootstrapTimeout, "--bootstrap-timeout", true, kPairs | kStep, false, kThreads, nullptr},
      {F::Modes, "--modes", true, kPair | kStep, false, nullptr, kModes},
      {F::BlocksPerSm, flag_of(C::Shaping), true, kAll, true, nullptr, nullptr},
      {F::Pad, flag_of(C::Pad), true, kPair | kStep, false, nullptr,
       "cco tune chooses the modes itself (--blocks-per-sm LIST sets the targets)"},
      {F::GemmSms, flag_of(C::GemmSms), true, kPairs | kStep, false, kEverySm, nullptr},
      {F::GreenSms, flag_of(C::Green), true, kPair | kTunes, true,
       "a step runs on the whole device (cco tune --workload --green-sms tries partitions)",
       nullptr},
      {F::NcclMinCtas, "--nccl-min-ctas", true, kAll, false, nullptr, nullptr},
      {F::NcclMaxCtas, "--nccl-max-ctas", true, kAll, false, nullptr, nullptr},
      {F::NcclCtaPolicy, flag_of(C::CtaPolicy), true, kAll, false, nullptr, nullptr},
      {F::NcclCgaClusterSize, "--nccl-cga-cluster-size", true, kAll, false, nullptr, nullptr},
      {F::NcclRegister, flag_of(C::Register), true, kPairs | kStep, false, kRegister, nullptr},
      {F::Json, "--json", true, kAll, true, nullptr, nullptr},
      {F::Csv, "--csv", true, kPair | kStep, false, nullptr,
       "cco tune writes a plan (--plan, --json)"},
      {F::Trace, "--trace", true, kPairs | kStep, false,
       "cco tune --workload does not trace (cco bench --workload FILE --trace does)", nullptr},
      {F::Quiet, "-q,--quiet", false, kAll, false, nullptr, nullptr},
      {F::Workload, "--workload", true, kStep | kTuneStep, false, nullptr, nullptr},
      {F::Validate, "--validate", false, kStep, false, nullptr, kValidate},
      {F::Param, "--param", true, kStep | kTuneStep, false, nullptr, nullptr},
      {F::GpuMemory, "--gpu-memory", true, kStep, false, nullptr, kValidate},
      {F::SmBudgets, list_of(C::GemmSms), true, kTunePair, true, kEverySm, nullptr},
      {F::Ctas, list_of(C::NcclCtas), true, kTunes, true, nullptr, nullptr},
      {F::NoPriority, "--no-priority", false, kTunes, true, nullptr, nullptr},
      {F::ScreenIters, "--screen-iters", true, kTunes, true, nullptr, nullptr},
      {F::Top, "--top", true, kTunes, true, nullptr, nullptr},
      {F::Budget, "--budget", true, kTunes, true, nullptr, nullptr},
      {F::Plan, "--plan", true, kTunes, true, nullptr, nullptr},
      {F::Cache, "--cache", true, kTunes, true, nullptr, nullptr},
      {F::NoCache, "--no-cache", false, kTunes, true, nullptr, nullptr},
      {F::Retune, "--retune", false, kTunes, true, nullptr, nullptr},
      {F::Refine, "--refine", true, kTunes, true, nullptr, nullptr},
      {F::Rounds, "--rounds", true, kTunes, true, nullptr, nullptr},
      {F::Registers, list_of(C::Register), true, kTunePair, true, kRegister, nullptr},
  };
  return t;
}

// The spellings of one names string ("-b,--minbytes"), each tested against `name`.
bool spelled(const char* names, std::string_view name) {
  std::string_view all(names);
  while (!all.empty()) {
    const auto comma = all.find(',');
    if (all.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    all.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

const std::vector<FlagSpec>& flags() {
  return table();
}

const FlagSpec& flag(F id) {
  const auto& t = table();
  const auto i = static_cast<std::size_t>(id);
  if (i >= t.size() || t[i].id != id) throw std::logic_error("bench::flag: the table is out of order");
  return t[i];
}

const FlagSpec* find_flag(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return nullptr;
  std::string_view name(arg);
  if (arg[1] == '-') {
    name = name.substr(0, name.find('='));  // --minbytes=1M
  } else {
    name = name.substr(0, 2);  // -b1M
  }
  for (const auto& f : table())
    if (spelled(f.names, name)) return &f;
  return nullptr;
}

void refuse_out_of_scope(const std::vector<std::string>& args, FlagScope scope) {
  const bool step = scope == kStep || scope == kTuneStep;
  const bool tune = scope == kTunePair || scope == kTuneStep;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    const FlagSpec* f = find_flag(a);
    if (!f) continue;
    const std::string name = a[1] == '-' ? a.substr(0, a.find('=')) : a.substr(0, 2);
    const bool attached = a.find('=') != std::string::npos || (a[1] != '-' && a.size() > 2);
    if (f->value && !attached) ++i;  // its value is not a flag
    if (f->scopes & scope) continue;
    const unsigned bench_scope = step ? kStep : kPair;
    if (tune && (f->scopes & bench_scope) && f->not_tune)
      throw UsageError(name + " is a cco bench option: " + f->not_tune);
    if (!tune && !(f->scopes & (kPair | kStep)))
      throw UsageError(name + " is a cco tune option (see cco tune --help)");
    if (step && f->not_step) throw UsageError(name + " does not apply to --workload: " + f->not_step);
    if (!step && (f->scopes & (kStep | kTuneStep)))
      throw UsageError(name + " goes with --workload FILE");
    throw UsageError(name + " does not apply here");
  }
}

}  // namespace cco::bench
