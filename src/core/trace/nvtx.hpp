// Pairing of NVTX range records into ranges (docs/TRACE.md, "NVTX ranges"). GPU-free: the CUPTI
// tracer (src/core/trace/session.cpp) feeds it CUPTI_ACTIVITY_KIND_MARKER records, copied out of
// CUPTI's buffers; the tests feed it synthetic ones.
//
// CUPTI reports a range as two records with the same marker id: START (flag
// CUPTI_ACTIVITY_FLAG_MARKER_START, with the name and domain) and END (no name). Push/pop ranges
// nest on a thread; start/end ranges may overlap anything and end on another thread. Pairing is
// by id only, so both kinds pair the same way, in any arrival order of the records of different
// ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/format.hpp"

namespace cco::trace {

/// One START or END record of an NVTX range, as the tracer copied it.
struct NvtxRecord {
  enum class Kind { Start, End };
  Kind kind = Kind::Start;
  uint64_t id = 0;      ///< CUPTI's marker id: the START and END of one range share it
  int64_t ts_ns = 0;    ///< the tracer's clock
  uint64_t thread = 0;  ///< the thread that issued the call (0: unknown)
  std::string name;     ///< START only
  std::string domain;   ///< START only; "" for the default domain
};

class NvtxPairing {
 public:
  /// START opens the range `id`; END closes it into ranges() (rank -1: for the tracer to set).
  /// A START whose id is already open replaces the older one, which counts as truncated; an END
  /// without an open START (opened before tracing began, or its START was dropped) is counted.
  void add(const NvtxRecord& r);

  /// Closed ranges, in the order their END arrived.
  const std::vector<NvtxRange>& ranges() const { return ranges_; }
  /// Ranges opened and not (yet) closed, by id (end_ns = start_ns).
  const std::map<uint64_t, NvtxRange>& open() const { return open_; }
  /// END records that matched no START.
  uint64_t unmatched_ends() const { return unmatched_ends_; }
  /// STARTs replaced by a later START of the same id before their END came.
  uint64_t replaced_starts() const { return replaced_; }

  /// What did not pair, as notes for the trace: one per range still open (name, thread, start),
  /// at most `max_listed`, then a count; one for END records without START; one for replaced
  /// STARTs. Empty when everything paired.
  std::vector<std::string> notes(std::size_t max_listed = 10) const;

  /// Forgets the closed ranges and the counts; keeps the open ranges (their END may still come).
  void clear_closed();

 private:
  std::vector<NvtxRange> ranges_;
  std::map<uint64_t, NvtxRange> open_;
  uint64_t unmatched_ends_ = 0;
  uint64_t replaced_ = 0;
};

/// Sets the rank of every range: the rank of its thread where `rank_of_thread` has it (a rank's
/// own thread, as Session::set_rank records it), else `fallback` (the process's lowest rank).
void assign_nvtx_ranks(std::vector<NvtxRange>& ranges,
                       const std::map<uint64_t, int>& rank_of_thread, int fallback);

}  // namespace cco::trace
