// Workload files (workload/workload.hpp), GPU-free: parsing and expansion, every validation error with
// the line and column it must point at, dependency ordering, T_ideal on hand-checked graphs, the
// memory layout and check, the command-line split, and every shipped workload.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/workload_args.hpp"
#include "workload/workload.hpp"

namespace {

using namespace cco::model;
using namespace cco::workload;
using cco::bench::split_step_args;

// ---- helpers --------------------------------------------------------------------------------

/// Line and column (1-based, characters) of the n-th occurrence of `needle` in `text`.
SourcePos where(const std::string& text, const std::string& needle, int nth = 1) {
  std::size_t at = std::string::npos, from = 0;
  for (int i = 0; i < nth; ++i) {
    at = text.find(needle, from);
    if (at == std::string::npos) ADD_FAILURE() << "needle not found: " << needle;
    from = at + 1;
  }
  SourcePos p{1, 1};
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++p.column;
    }
  }
  return p;
}

/// A workload document with the given parameters, buffers and ops (JSON fragments).
std::string doc(const std::string& ops, const std::string& params = "{}",
                const std::string& buffers = "[]") {
  return "{\n"
         "  \"schema\": \"ccoverlap.workload\",\n"
         "  \"schema_version\": \"1.0.0\",\n"
         "  \"name\": \"t\",\n"
         "  \"parameters\": " +
         params +
         ",\n"
         "  \"buffers\": " +
         buffers +
         ",\n"
         "  \"ops\": " +
         ops +
         "\n"
         "}\n";
}

Step parse(const std::string& text, int nranks = 2,
           std::vector<std::pair<std::string, std::string>> over = {}, int64_t gpu_memory = 0) {
  StepLoadOptions o;
  o.nranks = nranks;
  o.overrides = std::move(over);
  o.gpu_memory = gpu_memory;
  return parse_step(text, "w.json", o);
}

/// Expects a StepError at `pos` whose message contains `what`.
void expect_error(const std::string& text, SourcePos pos, const std::string& what, int nranks = 2,
                  std::vector<std::pair<std::string, std::string>> over = {},
                  int64_t gpu_memory = 0) {
  try {
    parse(text, nranks, std::move(over), gpu_memory);
    ADD_FAILURE() << "no error; expected: " << what;
  } catch (const StepError& e) {
    EXPECT_EQ(e.pos().line, pos.line) << e.what();
    EXPECT_EQ(e.pos().column, pos.column) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    const std::string prefix =
        "w.json:" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

const char* kGemm = R"({"id": "g", "kind": "gemm", "m": 64, "n": 32, "k": 16})";

std::vector<std::string> ids_in_order(const Step& s) {
  std::vector<std::string> out;
  for (int v : s.order) out.push_back(s.ops[static_cast<std::size_t>(v)].id);
  return out;
}

// ---- parsing and expansion --------------------------------------------------------------------

TEST(StepParse, MinimalStepAndDefaults) {
  const auto s = parse(doc(std::string("[") + kGemm + R"(,
    {"id": "ar", "kind": "allreduce", "bytes": 1024, "after": ["g"]},
    {"id": "n", "kind": "norm", "bytes": 4096}])"));
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.ops[0].kind, OpKind::Gemm);
  EXPECT_EQ(s.ops[0].dtype, DType::BF16);  // default
  EXPECT_EQ(s.ops[0].engine, GemmEngine::CublasLt);
  EXPECT_EQ(s.ops[0].stream, StreamId::Compute);
  EXPECT_EQ(s.ops[1].stream, StreamId::Comm);  // collectives default to comm
  EXPECT_EQ(s.ops[1].coll, Collective::AllReduce);
  EXPECT_EQ(s.ops[1].after, std::vector<int>{0});
  EXPECT_EQ(s.ops[2].kind, OpKind::Norm);
  EXPECT_EQ(s.ops[0].pos.line, 7);
  EXPECT_DOUBLE_EQ(s.ops[0].flops(), 2.0 * 64 * 32 * 16);
}

TEST(StepParse, ParametersExpressionsAndOverrides) {
  const std::string text = doc(R"([
    {"id": "g${layers}", "kind": "gemm", "m": "${tokens}", "n": "${hidden * 3 / 2}", "k": "${min(hidden, 100)}",
     "dtype": "${dtype}"},
    {"id": "x", "kind": "allgather", "elements": "${round_up(10, ranks) * 2}", "dtype": "float"},
    {"id": "y", "kind": "elementwise", "elements": "${ceil_div(7, 2)}", "dtype": "bf16"}])",
                               R"({"layers": 2, "micro_batch": {"default": 2, "description": "mb"},
      "seq_len": 64, "tokens": "${micro_batch * seq_len}", "hidden": 128, "dtype": "half"})");
  auto s = parse(text, 4);
  EXPECT_EQ(s.ops[0].id, "g2");
  EXPECT_EQ(s.ops[0].m, 128);
  EXPECT_EQ(s.ops[0].n, 192);
  EXPECT_EQ(s.ops[0].k, 100);
  EXPECT_EQ(s.ops[0].dtype, DType::F16);
  EXPECT_EQ(s.ops[1].bytes, 12 * 2 * 4);  // round_up(10, 4) * 2 floats
  EXPECT_EQ(s.ops[2].bytes, 8);           // 4 bf16 = 8 bytes
  ASSERT_NE(s.param("micro_batch"), nullptr);
  EXPECT_EQ(s.param("micro_batch")->description, "mb");
  EXPECT_EQ(s.param("tokens")->value, 128);

  // Overrides: an int, a string; derived parameters follow the overridden ones.
  s = parse(text, 4, {{"micro_batch", "4"}, {"dtype", "float"}, {"layers", "7"}});
  EXPECT_EQ(s.ops[0].id, "g7");
  EXPECT_EQ(s.ops[0].m, 256);
  EXPECT_EQ(s.ops[0].dtype, DType::F32);
  EXPECT_TRUE(s.param("micro_batch")->overridden);
  EXPECT_FALSE(s.param("seq_len")->overridden);
}

TEST(StepParse, ExpressionOperators) {
  const std::string text = doc(R"([
    {"id": "a", "kind": "gemm", "m": "${2 + 3 * 4}", "n": "${(2 + 3) * 4}", "k": "${17 % 5 + 10 / 3 - -1}"},
    {"id": "b", "kind": "gemm", "m": "${(3 < 4) + (4 <= 4) + (5 > 4) + (4 >= 5) + (1 == 1) + (1 != 1)}",
     "n": "${(1 && 0) + (1 || 0) + !0 + !7}", "k": "${max(3, 9, 4) - min(8, 2)}"}])");
  const auto s = parse(text);
  EXPECT_EQ(s.ops[0].m, 14);
  EXPECT_EQ(s.ops[0].n, 20);
  EXPECT_EQ(s.ops[0].k, 2 + 3 + 1);
  EXPECT_EQ(s.ops[1].m, 4);
  EXPECT_EQ(s.ops[1].n, 2);
  EXPECT_EQ(s.ops[1].k, 7);
}

TEST(StepParse, RepeatReverseIfAndNesting) {
  const std::string text = doc(R"([
    {"repeat": "${layers}", "as": "l", "reverse": true, "items": [
      {"repeat": 2, "as": "j", "items": [
        {"id": "g${l}.${j}", "kind": "gemm", "m": 64, "n": 64, "k": 64}]},
      {"id": "ag${l}", "kind": "allgather", "bytes": 64, "if": "${l > 0}", "after": [{"op": "g${l}.1", "if": 1}]}
    ]}])",
                               R"({"layers": 3})");
  const auto s = parse(text);
  std::vector<std::string> ids;
  for (const auto& o : s.ops) ids.push_back(o.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"g2.0", "g2.1", "ag2", "g1.0", "g1.1", "ag1", "g0.0",
                                           "g0.1"}));
  EXPECT_EQ(s.ops[2].after, std::vector<int>{1});
}

TEST(StepParse, BucketsFollowDdp) {
  // Gradients of 2 MiB (1M bf16 elements) each, ready in declaration order; cap 3 MiB, first 1 MiB:
  // bucket 0 = {g0} (first cap reached), bucket 1 = {g1, g2} (4 MiB >= 3), bucket 2 = {g3}.
  const std::string text = doc(R"([
    {"repeat": 4, "as": "i", "items": [
      {"id": "g${i}", "kind": "gemm", "m": 1024, "n": 1024, "k": 8, "grad": "w"}]},
    {"buckets": {"id": "ar", "grads": "w", "cap_bytes": 3145728, "first_cap_bytes": 1048576}},
    {"id": "opt", "kind": "elementwise", "bytes": 64, "after": ["ar"]}])");
  const auto s = parse(text);
  std::vector<std::string> ids;
  for (const auto& o : s.ops) ids.push_back(o.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"g0", "ar_0", "g1", "g2", "ar_1", "g3", "ar_2", "opt"}));
  const int ar1 = s.find_op("ar_1");
  EXPECT_EQ(s.ops[static_cast<std::size_t>(ar1)].bytes, 2 * 1024 * 1024 * 2);
  EXPECT_EQ(s.ops[static_cast<std::size_t>(ar1)].after,
            (std::vector<int>{s.find_op("g1"), s.find_op("g2")}));
  EXPECT_EQ(s.ops[static_cast<std::size_t>(ar1)].stream, StreamId::Comm);
  // "after": ["ar"] names the whole group.
  EXPECT_EQ(s.ops.back().after,
            (std::vector<int>{s.find_op("ar_0"), s.find_op("ar_1"), s.find_op("ar_2")}));
}

TEST(StepParse, BucketsReduceScatterPadsToRanks) {
  const auto s = parse(doc(R"([
    {"id": "n", "kind": "norm", "bytes": 64, "grad": "w", "grad_elements": 5},
    {"buckets": {"id": "rs", "grads": "w", "collective": "reducescatter", "dtype": "float", "cap_bytes": 1}}])"),
                       4);
  EXPECT_EQ(s.ops[1].coll, Collective::ReduceScatter);
  EXPECT_EQ(s.ops[1].bytes, 8 * 4);  // 5 elements padded to 8 (4 ranks), float
}

TEST(StepParse, NamedBuffersAndFills) {
  const std::string text = doc(R"([
    {"id": "ag", "kind": "allgather", "elements": 128, "recv": "x"},
    {"id": "g", "kind": "gemm", "m": 2, "n": 8, "k": 64, "a": "x", "b": "w", "c": "y", "after": ["ag"]},
    {"id": "ar", "kind": "allreduce", "elements": 16, "send": "p"}])",
                               "{}", R"([
    {"name": "x", "elements": 128}, {"name": "w", "elements": 512}, {"name": "y", "elements": 16},
    {"name": "p", "elements": 16}, {"name": "unused", "dtype": "float", "elements": 3}])");
  const auto s = parse(text);
  EXPECT_EQ(s.buffers[0].fill, BufferFill::Output);
  EXPECT_EQ(s.buffers[0].writer, 0);
  EXPECT_EQ(s.buffers[1].fill, BufferFill::Random);
  EXPECT_EQ(s.buffers[2].fill, BufferFill::Output);
  EXPECT_EQ(s.buffers[3].fill, BufferFill::Pattern);
  EXPECT_EQ(s.ops[1].a, 0);
  EXPECT_EQ(s.ops[1].c, 2);
  EXPECT_EQ(s.ops[0].send_elements(2), 64);
  EXPECT_EQ(s.ops[0].recv_elements(2), 128);
}

TEST(StepParse, StreamOrderCountsAsHappensBefore) {
  // Both on the compute stream, the writer first: no "after" needed.
  const auto s = parse(doc(R"([
    {"id": "w", "kind": "gemm", "m": 4, "n": 4, "k": 4, "c": "x"},
    {"id": "r", "kind": "gemm", "m": 4, "n": 4, "k": 4, "a": "x"}])",
                           "{}", R"([{"name": "x", "elements": 16}])"));
  EXPECT_EQ(ids_in_order(s), (std::vector<std::string>{"w", "r"}));
}

// ---- errors point at the line and column ------------------------------------------------------

TEST(StepErrors, JsonSyntax) {
  const std::string text = "{\n  \"schema\": \"ccoverlap.workload\",\n  \"name\" \"x\"\n}\n";
  expect_error(text, {3, 10}, "expected ':'");
  expect_error("{\n  \"a\": [1, 2,\n", {3, 1}, "unexpected end of the file");
  expect_error("{\"a\": 1, \"a\": 2}", {1, 10}, "duplicate key 'a'");
  expect_error("{\"a\": 99999999999999999999}", {1, 7}, "out of range");
  expect_error("", {1, 1}, "empty");
}

TEST(StepErrors, SchemaAndVersion) {
  std::string text = doc(std::string("[") + kGemm + "]");
  const auto at = text.find("ccoverlap.workload");
  std::string bad = text;
  bad.replace(at, 18, "ccoverlap.bench");
  expect_error(bad, where(bad, "\"ccoverlap.bench\""), "a workload file has \"schema\"");
  bad = text;
  bad.replace(text.find("1.0.0"), 5, "2.0.0");
  expect_error(bad, where(bad, "\"2.0.0\""), "schema_version 2.0.0 is not supported");
  bad = text;
  bad.replace(text.find("1.0.0"), 5, "1.0.7");
  EXPECT_NO_THROW(parse(bad));  // patch versions are compatible
}

TEST(StepErrors, UnknownFields) {
  std::string text = doc(R"([{"id": "g", "kind": "gemm", "m": 64, "n": 32, "k": 16, "bogus": 1}])");
  expect_error(text, where(text, "\"bogus\""), "unknown field 'bogus' in gemm op");
  text = doc(R"([{"id": "n", "kind": "norm", "bytes": 64, "m": 3}])");
  expect_error(text, where(text, "\"m\""), "unknown field 'm' in norm op");
  text = doc(std::string("[") + kGemm + "]", "{}", R"([{"name": "x", "elements": 4, "size": 4}])");
  expect_error(text, where(text, "\"size\""), "unknown field 'size' in a buffer");
  text = doc(std::string("[") + kGemm + "]");
  text.insert(text.find("  \"ops\""), "  \"extra\": 1,\n");
  expect_error(text, where(text, "\"extra\""), "unknown field 'extra' in the workload");
  text = doc(R"([{"repeat": 2, "as": "i", "times": 3, "items": []}])");
  expect_error(text, where(text, "\"times\""), "unknown field 'times' in a repeat");
  text = doc(R"([{"buckets": {"id": "b", "grads": "w", "cap": 1}}])");
  expect_error(text, where(text, "\"cap\""), "unknown field 'cap' in buckets");
  text = doc(std::string("[") + kGemm + "]", R"({"p": {"default": 1, "doc": "x"}})");
  expect_error(text, where(text, "\"doc\""), "unknown field 'doc' in parameter 'p'");
}

TEST(StepErrors, WrongTypes) {
  std::string text = doc(R"([{"id": "g", "kind": "gemm", "m": "abc", "n": 32, "k": 16}])");
  expect_error(text, where(text, "\"abc\""), "field 'm' of gemm op 'g' must be an integer");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": true, "n": 32, "k": 16}])");
  expect_error(text, where(text, "true"), "got a boolean");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 1.5, "n": 32, "k": 16}])");
  expect_error(text, where(text, "1.5"), "got a number with a fraction or an exponent");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": "x"}])");
  expect_error(text, where(text, "\"x\""), "field 'after' of gemm op 'g' must be an array");
  text = doc(R"([{"id": 7, "kind": "gemm", "m": 4, "n": 4, "k": 4}])");
  expect_error(text, where(text, "7"), "field 'id' must be a string");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "dtype": "int8"}])");
  expect_error(text, where(text, "\"int8\""), "unknown data type 'int8'");
  text = doc(R"([{"id": "g", "kind": "conv", "m": 4}])");
  expect_error(text, where(text, "\"conv\""), "unknown op kind 'conv'");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 0, "n": 4, "k": 4}])");
  SourcePos zero = where(text, "\"m\": 0");
  zero.column += 5;
  expect_error(text, zero, "field 'm' of gemm op 'g' is 0; it must be in 1..");
  text = doc(std::string("[") + kGemm + "]", R"({"p": [1]})");
  expect_error(text, where(text, "[1]"), "parameter 'p' must be an integer, a string");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "stream": "side"}])");
  expect_error(text, where(text, "\"side\""), "the streams are \"compute\" and \"comm\"");
}

TEST(StepErrors, MissingFields) {
  std::string text = doc(R"([
    {"id": "g", "kind": "gemm", "m": 4, "k": 4}])");
  expect_error(text, where(text, "{\"id\""), "gemm op 'g' needs the field 'n'");
  text = doc(R"([
    {"id": "a", "kind": "allreduce"}])");
  expect_error(text, where(text, "{\"id\""), "needs the field 'bytes' or 'elements'");
}

TEST(StepErrors, BadParameterExpressions) {
  // Columns point into the string, at the offending character.
  std::string text = doc(R"([{"id": "g", "kind": "gemm", "m": "${hidden *}", "n": 4, "k": 4}])",
                         R"({"hidden": 8})");
  SourcePos p = where(text, "\"${hidden *}\"");
  p.column += 11;  // `"${` then `hidden *`: the end of the expression, where a value is missing
  expect_error(text, p, "expected a value at the end of the expression");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": "${hiden * 2}", "n": 4, "k": 4}])",
             R"({"hidden": 8})");
  p = where(text, "hiden");
  expect_error(text, p, "unknown name 'hiden'");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": "${8 / (hidden - 8)}", "n": 4, "k": 4}])",
             R"({"hidden": 8})");
  p = where(text, "/ (hidden");
  expect_error(text, p, "division by zero");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": "${9223372036854775807 + 1}", "n": 4, "k": 4}])");
  expect_error(text, where(text, "+ 1"), "integer overflow");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": "${dtype * 2}", "n": 4, "k": 4}])",
             R"({"dtype": "half"})");
  expect_error(text, where(text, "dtype *"), "'half' is a string");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": "${4", "n": 4, "k": 4}])");
  expect_error(text, where(text, "${4"), "without a closing '}'");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": "${sqrt(4)}", "n": 4, "k": 4}])");
  expect_error(text, where(text, "sqrt"), "unknown function 'sqrt'");
  // In a parameter's default, evaluated with the earlier parameters only.
  text = doc(std::string("[") + kGemm + "]", R"({"a": "${b + 1}", "b": 2})");
  expect_error(text, where(text, "b + 1"), "unknown name 'b'");
  text = doc(std::string("[") + kGemm + "]", R"({"ranks": 3})");
  expect_error(text, where(text, "\"ranks\""), "reserved");
}

// Nesting is bounded (200 levels, as in the JSON reader): 6000 parentheses, 100000 unary minus
// signs or 30000 nested min( crashed the evaluator on its stack (SIGSEGV, found by review).
TEST(StepErrors, ExpressionNestingIsBounded) {
  auto deep = [](const std::string& open, const std::string& mid, const std::string& close, int n) {
    std::string e;
    for (int i = 0; i < n; ++i) e += open;
    e += mid;
    for (int i = 0; i < n; ++i) e += close;
    return doc(R"([{"id": "g", "kind": "gemm", "m": "${)" + e + R"(}", "n": 4, "k": 4}])");
  };
  // The message ends with the reason (it quotes the expression first: not compared here).
  auto message = [](const std::string& text) {
    try {
      (void)parse_step(text, "w.json", {});
    } catch (const StepError& e) {
      const std::string m = e.message();
      const std::string why = "nesting deeper than 200 levels";
      return m.size() >= why.size() && m.compare(m.size() - why.size(), why.size(), why) == 0
                 ? why
                 : m.substr(0, 200);
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(deep("(", "64", ")", 6000)), "nesting deeper than 200 levels");
  EXPECT_EQ(message(deep("-", "64", "", 100000)), "nesting deeper than 200 levels");
  EXPECT_EQ(message(deep("!", "0", "", 100000)), "nesting deeper than 200 levels");
  EXPECT_EQ(message(deep("min(", "64", ")", 30000)), "nesting deeper than 200 levels");
  // What a person writes still evaluates: 100 levels.
  EXPECT_EQ(message(deep("(", "64", ")", 100)), "no error");
  EXPECT_EQ(message(deep("-", "-64", "", 99)), "no error");
}

TEST(StepErrors, BadOverrides) {
  const std::string text = doc(std::string("[") + kGemm + "]", R"({"layers": 2, "dtype": "half"})");
  try {
    parse(text, 2, {{"layer", "3"}});
    ADD_FAILURE();
  } catch (const StepError& e) {
    EXPECT_EQ(e.pos().line, 0);
    EXPECT_NE(std::string(e.what()).find("no parameter 'layer' (parameters: layers, dtype)"),
              std::string::npos)
        << e.what();
  }
  try {
    parse(text, 2, {{"layers", "three"}});
    ADD_FAILURE();
  } catch (const StepError& e) {
    EXPECT_NE(std::string(e.what()).find("takes an integer"), std::string::npos) << e.what();
  }
}

TEST(StepErrors, Cycle) {
  const std::string text = doc(R"([
    {"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["c"]},
    {"id": "b", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["a"]},
    {"id": "c", "kind": "allreduce", "bytes": 64, "after": ["b"]},
    {"id": "d", "kind": "gemm", "m": 4, "n": 4, "k": 4}])");
  expect_error(text, where(text, "\"c\"]"),
               "dependency cycle: 'a' is after 'c' is after 'b' is after 'a'");
  const std::string self =
      doc(R"([{"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["a"]}])");
  expect_error(self, where(self, "\"a\"]"), "op 'a' is after itself");
}

TEST(StepErrors, UndefinedDependencyAndBuffer) {
  std::string text =
      doc(R"([{"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["nope"]}])");
  expect_error(text, where(text, "\"nope\""), "is after 'nope', which is not an op id");
  text = doc(R"([{"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4, "a": "missing"}])");
  expect_error(text, where(text, "\"missing\""), "undefined buffer 'missing'");
  text = doc(R"([{"id": "a", "kind": "allreduce", "bytes": 64, "recv": "missing"}])");
  expect_error(text, where(text, "\"missing\""), "undefined buffer 'missing'");
}

TEST(StepErrors, DuplicatesAndBufferMisuse) {
  std::string text = doc(std::string("[") + kGemm + ",\n    " + kGemm + "]");
  expect_error(text, where(text, kGemm, 2), "duplicate op id 'g' (first at line 7)");
  text = doc(std::string("[") + kGemm + "]", "{}", R"([{"name": "x", "elements": 4},
    {"name": "x", "elements": 8}])");
  expect_error(text, where(text, "{\"name\": \"x\", \"elements\": 8"), "duplicate buffer name 'x'");
  // Size and type must match the op's use.
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "a": "x"}])", "{}",
             R"([{"name": "x", "elements": 15}])");
  expect_error(text, where(text, "\"x\"}"),
               "needs 16 bfloat16 elements; buffer 'x' (line 6) holds 15 bfloat16");
  // One writer per buffer.
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "c": "x"},
    {"id": "h", "kind": "gemm", "m": 4, "n": 4, "k": 4, "c": "x"}])",
             "{}", R"([{"name": "x", "elements": 16}])");
  expect_error(text, where(text, "\"x\"}", 2), "written by op 'g' and by op 'h'");
  // A collective's input must be its own pattern buffer.
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "c": "x"},
    {"id": "ar", "kind": "allreduce", "elements": 16, "send": "x", "after": ["g"]}])",
             "{}", R"([{"name": "x", "elements": 16}])");
  expect_error(text, where(text, "\"x\", \"after\""),
               "a collective's input must be a buffer no op writes");
  // A reader must wait for the writer: here on another stream, without "after".
  text = doc(R"([{"id": "ag", "kind": "allgather", "elements": 16, "recv": "x"},
    {"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "a": "x"}])",
             "{}", R"([{"name": "x", "elements": 16}])");
  expect_error(text, where(text, "\"x\"}", 2),
               "reads buffer 'x', which op 'ag' writes, without waiting");
  // ... or declared after it on the same stream (the reader runs first).
  text = doc(R"([{"id": "r", "kind": "gemm", "m": 4, "n": 4, "k": 4, "a": "x"},
    {"id": "w", "kind": "gemm", "m": 4, "n": 4, "k": 4, "c": "x"}])",
             "{}", R"([{"name": "x", "elements": 16}])");
  expect_error(text, where(text, "\"x\"}"), "add \"w\" to its \"after\"");
}

TEST(StepErrors, CollectiveSizesAndStreams) {
  std::string text = doc(R"([{"id": "ag", "kind": "allgather", "bytes": 6}])");
  expect_error(text, where(text, "6}"), "needs a multiple of 4 bytes", 2);
  EXPECT_NO_THROW(parse(text, 1));  // on one rank 2 bytes do
  text = doc(R"([{"id": "ag", "kind": "reducescatter", "elements": 6, "dtype": "float"}])");
  expect_error(text, where(text, "6,"), "needs a multiple of 4 elements", 4);
  text = doc(R"([{"id": "a", "kind": "allgather", "bytes": 64, "op": "max"}])");
  expect_error(text, where(text, "\"op\""), "applies to allreduce and reducescatter only");
  text = doc(R"([{"id": "a", "kind": "allreduce", "bytes": 64},
    {"id": "b", "kind": "allreduce", "bytes": 64, "stream": "compute"}])");
  expect_error(text, where(text, "{\"id\": \"b\""), "all collectives of a step share one stream");
  text = doc(R"([{"id": "a", "kind": "broadcast", "bytes": 64}])");
  expect_error(text, where(text, "\"broadcast\""), "unknown op kind");
  text = doc(R"([{"id": "n", "kind": "norm", "bytes": 6}])");
  expect_error(text, where(text, "6}"), "multiple of 4");
}

TEST(StepErrors, ExpansionLimits) {
  std::string text = doc(R"([
    {"repeat": 100000, "as": "i", "items": [{"repeat": 100000, "as": "j", "items": []}]}])");
  expect_error(text, where(text, "{\"repeat\": 100000, \"as\": \"j\""),
               "more than 10 million elements");
  text = doc(R"([
    {"repeat": 100001, "as": "i", "items": [{"id": "g${i}", "kind": "gemm", "m": 4, "n": 4, "k": 4}]}])");
  expect_error(text, where(text, "100001"), "field 'repeat' is 100001; it must be in 0..100000");
  text = doc(R"([
    {"repeat": 1000, "as": "i", "items": [{"repeat": 101, "as": "j", "items": [
      {"id": "g${i}.${j}", "kind": "gemm", "m": 4, "n": 4, "k": 4}]}]}])");
  expect_error(text, where(text, "{\"id\""), "more than 100000 ops");
}

TEST(StepErrors, Buckets) {
  std::string text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"buckets": {"id": "b", "grads": "w", "cap_bytes": 64}}])");
  expect_error(text, where(text, "\"w\""), "no op has \"grad\": \"w\"");
  text = doc(R"([{"id": "n", "kind": "norm", "bytes": 64, "grad": "w"}])");
  expect_error(text, where(text, "{\"id\""), "needs 'grad_elements'");
  text = doc(R"([{"id": "g", "kind": "gemm", "m": 4, "n": 4, "k": 4, "grad": "w"},
    {"buckets": {"id": "g", "grads": "w", "cap_bytes": 64}}])");
  expect_error(text, where(text, "\"g\", \"grads\""), "buckets id 'g' is also an op id");
}

TEST(StepErrors, OverMemory) {
  const std::string text = doc(std::string("[") + kGemm + "]", "{}",
                               R"([{"name": "small", "elements": 8},
    {"name": "huge", "elements": 68719476736}])");
  // 2^36 bf16 elements = 128 GiB on an 80 GiB GPU: refused, pointing at the largest part.
  expect_error(text, where(text, "{\"name\": \"huge\""), "the step needs 128.", 2, {},
               int64_t{80} << 30);
  EXPECT_NO_THROW(parse(text, 2, {}, int64_t{200} << 30));
  // A GEMM output and its snapshot.
  const std::string big = doc(R"([
    {"id": "big", "kind": "gemm", "m": 131072, "n": 131072, "k": 4}])");
  expect_error(big, where(big, "{\"id\": \"big\""), "the output of op 'big' with its snapshot", 2,
               {}, int64_t{80} << 30);
}

// ---- ordering ---------------------------------------------------------------------------------

TEST(StepOrder, DeclarationOrderAmongReadyOps) {
  // b waits for d (declared later); the rest are ready: a, c, d, then b, then e.
  const auto s = parse(doc(R"([
    {"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "b", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["d"]},
    {"id": "c", "kind": "allreduce", "bytes": 64},
    {"id": "d", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "e", "kind": "allreduce", "bytes": 64, "after": ["b"]}])"));
  EXPECT_EQ(ids_in_order(s), (std::vector<std::string>{"a", "c", "d", "b", "e"}));
  // Previous op on each stream in that order.
  EXPECT_EQ(s.stream_prev[static_cast<std::size_t>(s.find_op("a"))], -1);
  EXPECT_EQ(s.stream_prev[static_cast<std::size_t>(s.find_op("d"))], s.find_op("a"));
  EXPECT_EQ(s.stream_prev[static_cast<std::size_t>(s.find_op("b"))], s.find_op("d"));
  EXPECT_EQ(s.stream_prev[static_cast<std::size_t>(s.find_op("e"))], s.find_op("c"));
}

TEST(StepOrder, EveryDependencyPrecedes) {
  const auto s = parse(doc(R"([
    {"repeat": 6, "as": "i", "items": [
      {"id": "g${i}", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": [{"op": "r${i - 1}", "if": "${i > 0}"}]},
      {"id": "r${i}", "kind": "allreduce", "bytes": 64, "after": ["g${i}"]}]}])"));
  std::vector<int> pos(s.ops.size());
  for (std::size_t p = 0; p < s.order.size(); ++p)
    pos[static_cast<std::size_t>(s.order[p])] = static_cast<int>(p);
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    for (int d : s.ops[i].after) EXPECT_LT(pos[static_cast<std::size_t>(d)], pos[i]);
}

// ---- T_ideal ----------------------------------------------------------------------------------

std::vector<double> times_by_id(const Step& s,
                                const std::vector<std::pair<std::string, double>>& t) {
  std::vector<double> out(s.ops.size(), -1);
  for (const auto& [id, v] : t) out[static_cast<std::size_t>(s.find_op(id))] = v;
  return out;
}

TEST(StepIdeal, ChainWithOneCollective) {
  // a(3) -> b(2) on compute; c(4) on comm after a. a 0-3, b 3-5, c 3-7: T_ideal 7.
  const auto s = parse(doc(R"([
    {"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "b", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "c", "kind": "allreduce", "bytes": 64, "after": ["a"]}])"));
  const auto t = times_by_id(s, {{"a", 3}, {"b", 2}, {"c", 4}});
  EXPECT_DOUBLE_EQ(ideal_time(s, t), 7.0);
  EXPECT_DOUBLE_EQ(compute_time(s, t), 5.0);
  EXPECT_DOUBLE_EQ(comm_time(s, t), 4.0);
  const auto fin = schedule_finish(s, t);
  EXPECT_DOUBLE_EQ(fin[0], 3.0);
  EXPECT_DOUBLE_EQ(fin[1], 5.0);
  EXPECT_DOUBLE_EQ(fin[2], 7.0);
}

TEST(StepIdeal, DdpBucketsQueueOnTheCommStream) {
  // g1 0-2, g2 2-4, g3 4-6 (compute); ar1 after g1: 2-5; ar2 after g2 but behind ar1: 5-8;
  // ar3 after g3 but behind ar2: 8-9. T_ideal 9 (max(T_comp, T_comm) would say 7).
  const auto s = parse(doc(R"([
    {"id": "g1", "kind": "gemm", "m": 4, "n": 4, "k": 4}, {"id": "ar1", "kind": "allreduce", "bytes": 64, "after": ["g1"]},
    {"id": "g2", "kind": "gemm", "m": 4, "n": 4, "k": 4}, {"id": "ar2", "kind": "allreduce", "bytes": 64, "after": ["g2"]},
    {"id": "g3", "kind": "gemm", "m": 4, "n": 4, "k": 4}, {"id": "ar3", "kind": "allreduce", "bytes": 64, "after": ["g3"]}])"));
  const auto t =
      times_by_id(s, {{"g1", 2}, {"g2", 2}, {"g3", 2}, {"ar1", 3}, {"ar2", 3}, {"ar3", 1}});
  EXPECT_DOUBLE_EQ(ideal_time(s, t), 9.0);
  EXPECT_DOUBLE_EQ(compute_time(s, t), 6.0);
  EXPECT_DOUBLE_EQ(comm_time(s, t), 7.0);
}

TEST(StepIdeal, FsdpPrefetch) {
  // ag0 0-2; c0 after ag0: 2-5; ag1 (comm, behind ag0): 2-4; rs0 after c0: max(5, 4) = 5-6;
  // c1 after ag1, behind c0: 5-8. T_ideal 8.
  const auto s = parse(doc(R"([
    {"id": "ag0", "kind": "allgather", "bytes": 64},
    {"id": "c0", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["ag0"]},
    {"id": "ag1", "kind": "allgather", "bytes": 64},
    {"id": "rs0", "kind": "reducescatter", "bytes": 64, "after": ["c0"]},
    {"id": "c1", "kind": "gemm", "m": 4, "n": 4, "k": 4, "after": ["ag1"]}])"));
  EXPECT_EQ(ids_in_order(s), (std::vector<std::string>{"ag0", "c0", "ag1", "rs0", "c1"}));
  EXPECT_DOUBLE_EQ(
      ideal_time(s, times_by_id(s, {{"ag0", 2}, {"c0", 3}, {"ag1", 2}, {"rs0", 1}, {"c1", 3}})),
      8.0);
}

TEST(StepIdeal, IssueOrderIsStreamOrder) {
  // arB is declared before arA, so it goes first on the comm stream even though arA's input is
  // ready long before: g1 0-1, g2 1-6, arB 6-7, arA 7-8. T_ideal 8.
  const auto s = parse(doc(R"([
    {"id": "g1", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "g2", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "arB", "kind": "allreduce", "bytes": 64, "after": ["g2"]},
    {"id": "arA", "kind": "allreduce", "bytes": 64, "after": ["g1"]}])"));
  EXPECT_DOUBLE_EQ(ideal_time(s, times_by_id(s, {{"g1", 1}, {"g2", 5}, {"arB", 1}, {"arA", 1}})),
                   8.0);
}

TEST(StepIdeal, OneStreamIsTheSum) {
  const auto s = parse(doc(R"([
    {"id": "a", "kind": "gemm", "m": 4, "n": 4, "k": 4},
    {"id": "b", "kind": "allreduce", "bytes": 64, "stream": "compute"},
    {"id": "c", "kind": "norm", "bytes": 64}])"));
  EXPECT_DOUBLE_EQ(ideal_time(s, times_by_id(s, {{"a", 1.5}, {"b", 2.5}, {"c", 4}})), 8.0);
  EXPECT_THROW(ideal_time(s, {1.0, 2.0}), Error);
  EXPECT_THROW(ideal_time(s, {1.0, -2.0, 1.0}), Error);
}

// ---- memory layout ----------------------------------------------------------------------------

TEST(StepLayoutTest, SizesOfEveryRegion) {
  // gemm 64x32x16 bf16 (implicit): random pool max(64*16, 16*32) = 1024 elements = 2 KiB; C 4 KiB;
  // snapshot 4 KiB; reference 64*32*4 = 8 KiB; two 32 MiB workspaces. allreduce 1 KiB: pattern
  // 1 KiB, recv 1 KiB. norm 4 KiB: x, y, z 4 KiB each. Everything 256-aligned.
  const auto s = parse(doc(std::string("[") + kGemm + R"(,
    {"id": "ar", "kind": "allreduce", "bytes": 1024}, {"id": "n", "kind": "norm", "bytes": 4096}])"));
  const auto L = layout_step(s, true);
  EXPECT_EQ(L.random[static_cast<int>(DType::BF16)].bytes, 2048);
  EXPECT_EQ(L.pattern[static_cast<int>(DType::BF16)].bytes, 1024);
  EXPECT_EQ(L.ops[0].c.bytes, 4096);
  EXPECT_EQ(L.ops[0].snap.bytes, 4096);
  EXPECT_EQ(L.ops[0].a.offset, L.random[static_cast<int>(DType::BF16)].offset);
  EXPECT_EQ(L.ops[1].recv.bytes, 1024);
  EXPECT_EQ(L.ops[2].z.bytes, 4096);
  EXPECT_EQ(L.reference.bytes, 8192);
  EXPECT_EQ(L.total,
            2048 + 1024 + 4096 * 2 + 4096 + 4096 + 1024 + 4096 + 8192 + 2 * (int64_t{32} << 20));
  EXPECT_EQ(layout_step(s, false).total, L.total - 4096 - 8192);  // no snapshot, no reference
  for (const auto& R : L.ops)
    for (const Region* r : {&R.a, &R.b, &R.c, &R.snap, &R.x, &R.y, &R.z, &R.send, &R.recv})
      if (r->valid()) {
        EXPECT_EQ(r->offset % StepLayout::kAlign, 0);
        EXPECT_LE(r->offset + r->bytes, L.total);
      }
}

TEST(StepLayoutTest, ImplicitOutputsNeverOverlap) {
  const auto s = parse(doc(R"([
    {"repeat": 5, "as": "i", "items": [
      {"id": "g${i}", "kind": "gemm", "m": "${8 + i}", "n": 8, "k": 8},
      {"id": "a${i}", "kind": "alltoall", "elements": "${2 * (i + 1)}"},
      {"id": "n${i}", "kind": "elementwise", "bytes": "${4 * (i + 1)}"}]}])"));
  const auto L = layout_step(s, true);
  std::vector<Region> outs;
  for (const auto& R : L.ops)
    for (const Region* r : {&R.c, &R.snap, &R.z, &R.recv})
      if (r->valid()) outs.push_back(*r);
  for (std::size_t i = 0; i < outs.size(); ++i)
    for (std::size_t j = i + 1; j < outs.size(); ++j)
      EXPECT_TRUE(outs[i].offset + outs[i].bytes <= outs[j].offset ||
                  outs[j].offset + outs[j].bytes <= outs[i].offset);
}

TEST(StepLayoutTest, PatternModulusKeepsSumsExact) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int n : {1, 2, 3, 4, 8, 16, 64}) {
      const int m = pattern_mod(t, n);
      EXPECT_GE(m, 1);
      EXPECT_LE(m, 7);
      const double limit = t == DType::BF16 ? 256 : t == DType::F16 ? 2048 : 16777216;
      if (m > 1) {
        EXPECT_LE(n * (n + 1) / 2.0 * m, limit) << n;
      }
    }
}

// ---- command line -----------------------------------------------------------------------------

TEST(StepArgsTest, SplitsWorkloadFlags) {
  const auto a = split_step_args({"bench", "--workload", "./w.json", "-g", "4", "--param", "layers=8",
                                  "--param=dtype=half", "--validate", "--gpu-memory", "80G", "-c",
                                  "0", "-n", "3"});
  EXPECT_EQ(a.workload, "./w.json");
  EXPECT_TRUE(a.validate);
  ASSERT_EQ(a.params.size(), 2u);
  EXPECT_EQ(a.params[0], (std::pair<std::string, std::string>{"layers", "8"}));
  EXPECT_EQ(a.params[1], (std::pair<std::string, std::string>{"dtype", "half"}));
  EXPECT_EQ(a.gpu_memory, int64_t{80} << 30);
  EXPECT_EQ(a.ngpus, 4);
  EXPECT_FALSE(a.check);
  EXPECT_EQ(a.rest, (std::vector<std::string>{"bench", "-g", "4", "-c", "0", "-n", "3"}));
  const auto lo = a.load_options();
  EXPECT_EQ(lo.nranks, 4);
  EXPECT_EQ(lo.gpu_memory, int64_t{80} << 30);
  EXPECT_FALSE(lo.check);
  EXPECT_EQ(split_step_args({"bench", "--workload=./x.json"}).load_options().nranks, 2);
  EXPECT_TRUE(split_step_args({"bench", "-b", "1M"}).workload.empty());
  EXPECT_THROW(split_step_args({"bench", "--validate"}), Error);
  EXPECT_THROW(split_step_args({"bench", "--workload"}), Error);
  EXPECT_THROW(split_step_args({"bench", "--workload", "./w", "--param", "novalue"}), Error);
  EXPECT_THROW(split_step_args({"bench", "--workload", "./w", "--gpu-memory", "lots"}), Error);
}

// --workload NAME: a file as given, else a shipped workload by name (issue 34 item 1).
TEST(StepArgsTest, FindsShippedWorkloadsByName) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(testing::TempDir()) / ("cco_wl_" + std::to_string(::getpid()));
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  std::ofstream(root / "a" / "tp.json") << "{}";
  std::ofstream(root / "b" / "tp.json") << "{}";
  std::ofstream(root / "b" / "moe.json") << "{}";
  std::ofstream(root / "b" / "notes.txt") << "";
  const std::vector<std::string> dirs = {(root / "a").string(), (root / "b").string()};
  EXPECT_EQ(find_workload("tp", dirs), (root / "a" / "tp.json").string());  // the first folder wins
  EXPECT_EQ(find_workload("tp.json", dirs), (root / "a" / "tp.json").string());
  EXPECT_EQ(find_workload("moe", dirs), (root / "b" / "moe.json").string());
  EXPECT_EQ(find_workload("./tp", dirs), "./tp");          // a path is taken as it is
  EXPECT_EQ(find_workload("dir/x.json", dirs), "dir/x.json");
  EXPECT_EQ(shipped_workloads(dirs), (std::vector<std::string>{"moe", "tp"}));
  {  // NAME.json in the current folder comes first (the copy the user edits)
    const fs::path here = fs::current_path();
    fs::create_directories(root / "cwd");
    std::ofstream(root / "cwd" / "tp.json") << "{}";
    fs::current_path(root / "cwd");
    EXPECT_EQ(find_workload("tp", dirs), "tp.json");
    fs::current_path(here);
  }
  try {
    (void)find_workload("llama", dirs);
    ADD_FAILURE() << "an unknown name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--workload llama: no such file, and no shipped workload of that name (shipped: moe, tp)");
  }
  // CCO_WORKLOAD_PATH comes first; folders that do not exist are left out.
  ::setenv("CCO_WORKLOAD_PATH", ((root / "b").string() + ":/nonexistent/cco").c_str(), 1);
  const auto found = workload_dirs();
  ::unsetenv("CCO_WORKLOAD_PATH");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0], (root / "b").string());
  EXPECT_EQ(std::count(found.begin(), found.end(), "/nonexistent/cco"), 0);
  // The shipped ones, from the source tree, through the command line.
  EXPECT_NE(split_step_args({"bench", "--workload", "tp_llama7b"}).workload.find("tp_llama7b.json"),
            std::string::npos);
  fs::remove_all(root);
}

TEST(StepFiles, UnreadableFile) {
  try {
    load_step("/nonexistent/w.json", {});
    ADD_FAILURE();
  } catch (const StepError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/w.json: cannot be read (No such file or directory)");
  }
}

// ---- the shipped workloads --------------------------------------------------------------------

std::vector<std::string> shipped() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(CCO_WORKLOADS_DIR))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Shipped, AllFiveAreThere) {
  std::vector<std::string> names;
  for (const auto& p : shipped()) names.push_back(std::filesystem::path(p).filename().string());
  EXPECT_EQ(names,
            (std::vector<std::string>{"ddp_llama13b.json", "ddp_llama7b.json", "fsdp_llama7b.json",
                                      "moe_mixtral.json", "tp_llama7b.json"}));
}

TEST(Shipped, ParseAndValidateOnOneToEightRanks) {
  for (const auto& path : shipped())
    for (int n : {1, 2, 4, 8}) {
      StepLoadOptions o;
      o.nranks = n;
      o.gpu_memory = int64_t{141} << 30;  // H200: every default fits with verification buffers
      try {
        const auto s = load_step(path, o);
        EXPECT_GT(s.ops.size(), 10u) << path;
        EXPECT_EQ(s.order.size(), s.ops.size());
        bool has_coll = false, has_comp = false;
        for (const auto& op : s.ops) (op.is_compute() ? has_comp : has_coll) = true;
        EXPECT_TRUE(has_coll && has_comp) << path;
        EXPECT_EQ(s.param("layers") ? s.param("layers")->value : 0, s.name == "moe-mixtral" ? 2 : 4)
            << path;
        EXPECT_FALSE(validation_summary(s, true).empty());
        EXPECT_TRUE(to_json(s).contains("ops"));
      } catch (const std::exception& e) {
        ADD_FAILURE() << path << " on " << n << " ranks: " << e.what();
      }
    }
}

TEST(Shipped, DdpBucketsInReverseLayerOrder) {
  StepLoadOptions o;
  o.nranks = 2;
  const auto s = load_step(std::string(CCO_WORKLOADS_DIR) + "/ddp_llama7b.json", o);
  // 4 layers x 13 compute ops; the first bucket (1 MiB cap) holds only layer 3's down wgrad.
  int buckets = 0;
  for (const auto& op : s.ops) buckets += op.kind == OpKind::Collective;
  EXPECT_EQ(static_cast<int>(s.ops.size()) - buckets, 4 * 13);
  const int b0 = s.find_op("grad_allreduce_0");
  ASSERT_GE(b0, 0);
  EXPECT_EQ(s.ops[static_cast<std::size_t>(b0)].after,
            std::vector<int>{s.find_op("L3.mlp.down.wgrad")});
  EXPECT_EQ(s.ops[static_cast<std::size_t>(b0)].bytes, 11008LL * 4096 * 2);
  // The last bucket ends with layer 0's input norm.
  const auto& last = s.ops.back();
  EXPECT_EQ(last.kind, OpKind::Collective);
  EXPECT_EQ(last.after.back(), s.find_op("L0.attn.norm.bwd"));
  // Every gradient is in exactly one bucket: the buckets add up to the layers' weights.
  int64_t elems = 0;
  for (const auto& op : s.ops)
    if (op.kind == OpKind::Collective) elems += op.bytes / 2;
  EXPECT_EQ(elems, 4LL * (4096LL * (4 * 4096 + 3 * 11008) + 2 * 4096));
}

TEST(Shipped, OverridesAndMemoryRefusal) {
  StepLoadOptions o;
  o.nranks = 2;
  o.overrides = {{"layers", "32"}, {"micro_batch", "2"}};
  o.gpu_memory = int64_t{141} << 30;
  const auto s = load_step(std::string(CCO_WORKLOADS_DIR) + "/ddp_llama7b.json", o);
  EXPECT_EQ(s.param("tokens")->value, 4096);
  // 40 layers of 13B with snapshots do not fit an 80 GiB GPU.
  o.overrides = {{"layers", "40"}};
  o.gpu_memory = int64_t{80} << 30;
  EXPECT_THROW(load_step(std::string(CCO_WORKLOADS_DIR) + "/ddp_llama13b.json", o), StepError);
}

}  // namespace

// Found by fuzz_workload (tests/fuzz/regressions/workload/latin1_*.json): a Latin-1 byte in a
// string was accepted, and the report could then not be written as JSON after the whole run.
TEST(StepRegression, NonUtf8StringsAreRefusedAtTheirLine) {
  const std::string dir = std::string(CCO_SOURCE_DIR) + "/tests/fuzz/regressions/workload/";
  for (const char* f : {"latin1_name.json", "latin1_description.json"}) {
    std::ifstream in(dir + f, std::ios::binary);
    ASSERT_TRUE(in) << dir + f;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      parse_step(text, f, {});
      FAIL() << f << " was accepted";
    } catch (const StepError& e) {
      EXPECT_NE(std::string(e.what()).find("invalid UTF-8"), std::string::npos) << e.what();
    }
  }
  // Valid UTF-8 stays accepted and round-trips: "é" as two bytes in the name.
  const std::string ok = R"({"schema": "ccoverlap.workload", "schema_version": "1.0.0", "name": "caf)"
                         "\xC3\xA9" R"(", "ops": [{"id": "g", "gemm": {"m": 8, "n": 8, "k": 8}}]})";
  try {
    const auto step = parse_step(ok, "ok.json", {});
    EXPECT_NO_THROW((void)to_json(step).dump());
  } catch (const StepError& e) {
    // Some other rule of the format may refuse this minimal file; it must not be the UTF-8 check.
    EXPECT_EQ(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
  }
}
