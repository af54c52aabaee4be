// gzip input and output of traces and cco report's files (PyTorch's profiler writes
// `trace.json.gz`, HTA reads it; a trace cco writes under a .gz name is gzip): inflated in memory
// with a bound, so a small file that inflates without end gets one clear error, never all the
// memory. zlib (Debian's zlib1g) when the build found it (CCO_TRACE_HAS_ZLIB); without it a .gz
// input or output is refused in one line.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace cco::trace {

/// A gzip input that has given more than kGzipRatioFloor bytes at more than kGzipRatioLimit
/// bytes per compressed byte is refused as a bomb (issue 46: a 0.6 MB file of 330 MB of valid
/// metadata events took 3 s to read to its "no kernel" line). Real traces compress 10:1 to 30:1
/// (cco's own and HTA's 31 sample traces: at most 29:1); zlib's most is about 1032:1.
inline constexpr double kGzipRatioLimit = 250;
inline constexpr std::size_t kGzipRatioFloor = std::size_t{64} << 20;

/// True when `data` starts with gzip's magic bytes (1f 8b).
bool is_gzip(std::string_view data);
/// The inflated bytes of a gzip stream (several members are read one after another). Throws
/// model::Error naming `what` when the data is not valid gzip, inflates beyond `limit` bytes or
/// beyond kGzipRatioLimit, or this build has no zlib.
std::string gunzip(const std::string& data, std::size_t limit, const std::string& what);
/// `data` as one gzip member (what `gunzip` and PyTorch's readers take). Throws model::Error
/// naming `what` when this build has no zlib or zlib fails.
std::string gzip(const std::string& data, const std::string& what);

/// A gzip stream inflated piece by piece (gunzip's reader), for text read as it inflates.
class Inflater {
 public:
  /// `data` must outlive the Inflater. Throws model::Error when this build has no zlib. `chunk`:
  /// the most bytes given to zlib at once (its counts are 32-bit).
  Inflater(const std::string& data, std::size_t limit, std::string what,
           std::size_t chunk = std::size_t{1} << 30);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  /// Appends about `max` more inflated bytes (at least one, unless the stream has ended) to
  /// `out`; false once nothing is left. Throws model::Error naming `what` as gunzip does (not
  /// valid gzip, more than `limit` bytes in all).
  bool next(std::string& out, std::size_t max);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// A gzip stream made piece by piece (trace files written as their text is made).
class Deflater {
 public:
  /// Throws model::Error naming `what` when this build has no zlib. `chunk`: the most bytes
  /// given to zlib at once (its counts are 32-bit).
  explicit Deflater(std::string what, std::size_t chunk = std::size_t{1} << 30);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  /// Compresses `in`, appending what is ready to `out`.
  void add(std::string_view in, std::string& out);
  /// Ends the stream (its trailer) into `out`; nothing may be added after.
  void finish(std::string& out);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

namespace detail {
/// The same, feeding zlib at most `chunk` bytes at a time (zlib counts input in 32 bits: the
/// public functions use 1 GiB pieces, so a trace of 4 GiB or more is whole); for tests.
std::string gunzip(const std::string& data, std::size_t limit, const std::string& what,
                   std::size_t chunk);
std::string gzip(const std::string& data, const std::string& what, std::size_t chunk);
}  // namespace detail

}  // namespace cco::trace
