// The fast reader of traces (trace/format.hpp: parse_json_or_trace, read_json_or_trace_file;
// issue 46 item 1): the events parsed one at a time into a reused arena (json_lite) and read as
// parsed (format_events.hpp), gzip read as it inflates on a thread of its own; anything it does
// not take goes to nlohmann's reader (format_read.cpp), which gives the same result or error.
// GPU-free.
#include "trace/format.hpp"
#include "trace/format_events.hpp"
#include "trace/gzip.hpp"
#include "trace/json_lite.hpp"

#include "model/read_file.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cco::trace {

using namespace cco::model;
using namespace cco::trace::events;

namespace {

// The fast reader (json_lite) gives up on the text: the reader over nlohmann's parser reads it
// again, for its result or its error.
struct Fallback {};

// More text for the fast reader, piece by piece (a gzip file inflated by a thread of its own).
class TextSource {
 public:
  virtual ~TextSource() = default;
  /// Appends more text to `buf`; false when none is left.
  virtual bool more(std::string& buf) = 0;
};

// A gzip file's text, inflated ahead by a thread of its own while the reader parses (two cores:
// the inflating and the parsing overlap), at most kAhead pieces ahead.
class InflatingSource : public TextSource {
 public:
  InflatingSource(const std::string& gz, std::size_t limit, const std::string& what,
                  std::size_t piece)
      : in_(gz, limit, what), piece_(piece), worker_([this] { run(); }) {}
  ~InflatingSource() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  bool more(std::string& buf) override {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !ready_.empty() || ended_; });
    if (ready_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return false;
    }
    buf += ready_.front();
    ready_.pop_front();
    cv_.notify_all();
    return true;
  }

 private:
  static constexpr std::size_t kAhead = 4;
  void run() {
    try {
      while (true) {
        std::string piece;
        piece.reserve(piece_ + (64 << 10));
        const bool got = in_.next(piece, piece_);
        std::unique_lock lk(mu_);
        if (!got || stop_) break;
        ready_.push_back(std::move(piece));
        cv_.notify_all();
        cv_.wait(lk, [&] { return ready_.size() < kAhead || stop_; });
        if (stop_) break;
      }
    } catch (...) {
      std::lock_guard lk(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard lk(mu_);
    ended_ = true;
    cv_.notify_all();
  }
  Inflater in_;
  std::size_t piece_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;
  std::exception_ptr error_;
  bool stop_ = false, ended_ = false;
  std::thread worker_;  // last: started once the rest is made
};

// Where the fast reader is in its text: the whole text, or a window of a TextSource's that
// slides on as values are read (what was read is dropped when more is pulled).
class Cursor {
 public:
  explicit Cursor(std::string_view text) : view_(text) {}
  explicit Cursor(TextSource& src) : src_(&src) {}
  // Runs f(p, end), which returns where it ended; while it throws LiteNeedMore, more text is
  // pulled and f runs again from the same place; at the end of the text: Fallback.
  template <class F>
  void unit(F&& f) {
    while (true) {
      try {
        pos_ = static_cast<std::size_t>(f(view_.data() + pos_, view_.data() + view_.size()) - view_.data());
        return;
      } catch (const lite::LiteNeedMore&) {
        if (!pull()) throw Fallback{};
      }
    }
  }
  // White space skipped; the next character (Fallback at the end of the text).
  char peek() {
    unit([](const char* p, const char* e) {
      p = lite::skip_space(p, e);
      if (p >= e) throw lite::LiteNeedMore{};
      return p;
    });
    return view_[pos_];
  }
  void advance() { ++pos_; }
  // Nothing but white space left.
  bool at_end() {
    while (true) {
      pos_ = static_cast<std::size_t>(lite::skip_space(view_.data() + pos_, view_.data() + view_.size()) - view_.data());
      if (pos_ < view_.size()) return false;
      if (!pull()) return true;
    }
  }

 private:
  bool pull() {
    if (!src_ || ended_) return false;
    buf_.erase(0, pos_);
    pos_ = 0;
    const std::size_t had = buf_.size();
    if (!src_->more(buf_) || buf_.size() == had) ended_ = true;
    view_ = buf_;
    return !ended_;
  }
  TextSource* src_ = nullptr;
  std::string buf_;
  std::string_view view_;
  std::size_t pos_ = 0;
  bool ended_ = false;
};

// The fast reader: the top-level object's members one by one, each event of "traceEvents" parsed
// into a reused arena (json_lite) and read as parsed, every other member parsed by nlohmann from
// its own text (they are small). It takes the common layout only -- an object, "traceEvents" an
// array that comes once and after otherData and distributedInfo -- and valid JSON only; anything
// else throws Fallback, and what it read is dropped. Errors in the events themselves are the
// EventReader's, thrown as they are met, as the other reader throws them.
JsonOrTrace parse_fast(Cursor& cur, const std::string& source, const ReadOptions& opts) {
  cur.unit([](const char* p, const char* e) {  // a byte order mark, as nlohmann skips it
    if (e - p < 3) throw lite::LiteNeedMore{};
    return std::string_view(p, 3) == "\xEF\xBB\xBF" ? p + 3 : p;
  });
  Reader rd(source);
  Trace t;
  t.source = source;
  std::optional<EventReader> er;
  JsonOrTrace out;
  out.doc = json::object();
  json other, distributed;  // the header's parts, once read
  lite::Doc doc;
  std::size_t i = 0;
  const auto expect = [&](char c) {
    if (cur.peek() != c) throw Fallback{};
    cur.advance();
  };
  try {
    expect('{');
    bool first = true;
    while (!(first && cur.peek() == '}')) {
      first = false;
      if (cur.peek() != '"') throw Fallback{};
      cur.unit([&](const char* p, const char* e) { return doc.parse(p, e); });
      const std::string key = doc.root().get<std::string>();
      expect(':');
      if (key == "traceEvents") {
        if (er || cur.peek() != '[') throw Fallback{};  // twice, or not an array: the other reader says
        json head = json::object();
        if (!other.is_null()) head["otherData"] = other;
        if (!distributed.is_null()) head["distributedInfo"] = distributed;
        er.emplace(rd, t, our_meta(rd, head), distributed_info(head), opts.keep_events);
        cur.advance();
        if (cur.peek() != ']') {
          while (true) {
            cur.unit([&](const char* p, const char* e) {
              const char* q = doc.parse(p, e);
              if (opts.keep_events) er->raw_text(std::string_view(lite::skip_space(p, e), q));
              return q;
            });
            try {
              er->event(doc.root(), i++);
            } catch (const Error&) {
              // A profiler's rank may yet come (distributedInfo after the events): the other
              // reader, which reads the header first, says which error comes first.
              if (!er->ours() && distributed.is_null()) throw Fallback{};
              throw;
            }
            if (cur.peek() != ',') break;
            cur.advance();
          }
        }
        expect(']');
        out.doc[key] = json::array();  // as the other reader leaves it
      } else {
        json v;
        cur.unit([&](const char* p, const char* e) {
          const char* q = doc.parse(p, e);  // where the value ends, checked
          v = json::parse(lite::skip_space(p, e), q);
          return q;
        });
        if (er && key == "otherData" && v.is_object() && v.contains("ccoverlap"))
          throw Fallback{};  // our header after the events: the other reader reads it again whole
        if (er && key == "distributedInfo" && !er->ours()) {
          if (!distributed.is_null()) throw Fallback{};  // twice: the other reader says
          er->late_distributed(v);  // as PyTorch writes it: after the events
        }
        if (key == "otherData") other = v;
        if (key == "distributedInfo") distributed = v;
        out.doc[key] = std::move(v);
      }
      if (cur.peek() != ',') break;
      cur.advance();
    }
    expect('}');
  } catch (const lite::LiteInvalid&) {
    throw Fallback{};
  } catch (const json::exception&) {
    throw Fallback{};
  }
  if (!cur.at_end()) throw Fallback{};  // something after the object
  if (er) {
    check_top(rd, out.doc);
    er->finish();
    t.normalize();
    out.trace = std::move(t);
  }
  return out;
}

}  // namespace

namespace {
std::atomic<uint64_t> g_fallbacks{0};
}  // namespace

uint64_t detail::fast_reader_fallbacks() {
  return g_fallbacks.load(std::memory_order_relaxed);
}

JsonOrTrace parse_json_or_trace(std::string_view text, const std::string& source,
                                const ReadOptions& opts) {
  try {
    Cursor cur(text);
    return parse_fast(cur, source, opts);
  } catch (const Fallback&) {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  }
  return detail::parse_json_or_trace_dom(text, source, opts);
}

namespace detail {

JsonOrTrace read_gzip_json_or_trace(const std::string& path, const std::string& data,
                                    std::size_t piece, const ReadOptions& opts) {
  // Read as it inflates, its text never held whole; what the fast reader does not take is
  // inflated whole and read by the other reader (within kTraceFileLimit).
  try {
    InflatingSource src(data, kStreamTextLimit, path, piece);
    Cursor cur(src);
    return parse_fast(cur, path, opts);
  } catch (const Fallback&) {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  }
  return parse_json_or_trace_dom(trace::gunzip(data, kTraceFileLimit, path), path, opts);
}

}  // namespace detail

JsonOrTrace read_json_or_trace_file(const std::string& path, std::string data, const ReadOptions& opts) {
  if (!is_gzip(data)) return parse_json_or_trace(data, path, opts);
  return detail::read_gzip_json_or_trace(path, data, std::size_t{4} << 20, opts);  // ours or PyTorch's
}

}  // namespace cco::trace
