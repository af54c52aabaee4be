#include "trace/gzip.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "model/limits.hpp"
#include "model/occupancy.hpp"

#ifdef CCO_TRACE_HAS_ZLIB
#include <zlib.h>
#endif

namespace cco::trace {

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

#ifdef CCO_TRACE_HAS_ZLIB
namespace {

// zlib counts its input in 32-bit uInt: a trace of 4 GiB or more is fed in pieces of `chunk`.
struct Feeder {
  const char* next;
  std::size_t left;
  std::size_t chunk;
  void refill(z_stream& z) {
    if (z.avail_in != 0 || left == 0) return;
    const std::size_t n = std::min(left, chunk);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(next));
    z.avail_in = static_cast<uInt>(n);
    next += n;
    left -= n;
  }
};

constexpr std::size_t kZlibChunk = std::size_t{1} << 30;

std::string mb_text(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return b;
}

}  // namespace

struct Inflater::State {
  z_stream z{};
  Feeder in;
  std::size_t limit;
  std::string what;
  std::size_t size;  ///< the compressed bytes
  std::size_t total = 0;
  bool done = false;
};

Inflater::Inflater(const std::string& data, std::size_t limit, std::string what, std::size_t chunk)
    : s_(std::make_unique<State>(State{{}, Feeder{data.data(), data.size(), chunk}, limit, std::move(what), data.size()})) {
  // 16 + MAX_WBITS: a gzip header and trailer (not a raw zlib stream).
  if (inflateInit2(&s_->z, 16 + MAX_WBITS) != Z_OK) throw model::Error(s_->what + ": cannot start zlib");
}

Inflater::~Inflater() {
  inflateEnd(&s_->z);
}

bool Inflater::next(std::string& out, std::size_t max) {
  State& s = *s_;
  if (s.done) return false;
  z_stream& z = s.z;
  char buf[1 << 16];
  std::size_t got = 0;
  while (got < max) {
    s.in.refill(z);
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && s.in.left > 0))
      throw model::Error(s.what + ": not valid gzip (" + (z.msg ? z.msg : "zlib error " + std::to_string(rc)) + ")");
    const std::size_t n = sizeof buf - z.avail_out;
    out.append(buf, n);
    got += n;
    s.total += n;
    if (s.total > s.limit)
      throw model::Error(s.what + ": inflates to more than " +
                         model::format_bytes(static_cast<int64_t>(s.limit)) + " (the limit for this input)");
    if (s.total > kGzipRatioFloor) {
      // Read so far of the compressed data (every member), against what it gave.
      const std::size_t read = s.size - s.in.left - z.avail_in;
      if (static_cast<double>(s.total) > kGzipRatioLimit * static_cast<double>(std::max<std::size_t>(read, 1)))
        throw model::Error(s.what + ": a gzip bomb, not a trace: " + mb_text(read) +
                           " inflated to more than " + mb_text(s.total) + " (over " +
                           std::to_string(static_cast<int>(kGzipRatioLimit)) +
                           ":1; traces compress 10:1 to 30:1)");
    }
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && s.in.left == 0) {
        s.done = true;
        break;
      }
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (z.avail_in == 0 && s.in.left == 0 && z.avail_out != 0)
      throw model::Error(s.what + ": not valid gzip (the data ends early)");
  }
  return got > 0 || !s.done;
}

struct Deflater::State {
  z_stream z{};
  std::string what;
  std::size_t chunk;
};

Deflater::Deflater(std::string what, std::size_t chunk) : s_(std::make_unique<State>()) {
  s_->what = std::move(what);
  s_->chunk = std::max<std::size_t>(chunk, 1);
  // 16 + MAX_WBITS: a gzip header and trailer; level 6, zlib's default.
  if (deflateInit2(&s_->z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw model::Error(s_->what + ": cannot start zlib");
}

Deflater::~Deflater() {
  deflateEnd(&s_->z);
}

namespace {
// Runs deflate over `in` (pieces of at most `chunk`: zlib counts in 32 bits) with `flush` at the
// last piece, appending its output to `out`.
void deflate_into(z_stream& z, std::string_view in, int flush, std::size_t chunk, std::string& out,
                  const std::string& what) {
  char buf[1 << 16];
  do {
    const std::size_t n = std::min(in.size(), chunk);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(n);
    in.remove_prefix(n);
    const int f = in.empty() ? flush : Z_NO_FLUSH;
    int rc = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = deflate(&z, f);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        throw model::Error(what + ": cannot compress (zlib error " + std::to_string(rc) + ")");
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0 || (f == Z_FINISH && rc != Z_STREAM_END));
  } while (!in.empty());
}
}  // namespace

void Deflater::add(std::string_view in, std::string& out) {
  if (!in.empty()) deflate_into(s_->z, in, Z_NO_FLUSH, s_->chunk, out, s_->what);
}

void Deflater::finish(std::string& out) {
  deflate_into(s_->z, {}, Z_FINISH, s_->chunk, out, s_->what);
}

namespace detail {

std::string gunzip(const std::string& data, std::size_t limit, const std::string& what,
                   std::size_t chunk) {
  Inflater in(data, limit, what, chunk);
  std::string out;
  while (in.next(out, std::size_t{1} << 20)) {
  }
  return out;
}

std::string gzip(const std::string& data, const std::string& what, std::size_t chunk) {
  Deflater d(what, chunk);
  std::string out;
  d.add(data, out);
  d.finish(out);
  return out;
}

}  // namespace detail

std::string gunzip(const std::string& data, std::size_t limit, const std::string& what) {
  return detail::gunzip(data, limit, what, kZlibChunk);
}

std::string gzip(const std::string& data, const std::string& what) {
  return detail::gzip(data, what, kZlibChunk);
}
#else
struct Deflater::State {};
Deflater::Deflater(std::string what, std::size_t) {
  throw model::Error(what + ": a .gz output, and this cco was built without zlib (name a .json file)");
}
Deflater::~Deflater() = default;
void Deflater::add(std::string_view, std::string&) {}
void Deflater::finish(std::string&) {}
struct Inflater::State {};
Inflater::Inflater(const std::string&, std::size_t, std::string what, std::size_t) {
  throw model::Error(what + ": a gzip file, and this cco was built without zlib (gunzip it first)");
}
Inflater::~Inflater() = default;
bool Inflater::next(std::string&, std::size_t) { return false; }
std::string gunzip(const std::string&, std::size_t, const std::string& what) {
  throw model::Error(what + ": a gzip file, and this cco was built without zlib (gunzip it first)");
}
std::string gzip(const std::string&, const std::string& what) {
  throw model::Error(what + ": a .gz output, and this cco was built without zlib (name a .json file)");
}
#endif

}  // namespace cco::trace
