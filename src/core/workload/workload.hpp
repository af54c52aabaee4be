// Training-step workloads (src/core/workload/, part of cco.core): the workload file (docs/WORKLOADS.md, schema "ccoverlap.workload"
// 1.0.0), its parser and validation, dependency ordering, the memory layout a step needs on one
// GPU, and T_ideal as the critical path of the step's graph. GPU-free: no CUDA header, so every
// check runs anywhere (`cco bench --workload FILE --validate`).
//
// A step is a list of operations (GEMMs, memory-bound kernels, collectives) on two logical
// streams ("compute" and "comm") with `after` dependencies, over named or implicit buffers. The
// file is JSON with parameters, "${...}" integer expressions, `repeat` and `buckets` helpers;
// loading expands all of them, so a Step holds only concrete operations.
//
// Errors: every problem with a file throws StepError, whose what() is "FILE:LINE:COLUMN: message"
// (LINE and COLUMN 1-based, pointing at the offending key or value), or "FILE: message" where no
// element is to blame (a parameter override from the command line, an unreadable file).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/limits.hpp"
#include "model/metrics.hpp"
#include "model/schema_names.hpp"
#include "model/types.hpp"

namespace cco::workload {

// The model's vocabulary, in which workloads are written.
using model::Collective;
using model::DType;
using model::Error;
using model::RedOp;

inline constexpr const char* kWorkloadSchema = model::kWorkloadSchema;
inline constexpr const char* kWorkloadSchemaVersion = model::kSchemaVersion;

/// A place in a workload file: 1-based line and column (in characters); 0 = unknown.
struct SourcePos {
  int line = 0;
  int column = 0;
};

/// A workload-file error. what() is "file:line:column: message" (or "file: message" when pos is
/// unknown). Derives from Error, so the CLI reports it as bad input (exit 2).
class StepError : public Error {
 public:
  StepError(std::string file, SourcePos pos, std::string message);
  const std::string& file() const { return file_; }
  SourcePos pos() const { return pos_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  SourcePos pos_;
  std::string message_;
};

// ---------------------------------------------------------------------------------------------
// The expanded step
// ---------------------------------------------------------------------------------------------

enum class OpKind { Gemm, Elementwise, Norm, Collective };
/// "gemm", "elementwise", "norm", "collective".
const char* to_string(OpKind k);

/// Who runs a GEMM: cuBLASLt (vendor kernels, not shapeable) or the built-in tiled GEMM (a
/// launch we control, shapeable).
enum class GemmEngine { CublasLt, Builtin };
const char* to_string(GemmEngine e);  ///< "cublaslt", "builtin"

/// The two logical streams of a step. Seq mode runs both on one stream.
enum class StreamId { Compute = 0, Comm = 1 };
const char* to_string(StreamId s);  ///< "compute", "comm"

/// How a named buffer is initialised before the step runs.
enum class BufferFill {
  Random,   ///< read-only input: uniform [-1, 1) values (kernels.hpp fill_random)
  Pattern,  ///< a collective's input: the exact integer pattern of docs/METRICS.md, per rank
  Output,   ///< written by one op (poisoned before each verified run)
};

struct StepBuffer {
  std::string name;
  DType dtype = DType::BF16;
  int64_t elements = 0;
  BufferFill fill = BufferFill::Random;
  int writer = -1;  ///< index of the op that writes it, -1 for none
  SourcePos pos;
  int64_t bytes() const { return elements * static_cast<int64_t>(dtype_size(dtype)); }
};

/// One operation. Buffer references are indices into Step::buffers, -1 for an implicit buffer
/// (the executor allocates it: GEMM and collective inputs are shared read-only pools, outputs are
/// the op's own).
struct StepOp {
  std::string id;
  OpKind kind = OpKind::Gemm;
  StreamId stream = StreamId::Compute;
  std::vector<int> after;  ///< ops this one waits for (indices, deduplicated, ascending)
  std::string description;
  SourcePos pos;  ///< of the op's object in the file (or of the `buckets` element)

  // gemm: row-major C[m x n] = A[m x k] B[k x n], all of `dtype`, fp32 accumulation.
  GemmEngine engine = GemmEngine::CublasLt;
  DType dtype = DType::BF16;  ///< gemm and collective element type
  int64_t m = 0, n = 0, k = 0;
  int a = -1, b = -1, c = -1;

  // elementwise / norm: the built-in memory-bound kernel z = alpha x + y over `bytes` per array
  // (float), i.e. 3 * bytes of traffic. Collectives: the nccl-tests size (see send_elements()).
  int64_t bytes = 0;

  // collective
  Collective coll = Collective::AllReduce;
  RedOp redop = RedOp::Sum;
  int send = -1, recv = -1;

  // gradient produced (for `buckets`): the tag and the bytes (0: not a gradient)
  std::string grad;
  int64_t grad_bytes = 0;

  bool is_compute() const { return kind != OpKind::Collective; }
  bool is_membound() const { return kind == OpKind::Elementwise || kind == OpKind::Norm; }
  /// Floating-point operations (2 m n k for a GEMM, 0 otherwise).
  double flops() const;
  /// Device-memory bytes the op moves at least (GEMM: A + B + C; memory-bound: 3 x bytes;
  /// collective: its size).
  double traffic() const;
  /// Elements of the collective's input and output on each rank, per docs/WORKLOADS.md:
  /// allreduce S/e, S/e; allgather S/e/n, S/e; reducescatter S/e, S/e/n; alltoall and
  /// sendrecv S/e, S/e (S = bytes, e = element size, n = ranks).
  int64_t send_elements(int nranks) const;
  int64_t recv_elements(int nranks) const;
  /// The element count passed to NCCL (allgather: per rank; reducescatter: per rank;
  /// alltoall: per peer).
  int64_t nccl_count(int nranks) const;
};

/// A parameter as used: its final value (after overrides) and where it was declared.
struct StepParam {
  std::string name;
  bool is_string = false;
  int64_t value = 0;  ///< when !is_string
  std::string text;   ///< when is_string
  std::string description;
  bool overridden = false;  ///< set from the command line
  SourcePos pos;
  std::string value_text() const { return is_string ? text : std::to_string(value); }
};

struct Step {
  std::string file;  ///< as given (for messages)
  std::string name;
  std::string description;
  std::string schema_version;
  int nranks = 1;  ///< ranks the step was expanded for (the `ranks` built-in)
  std::vector<StepParam> params;
  std::vector<StepBuffer> buffers;
  std::vector<StepOp> ops;  ///< declaration order (repeats and buckets expanded in place)
  /// Issue order: a topological order of the `after` graph; among ready ops the one declared
  /// first goes first. Every mode enqueues ops in this order; on each stream they run in it.
  std::vector<int> order;
  /// For each op, the op before it on the same stream in `order` (-1 for the first).
  std::vector<int> stream_prev;

  int find_op(std::string_view id) const;               ///< index or -1
  const StepParam* param(std::string_view name) const;  ///< nullptr when unknown
};

/// What loading needs besides the file.
struct StepLoadOptions {
  int nranks = 2;  ///< ranks the step runs on: the `ranks` built-in, collective granules
  /// Parameter overrides, "name" -> "value" (integers in decimal; strings as they are). Unknown
  /// names and values of the wrong type are errors.
  std::vector<std::pair<std::string, std::string>> overrides;
  /// > 0: refuse a step whose layout (with verification buffers when `check`) does not fit a GPU
  /// of this many bytes (see check_memory). 0: no memory check.
  int64_t gpu_memory = 0;
  bool check = true;  ///< the run verifies results (-c): the layout includes snapshots
};

/// Parses and validates a workload from its text. `file` names it in messages. Throws
/// StepError for any problem: JSON syntax, schema or version, unknown fields, wrong types, bad
/// expressions, bad or duplicate names, undefined buffers or dependencies, cycles, buffer misuse,
/// sizes a collective cannot take on `nranks` ranks, memory (when gpu_memory > 0).
Step parse_step(std::string_view text, const std::string& file, const StepLoadOptions& opt);

/// Reads the file and calls parse_step. StepError "FILE: cannot read ..." when unreadable.
Step load_step(const std::string& path, const StepLoadOptions& opt);

/// What can be checked of a workload file before its rank count is known (cco tune --workload
/// without -g): that it reads and is JSON. StepError as load_step gives them.
void check_readable_json(const std::string& path);

/// The folders `--workload NAME` searches when NAME is not a file, in order: each folder of
/// CCO_WORKLOAD_PATH (colon-separated), the installed workloads beside the running binary
/// (BIN/../share/ccoverlap/workloads: an install prefix, the DEB, the pip wheel), and the source
/// tree's examples/workloads/ (a cco run from its build tree). Folders that do not exist are left out.
std::vector<std::string> workload_dirs();

/// What `--workload` names: `name` itself when it is a file or holds a '/'; else NAME.json in the
/// current folder; else NAME or NAME.json in the first of `dirs` that has it (tp_llama7b finds tp_llama7b.json). Throws Error
/// "--workload NAME: no such file, and no shipped workload of that name (shipped: ...)" otherwise.
std::string find_workload(const std::string& name, const std::vector<std::string>& dirs);

/// The workloads in `dirs` by name (file name without .json), sorted, each once.
std::vector<std::string> shipped_workloads(const std::vector<std::string>& dirs);

/// Splits "name=value" (as given to --param). Throws Error when there is no '=' or no name.
std::pair<std::string, std::string> parse_override(const std::string& text);

// ---------------------------------------------------------------------------------------------
// Memory: where everything lives in one device arena
// ---------------------------------------------------------------------------------------------

/// A byte range of the arena; offset -1 = none.
struct Region {
  int64_t offset = -1;
  int64_t bytes = 0;
  bool valid() const { return offset >= 0; }
};

/// The device memory one rank allocates for a step, as one arena of 256-byte-aligned regions. The
/// executor allocates exactly this; the memory check adds up exactly this.
///  - named buffers: one region each;
///  - implicit GEMM inputs share one random region per dtype (the largest; each input is a prefix),
///    implicit collective inputs one pattern region per dtype, memory-bound inputs x and y one
///    float region each: all read-only, so sharing is safe under any overlap;
///  - implicit outputs (GEMM C, memory-bound z, collective output): one region per op;
///  - with verification: a snapshot of every GEMM output and one fp32 scratch for the reference
///    GEMM (the largest output);
///  - cuBLASLt workspaces: one per stream (when any GEMM uses cuBLASLt).
struct StepLayout {
  static constexpr int64_t kAlign = 256;
  static constexpr int64_t kWorkspaceBytes = int64_t{32} << 20;

  struct OpRegions {
    Region a, b, c, snap;  ///< gemm
    Region x, y, z;        ///< memory-bound
    Region send, recv;     ///< collective
  };
  std::vector<Region> named;        ///< per Step::buffers
  std::array<Region, 3> random{};   ///< per DType (index = static_cast<int>(DType))
  std::array<Region, 3> pattern{};  ///< per DType
  Region mem_x, mem_y;
  std::vector<OpRegions> ops;         ///< per Step::ops
  Region reference;                   ///< fp32 scratch (verification)
  std::array<Region, 2> workspace{};  ///< per StreamId
  int64_t total = 0;                  ///< arena size in bytes

  /// Lines like "named buffers  1.5 GiB" for summaries.
  std::vector<std::pair<std::string, int64_t>> breakdown;
};

StepLayout layout_step(const Step& step, bool check);

/// Memory ccoverlap leaves on each GPU for the CUDA context, NCCL and cuBLASLt.
inline constexpr int64_t kStepMemoryReserve = int64_t{2} << 30;

/// Whether any op of the step is collective `c`.
bool has_collective(const Step& step, model::Collective c);

/// Throws StepError when layout_step(step, check).total exceeds gpu_memory - kStepMemoryReserve;
/// the message gives both sizes and points at the largest buffer or op.
void check_memory(const Step& step, int64_t gpu_memory, bool check);

/// The integer pattern's modulus for collectives of dtype t on n ranks: values
/// (r + 1) * ((i mod m) + 1) and their sum over ranks stay exact integers in t.
int pattern_mod(DType t, int nranks);

// ---------------------------------------------------------------------------------------------
// Times: T_ideal as the critical path
// ---------------------------------------------------------------------------------------------

/// The finish time of every op in the ideal schedule: each op starts when all its `after` ops
/// and the op before it on its stream (Step::stream_prev) have finished, and takes times[i] (its
/// time measured alone). `times` is indexed like Step::ops; throws Error on a size mismatch or a
/// negative time.
std::vector<double> schedule_finish(const Step& step, const std::vector<double>& times);

/// T_ideal: the largest finish time of schedule_finish, i.e. the longest path through the graph
/// of `after` edges plus same-stream order edges, with op times as weights. It is the step time
/// with perfect overlap and no interference: each stream is a serial resource, the streams never
/// slow each other down. 0 for an empty step.
double ideal_time(const Step& step, const std::vector<double>& times);

/// Sum of times over compute ops (T_comp) or over collectives (T_comm).
double compute_time(const Step& step, const std::vector<double>& times);
double comm_time(const Step& step, const std::vector<double>& times);

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

/// The expanded step as JSON: name, parameters, buffers and ops with their issue order.
nlohmann::json to_json(const Step& step);

/// What `--validate` prints: parameters (marking overrides), op counts by kind and stream,
/// FLOPs and collective bytes, the issue order's first ops, and the memory layout.
std::string validation_summary(const Step& step, bool check);

}  // namespace cco::workload
