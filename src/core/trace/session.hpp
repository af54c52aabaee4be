// CUPTI kernel tracing (docs/TRACE.md): every kernel that runs on any device of this process,
// with its stream, the stream's priority and the launch (grid, block, registers, shared
// memory), and the program's NVTX ranges, written as Chrome/Perfetto JSON through the model
// (trace/format.hpp).
//
// NVTX ranges: CUPTI sees NVTX calls only as NVTX's injection library, which NVTX looks up
// once, at the process's first NVTX call, from $NVTX_INJECTION64_PATH. start() sets that
// variable to the libcupti it loaded (never overwriting a value already set), so ranges pushed
// after start() are recorded. If the process made any NVTX call before start() (it, or a library
// such as NCCL), NVTX has settled on "no tool" for good and no range is seen; a range opened
// before start() and closed after it is reported as unmatched. Set NVTX_INJECTION64_PATH to
// libcupti before the program starts to be sure. (Not yet inside libcco_preload.so, whose copy of
// this tracer records no ranges: docs/TRACE.md.)
//
// Cost: a Session that is never started makes no CUPTI call and loads nothing. libcupti is
// loaded with dlopen at start(), so binaries run where CUPTI is missing (tracing then reports
// why and stays off). Started, CUPTI timestamps every kernel (docs/TRACE.md has the measured
// overhead).
//
// Process-wide: CUPTI allows one client per process, so at most one Session is active at a time.
// A second start(), or a process already under a CUPTI tool (Nsight Systems, Nsight Compute,
// cuda-gdb, another profiler), gets a clear warning and tracing stays off; the program runs on.
//
// Thread safety: all members may be called from any thread; records arrive on CUPTI's thread.
// Error contract: start(), stop(), name_stream() and set_rank() never throw (safe inside the
// preload library); trace() and write() throw (model::Error on a failed write).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "trace/analysis.hpp"
#include "trace/format.hpp"

namespace cco::trace {

struct Options {
  /// Bytes per CUPTI activity buffer (each holds ~30000 kernel records at 8 MiB).
  std::size_t buffer_bytes = 8u << 20;
  /// Buffers CUPTI may hold at once before records are dropped (0: no limit). A test hook for the
  /// dropped-record path, and a memory cap for very long runs.
  std::size_t max_buffers = 0;
  /// Kernel records kept at most (0: no limit); later ones are counted as dropped, so the trace
  /// says it is incomplete. A memory cap for a session that may outlive its purpose (the
  /// preload library's diagnosis of the first steps).
  std::size_t max_kernels = 0;
  /// CUPTI's launch timestamps (queued / submitted) on every kernel: they let the analysis time
  /// how long a communication kernel waited for SMs exactly (else it falls back to stream gaps).
  bool launch_timestamps = true;
  /// Path of libcupti; empty: $CCO_CUPTI_LIB, then the search of docs/TRACE.md.
  std::string library;
  /// Print warnings to stderr (once each) as well as keeping them in warning().
  bool print_warnings = true;
  /// Record NVTX ranges (CUPTI_ACTIVITY_KIND_MARKER; sets NVTX_INJECTION64_PATH, see above).
  bool nvtx_ranges = true;
  /// Record library calls (push_call; a CUPTI callback at each kernel launch call notes the call
  /// in force on the launching thread), so each kernel carries the call that launched it.
  bool library_calls = true;
};

/// Spells a library call's label from the caller's data (push_call); may throw (caught).
using CallLabel = std::string (*)(const void* arg);

class Session {
 public:
  explicit Session(Options o = {});
  /// Stops if active; never throws.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Starts tracing every kernel of the process from now on. Returns false, with warning() set
  /// (and printed), when it cannot: libcupti not found or too old, CUPTI already in use by
  /// another tool or Session, or a CUPTI call failed. Streams that exist already are recorded
  /// with their priorities (CUPTI dumps them). Starting an active session is a no-op (true).
  /// NVTX ranges that cannot be recorded (CUPTI refuses the marker kind, or a CUPTI known to
  /// crash as NVTX injection) leave kernel tracing on, with a warning that ranges are off.
  bool start() noexcept;
  /// Flushes every record CUPTI holds and stops. Does not synchronize the devices: call it after
  /// the traced work is complete (cudaDeviceSynchronize / cudaStreamSynchronize), else kernels
  /// still running are missing. Idempotent.
  void stop() noexcept;
  bool active() const noexcept;
  /// Delivers every record CUPTI holds, so trace() sees them, and stays on. Synchronize the
  /// devices first, as for stop().
  void flush() noexcept;
  /// Why tracing is off or incomplete ("" when all is well).
  std::string warning() const;

  /// Labels a stream ("compute", "comm") and records its id and priority (cuStreamGetPriority),
  /// so the trace shows it even if CUPTI did not report the stream. Only while active.
  void name_stream(CUstream stream, const std::string& label) noexcept;
  /// Records a named point in time ("concurrent, iteration 3"), on the kernels' clock
  /// (cuptiGetTimestamp); rank -1: the whole process. Shown in the file, in the timeline and by
  /// cco report, so a trace of many runs can be cut with --from/--to. Only while active.
  void mark(const std::string& name, int rank = -1) noexcept;
  /// Kernels of `device` belong to `rank` (default: rank = device), and so do the NVTX ranges
  /// of the calling thread. For ranks as threads of one process (cco bench), call once per rank
  /// from the rank's own thread. Ranges of other threads belong to the process's lowest rank.
  void set_rank(int device, int rank) noexcept;

  /// Kernels this thread launches until pop_call() were launched by one library call (a cuBLAS
  /// GEMM): the trace gives them its label (KernelEvent::call). `id` stands for the label (the
  /// same shape, the same id); label(arg) spells it, asked only the first time `id` is seen.
  /// False when not active, CUPTI gives no launch callbacks, or 8 calls are open on this thread
  /// (then do not pop). Cheap: an atomic load when off, a lookup under a mutex when on. Launches
  /// inside a CUDA graph's replay carry no call (the graph's launch is theirs). Never throws.
  bool push_call(uint64_t id, CallLabel label, const void* arg) noexcept;
  /// Ends the call pushed last on this thread.
  void pop_call() noexcept;
  /// Whether push_call() records anything now (started, and CUPTI calls back at launches).
  bool calls_on() const noexcept;

  /// Records CUPTI reported dropped (buffers full), so far. Non-zero: the trace is partial, and
  /// the files, cco report and the bench say so.
  uint64_t dropped_records() const noexcept;
  std::size_t kernel_count() const noexcept;
  /// NVTX ranges closed so far (open ones are counted once closed).
  std::size_t range_count() const noexcept;
  /// Forgets the kernels, marks, library calls and closed NVTX ranges collected so far (e.g. the warm-up); keeps
  /// streams, ranks and the ranges still open. Flushes CUPTI first: synchronize the devices
  /// before, as for stop().
  void clear() noexcept;

  /// The trace of every device (rank < 0) or of one rank's devices. Kernel names demangled,
  /// blocks per SM from the occupancy model where the architecture is known. NVTX ranges not
  /// closed (yet) are left out and named in the notes.
  trace::Trace trace(int rank = -1) const;
  /// Writes trace(rank) as Chrome/Perfetto JSON; throws model::Error when it cannot write.
  void write(const std::string& path, int rank = -1) const;

  struct State;  // implementation (public so the CUPTI callbacks can reach it)

 private:
  std::unique_ptr<State> s_;
};

/// Where start() found libcupti, or why it did not ("" before any start()).
std::string cupti_library();

}  // namespace cco::trace
