// gzip input and output of traces and cco report's files (PyTorch's profiler writes
// `trace.json.gz`, HTA reads it; a trace cco writes under a .gz name is gzip): inflated in memory
// with a bound, so a small file that inflates without end gets one clear error, never all the
// memory. zlib (Debian's zlib1g) when the build found it (CCO_TRACE_HAS_ZLIB); without it a .gz
// input or output is refused in one line.
#pragma once

#include <cstddef>
#include <string>

namespace cco::trace {

/// True when `data` starts with gzip's magic bytes (1f 8b).
bool is_gzip(const std::string& data);
/// The inflated bytes of a gzip stream (several members are read one after another). Throws
/// model::Error naming `what` when the data is not valid gzip, inflates beyond `limit` bytes, or
/// this build has no zlib.
std::string gunzip(const std::string& data, std::size_t limit, const std::string& what);
/// `data` as one gzip member (what `gunzip` and PyTorch's readers take). Throws model::Error
/// naming `what` when this build has no zlib or zlib fails.
std::string gzip(const std::string& data, const std::string& what);

namespace detail {
/// The same, feeding zlib at most `chunk` bytes at a time (zlib counts input in 32 bits: the
/// public functions use 1 GiB pieces, so a trace of 4 GiB or more is whole); for tests.
std::string gunzip(const std::string& data, std::size_t limit, const std::string& what,
                   std::size_t chunk);
std::string gzip(const std::string& data, const std::string& what, std::size_t chunk);
}  // namespace detail

}  // namespace cco::trace
