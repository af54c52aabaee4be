// `cco bench` options and what they expand to. GPU-free: parsed, validated and expanded without a
// device, so every error path is tested in CI.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

#include "model/controls.hpp"
#include "model/metrics.hpp"
#include "model/types.hpp"

namespace cco::bench {

/// Bad command-line input: the CLI prints what() as one line and exits with code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Mode { Seq, Concurrent, Priority, Shape, ShapePriority };
const char* to_string(Mode m);
Mode parse_mode(const std::string& s);
bool is_shape(Mode m);
bool is_priority(Mode m);
/// A tuning candidate's mode: concurrent or shape (`base`) with or without the priority stream.
Mode with_priority(Mode base, bool priority);

struct Options {
  // nccl-tests letters
  int64_t min_bytes = int64_t{256} << 20;  ///< -b
  int64_t max_bytes = -1;                  ///< -e (-1: same as -b)
  double step_factor = 2;                  ///< -f
  int ngpus = 0;                           ///< -g (0: every visible GPU)
  int iters = 20;                          ///< -n
  int warmup = 5;                          ///< -w
  bool check = true;                       ///< -c
  int average = 3;                         ///< -a: a sample over ranks: 0 rank 0, 1 mean, 2 min, 3 max
  model::DType dtype = model::DType::F32;  ///< -d (collective; with a list, the first)
  /// -d's types in order when more than one ran ("all": float, half, bfloat16); empty: `dtype`.
  std::vector<model::DType> dtypes;
  bool dtype_all = false;                  ///< -d all
  bool in_place = false;                   ///< --in-place 1: the collective alone in place too
  model::RedOp op = model::RedOp::Sum;     ///< -o
  // long names
  model::Collective coll = model::Collective::AllReduce;
  model::ComputeKind compute = model::ComputeKind::CublasLt;
  int64_t m = 4096, n = 4096, k = 4096;
  model::DType gemm_dtype = model::DType::BF16;
  int count = 4;
  int64_t mem_bytes = int64_t{1} << 30;
  std::vector<Mode> modes;                 ///< empty: every mode that applies
  bool modes_given = false;
  std::vector<int> blocks_per_sm;          ///< targets for shape modes
  std::vector<int64_t> pads;               ///< or explicit extra dynamic shared memory
  int gemm_sms = 0;                        ///< cuBLASLt SM-count target (0: all)
  int green_sms = 0;                       ///< compute in a green-context SM partition (0: none)
  /// --nccl-min-ctas, --nccl-max-ctas, --nccl-cga-cluster-size (nullopt: NCCL's own; -1 on the
  /// command line says so)
  std::optional<int> nccl_min_ctas, nccl_max_ctas, nccl_cga_cluster;
  /// --nccl-cta-policy's first value (nullopt: not given, NCCL's default): the run's own
  /// communicator's CTAPolicy.
  std::optional<model::CtaPolicy> nccl_cta_policy = std::nullopt;
  /// --nccl-cta-policy's further values: every overlapped row again under each (pairs only).
  std::vector<model::CtaPolicy> row_cta_policies;
  model::CommRegister nccl_register = model::CommRegister::None;  ///< --nccl-register
  bool nccl_register_given = false;
  /// -G N (nccl-tests' --cudagraph): each run captured once as a CUDA graph and timed over N
  /// replays (0: runs enqueued on streams, as always).
  int cudagraph = 0;
  std::string json_path, csv_path;         ///< "-" = stdout
  std::string trace_path;                  ///< --trace: CUPTI kernel trace (Chrome/Perfetto JSON)
  std::string bootstrap = "auto";          ///< auto | threads | env | mpi (src/lab/bootstrap)
  double bootstrap_timeout = 0;            ///< seconds (0: CCO_BOOTSTRAP_TIMEOUT or 120)
  bool quiet = false;
  std::vector<std::string> argv;           ///< as given, for the record
};

/// Parses `cco bench` arguments (argv[0] is "bench"). Throws UsageError with one line on any bad
/// or conflicting input. Does not look at any GPU.
Options parse_options(const std::vector<std::string>& args);

/// What both bench parsers read as text before checking it (check_counts, parse_shape_options).
struct SharedText {
  std::string modes, bps, pads, cta_policy;
  CLI::Option* cta_option = nullptr;  ///< --nccl-cta-policy (an empty value given is an error)
  int min_ctas = -1, max_ctas = -1, cga_cluster = -1;  ///< as given (-1: none), checked into Options
  int check = 1;
};
/// The CLI11 options every bench parser takes, a pair's and a step's (in the flag table both
/// kPair and kStep): -g -n -w -c -a, --modes --blocks-per-sm --pad, the NCCL communicator's,
/// --json --csv -q; bound into `o` and `t`.
void add_shared_options(CLI::App& app, Options& o, SharedText& t);
/// --nccl-cta-policy's text (names or numbers, comma-separated) into o.nccl_cta_policy (the
/// first) and o.row_cta_policies (the rest: rows of a pair or a step). Zero without a chosen
/// --nccl-register registers the buffers as a symmetric window. Throws UsageError.
/// `given`: the flag was on the command line (then an empty value is an error, not "unset").
void parse_cta_policies(Options& o, const std::string& text, bool given = false);
/// Parses args[1..] (args[0] is the command) with `app`; a CLI11 error becomes one UsageError in
/// the wording every subcommand uses (cli_error_text).
void parse_app(CLI::App& app, const std::vector<std::string>& args);
/// "--name=" among args[1..end) (before a "--"): UsageError "--name needs a value" (CLI11 would
/// take the next argument as its value).
void refuse_empty_assignments(const std::vector<std::string>& args, std::size_t end);
/// CLI11's error message in the house wording: "X: 1 required TEXT missing" -> "X needs a value",
/// "The following argument was not expected: A" -> "unknown option 'A'" (or "unexpected argument
/// 'A'" when A is no option), "Could not convert: X = V" -> "X: expected a number, got 'V'";
/// anything else as CLI11 says it. With `app`, a flag given a value says "X takes no value" and
/// an unknown option gets did_you_mean's suggestion.
std::string cli_error_text(const std::string& what, const CLI::App* app = nullptr);

/// " (did you mean --name?)" for an unknown option `given` ("--polcy", "--fromat=csv") when one
/// of `app`'s long options is close (edit distance at most 2, or a third of its length); "" else.
std::string did_you_mean(const CLI::App& app, const std::string& given);

/// The first argument among args[1..] (before "--", or a prefix command's first positional) that
/// looks like an option (a '-' then a letter) and is none of `app`'s: "unknown option 'X'" with a
/// suggestion; "" when there is none. CLI11 blames the value after an unknown short option ("-t
/// 2": "unexpected argument '2'"); this names the option instead.
std::string unknown_option(const CLI::App& app, const std::vector<std::string>& args);

/// Checks shared by every parser of bench options (cco bench, cco bench --workload), each
/// throwing UsageError with one line: -g/-n/-w/-c/-a (sets o.check from `check`); --modes,
/// --blocks-per-sm and --pad (fills o.modes, o.blocks_per_sm, o.pads); NCCL settings and the
/// output files (--json, --csv, --trace), --bootstrap and --bootstrap-timeout.
void check_counts(Options& o, int check);
void parse_shape_options(Options& o, const std::string& modes, const std::string& bps,
                         const std::string& pads);
void check_nccl_and_outputs(Options& o, const SharedText& t);

/// The most replays -G takes (a run of 10 ms replayed this often takes 100 s).
inline constexpr int kMaxGraphReplays = 10000;
/// -G's value and what it cannot go with (--in-place 1, --green-sms, the CTA policy zero);
/// UsageError with one line. After parse_cta_policies.
void check_cudagraph(const Options& o);

/// The collective sizes to run: min, min*f, ... up to max (nccl-tests -b -e -f).
std::vector<int64_t> sizes(const Options& o);

/// -d's text: one type, a comma-separated list (each once) or "all" alone (every type cco's
/// collectives run: float, half, bfloat16, as nccl-tests' -d all). Fills o.dtype (the first),
/// o.dtypes (when more than one) and o.dtype_all. Throws UsageError with one line.
void parse_dtypes(Options& o, const std::string& text);
/// The collective's types in the order they run: o.dtypes, else {o.dtype}.
std::vector<model::DType> run_dtypes(const Options& o);
/// How the report names them: "float", "float,half", or "all".
std::string dtypes_label(const Options& o);
/// Why the collective cannot run in place ("" when it can: allreduce, broadcast, reduce with
/// recv == send, allgather with send = recv + rank * count, reducescatter with recv = send +
/// rank * recvcount, as nccl-tests lays them out).
std::string in_place_refusal(model::Collective c);

/// One row of the table: a mode and the row's controls (issue 44: the control table's one typed
/// value, not a copy of its fields). For shape modes `controls` holds the target k
/// (`blocks_per_sm`) or an explicit pad; every row may hold budgets beyond the paper (used by
/// `cco tune`): the GEMMs' SM target, NCCL CTAs, a green partition, the registration and the CTA
/// policy, each unset where the row keeps the run's own setting.
struct RowSpec {
  /// A row of mode `m`, shape target `k` (0: none) and explicit `pad`; budgets are set on
  /// `controls`.
  RowSpec(Mode m = Mode::Seq, int k = 0, std::optional<int64_t> pad = std::nullopt) : mode(m) {
    set_k(k);
    controls.pad = pad;
  }
  Mode mode = Mode::Seq;
  model::Controls controls;
  /// The shape target k (0: none).
  int k() const { return controls.blocks_per_sm.value_or(0); }
  /// Sets the shape target (0 or less: none).
  void set_k(int k) {
    if (k > 0)
      controls.blocks_per_sm = k;
    else
      controls.blocks_per_sm.reset();
  }
  /// True when the row uses the run's own compute and communicator (no budget set).
  bool default_variant() const { return budget_controls() == model::Controls{}; }
  /// Same mode, target, padding and budgets.
  bool operator==(const RowSpec&) const = default;
  /// The row's controls as its label writes them: k and pad for shape modes only.
  model::Controls label_controls() const;
  /// The budgets alone: `controls` without k, pad and the shaping's `when`.
  model::Controls budget_controls() const;
  /// "priority", "shape+priority k=3", "concurrent sms=108 ctas=32 reg=window cta=zero": the mode
  /// and model::label_tokens of label_controls().
  std::string label() const;
  /// The budgets alone, as label() writes them: " sms=108 ctas=32 reg=window cta=zero" ("" when
  /// the row has none).
  std::string budgets() const;
};

/// A row's count budget (an SM target, CTAs, a green partition's SMs) as a number, the encoding
/// of JSON, the tuners' lists (--ctas -1) and the rows rank 0 sends to the other ranks: the
/// count, or -1 for none (std::nullopt: the run's own). budget_from_number reads it back; a
/// number below -1 throws UsageError.
int budget_number(std::optional<int> v);
std::optional<int> budget_from_number(int n);

/// Rows for one size. `shapeable`: the compute launches are ours. `natural_bps`: blocks per SM of
/// the compute kernel as launched (decides the default targets: every k below it). Notes about
/// modes left out are appended to `notes`. Throws UsageError when shape modes were asked for but
/// cannot apply.
std::vector<RowSpec> expand_rows(const Options& o, bool shapeable, int natural_bps,
                                 std::vector<std::string>* notes = nullptr);

/// A per-rank file name for one process per rank: "%r" replaced by the rank, else ".rankN"
/// inserted before the extension ("trace.json" -> "trace.rank3.json").
std::string rank_path(const std::string& path, int rank);

/// Parses "1,2,4" style lists of positive integers; throws UsageError naming `what`.
std::vector<int> parse_int_list(const std::string& s, const std::string& what);

/// Control `c`'s value `text`, as its flag (Spelling::Flag) or tune list (Spelling::TuneList)
/// spells it, read by the control table's codec (model::set_control) into a model::Controls;
/// UsageError "FLAG: reason", FLAG the table's name of that spelling ("--pad: ...").
model::Controls flag_value(model::Control c, model::Spelling s, const std::string& text);

}  // namespace cco::bench
