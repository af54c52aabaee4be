#include "trace/gzip.hpp"

#include "model/limits.hpp"
#include "model/occupancy.hpp"

#ifdef CCO_TRACE_HAS_ZLIB
#include <zlib.h>
#endif

namespace cco::trace {

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

#ifdef CCO_TRACE_HAS_ZLIB
std::string gunzip(const std::string& data, std::size_t limit, const std::string& what) {
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer (not a raw zlib stream).
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw model::Error(what + ": cannot start zlib");
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  try {
    while (true) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END)
        throw model::Error(what + ": not valid gzip (" + (z.msg ? z.msg : "zlib error " + std::to_string(rc)) + ")");
      out.append(buf, sizeof buf - z.avail_out);
      if (out.size() > limit)
        throw model::Error(what + ": inflates to more than " +
                           model::format_bytes(static_cast<int64_t>(limit)) + " (the limit for this input)");
      if (rc == Z_STREAM_END) {
        if (z.avail_in == 0) break;
        inflateReset(&z);  // another gzip member follows
        continue;
      }
      if (z.avail_in == 0 && z.avail_out != 0)
        throw model::Error(what + ": not valid gzip (the data ends early)");
    }
  } catch (...) {
    inflateEnd(&z);
    throw;
  }
  inflateEnd(&z);
  return out;
}

std::string gzip(const std::string& data, const std::string& what) {
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer; level 6, zlib's default.
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw model::Error(what + ": cannot start zlib");
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = deflate(&z, Z_FINISH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      deflateEnd(&z);
      throw model::Error(what + ": cannot compress (zlib error " + std::to_string(rc) + ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc != Z_STREAM_END);
  deflateEnd(&z);
  return out;
}
#else
std::string gunzip(const std::string&, std::size_t, const std::string& what) {
  throw model::Error(what + ": a gzip file, and this cco was built without zlib (gunzip it first)");
}
std::string gzip(const std::string&, const std::string& what) {
  throw model::Error(what + ": a .gz output, and this cco was built without zlib (name a .json file)");
}
#endif

}  // namespace cco::trace
