// Reading a trace (trace/format.hpp) through nlohmann's parser: ours and the Chrome/Perfetto
// JSON of other tools (the events read by format_events.hpp), what the fast reader
// (format_fast.cpp) gives back, and whole documents. GPU-free.
#include "trace/format.hpp"
#include "trace/format_events.hpp"
#include "trace/gzip.hpp"

#include "model/read_file.hpp"

#include <string>

namespace cco::trace {

using namespace cco::model;
using namespace cco::trace::events;

namespace {

// Malformed JSON as one line: "<source>: not valid JSON (...)".
[[noreturn]] void not_json(const json::exception& e, std::string_view text, const std::string& source) {
  std::string what = e.what();
  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> after "] "
  if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
  if (const std::string blank = model::blank_text_reason(text); !blank.empty()) what = blank;
  // A gzip file compressed again (issue 45's bad input): its inflated text is gzip once more.
  if (is_gzip(text))
    what = "gzip inside gzip: the file was compressed twice; decompress it once (gunzip) and read that";
  throw Error(source + ": not valid JSON (" + what + ")");
}

// The streaming reader met otherData or distributedInfo after the events it read without them.
struct LateHeader {};

}  // namespace

Trace trace_from_json(const json& j, const std::string& source, const ReadOptions& opts) {
  Reader rd(source);
  check_top(rd, j);
  auto evs = j.find("traceEvents");
  if (evs == j.end()) rd.fail("not a trace: no \"traceEvents\"");
  if (!evs->is_array()) rd.fail("\"traceEvents\" is not an array");
  Trace t;
  t.source = source;
  EventReader er(rd, t, our_meta(rd, j), distributed_info(j), opts.keep_events);
  for (std::size_t i = 0; i < evs->size(); ++i) er.event((*evs)[i], i);
  er.finish();
  t.normalize();
  return t;
}

JsonOrTrace detail::parse_json_or_trace_dom(std::string_view text, const std::string& source,
                                            const ReadOptions& opts) {
  // One pass: the elements of a top-level "traceEvents" array are read into the trace as each
  // is parsed, then dropped, so memory holds the kernels, not a document of them (issue 46). The
  // file's header (otherData, distributedInfo) must come before its events, as cco (keys in
  // order) and PyTorch's profiler write it; where it comes after, the document is parsed again
  // whole.
  Reader rd(source);
  Trace t;
  t.source = source;
  std::optional<EventReader> er;
  json other, distributed;  // copies of the header's parts, once parsed
  bool late = false;
  std::string key;          // the top level's key being parsed
  std::size_t i = 0;
  const auto cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
    if (depth == 1) {
      if (ev == json::parse_event_t::key) {
        key = parsed.is_string() ? parsed.get<std::string>() : std::string();
      } else if (ev == json::parse_event_t::array_start && key == "traceEvents" && !er) {
        json head = json::object();
        if (!other.is_null()) head["otherData"] = other;
        if (!distributed.is_null()) head["distributedInfo"] = distributed;
        er.emplace(rd, t, our_meta(rd, head), distributed_info(head), opts.keep_events);
      } else if (ev == json::parse_event_t::object_end && key == "otherData") {
        if (er && parsed.contains("ccoverlap")) late = true;
        other = parsed;
      } else if (ev == json::parse_event_t::object_end && key == "distributedInfo") {
        if (er && !(other.is_object() && other.contains("ccoverlap"))) late = true;
        distributed = parsed;
      }
      if (late) throw LateHeader{};
      return true;
    }
    if (depth == 2 && key == "traceEvents" && er) {
      if (ev == json::parse_event_t::object_end || ev == json::parse_event_t::value ||
          ev == json::parse_event_t::array_end) {
        er->event(parsed, i++);  // a value or an array: "not an object"
        return false;            // read: dropped from the document
      }
    }
    return true;
  };
  JsonOrTrace out;
  try {
    out.doc = json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    not_json(e, text, source);
  } catch (const LateHeader&) {
    try {
      out.doc = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
      not_json(e, text, source);
    }
    if (out.doc.is_object() && out.doc.contains("traceEvents")) {
      out.trace = trace_from_json(out.doc, source, opts);
      out.doc["traceEvents"] = json::array();  // as the streaming reader leaves it
    }
    return out;
  }
  if (out.doc.is_object() && out.doc.contains("traceEvents")) {
    check_top(rd, out.doc);
    if (!out.doc["traceEvents"].is_array()) rd.fail("\"traceEvents\" is not an array");
    er->finish();
    t.normalize();
    out.trace = std::move(t);
  }
  return out;
}

Trace parse_trace(std::string_view text, const std::string& source) {
  JsonOrTrace r = parse_json_or_trace(text, source);
  if (r.trace) return std::move(*r.trace);
  return trace_from_json(r.doc, source);  // its one line: not an object, no "traceEvents", ...
}

Trace read_trace_file(const std::string& path) {
  JsonOrTrace r = read_json_or_trace_file(path, read_file(path, kTraceFileLimit));
  if (r.trace) return std::move(*r.trace);
  return trace_from_json(r.doc, path);  // its one line: not an object, no "traceEvents", ...
}

}  // namespace cco::trace
