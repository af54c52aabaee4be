// The fast trace reader (trace/json_lite.hpp and parse_json_or_trace's own reader; issue 46 item
// 1) against nlohmann's (detail::parse_json_or_trace_dom): the same document and trace, or the
// same error line, for traces of every kind, odd but valid JSON, every truncation of a trace,
// and gzip read as it inflates in pieces of a few bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/limits.hpp"
#include "model/read_file.hpp"
#include "trace/format.hpp"
#include "trace/gzip.hpp"
#include "trace/json_lite.hpp"
#include "trace_test_helpers.hpp"

namespace {

using cco::trace::JsonOrTrace;

// What a reader made of a text: the document and the trace as text, or its error line.
template <class F>
std::string outcome(F&& read) {
  try {
    const JsonOrTrace r = read();
    return r.doc.dump() + "\n" + (r.trace ? cco::trace::trace_text(*r.trace) : std::string("no trace"));
  } catch (const cco::model::Error& e) {
    return std::string("error: ") + e.what();
  }
}

std::string fast(const std::string& text) {
  return outcome([&] { return cco::trace::parse_json_or_trace(text, "t.json"); });
}
std::string dom(const std::string& text) {
  return outcome([&] { return cco::trace::detail::parse_json_or_trace_dom(text, "t.json"); });
}

// A PyTorch-like trace (no schema of ours): kernels, a launch call, a profiler step, a memcpy.
const char* kProfiler = R"J({"schemaVersion": 1, "distributedInfo": {"rank": 1, "world_size": 2},
 "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
 "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7,
   "ts": 100.5, "dur": 20.25, "args": {"device": 0, "stream": 7, "correlation": 12, "grid": [24, 1, 1],
   "block": [640, 1, 1], "registers per thread": 96, "shared memory": 0}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 99.0,
   "dur": 1.0, "args": {"correlation": 12}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#551", "pid": 0, "tid": 7,
   "ts": 90, "dur": 60},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 8,
   "ts": 125, "dur": 3, "args": {"device": 0, "stream": 8, "bytes": 4096}},
  {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm \"quoted\" \u00e9 \ud83d\ude00", "pid": 9, "tid": 9,
   "ts": 95, "dur": 2, "args": {"Input Dims": [[8, 8], [8, 8]], "flag": true, "none": null}}
 ]})J";

TEST(FastReader, SameAsNlohmannOnEveryKindOfTrace) {
  // PyTorch writes its distributedInfo after the events: the rank it names is given to them.
  std::string profiler_late = kProfiler;
  const std::string info = R"("distributedInfo": {"rank": 1, "world_size": 2},)";
  profiler_late.erase(profiler_late.find(info), info.size());
  profiler_late.insert(profiler_late.rfind('}'), R"(, "distributedInfo": {"rank": 1, "world_size": 2})");
  std::vector<std::string> texts = {cco::trace::trace_text(cco::test::rich()), kProfiler, profiler_late};
  // An empty trace, a trace with no events array, other JSON files cco report reads.
  texts.push_back(R"({"traceEvents": []})");
  texts.push_back(R"({"schema": "ccoverlap.plan", "policy": "priority", "list": [1, 2.5, -3, "x"]})");
  for (const auto& t : texts) {
    const uint64_t fallbacks = cco::trace::detail::fast_reader_fallbacks();
    const std::string f = fast(t);
    EXPECT_EQ(cco::trace::detail::fast_reader_fallbacks(), fallbacks)  // read by the fast reader
        << t.substr(0, 200);
    EXPECT_EQ(f, dom(t)) << t.substr(0, 200);
    EXPECT_EQ(f.rfind("error", 0), std::string::npos) << f;
  }
  EXPECT_EQ(fast(profiler_late), fast(kProfiler));
  EXPECT_NE(fast(kProfiler).find("\"pid\":1,"), std::string::npos);  // rank 1, not the pid 0
  // What it does not take goes to nlohmann's reader (our header after the events).
  const uint64_t fallbacks = cco::trace::detail::fast_reader_fallbacks();
  const std::string late = R"({"traceEvents": [], "otherData": {"ccoverlap": {"schema": "ccoverlap.trace",
    "schema_version": "1.0.0"}}})";
  EXPECT_EQ(fast(late), dom(late));
  EXPECT_EQ(cco::trace::detail::fast_reader_fallbacks(), fallbacks + 1);
}

TEST(FastReader, OddButValidJsonReadAlike) {
  const std::string rich = cco::trace::trace_text(cco::test::rich());
  std::vector<std::string> texts = {
      "\xEF\xBB\xBF" + rich,  // a byte order mark
      " \t\r\n" + rich + " \n",
      // the header after the events: read again whole by nlohmann's reader
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1,
        "dur": 2}], "distributedInfo": {"rank": 3}})",
      // traceEvents twice, a key twice in an event, numbers of every form
      R"({"traceEvents": [], "traceEvents": [{"ph": "X", "cat": "kernel", "name": "a", "name": "b",
        "pid": 0, "tid": 1, "ts": 1e1, "dur": 0.5E+1, "args": {"device": -0, "stream": 18446744073709551615}}]})",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1,
        "ts": 12345678901234567890123, "dur": 1}]})",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k\/\b\f\n\r\t", "pid": 0, "tid": 1,
        "ts": 1, "dur": 1, "args": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}]})",
      // errors in the events: the EventReader's line either way
      R"({"traceEvents": [{}, 0]})",
      R"({"traceEvents": [0]})",
      R"({"traceEvents": {"not": "an array"}})",
      R"([1, 2, 3])",
      R"("a string")",
  };
  for (const auto& t : texts) EXPECT_EQ(fast(t), dom(t)) << t.substr(0, 200);
}

TEST(FastReader, InvalidJsonGetsNlohmannsLine) {
  for (const std::string& t :
       {std::string(R"({"traceEvents": [01]})"), std::string(R"({"traceEvents": [1.]})"),
        std::string(R"({"traceEvents": [tru]})"), std::string(R"({"traceEvents": ["a)" "\x01" R"("]})"),
        std::string(R"({"traceEvents": ["\ud800"]})"), std::string(R"({"traceEvents": ["\x"]})"),
        std::string("{\"traceEvents\": [\"\xC3\x28\"]}"), std::string("{\"traceEvents\": [\"\xED\xA0\x80\"]}"),
        std::string(R"({"traceEvents": [1e999]})"), std::string(R"({"a": 1} x)"), std::string(""),
        std::string("  ")}) {
    const std::string f = fast(t);
    EXPECT_EQ(f, dom(t)) << t;
    EXPECT_EQ(f.rfind("error", 0), 0u) << t;
  }
}

TEST(FastReader, EveryTruncationAlike) {
  const std::string text = kProfiler;
  for (std::size_t cut = 0; cut < text.size(); ++cut)
    ASSERT_EQ(fast(text.substr(0, cut)), dom(text.substr(0, cut))) << "cut at " << cut;
}

TEST(FastReader, GzipReadAsItInflatesInAnyPieces) {
  const std::string text = cco::trace::trace_text(cco::test::rich());
  const std::string gz = cco::trace::gzip(text, "t.json.gz");
  const std::string want = fast(text);
  const uint64_t fallbacks = cco::trace::detail::fast_reader_fallbacks();
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20})
    EXPECT_EQ(outcome([&] { return cco::trace::detail::read_gzip_json_or_trace("t.json", gz, piece); }),
              want)
        << "pieces of " << piece;
  EXPECT_EQ(cco::trace::detail::fast_reader_fallbacks(), fallbacks);  // none fell back
  // Two members one after the other, and a cut gzip: its own line.
  const std::string half = cco::trace::gzip(text.substr(0, text.size() / 2), "a") +
                           cco::trace::gzip(text.substr(text.size() / 2), "b");
  EXPECT_EQ(outcome([&] { return cco::trace::detail::read_gzip_json_or_trace("t.json", half, 5); }), want);
  const std::string cut = gz.substr(0, gz.size() / 2);
  const std::string err = outcome([&] { return cco::trace::detail::read_gzip_json_or_trace("t.json", cut, 64); });
  EXPECT_NE(err.find("t.json: not valid gzip"), std::string::npos) << err;
  // An error in an event stops the inflating thread (no wait for the rest of the file).
  const std::string bomb = cco::trace::gzip("{\"traceEvents\": [" + std::string(8u << 20, ' ') + "{}, {}]}", "b");
  const std::string e = outcome([&] { return cco::trace::detail::read_gzip_json_or_trace("b.json", bomb, 64 << 10); });
  EXPECT_NE(e.find("traceEvents[0]: no \"ph\""), std::string::npos) << e;
}

// A trace gzipped twice: one line that says so (it was "not valid JSON ... '<U+001F>'").
TEST(FastReader, GzipInsideGzipSaysSo) {
  const std::string twice = cco::trace::gzip(cco::trace::gzip(cco::trace::trace_text(cco::test::rich()), "a"), "b");
  const std::string e = outcome([&] { return cco::trace::read_json_or_trace_file("t.json.gz", twice); });
  EXPECT_NE(e.find("t.json.gz: not valid JSON (gzip inside gzip: the file was compressed twice"), std::string::npos) << e;
}

// A gzip that inflates far beyond what traces compress to is refused once it passes the floor,
// however valid its events (issue 46: 330 MB of metadata events from a 0.6 MB file took 3 s to
// reach its "no kernel" line); text that compresses like a trace reads on past the floor.
TEST(FastReader, GzipBombRefusedByItsRatio) {
  std::string events = "{\"traceEvents\": [";
  const std::string one = "{\"ph\": \"M\"}, ";
  while (events.size() < cco::trace::kGzipRatioFloor + (4u << 20)) events += one;
  events += "{\"ph\": \"M\"}]}";
  const std::string bomb = cco::trace::gzip(events, "b");
  ASSERT_GT(static_cast<double>(events.size()), cco::trace::kGzipRatioLimit * static_cast<double>(bomb.size()));
  const std::string e = outcome([&] { return cco::trace::detail::read_gzip_json_or_trace("b.json", bomb, 1 << 20); });
  EXPECT_NE(e.find("b.json: a gzip bomb, not a trace"), std::string::npos) << e.substr(0, 300);
  EXPECT_THROW(cco::trace::gunzip(bomb, cco::model::kTraceFileLimit, "b"), cco::model::Error);
  // Past the floor at about 30:1 (a pattern broken by a pseudo-random digit every 100 bytes).
  std::string hex(cco::trace::kGzipRatioFloor + (1u << 20), 'x');
  uint64_t x = 88172645463325252ULL;
  for (std::size_t i = 0; i < hex.size(); i += 100) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    hex[i] = "0123456789abcdef"[x & 15];
  }
  const std::string gz = cco::trace::gzip(hex, "h");
  ASSERT_LT(static_cast<double>(hex.size()), cco::trace::kGzipRatioLimit * static_cast<double>(gz.size()));
  EXPECT_EQ(cco::trace::gunzip(gz, cco::model::kTraceFileLimit, "h").size(), hex.size());
}

// The writer makes its text event by event: the same bytes as a dump of the document, and a gzip
// file made as the text is made reads back as the trace.
TEST(TraceWriter, TextAsTheDocumentGzipAsTheText) {
  cco::trace::Trace two = cco::test::rich();
  ASSERT_GT(two.ranks.size(), 1u);
  EXPECT_EQ(cco::trace::trace_text(two), cco::trace::trace_to_json(two).dump() + "\n");
  cco::trace::Trace one = two;
  one.ranks.resize(1);
  std::erase_if(one.kernels, [&](const auto& k) { return k.rank != one.ranks[0].rank; });
  std::erase_if(one.streams, [&](const auto& x) { return x.rank != one.ranks[0].rank; });
  std::erase_if(one.ranges, [&](const auto& x) { return x.rank != one.ranks[0].rank; });
  std::erase_if(one.marks, [&](const auto& x) { return x.rank != one.ranks[0].rank && x.rank >= 0; });
  const std::string text = cco::trace::trace_text(one);
  EXPECT_NE(text.find("\"distributedInfo\":{\"backend\":\"nccl\",\"rank\": " +
                      std::to_string(one.ranks[0].rank) + "}"),
            std::string::npos)
      << text.substr(0, 200);
  std::string dumped = cco::trace::trace_to_json(one).dump() + "\n";
  dumped.insert(dumped.find("\"rank\":", dumped.find("distributedInfo")) + 7, " ");
  EXPECT_EQ(text, dumped);
  const std::string path = ::testing::TempDir() + "writer.json.gz";
  cco::trace::write_trace_file(two, path);
  const std::string gz = cco::model::read_file(path, cco::model::kTraceFileLimit);
  ASSERT_TRUE(cco::trace::is_gzip(gz));
  EXPECT_EQ(cco::trace::gunzip(gz, cco::model::kTraceFileLimit, path), cco::trace::trace_text(two));
  EXPECT_EQ(cco::trace::trace_text(cco::trace::read_trace_file(path)), cco::trace::trace_text(two));
}

TEST(LiteJson, ValuesAsNlohmannGivesThem) {
  cco::trace::lite::Doc d;
  const std::string t = R"({"i": -5, "u": 18446744073709551615, "f": 2.5, "s": "x\u0041", "a": [1, [2]],
    "o": {}, "b": false, "n": null, "k": 1, "k": 2})";
  const char* end = d.parse(t.data(), t.data() + t.size());
  EXPECT_EQ(end, t.data() + t.size());
  const auto& r = d.root();
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r.size(), 10u);
  EXPECT_TRUE(r.find("i")->is_number_integer());
  EXPECT_FALSE(r.find("i")->is_number_unsigned());
  EXPECT_EQ(r.find("i")->get<int64_t>(), -5);
  EXPECT_TRUE(r.find("u")->is_number_unsigned());
  EXPECT_EQ(r.find("u")->get<uint64_t>(), 18446744073709551615ull);
  EXPECT_TRUE(r.find("f")->is_number_float());
  EXPECT_EQ(r.find("f")->get<double>(), 2.5);
  EXPECT_EQ(r.find("s")->get<std::string>(), "xA");
  EXPECT_EQ(r.find("a")->size(), 2u);
  EXPECT_EQ((*r.find("a"))[1][0].get<int64_t>(), 2);
  EXPECT_TRUE(r.find("o")->is_object());
  EXPECT_TRUE(r.find("b")->is_boolean());
  EXPECT_TRUE(r.find("n")->is_null());
  EXPECT_EQ(r.find("n")->size(), 0u);
  EXPECT_EQ(r.find("k")->get<int64_t>(), 2);  // the last of a key given twice
  EXPECT_EQ(r.find("missing"), r.end());
  // Cut anywhere: more is needed, never a wrong value.
  for (std::size_t cut = 0; cut + 1 < t.size(); ++cut)
    EXPECT_THROW(d.parse(t.data(), t.data() + cut), cco::trace::lite::LiteNeedMore) << cut;
}

}  // namespace
