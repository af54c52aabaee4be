// Kernel traces (docs/TRACE.md), the GPU-free trace core (part of cco.core): the CUPTI
// tracer (session.hpp) fills a Trace on a GPU machine; this reads, writes and merges it anywhere,
// and analysis.hpp analyses it.
//
// File format: Chrome / Perfetto trace-event JSON ("traceEvents", complete events with ph "X"),
// opened as is by ui.perfetto.dev and chrome://tracing. One process row per rank (pid = rank),
// one thread row per stream (tid = stream id) named with its priority, cat = "compute" or
// "communication", args holding the launch (grid, block, registers, shared memory, blocks per
// SM). NVTX ranges are complete events with cat "nvtx" on one row per (rank, thread), named
// "NVTX (thread N)", above the rank's streams. What Perfetto does not show (exact nanoseconds,
// devices, stream priorities, dropped records) is kept under "otherData"."ccoverlap" (schema
// "ccoverlap.trace", kTraceSchemaVersion).
//
// All times are integer nanoseconds on the tracer's clock (CUPTI's: one clock for every device
// of a process; processes of one host share it, so rank files of one run merge on one axis).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/schema_names.hpp"

namespace cco::trace {

inline constexpr const char* kTraceSchema = model::kTraceSchema;
inline constexpr const char* kTraceSchemaVersion = model::kSchemaVersion;

// ---------------------------------------------------------------------------------------------
// The trace
// ---------------------------------------------------------------------------------------------

/// Communication kernels are NCCL's; every other kernel counts as compute.
enum class KernelCategory { Compute, Communication };
/// "compute", "communication" (the Chrome "cat" of an event).
const char* to_string(KernelCategory c);

/// True for NCCL's kernels: names starting "ncclDevKernel_", "ncclSymkDevKernel_" (NCCL 2.28's
/// symmetric kernels, which run collectives on buffers in symmetric windows, on SMs; NCCL 2.27
/// spelled them "ncclSymDevKernel_") or "ncclKernel", whether plain (extern "C"), demangled
/// ("void ncclDevKernel_...(...)") or Itanium-mangled ("_Z..ncclDevKernel_").
bool is_communication_kernel(std::string_view name);
KernelCategory classify_kernel(std::string_view name);

struct Dim3 {
  int x = 1, y = 1, z = 1;
  int64_t volume() const { return int64_t{x} * y * z; }
  bool operator==(const Dim3&) const = default;
};

/// The kind of a copy (KernelEvent::copy): "PtoP", "DtoD", "HtoD", "DtoH", "HtoH", "Memcpy",
/// "Memset" or "" (a kernel). Held in 8 bytes (a trace holds millions of kernels: a
/// std::string here was 32), read as a std::string_view.
class CopyKind {
 public:
  CopyKind() = default;
  CopyKind(std::string_view s) { *this = s; }  // NOLINT: assigned like the string it was
  CopyKind(const char* s) : CopyKind(std::string_view(s)) {}  // NOLINT
  CopyKind(const std::string& s) : CopyKind(std::string_view(s)) {}  // NOLINT
  /// Longer than 7 bytes: kept cut to 7 (no kind is; the reader checks is_copy_kind first).
  CopyKind& operator=(const std::string& s) { return *this = std::string_view(s); }
  CopyKind& operator=(const char* s) { return *this = std::string_view(s); }
  CopyKind& operator=(std::string_view s) {
    len_ = static_cast<unsigned char>(std::min<std::size_t>(s.size(), sizeof s_));
    for (std::size_t i = 0; i < sizeof s_; ++i) s_[i] = i < len_ ? s[i] : '\0';
    return *this;
  }
  operator std::string_view() const { return {s_, len_}; }  // NOLINT
  std::string str() const { return std::string(s_, len_); }
  bool empty() const { return len_ == 0; }
  bool operator==(const CopyKind& o) const { return std::string_view(*this) == std::string_view(o); }
  bool operator==(const char* o) const { return std::string_view(*this) == o; }
  friend std::ostream& operator<<(std::ostream& os, const CopyKind& c) { return os << std::string_view(c); }

 private:
  char s_[7] = {};
  unsigned char len_ = 0;
};

/// One kernel execution on one stream of one device (fields ordered so that none pads: a trace
/// holds millions).
struct KernelEvent {
  std::string name;  ///< as the tracer saw it (CUPTI: demangled when possible)
  KernelCategory category = KernelCategory::Compute;
  int rank = 0;                 ///< the rank that launched it (= device when no rank is known)
  int device = 0;               ///< CUDA device ordinal in the tracing process
  int registers = 0;            ///< per thread (0: unknown)
  int64_t stream = 0;           ///< stream id (CUPTI's, unique within a context)
  std::optional<int> priority;  ///< the stream's priority (lower = more urgent), when known
  int64_t start_ns = 0;         ///< first block started
  int64_t end_ns = 0;           ///< last block finished (>= start_ns)
  int64_t queued_ns = 0;        ///< launch call queued it (0: unknown)
  int64_t submitted_ns = 0;     ///< pushed to the GPU (0: unknown)
  Dim3 grid, block;
  int blocks_per_sm = 0;        ///< resident blocks per SM by the occupancy model (0: unknown)
  int64_t static_smem = 0;      ///< bytes per block
  int64_t dynamic_smem = 0;     ///< bytes per block, as launched (padding included)
  uint64_t correlation_id = 0;  ///< CUPTI's id tying the kernel to its launch call (0: none)
  /// The library call that launched it, when the tracer knows ("" otherwise): a cuBLAS or
  /// cuBLASLt GEMM's function, types, operations and shape ("cublasLtMatmul bf16 TN
  /// m=4096 n=8192 k=2048"), so kernels of one name and grid (persistent GEMMs) are told apart
  /// by shape (docs/TRACE.md, "Library calls"); an NCCL call's kind, type, count and ranks.
  std::string call;
  /// A copy on the copy engines, not a kernel: "PtoP" (between devices) or "DtoD" (NCCL's
  /// copy-engine collectives: CTA policy zero; or the program's own copies on its compute
  /// streams, category Compute), "" for a kernel. A profiler's trace adds "HtoD", "DtoH",
  /// "HtoH", "Memcpy" (direction not named) and "Memset" (kCopyKinds). Copies take no SMs (never
  /// wait for them) and have no launch geometry.
  CopyKind copy;
  int src_device = -1, dst_device = -1;  ///< the copy's devices, when CUPTI says (PtoP)
  int64_t bytes = 0;                ///< the copy's size (copies only)
  bool is_copy() const { return !copy.empty(); }

  int64_t duration_ns() const { return end_ns - start_ns; }
  /// submitted_ns if known, else queued_ns, else 0.
  int64_t launch_ns() const { return submitted_ns > 0 ? submitted_ns : queued_ns; }
};

/// The copy kinds a trace holds (KernelEvent::copy), as one line for messages.
inline constexpr const char* kCopyKinds = "PtoP, DtoD, HtoD, DtoH, HtoH, Memcpy or Memset";
inline bool is_copy_kind(std::string_view c) {
  return c == "PtoP" || c == "DtoD" || c == "HtoD" || c == "DtoH" || c == "HtoH" ||
         c == "Memcpy" || c == "Memset";
}

/// A stream as the trace knows it: (rank, device, stream) identifies it.
struct StreamInfo {
  int rank = 0;
  int device = 0;
  int64_t stream = 0;
  std::optional<int> priority;
  std::string label;  ///< optional ("compute", "comm", ...)
};

/// A rank (one Chrome "process").
struct RankInfo {
  int rank = 0;
  int device = 0;
  std::string device_name;  ///< "NVIDIA H200"
  std::string arch;         ///< "sm_90" (model::find_architecture spelling), "" if unknown
  int sm_count = 0;
  double mem_bandwidth = 0;  ///< peak device-memory bandwidth, bytes/s (0: unknown)
  std::string host;
  int64_t pid = 0;  ///< OS process id of the tracer (0: unknown)
};

/// A point in time the traced program named ("concurrent, iteration 3"), on the trace clock.
/// Written as a Chrome instant event (ph "i", cat "mark").
struct Mark {
  int64_t ts_ns = 0;
  int rank = -1;  ///< -1: the whole process (every rank)
  std::string name;
};

/// An NVTX range the traced program opened and closed (nvtxRangePush/Pop or nvtxRangeStart/End,
/// any domain), on the trace clock: host-side times, like marks and launch timestamps.
/// Written as a Chrome complete event (ph "X", cat "nvtx") on the row "NVTX (thread N)" of its
/// rank (tid = kNvtxTidBase + thread, clear of every stream id).
struct NvtxRange {
  std::string name;
  std::string domain;  ///< "" for NVTX's default domain
  int64_t start_ns = 0;
  int64_t end_ns = 0;  ///< >= start_ns
  int rank = 0;
  uint64_t thread = 0;  ///< OS thread that opened it (CUPTI's id: gettid on Linux); 0 if unknown
  int64_t duration_ns() const { return end_ns - start_ns; }
};

/// Chrome "tid" of the NVTX row of OS thread t: kNvtxTidBase + t. Perfetto keeps tids as signed
/// 32-bit numbers, so the row stays below 2^31: Linux thread ids are below 2^22 (pid_max), and
/// CUPTI stream ids (the tids of the kernel rows) are small counters, far below 2^30.
inline constexpr int64_t kNvtxTidBase = int64_t{1} << 30;
/// Chrome "tid" of each rank's host row: the steps as PyTorch's "ProfilerStep#N" annotations and
/// the kernels' launch calls, written for PyTorch's tools and Holistic Trace Analysis (never read
/// back: the marks and kernels hold them). Below the NVTX rows, clear of every stream id.
inline constexpr int64_t kHostTid = kNvtxTidBase - 1;
/// The base files of ccoverlap before 0.1.0's 2026-11-24 change used (2^32), still read.
inline constexpr int64_t kOldNvtxTidBase = int64_t{1} << 32;

/// An event of another tool's trace (a PyTorch profiler's CPU ops, runtime calls, Python
/// functions, annotations, flows, counters, memory and metadata events) that the trace holds in
/// no other form: kept whole when read with ReadOptions::keep_events (cco report --merge), so a
/// merged file loses none of its inputs' events, and written back with its rank as "pid", its
/// time on the trace's origin, and flow ids made the rank's own (docs/TRACE.md).
struct KeptEvent {
  int rank = 0;
  std::optional<int64_t> ts_ns;  ///< its "ts" on the trace clock (none: metadata)
  bool launch_call = false;      ///< a runtime or driver call (cat cuda_runtime, cuda_driver)
  std::string text;              ///< the event's JSON text as read (a DOM costs ~2.8 KB an event)
};
/// The most text of kept events one trace holds (a merge's memory is bounded by it: past it,
/// reading fails with one line).
inline constexpr std::size_t kKeptTextLimit = std::size_t{2} << 30;

struct Trace {
  std::vector<RankInfo> ranks;
  std::vector<StreamInfo> streams;
  std::vector<KernelEvent> kernels;
  std::vector<Mark> marks;         ///< sorted by time after normalize()
  std::vector<NvtxRange> ranges;   ///< by rank, then start (outer before inner) after normalize()
  uint64_t dropped_records = 0;    ///< records CUPTI dropped (buffers full): the trace is partial
  std::vector<std::string> notes;  ///< warnings and facts from the tracer, kept in the file
  std::string source;              ///< the file(s) it came from, for messages
  std::vector<KeptEvent> kept;     ///< another tool's other events (ReadOptions::keep_events)

  /// The stream entry for (rank, device, stream), or nullptr.
  const StreamInfo* find_stream(int rank, int device, int64_t stream) const;
  /// Fills gaps from what the trace already holds: streams seen only in kernels get a StreamInfo,
  /// kernels without a priority take their stream's, ranks seen only in kernels or NVTX ranges
  /// get a RankInfo. A device-to-device copy on a stream that also ran compute kernels is the
  /// program's own (DDP's copies between gradients and buckets, say), not NCCL's: it becomes
  /// compute (category Compute, still a copy) -- traces written before this rule counted every
  /// copy on a stream that ran an NCCL kernel as communication.
  void normalize();
};

/// How a trace is read. keep_events: another tool's events that the trace holds in no other form
/// are kept whole (Trace::kept), for a merged file that keeps every event; off, they are read
/// and dropped (their memory is not spent).
struct ReadOptions {
  bool keep_events = false;
};

/// Chrome/Perfetto JSON of a trace (docs/TRACE.md lists every field). Times are microseconds
/// relative to the earliest kernel ("otherData"."ccoverlap"."time_origin_ns" holds it), so the
/// numbers stay exact to the nanosecond in a double.
nlohmann::json trace_to_json(const Trace& t);
/// Reads a trace. Accepts ccoverlap's own files and, best effort, other Chrome traces of GPU
/// kernels (events with cat "kernel", args "device" and "stream", as PyTorch's profiler writes).
/// Throws Error with one clear line naming `source` on anything else: not an object, no
/// "traceEvents" array, a wrong schema or major version, an event missing ts/dur/pid/tid or with
/// a negative duration, a non-numeric field. NVTX ranges (cat "nvtx") are read back with the
/// same checks.
Trace trace_from_json(const nlohmann::json& j, const std::string& source = "trace",
                      const ReadOptions& opts = {});
/// Parses text (malformed or truncated JSON -> Error "<source>: not valid JSON (...)").
Trace parse_trace(std::string_view text, const std::string& source = "trace");
/// Any JSON file cco report reads, in one pass (a reader of its own for the common layout, valid
/// JSON whose "traceEvents" come after the header; nlohmann's parser for anything else, which
/// gives the same result or the same error): the document, and where it has a top-level
/// "traceEvents" array, the trace read from it as trace_from_json does (the same checks and
/// lines). The events are read as they are parsed and left out of `doc` (its "traceEvents" is
/// empty), so memory holds the kernels, never a document of them (issue 46); a file whose
/// otherData or distributedInfo comes after its events is parsed again whole.
struct JsonOrTrace {
  nlohmann::json doc;
  std::optional<Trace> trace;
};
JsonOrTrace parse_json_or_trace(std::string_view text, const std::string& source = "file",
                                const ReadOptions& opts = {});
/// parse_json_or_trace of a file's bytes `data` (read by the caller, with its limit): gzip is read
/// as it inflates, on a thread of its own, up to kStreamTextLimit of text; what the fast reader
/// does not take (docs/TRACE.md) is inflated whole, within model::kTraceFileLimit.
JsonOrTrace read_json_or_trace_file(const std::string& path, std::string data,
                                    const ReadOptions& opts = {});
/// The most text a gzip trace may inflate to when read as it inflates (memory holds the kernels,
/// not the text).
inline constexpr std::size_t kStreamTextLimit = std::size_t{64} << 30;
/// Reads a file, gzip or not (unreadable -> Error).
Trace read_trace_file(const std::string& path);

namespace detail {
/// parse_json_or_trace through nlohmann's parser alone: what the fast reader falls back to, and
/// its reference in the tests.
JsonOrTrace parse_json_or_trace_dom(std::string_view text, const std::string& source,
                                    const ReadOptions& opts = {});
/// A gzip file read as it inflates, in pieces of `piece` bytes (tests: pieces of a few bytes).
JsonOrTrace read_gzip_json_or_trace(const std::string& path, const std::string& data,
                                    std::size_t piece, const ReadOptions& opts = {});
/// How often the fast reader gave a text to nlohmann's reader, in this process (tests).
uint64_t fast_reader_fallbacks();
}  // namespace detail
/// The file text of a trace: trace_to_json on one line, except that a one-rank file's
/// "distributedInfo" reads `"rank": N` with the space PyTorch's profiler writes (Holistic Trace
/// Analysis finds a file's rank by that pattern, and maps a file without it to rank 0).
std::string trace_text(const Trace& t);
/// Writes a file, as gzip when its name ends in .gz (Error when it cannot be written, or is a .gz
/// name in a build without zlib).
void write_trace_file(const Trace& t, const std::string& path);

/// Merges rank files into one trace. Two files holding the same rank throw Error (a file given
/// twice, or ranks that were not told apart); dropped records add up; notes are kept; NVTX
/// ranges follow their ranks.
Trace merge_traces(const std::vector<Trace>& parts);
/// The same, moving what the parts hold (their kept events are not copied).
Trace merge_traces(std::vector<Trace>&& parts);

/// Fills blocks_per_sm of kernels that lack it from the model's occupancy calculator, using the
/// rank's arch (builtin table; sm_count from the trace). Kernels of unknown arch stay at 0.
void fill_blocks_per_sm(Trace& t);

}  // namespace cco::trace
