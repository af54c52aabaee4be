// `cco report --merge` keeps every event of another tool's traces (issue 45 item 2): read with
// ReadOptions::keep_events, a PyTorch profiler's CPU ops, runtime calls, Python functions,
// annotations, flows, counters, memory and metadata events are kept whole, and the merged file
// holds each of them (on its rank's process, on the merged file's clock, flow ids the rank's
// own) beside the kernels, copies and steps the analysis reads. GPU-free.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "model/limits.hpp"
#include "trace/format.hpp"

namespace {

using nlohmann::json;
using cco::trace::ReadOptions;

// A PyTorch profiler's rank file with every kind of event its traces hold; distributedInfo last,
// as PyTorch writes it.
json rank_events(int rank) {
  const int pid = 4000 + rank;  // the OS's: the CPU rows
  json e = json::array();
  e.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "python"}}}});
  e.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", pid}, {"args", {{"name", "main"}}}});
  e.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#551"}, {"pid", pid}, {"tid", pid}, {"ts", 1000.0}, {"dur", 500.0}});
  e.push_back({{"ph", "X"}, {"cat", "python_function"}, {"name", "train.py(12): step"}, {"pid", pid}, {"tid", pid}, {"ts", 1001.0}, {"dur", 400.0}});
  e.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mm"}, {"pid", pid}, {"tid", pid}, {"ts", 1010.0}, {"dur", 20.0}, {"args", {{"External id", 7}}}});
  e.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", pid}, {"tid", pid}, {"ts", 1015.0}, {"dur", 5.0}, {"args", {{"correlation", 42}}}});
  e.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaStreamSynchronize"}, {"pid", pid}, {"tid", pid}, {"ts", 1300.0}, {"dur", 50.0}, {"args", {{"correlation", 43}}}});
  e.push_back({{"ph", "s"}, {"cat", "ac2g"}, {"name", "ac2g"}, {"id", 42}, {"pid", pid}, {"tid", pid}, {"ts", 1015.0}, {"bp", "e"}});
  e.push_back({{"ph", "f"}, {"cat", "ac2g"}, {"name", "ac2g"}, {"id", 42}, {"pid", rank}, {"tid", 7}, {"ts", 1030.0}, {"bp", "e"}});
  e.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "sm90_xmma_gemm_bf16"}, {"pid", rank}, {"tid", 7}, {"ts", 1030.0}, {"dur", 100.0},
               {"args", {{"device", rank}, {"stream", 7}, {"correlation", 42}}}});
  e.push_back({{"ph", "X"}, {"cat", "gpu_memcpy"}, {"name", "Memcpy DtoD (Device -> Device)"}, {"pid", rank}, {"tid", 7}, {"ts", 1140.0}, {"dur", 10.0},
               {"args", {{"device", rank}, {"stream", 7}, {"bytes", 4096}}}});
  e.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"}, {"pid", rank}, {"tid", 20}, {"ts", 1150.0}, {"dur", 80.0},
               {"args", {{"device", rank}, {"stream", 20}}}});
  e.push_back({{"ph", "X"}, {"cat", "gpu_user_annotation"}, {"name", "nccl:all_reduce"}, {"pid", rank}, {"tid", 20}, {"ts", 1150.0}, {"dur", 80.0}});
  e.push_back({{"ph", "i"}, {"cat", "cpu_instant_event"}, {"name", "[memory]"}, {"s", "t"}, {"pid", pid}, {"tid", pid}, {"ts", 1012.0}, {"args", {{"Bytes", 1024}}}});
  e.push_back({{"ph", "C"}, {"name", "memory"}, {"pid", pid}, {"tid", 0}, {"ts", 1012.0}, {"args", {{"allocated", 1024}}}});
  return e;
}

std::string rank_file(int rank) {
  json doc = {{"schemaVersion", 1}, {"traceEvents", rank_events(rank)}};
  std::string text = doc.dump();
  text.insert(text.rfind('}'), ",\"distributedInfo\":{\"rank\":" + std::to_string(rank) + ",\"world_size\":2}");
  return text;
}

const ReadOptions kKeep{.keep_events = true};

cco::trace::Trace read(const std::string& text, const std::string& name, const ReadOptions& o) {
  auto r = cco::trace::parse_json_or_trace(text, name, o);
  EXPECT_TRUE(r.trace.has_value());
  return std::move(*r.trace);
}

// Events the analysis reads become its own (kernels, copies, the profiler's steps); every other
// event is kept as it was, and both readers keep the same.
TEST(MergeKeepsEveryEvent, BothReadersKeepTheEventsTheTraceDoesNotHold) {
  const std::string text = rank_file(1);
  const cco::trace::Trace fast = read(text, "r1.json", kKeep);
  EXPECT_EQ(fast.kept.size(), 11u);  // 15 events: 2 kernels, a copy and a profiler step taken
  for (const auto& k : fast.kept) EXPECT_EQ(k.rank, 1) << k.text;
  const auto dom = cco::trace::detail::parse_json_or_trace_dom(text, "r1.json", kKeep);
  ASSERT_TRUE(dom.trace);
  EXPECT_EQ(cco::trace::trace_text(*dom.trace), cco::trace::trace_text(fast));
  // Not asked: nothing kept, and the kernels as before.
  const cco::trace::Trace plain = read(text, "r1.json", {});
  EXPECT_TRUE(plain.kept.empty());
  EXPECT_EQ(plain.kernels.size(), fast.kernels.size());
}

TEST(MergeKeepsEveryEvent, TwoProfilerRanksMergedLoseNoEvent) {
  std::vector<cco::trace::Trace> parts = {read(rank_file(0), "r0.json", kKeep), read(rank_file(1), "r1.json", kKeep)};
  const cco::trace::Trace merged = cco::trace::merge_traces(parts);
  const json out = json::parse(cco::trace::trace_text(merged));
  const json& evs = out["traceEvents"];
  // Each input event has its counterpart on its rank's process: the same phase and name (a
  // kernel or copy as ours, the profiler's step as a range), at the same time from the first
  // kernel as in its file.
  double first_out = 1e300;
  for (const auto& e : evs)
    if (e.value("cat", "") == "kernel") first_out = std::min(first_out, e["ts"].get<double>());
  std::size_t inputs = 0;
  for (int rank : {0, 1})
    for (const auto& in : rank_events(rank)) {
      ++inputs;
      const std::string name = in["name"];
      int found = 0;
      for (const auto& o : evs) {
        if (o.value("name", "") != name || o["pid"] != rank || o["ph"] != in["ph"]) continue;
        if (in["ph"] == "M" && o["args"] != in["args"]) continue;  // ours name the rank's rows too
        if (in.contains("ts") && std::abs((o["ts"].get<double>() - first_out) - (in["ts"].get<double>() - 1030.0)) > 1e-6) continue;
        ++found;
        if (in.contains("args") && in.value("cat", "") != "kernel" && in.value("cat", "") != "gpu_memcpy") {
          EXPECT_EQ(o["args"], in["args"]) << name;  // kept whole
        }
      }
      EXPECT_EQ(found, 1) << "rank " << rank << ": " << in.dump();
    }
  EXPECT_EQ(inputs, 30u);
  // Flow ids are the rank's own: rank 1's flow never joins rank 0's.
  std::map<int, std::vector<int64_t>> ids;
  for (const auto& e : evs)
    if (e.contains("id")) ids[e["pid"].get<int>()].push_back(e["id"].get<int64_t>());
  EXPECT_EQ(ids[0], (std::vector<int64_t>{42, 42}));
  EXPECT_EQ(ids[1], (std::vector<int64_t>{42 + (int64_t{1} << 32), 42 + (int64_t{1} << 32)}));
  // The ranks' own launch calls are kept: none is made up beside them.
  for (const auto& e : evs) EXPECT_NE(e.value("name", ""), "cuLaunchKernel");
  // The merged file reads back: the same kernels, copies and steps.
  const cco::trace::Trace back = cco::trace::parse_trace(out.dump(), "merged.json");
  EXPECT_EQ(back.kernels.size(), merged.kernels.size());
  EXPECT_EQ(back.ranges.size(), merged.ranges.size());
  EXPECT_TRUE(back.kept.empty());  // ours: nothing kept on a plain read
}

// A kept event's time never moves the file's origin (one at ts 0 made every time absolute, past
// a double's nanoseconds), and a time far out of range is refused in one line; ids that cannot
// move by rank * 2^32 get the rank's prefix instead of overflowing.
TEST(MergeKeepsEveryEvent, KeptTimesAndIdsStayInRange) {
  json evs = rank_events(1);
  evs.push_back({{"ph", "C"}, {"name", "early"}, {"pid", 4001}, {"tid", 0}, {"ts", 0}, {"args", {{"v", 1}}}});
  evs.push_back({{"ph", "s"}, {"cat", "x"}, {"name", "big"}, {"id", int64_t{1} << 40}, {"pid", 4001}, {"tid", 1}, {"ts", 1016.0}});
  evs.push_back({{"ph", "s"}, {"cat", "x"}, {"name", "huge"}, {"id", UINT64_C(18446744073709551615)}, {"pid", 4001}, {"tid", 1}, {"ts", 1017.0}});
  evs.push_back({{"ph", "i"}, {"cat", "mark"}, {"name", "theirs"}, {"s", "t"}, {"pid", 4001}, {"tid", 1}, {"ts", 1018.0}});
  json doc = {{"schemaVersion", 1}, {"distributedInfo", {{"rank", 1}}}, {"traceEvents", evs}};
  const cco::trace::Trace t = read(doc.dump(), "r1.json", kKeep);
  const json out = json::parse(cco::trace::trace_text(t));
  EXPECT_EQ(out["otherData"]["ccoverlap"]["time_origin_ns"].get<int64_t>(), 1030000);  // the first kernel
  std::map<std::string, json> by_name;
  for (const auto& e : out["traceEvents"]) by_name[e.value("name", "")] = e;
  EXPECT_DOUBLE_EQ(by_name["early"]["ts"].get<double>(), -1030.0);
  EXPECT_EQ(by_name["big"]["id"], "r1:" + std::to_string(int64_t{1} << 40));
  EXPECT_EQ(by_name["huge"]["id"], "r1:18446744073709551615");
  // Another tool's "mark" instant is not read back as one of cco's step marks.
  EXPECT_EQ(by_name["theirs"]["cat"], "mark (kept)");
  EXPECT_TRUE(cco::trace::parse_trace(out.dump(), "merged.json").marks.empty());
  evs.push_back({{"ph", "C"}, {"name", "far"}, {"pid", 4001}, {"tid", 0}, {"ts", -8.9e15}});
  doc["traceEvents"] = evs;
  try {
    (void)cco::trace::parse_json_or_trace(doc.dump(), "r1.json", kKeep);
    ADD_FAILURE() << "a kept event 280 years before the epoch was taken";
  } catch (const cco::model::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"ts\""), std::string::npos) << e.what();
  }
}

}  // namespace
