// The trace file: the Chrome/Perfetto JSON round trip, other tools' traces (PyTorch's profiler,
// HTA's patterns), the one-pass reader, every error path of the reader, merging rank files,
// gzip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <typeinfo>

#include <nlohmann/json.hpp>

#include "model/limits.hpp"
#include "model/read_file.hpp"
#include "trace/analysis.hpp"
#include "trace/format.hpp"
#include "trace/gzip.hpp"
#include "trace_test_helpers.hpp"

namespace {

using cco::model::Error;
using cco::test::expect_error;
using cco::test::K;
using cco::test::kComm;
using cco::test::kComp;
using cco::test::make;
using cco::test::rich;
using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::Trace;

// ------------------------------------------------------------------------------------------
// JSON round trip and Perfetto structure
// ------------------------------------------------------------------------------------------

TEST(TraceJson, RoundTripIsExact) {
  const Trace t = rich();
  const std::string text = cco::trace::trace_to_json(t).dump();
  const Trace u = cco::trace::parse_trace(text, "mem");
  ASSERT_EQ(u.kernels.size(), t.kernels.size());
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const auto& a = t.kernels[i];
    const auto& b = u.kernels[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.category, b.category);
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.priority, b.priority);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.queued_ns, b.queued_ns);
    EXPECT_EQ(a.submitted_ns, b.submitted_ns);
    EXPECT_EQ(a.grid, b.grid);
    EXPECT_EQ(a.block, b.block);
    EXPECT_EQ(a.registers, b.registers);
    EXPECT_EQ(a.static_smem, b.static_smem);
    EXPECT_EQ(a.dynamic_smem, b.dynamic_smem);
    EXPECT_EQ(a.blocks_per_sm, b.blocks_per_sm);
    EXPECT_EQ(a.correlation_id, b.correlation_id);
  }
  ASSERT_EQ(u.ranks.size(), 2u);
  EXPECT_EQ(u.ranks[0].device_name, "NVIDIA H200");
  EXPECT_EQ(u.ranks[0].arch, "sm_90");
  EXPECT_EQ(u.ranks[0].sm_count, 132);
  EXPECT_EQ(u.ranks[0].pid, 4242);
  ASSERT_NE(u.find_stream(0, 0, 13), nullptr);
  EXPECT_EQ(u.find_stream(0, 0, 13)->priority, -5);
  EXPECT_EQ(u.find_stream(0, 0, 13)->label, "comm");
  EXPECT_EQ(u.find_stream(1, 1, 7)->priority, std::nullopt);
  EXPECT_EQ(u.dropped_records, 3u);
  ASSERT_EQ(u.notes.size(), 1u);
  ASSERT_EQ(u.marks.size(), 2u);
  EXPECT_EQ(u.marks[0].ts_ns, t.marks[0].ts_ns);
  EXPECT_EQ(u.marks[0].rank, -1);
  EXPECT_EQ(u.marks[0].name, "concurrent, iteration 0");
  EXPECT_EQ(u.marks[1].rank, 1);
  // Writing what was read gives the same file.
  EXPECT_EQ(cco::trace::trace_to_json(u).dump(), text);
}

// The streaming reader (issue 46): one pass gives the document without its events and the
// trace; a file whose header (otherData) comes after its events, as another tool may reorder
// ours, is read the same; a JSON file without "traceEvents" is a document and no trace.
TEST(TraceJson, OnePassGivesTheDocumentAndTheTrace) {
  const nlohmann::json j = cco::trace::trace_to_json(rich());
  const std::string text = j.dump();
  const auto r = cco::trace::parse_json_or_trace(text, "mem");
  ASSERT_TRUE(r.trace.has_value());
  EXPECT_EQ(cco::trace::trace_to_json(*r.trace).dump(), text);
  ASSERT_TRUE(r.doc.contains("traceEvents"));
  EXPECT_TRUE(r.doc["traceEvents"].empty());  // read, then left out
  EXPECT_EQ(r.doc["otherData"], j["otherData"]);
  // The header after the events: parsed again whole, the same trace.
  std::string late = "{\"traceEvents\": " + j["traceEvents"].dump() + ", \"otherData\": " +
                     j["otherData"].dump() + "}";
  ASSERT_LT(late.find("traceEvents"), late.find("otherData"));
  EXPECT_EQ(cco::trace::trace_to_json(cco::trace::parse_trace(late, "late")).dump(), text);
  const auto late_r = cco::trace::parse_json_or_trace(late, "late");
  ASSERT_TRUE(late_r.trace.has_value());
  EXPECT_TRUE(late_r.doc["traceEvents"].empty());
  // Not a trace: the whole document, no trace.
  const auto other = cco::trace::parse_json_or_trace(R"({"schema": "ccoverlap.bench", "rows": [1, 2]})", "b");
  EXPECT_FALSE(other.trace.has_value());
  EXPECT_EQ(other.doc["rows"].size(), 2u);
}

// What PyTorch's tools and HTA look for, made from the trace (issue 45): each step between two of
// the library's step marks as "ProfilerStep#N" on the rank's host row (N from 1; HTA's iteration
// windows), each kernel's launch as "cuLaunchKernel" with the kernel's correlation and no stream
// (HTA links launch and kernel by it: queue length, launch delays); reading ours back skips them.
TEST(TraceJson, StepAnnotationsAndLaunchCallsForHta) {
  Trace t;
  t.ranks.push_back({0, 0, "NVIDIA H200", "sm_90", 132, 4.8e12, "h", 1});
  for (int i = 0; i < 3; ++i) {
    KernelEvent k;
    k.name = "gemm";
    k.stream = 7;
    k.start_ns = 1'000'000 + i * 100'000;
    k.end_ns = k.start_ns + 50'000;
    k.queued_ns = k.start_ns - 20'000;
    k.submitted_ns = k.start_ns - 15'000;
    k.correlation_id = 40 + static_cast<uint64_t>(i);
    t.kernels.push_back(k);
  }
  t.kernels[2].queued_ns = 0;  // no launch time known: no launch event
  for (int i = 0; i < 3; ++i)
    t.marks.push_back({970'000 + i * 100'000, 0, "cco step, epoch 1, config 0"});
  t.marks.push_back({1'500'000, -1, "process-wide mark"});  // not a step
  const auto j = cco::trace::trace_to_json(t);
  std::vector<nlohmann::json> steps, launches;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") == "user_annotation") steps.push_back(e);
    if (e.value("cat", "") == "cuda_driver") launches.push_back(e);
  }
  ASSERT_EQ(steps.size(), 2u);  // three marks: two steps between them
  EXPECT_EQ(steps[0]["name"], "ProfilerStep#1");
  EXPECT_EQ(steps[1]["name"], "ProfilerStep#2");
  EXPECT_EQ(steps[0]["ph"], "X");
  EXPECT_EQ(steps[0]["pid"], 0);
  EXPECT_EQ(steps[0]["tid"], cco::trace::kHostTid);
  EXPECT_DOUBLE_EQ(steps[0]["ts"].get<double>(), -30.0);  // 970 us; the origin is the first kernel
  EXPECT_DOUBLE_EQ(steps[0]["dur"].get<double>(), 100.0);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0]["name"], "cuLaunchKernel");
  EXPECT_EQ(launches[0]["args"]["correlation"], 40);
  EXPECT_FALSE(launches[0]["args"].contains("stream"));
  EXPECT_DOUBLE_EQ(launches[0]["ts"].get<double>(), -20.0);
  EXPECT_DOUBLE_EQ(launches[0]["dur"].get<double>(), 5.0);
  EXPECT_EQ(launches[1]["args"]["correlation"], 41);
  // Each launch lies inside a step window, as HTA gives kernels their iteration.
  for (const auto& l : launches) {
    const double ts = l["ts"].get<double>();
    bool inside = false;
    for (const auto& s : steps)
      inside = inside || (ts >= s["ts"].get<double>() &&
                          ts < s["ts"].get<double>() + s["dur"].get<double>());
    EXPECT_TRUE(inside) << l.dump();
  }
  // Read back: the same trace (the host events are made again from it, not read).
  const std::string text = j.dump();
  const Trace u = cco::trace::parse_trace(text, "mem");
  EXPECT_EQ(u.kernels.size(), 3u);
  EXPECT_EQ(u.ranges.size(), 0u);
  EXPECT_EQ(cco::trace::trace_to_json(u).dump(), text);
}

// A PyTorch profiler trace read whole (issue 45): its copies and memsets are GPU work with their
// kind and bytes, and each piece of GPU work takes the time of the host call of its correlation
// id as its launch time (whether the call comes before or after it in the file; never a call
// after the work started), so its wait is exact. Written as ours and read back: the same.
TEST(TraceJson, ProfilerCopiesMemsetsAndLaunchCalls) {
  const std::string text = R"js({"distributedInfo": {"rank": 1}, "traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":900,"tid":900,"ts":5,"dur":3,
     "args":{"correlation":11}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":20,
     "args":{"device":0,"stream":7,"correlation":11}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,
     "ts":40,"dur":5,"args":{"device":0,"stream":7,"correlation":12,"bytes":4096}},
    {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":50,"dur":1,
     "args":{"device":0,"stream":7,"correlation":13,"bytes":64}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,
     "ts":60,"dur":2,"args":{"device":0,"stream":7,"correlation":14,"bytes":128}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":900,"tid":900,"ts":30,"dur":2,
     "args":{"correlation":12}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":900,"tid":900,"ts":70,"dur":2,
     "args":{"correlation":14}}]})js";
  const Trace t = cco::trace::parse_trace(text, "prof");
  ASSERT_EQ(t.kernels.size(), 4u);
  const auto& k = t.kernels[0];
  EXPECT_EQ(k.name, "gemm");
  EXPECT_EQ(k.rank, 1);
  EXPECT_FALSE(k.is_copy());
  EXPECT_EQ(k.queued_ns, 5'000);  // its cudaLaunchKernel
  EXPECT_EQ(t.kernels[1].copy, "HtoD");
  EXPECT_EQ(t.kernels[1].bytes, 4096);
  EXPECT_EQ(t.kernels[1].queued_ns, 30'000);  // its call comes later in the file
  EXPECT_EQ(t.kernels[2].copy, "Memset");
  EXPECT_EQ(t.kernels[2].bytes, 64);
  EXPECT_EQ(t.kernels[2].queued_ns, 0);  // no call for it
  EXPECT_EQ(t.kernels[3].copy, "DtoD");
  EXPECT_EQ(t.kernels[3].queued_ns, 0);  // a call after the copy started is not its launch
  for (const auto& x : t.kernels) EXPECT_EQ(x.category, KernelCategory::Compute);
  const nlohmann::json j = cco::trace::trace_to_json(t);
  int memsets = 0;
  for (const auto& e : j["traceEvents"]) memsets += e.value("cat", "") == "gpu_memset";
  EXPECT_EQ(memsets, 1);
  const Trace u = cco::trace::parse_trace(j.dump(), "ours");
  ASSERT_EQ(u.kernels.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(u.kernels[i].copy, t.kernels[i].copy) << i;
    EXPECT_EQ(u.kernels[i].bytes, t.kernels[i].bytes) << i;
    EXPECT_EQ(u.kernels[i].queued_ns, t.kernels[i].queued_ns) << i;
  }
  expect_error([&] {
    auto bad = j;
    for (auto& e : bad["traceEvents"])
      if (e.value("cat", "") == "gpu_memset") e["args"]["copy"] = "Teleport";
    cco::trace::parse_trace(bad.dump(), "bad");
  }, {"\"copy\" is \"Teleport\" (expected PtoP, DtoD"});
}

TEST(TraceJson, TimesFromTsAndDurWhenNsArgsAreAbsent) {
  auto j = cco::trace::trace_to_json(rich());
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      e["args"].erase("start_ns");
      e["args"].erase("end_ns");
    }
  const Trace u = cco::trace::trace_from_json(j);
  const Trace t = rich();
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    EXPECT_EQ(u.kernels[i].start_ns, t.kernels[i].start_ns);
    EXPECT_EQ(u.kernels[i].end_ns, t.kernels[i].end_ns);
  }
}

TEST(TraceJson, PerfettoRowsAndCategories) {
  const auto j = cco::trace::trace_to_json(rich());
  int procs = 0, threads = 0, kernels = 0;
  bool prio_named = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      ++procs;
      EXPECT_NE(e["args"]["name"].get<std::string>().find("rank"), std::string::npos);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] != cco::trace::kHostTid) {
      ++threads;
      if (e["args"]["name"] == "stream 13 priority -5 (comm)") prio_named = true;
    }
    if (e["ph"] == "X" && e["tid"] != cco::trace::kHostTid) {
      ++kernels;
      // HTA selects GPU work by category "kernel"; ours is args.kind.
      EXPECT_EQ(e["cat"], "kernel");
      const std::string kind = e["args"]["kind"];
      EXPECT_TRUE(kind == "compute" || kind == "communication") << kind;
      EXPECT_TRUE(e["args"].contains("grid"));
      EXPECT_TRUE(e["args"].contains("block"));
      EXPECT_TRUE(e["args"].contains("registers"));
      EXPECT_TRUE(e["args"].contains("static_smem"));
      EXPECT_TRUE(e["args"].contains("dynamic_smem"));
      EXPECT_GE(e["ts"].get<double>(), 0.0);  // relative to the first kernel
    }
  }
  EXPECT_EQ(procs, 2);
  EXPECT_EQ(threads, 3);
  EXPECT_EQ(kernels, 3);
  EXPECT_TRUE(prio_named);
  int marks = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "i") {
      ++marks;
      EXPECT_EQ(e["cat"], "mark");
    }
  EXPECT_EQ(marks, 2);
  EXPECT_EQ(j["otherData"]["ccoverlap"]["schema"], "ccoverlap.trace");
  EXPECT_EQ(j["displayTimeUnit"], "ns");
}

TEST(TraceJson, ForeignChromeTraceOfKernels) {
  // The shape PyTorch's profiler writes: kernels with cat "kernel", CPU ops to be ignored.
  const char* text = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 123, "tid": 5, "ts": 0, "dur": 9},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "pid": 0, "tid": 7, "ts": 10.5, "dur": 100,
     "args": {"device": 0, "stream": 7, "grid": [132, 1, 1], "block": [384, 1, 1],
              "registers per thread": 168, "shared memory": 200000}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0,
     "tid": 20, "ts": 50.5, "dur": 100, "args": {"device": 0, "stream": 20}},
    {"ph": "i", "name": "marker", "pid": 0, "tid": 0, "ts": 1}]})";
  const Trace t = cco::trace::parse_trace(text, "torch.json");
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].category, kComp);
  EXPECT_EQ(t.kernels[0].registers, 168);
  EXPECT_EQ(t.kernels[0].static_smem, 200000);
  EXPECT_EQ(t.kernels[0].start_ns, 10500);
  EXPECT_EQ(t.kernels[1].category, kComm);
  const auto a = cco::trace::analyze(t);
  EXPECT_EQ(a.ranks[0].overlapped_ns, 60000);
}

// Two nodes' profiler traces, each of one rank on its device 0: the rank is distributedInfo's,
// not the pid (which is the device), so the two merge as ranks 0 and 1 instead of being refused
// as "a file given twice".
TEST(TraceJson, ProfilerTraceRankFromDistributedInfo) {
  auto node = [](int rank) {
    return std::string(R"({"distributedInfo": {"backend": "nccl", "rank": )") +
           std::to_string(rank) + R"(, "world_size": 2}, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 100,
     "args": {"stream": 7}}]})";
  };
  const Trace a = cco::trace::parse_trace(node(0), "node0.json");
  const Trace b = cco::trace::parse_trace(node(1), "node1.json");
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(b.kernels[0].rank, 1);
  EXPECT_EQ(b.kernels[0].device, 0) << "the pid is the device";
  const Trace m = cco::trace::merge_traces({a, b});
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[1].rank, 1);
  // Without distributedInfo the pid stays the rank, as before: the two collide.
  std::string plain = node(1);
  plain.erase(plain.find("\"distributedInfo\""), plain.find("\"traceEvents\"") - plain.find("\"distributedInfo\""));
  expect_error([&] {
    cco::trace::merge_traces({a, cco::trace::parse_trace(plain, "node1.json")});
  }, {"given twice"});
}

// Files of one run overlap in time; files 9.7 days apart are merged, but with a note saying so.
TEST(TraceJson, MergeNotesClocksFarApart) {
  auto part = [](int rank, int64_t at, const char* source) {
    Trace t;
    cco::trace::KernelEvent k;
    k.name = "gemm";
    k.rank = rank;
    k.start_ns = at;
    k.end_ns = at + 1'000'000;
    t.kernels = {k};
    t.source = source;
    t.normalize();
    return t;
  };
  const auto near = cco::trace::merge_traces({part(0, 0, "a.json"), part(1, 500'000, "b.json")});
  EXPECT_TRUE(near.notes.empty());
  const int64_t days = int64_t{838'080} * 1'000'000'000;  // 9.7 days
  const auto far = cco::trace::merge_traces({part(0, 0, "a.json"), part(1, days, "b.json")});
  ASSERT_EQ(far.notes.size(), 1u);
  EXPECT_NE(far.notes[0].find("'a.json' and 'b.json' are 838080.0 s apart"), std::string::npos)
      << far.notes[0];
}

// A one-rank file of ours says its rank the way PyTorch's profiler does (Holistic Trace Analysis
// reads a folder of them as one job); a file of several ranks (threads) does not.
TEST(TraceJson, OneRankFileWritesDistributedInfo) {
  Trace one;
  cco::trace::KernelEvent k;
  k.name = "gemm";
  k.rank = 3;
  k.stream = 7;
  k.start_ns = 500;
  k.end_ns = 900;
  one.kernels = {k};
  one.normalize();
  const auto j = cco::trace::trace_to_json(one);
  ASSERT_TRUE(j.contains("distributedInfo"));
  EXPECT_EQ(j["distributedInfo"]["rank"], 3);
  EXPECT_FALSE(cco::trace::trace_to_json(rich()).contains("distributedInfo"));
  // In the file's text the rank reads as Holistic Trace Analysis finds it: `"rank": N`, with the
  // space PyTorch's profiler writes (without it every rank file was taken as rank 0).
  const std::string text = cco::trace::trace_text(one);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"("rank": (\d+))"))) << text.substr(0, 200);
  EXPECT_EQ(m[1].str(), "3");
  EXPECT_EQ(cco::trace::parse_trace(text).ranks.at(0).rank, 3);
  const std::string path = ::testing::TempDir() + "cco_trace_hta.json";
  cco::trace::write_trace_file(one, path);
  EXPECT_EQ(cco::model::read_file(path, 1 << 20), text);
}

TEST(TraceJson, WriteAndReadFile) {
  const std::string path = ::testing::TempDir() + "cco_trace_rt.json";
  cco::trace::write_trace_file(rich(), path);
  const Trace u = cco::trace::read_trace_file(path);
  EXPECT_EQ(u.kernels.size(), 3u);
  EXPECT_EQ(u.source, path);
  expect_error([] { cco::trace::read_trace_file("/nonexistent/dir/x.json"); },
               {"cannot be read", "/nonexistent/dir/x.json"});
  expect_error([] { cco::trace::write_trace_file(rich(), "/nonexistent/dir/x.json"); },
               {"cannot write"});
}

// ------------------------------------------------------------------------------------------
// Errors: one clear line naming the file, never a crash
// ------------------------------------------------------------------------------------------

TEST(TraceErrors, MalformedTruncatedEmpty) {
  expect_error([] { cco::trace::parse_trace("{", "a.json"); }, {"a.json", "not valid JSON"});
  expect_error([] { cco::trace::parse_trace("", "e.json"); }, {"e.json", "empty"});
  expect_error([] { cco::trace::parse_trace("  \n", "e.json"); }, {"e.json", "only white space"});
  const std::string full = cco::trace::trace_to_json(rich()).dump();
  for (std::size_t cut : {std::size_t{1}, full.size() / 3, full.size() / 2, full.size() - 2})
    expect_error([&] { cco::trace::parse_trace(full.substr(0, cut), "t.json"); },
                 {"t.json", "not valid JSON"});
}

TEST(TraceErrors, WrongShapeOrSchema) {
  using cco::trace::parse_trace;
  expect_error([] { parse_trace("[1, 2]", "x"); }, {"x: not a trace"});
  expect_error([] { parse_trace("{}", "x"); }, {"no \"traceEvents\""});
  expect_error([] { parse_trace(R"({"traceEvents": 5})", "x"); }, {"not an array"});
  expect_error([] { parse_trace(R"({"schema": "ccoverlap.bench", "results": []})", "b.json"); },
               {"b.json", "ccoverlap.bench"});
  expect_error(
      [] {
        parse_trace(R"({"traceEvents": [], "otherData": {"ccoverlap": {"schema": "other"}}})", "x");
      },
      {"wrong schema"});
  expect_error(
      [] {
        parse_trace(R"({"traceEvents": [], "otherData": {"ccoverlap":
                       {"schema": "ccoverlap.trace", "schema_version": "2.0.0"}}})",
                    "x");
      },
      {"2.0.0", "not supported"});
}

TEST(TraceErrors, BadEvents) {
  using cco::trace::parse_trace;
  auto ev = [](const std::string& e) { return R"({"traceEvents": [)" + e + "]}"; };
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"dur":5})"), "f");
      },
      {"f: traceEvents[0] (k)", "missing \"ts\""});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":-5})"),
                    "f");
      },
      {"negative duration"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":"1","dur":5})"),
                    "f");
      },
      {"\"ts\" is not a number"});
  expect_error(
      [&] {
        parse_trace(
            ev(R"({"ph":"X","cat":"kernel","name":"k","pid":"gpu","tid":1,"ts":1,"dur":5})"), "f");
      },
      {"\"pid\" is not an integer"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"compute","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":{"start_ns":100,"end_ns":50}})"),
                    "f");
      },
      {"ends before it starts"});
  // Times beyond 2^62 ns: refused, so no difference of two times can overflow (found by fuzzing:
  // an end of -8.7e18 and a start of 1.8e18 overflowed the error message's own subtraction).
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"compute","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":{"start_ns":1763780000123457789,"end_ns":-8682964073586092826}})"),
                    "f");
      },
      {"\"end_ns\" is out of range"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"compute","name":"k","pid":0,"tid":1,"ts":1e300,"dur":5})"),
                    "f");
      },
      {"\"ts\" is out of range"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":{"grid":"big"}})"),
                    "f");
      },
      {"\"grid\" is not [x, y, z]"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":[1]})"),
                    "f");
      },
      {"\"args\" is not an object"});
  expect_error([&] { parse_trace(ev("7"), "f"); }, {"traceEvents[0]: not an object"});
  expect_error([&] { parse_trace(ev("{},[1]"), "f"); }, {"f: traceEvents[0]: no \"ph\""});
  expect_error([&] { parse_trace(ev(R"({"ph":"M"},[1])"), "f"); }, {"f: traceEvents[1]: not an object"});
  // An empty trace is valid (no kernels), and so is one with only metadata.
  EXPECT_TRUE(parse_trace(ev(""), "f").kernels.empty());
  EXPECT_TRUE(
      parse_trace(ev(R"({"ph":"M","name":"process_name","pid":0,"args":{"name":"x"}})"), "f")
          .kernels.empty());
}

// ------------------------------------------------------------------------------------------
// Merging rank files and blocks per SM
// ------------------------------------------------------------------------------------------

TEST(TraceMerge, RankFilesMergeAndDuplicatesAreRefused) {
  Trace a = make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 20, 60)});
  a.source = "r0.json";
  a.dropped_records = 1;
  Trace b = make({K(1, 1, kComp, 0, 100), K(1, 2, kComm, 100, 150)});
  b.source = "r1.json";
  b.dropped_records = 2;
  const Trace m = cco::trace::merge_traces({a, b});
  EXPECT_EQ(m.kernels.size(), 4u);
  EXPECT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.dropped_records, 3u);
  EXPECT_EQ(m.source, "r0.json, r1.json");
  EXPECT_EQ(cco::trace::analyze(m).ranks.size(), 2u);
  expect_error([&] { cco::trace::merge_traces({a, a}); }, {"rank 0", "r0.json", "twice"});
  // A process-wide mark appears in each rank file of that process: kept once.
  a.marks = {{5, -1, "step"}};
  b.marks = {{5, -1, "step"}, {7, 1, "mine"}};
  EXPECT_EQ(cco::trace::merge_traces({a, b}).marks.size(), 2u);
}

TEST(TraceOccupancy, BlocksPerSmFromTheModel) {
  // The built-in GEMM of the reference run: 256 threads, 63 registers, 16896 B static shared
  // memory: 4 blocks per SM on sm_90 as launched, 3 with 40449 B padding (docs/results).
  Trace t = make({K(0, 1, kComp, 0, 10), K(0, 1, kComp, 10, 20), K(0, 2, kComm, 0, 5)});
  t.ranks[0].arch = "sm_90";
  t.ranks[0].sm_count = 132;
  for (auto& k : t.kernels) {
    k.block = {256, 1, 1};
    k.registers = 63;
    k.static_smem = 16896;
  }
  t.kernels[1].dynamic_smem = 40449;
  cco::trace::fill_blocks_per_sm(t);
  int found4 = 0, found3 = 0;
  for (const auto& k : t.kernels) {
    found4 += k.blocks_per_sm == 4;
    found3 += k.blocks_per_sm == 3;
  }
  EXPECT_EQ(found4, 2);
  EXPECT_EQ(found3, 1);
  // Unknown architecture: left at 0, no error.
  Trace u = make({K(0, 1, kComp, 0, 10)});
  u.ranks[0].arch = "sm_999";
  cco::trace::fill_blocks_per_sm(u);
  EXPECT_EQ(u.kernels[0].blocks_per_sm, 0);
}

TEST(TraceNormalize, StreamsAndPrioritiesFilledFromKernels) {
  Trace t;
  auto k1 = K(0, 5, kComp, 0, 10);
  auto k2 = K(0, 5, kComp, 20, 30);
  k2.priority = -2;
  t.kernels = {k1, k2};
  t.normalize();
  ASSERT_EQ(t.streams.size(), 1u);
  EXPECT_EQ(t.streams[0].priority, -2);
  EXPECT_EQ(t.kernels[0].priority, -2);
  ASSERT_EQ(t.ranks.size(), 1u);
}

}  // namespace

namespace {

// Mutated files (bytes flipped, cut, fields swapped for other types) never crash the reader and
// never escape as anything but model::Error.
TEST(TraceErrors, MutatedInputsGiveOnlyModelErrors) {
  const std::string good = cco::trace::trace_to_json(rich()).dump();
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  const char* junk[] = {"-1", "\"x\"", "null", "[]", "{}", "1e400", "true", "[1,2]", "-9e18"};
  int ok = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    const int kind = static_cast<int>(next() % 3);
    if (kind == 0) {
      s[next() % s.size()] = static_cast<char>(next() % 128);
    } else if (kind == 1) {
      s = s.substr(0, next() % s.size());
    } else {
      // Replace one value (after a ':') by junk of another type.
      auto p = s.find(':', next() % s.size());
      if (p == std::string::npos) continue;
      auto e = s.find_first_of(",}", p + 1);
      if (e == std::string::npos) continue;
      s = s.substr(0, p + 1) + junk[next() % std::size(junk)] + s.substr(e);
    }
    try {
      (void)cco::trace::parse_trace(s, "m.json");
      ++ok;
    } catch (const Error& e) {
      ++errors;
      EXPECT_EQ(std::string(e.what()).rfind("m.json: ", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what() << "\ninput: " << s;
      return;
    }
  }
  EXPECT_GT(errors, 1000);
  EXPECT_GT(ok, 0);
}

}  // namespace

#ifdef CCO_TRACE_HAS_ZLIB
// zlib counts its input in 32 bits: gzip and gunzip feed it in pieces (1 GiB; here 7 bytes), and
// the bytes come back whole, across pieces and gzip members; data cut short is still refused.
TEST(TraceGzip, InputFedInPiecesComesBackWhole) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"ts\": " + std::to_string(i * 7919 % 10007) + "},";
  const std::string one = cco::trace::detail::gzip(text, "t", 7);
  EXPECT_EQ(one, cco::trace::gzip(text, "t"));  // the pieces do not change the stream
  EXPECT_EQ(cco::trace::detail::gunzip(one, text.size(), "t", 7), text);
  const std::string two = one + cco::trace::detail::gzip("tail", "t", 3);
  EXPECT_EQ(cco::trace::detail::gunzip(two, text.size() + 4, "t", 5), text + "tail");
  EXPECT_THROW(cco::trace::detail::gunzip(one.substr(0, one.size() / 2), text.size(), "t", 7),
               cco::model::Error);
  EXPECT_THROW(cco::trace::detail::gunzip(one, text.size() - 1, "t", 7), cco::model::Error);
}
#endif

// A trace written under a .gz name is gzip, as it says (HTA stopped with BadGzipFile at plain JSON
// there), and reads back exactly; a plain name stays plain JSON.
TEST(TraceJson, AGzNameIsWrittenAsGzip) {
  cco::trace::Trace t;
  cco::trace::KernelEvent k;
  k.name = "gemm";
  k.start_ns = 1000;
  k.end_ns = 2000;
  t.kernels.push_back(k);
  t.normalize();
  const std::string gz = testing::TempDir() + "cco_trace_gz_" + std::to_string(::getpid()) + ".json.gz";
  const std::string plain = testing::TempDir() + "cco_trace_plain_" + std::to_string(::getpid()) + ".json";
#ifdef CCO_TRACE_HAS_ZLIB
  cco::trace::write_trace_file(t, gz);
  const std::string bytes = cco::model::read_file(gz, 1 << 20);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  const auto back = cco::trace::read_trace_file(gz);
  ASSERT_EQ(back.kernels.size(), 1u);
  EXPECT_EQ(back.kernels[0].name, "gemm");
  EXPECT_EQ(back.kernels[0].end_ns - back.kernels[0].start_ns, 1000);
#else
  EXPECT_THROW(cco::trace::write_trace_file(t, gz), cco::model::Error);
#endif
  cco::trace::write_trace_file(t, plain);
  EXPECT_EQ(cco::model::read_file(plain, 1 << 20).front(), '{');
  std::remove(gz.c_str());
  std::remove(plain.c_str());
}
