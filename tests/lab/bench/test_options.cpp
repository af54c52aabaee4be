// cco bench argument parsing, validation and row expansion: GPU-free.
#include <gtest/gtest.h>

#include "bench/options.hpp"
#include "bench/report.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"

using namespace cco::bench;
using cco::model::Collective;
using cco::model::ComputeKind;
using cco::model::CtaPolicy;
using cco::model::DType;

namespace {
Options parse(std::vector<std::string> a) {
  a.insert(a.begin(), "bench");
  return parse_options(a);
}
void expect_usage(std::vector<std::string> a, const std::string& needle) {
  try {
    parse(a);
    FAIL() << "expected a usage error containing '" << needle << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}
}  // namespace

TEST(Options, Defaults) {
  const auto o = parse({});
  EXPECT_EQ(o.min_bytes, 256LL << 20);
  EXPECT_EQ(o.max_bytes, 256LL << 20);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.dtype, DType::F32);
  EXPECT_EQ(o.coll, Collective::AllReduce);
  EXPECT_EQ(o.compute, ComputeKind::CublasLt);
  EXPECT_EQ(o.m, 4096);
  EXPECT_EQ(o.gemm_dtype, DType::BF16);
  EXPECT_EQ(o.count, 4);
  EXPECT_FALSE(o.modes_given);
}

TEST(Options, NcclTestsLetters) {
  const auto o = parse({"-b", "8M", "-e", "64M", "-f", "2", "-g", "2", "-n", "7", "-w", "1", "-c",
                        "0", "-d", "bfloat16", "-o", "max"});
  EXPECT_EQ(o.min_bytes, 8LL << 20);
  EXPECT_EQ(o.max_bytes, 64LL << 20);
  EXPECT_EQ(o.ngpus, 2);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 1);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.dtype, DType::BF16);
  EXPECT_EQ(o.op, cco::model::RedOp::Max);
  EXPECT_EQ(sizes(o), (std::vector<int64_t>{8LL << 20, 16LL << 20, 32LL << 20, 64LL << 20}));
}

TEST(Options, LongNames) {
  const auto o = parse({"--compute", "builtin", "--gemm", "2048,1024,512", "--count", "8",
                        "--modes", "seq,shape+priority", "--blocks-per-sm", "1,2,4", "--collective",
                        "all_gather_perf", "--json", "x.json", "--csv", "-"});
  EXPECT_EQ(o.compute, ComputeKind::Builtin);
  EXPECT_EQ(o.m, 2048);
  EXPECT_EQ(o.n, 1024);
  EXPECT_EQ(o.k, 512);
  EXPECT_EQ(o.count, 8);
  ASSERT_EQ(o.modes.size(), 2u);
  EXPECT_EQ(o.modes[1], Mode::ShapePriority);
  EXPECT_EQ(o.blocks_per_sm, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(o.coll, Collective::AllGather);
  EXPECT_EQ(o.json_path, "x.json");
  EXPECT_EQ(o.csv_path, "-");
}

TEST(Options, SquareGemmAndPads) {
  const auto o = parse({"--compute", "membound", "--gemm", "1024", "--pad", "16K,100000"});
  EXPECT_EQ(o.m, 1024);
  EXPECT_EQ(o.n, 1024);
  EXPECT_EQ(o.k, 1024);
  EXPECT_EQ(o.pads, (std::vector<int64_t>{16384, 100000}));
}

TEST(Options, BadInput) {
  expect_usage({"--collective", "allsum"}, "unknown collective 'allsum'");
  expect_usage({"-d", "int7"}, "unknown data type 'int7'");
  expect_usage({"-o", "xor"}, "unknown reduction");
  expect_usage({"-b", "12Q"}, "-b: invalid size");
  expect_usage({"-b", "-5"}, "-b");
  expect_usage({"-b", "0"}, "between 1 and 64G");
  expect_usage({"-b", "1T"}, "between 1 and 64G");
  expect_usage({"-b", "64M", "-e", "1M"}, "-e must not be below -b");
  expect_usage({"-b", "1M", "-e", "4M", "-f", "1"}, "step factor");
  // Bounded sweeps: a factor barely above 1 is refused, not expanded into millions of sizes.
  expect_usage({"-b", "1K", "-e", "1G", "-f", "1.0000001"}, "gives 138629443 sizes; at most 1000");
  EXPECT_EQ(sizes(parse({"-b", "1", "-e", "512", "-f", "2"})).size(), 10u);
  EXPECT_EQ(sizes(parse({"-b", "1", "-e", "1G", "-f", "1.0211"})).size(), 996u);  // under 1000
  EXPECT_THROW(parse({"-b", "1", "-e", "1G", "-f", "1.0210"}), UsageError);       // 1001
  // An empty size is a mistake, never "the default".
  expect_usage({"-b", ""}, "-b needs a value (got an empty one)");
  expect_usage({"-b", "1M", "-e", ""}, "-e needs a value (got an empty one)");
  expect_usage({"-n", "0"}, "-n");
  expect_usage({"-w", "-1"}, "-w");
  expect_usage({"-c", "2"}, "-c");
  expect_usage({"-g", "-1"}, "-g");
  expect_usage({"--gemm", "4096,4096"}, "M or M,N,K");
  expect_usage({"--gemm", "0"}, "dimension");
  expect_usage({"--gemm", "4k"}, "dimension");
  expect_usage({"--count", "0"}, "--count");
  expect_usage({"--modes", "fast"}, "unknown mode 'fast'");
  expect_usage({"--compute", "tpu"}, "unknown compute kind");
  expect_usage({"--frobnicate"}, "frobnicate");
  expect_usage({"-n"}, "--iters");
  expect_usage({"--compute", "builtin", "--blocks-per-sm", "0"}, "positive integer");
  expect_usage({"--compute", "builtin", "--blocks-per-sm", "1,,2"}, "positive integer");
  expect_usage({"--compute", "builtin", "--pad", "1K,lots"}, "--pad");
  expect_usage({"--nccl-min-ctas", "0"}, "1..64");
  expect_usage({"--nccl-min-ctas", "40", "--nccl-max-ctas", "8"}, "must not exceed");
  expect_usage({"--nccl-cta-policy", "5"}, "unknown CTA policy '5' (known: default or 0");
  expect_usage({"--nccl-cta-policy", "zero,2"}, "'2' is given twice");
  expect_usage({"--nccl-cta-policy", ""}, "--nccl-cta-policy needs a value (got an empty one)");
  expect_usage({"--mem-bytes", "1"}, "--mem-bytes");
  expect_usage({"--nccl-register", "pinned"}, "--nccl-register: unknown registration 'pinned'");
  expect_usage({"--nccl-register"}, "--nccl-register");
}

// --pad, --nccl-register and tune's --registers read their values through the control table's
// codec (bench::flag_value): the flags are today's, and each message is the flag's name and then
// the reason the value's own parser gives, as before.
TEST(Options, PadAndRegistrationFlagsReadThroughTheControlTable) {
  using cco::model::Control;
  using cco::model::Spelling;
  EXPECT_EQ(cco::model::spelling_name(Control::Pad, Spelling::Flag), "--pad");
  EXPECT_EQ(cco::model::spelling_name(Control::Register, Spelling::Flag), "--nccl-register");
  EXPECT_EQ(cco::model::spelling_name(Control::Register, Spelling::TuneList), "--registers");
  auto reason = [](auto f) {
    try {
      f();
    } catch (const cco::model::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto usage = [](std::vector<std::string> a) {
    try {
      parse(a);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string lots = reason([] { cco::model::parse_bytes("lots"); });
  ASSERT_NE(lots, "");
  EXPECT_EQ(usage({"--compute", "builtin", "--pad", "1K,lots"}), "--pad: " + lots);
  EXPECT_EQ(usage({"--compute", "builtin", "--pad", "1K,"}),
            "--pad: " + reason([] { cco::model::parse_bytes(""); }));
  const std::string pinned = reason([] { cco::model::parse_register("pinned"); });
  ASSERT_NE(pinned, "");
  EXPECT_EQ(usage({"--nccl-register", "pinned"}), "--nccl-register: " + pinned);
  try {
    (void)flag_value(Control::Register, Spelling::TuneList, "pinned");
    FAIL() << "pinned is no registration";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--registers: " + pinned);
  }
  EXPECT_EQ(parse({"--compute", "membound", "--pad", "4096,2k"}).pads, (std::vector<int64_t>{4096, 2048}));
  EXPECT_EQ(flag_value(Control::Register, Spelling::TuneList, "Window").nccl_reg,
            cco::model::CommRegister::Window);
}

TEST(Options, RegistrationIsParsedAndLabelled) {
  EXPECT_EQ(parse({}).nccl_register, cco::model::CommRegister::None);
  EXPECT_EQ(parse({"--nccl-register", "window"}).nccl_register, cco::model::CommRegister::Window);
  EXPECT_EQ(parse({"--nccl-register", "BUFFER"}).nccl_register, cco::model::CommRegister::Buffer);
  RowSpec r{Mode::Concurrent};
  EXPECT_TRUE(r.default_variant());
  r.controls.nccl_reg = cco::model::CommRegister::Window;
  EXPECT_FALSE(r.default_variant()) << "a registration is a variant with its own communicator";
  r.controls.nccl_ctas = 48;
  EXPECT_EQ(r.label(), "concurrent ctas=48 reg=window");
  // The row list travels between ranks as JSON; an older 6-field row reads as unregistered.
  const auto back = rows_from_json(rows_to_json({r, RowSpec{Mode::Seq}}));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], r);
  EXPECT_FALSE(back[1].controls.nccl_reg);
  const auto old = rows_from_json(nlohmann::json::parse("[[1,0,-1,-1,32,-1]]"));
  ASSERT_EQ(old.size(), 1u);
  EXPECT_FALSE(old[0].controls.nccl_reg);
  EXPECT_EQ(old[0].controls.nccl_ctas, 32);
}

TEST(Options, ConflictsAreRejectedNotResolved) {
  expect_usage({"--compute", "builtin", "--blocks-per-sm", "2", "--pad", "1K"}, "conflict");
  expect_usage({"--compute", "builtin", "--modes", "concurrent", "--blocks-per-sm", "2"},
               "need a shape mode");
  expect_usage({"--modes", "shape"}, "launches we control");  // cuBLASLt default compute
  expect_usage({"--blocks-per-sm", "2"}, "launches we control");
  expect_usage({"--compute", "builtin", "--gemm-sms", "100"}, "--gemm-sms applies");
  expect_usage({"--json", "a", "--csv", "a"}, "same file");
  expect_usage({"--json", "-", "--csv", "-"}, "standard output");
}

TEST(Expand, DefaultModesForVendorGemmLeaveOutShape) {
  const auto o = parse({});
  std::vector<std::string> notes;
  const auto rows = expand_rows(o, /*shapeable=*/false, 0, &notes);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].mode, Mode::Seq);
  EXPECT_EQ(rows[1].mode, Mode::Concurrent);
  EXPECT_EQ(rows[2].mode, Mode::Priority);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("cco run"), std::string::npos);
}

TEST(Expand, DefaultTargetsAreEveryKBelowTheKernels) {
  const auto o = parse({"--compute", "builtin"});
  const auto rows = expand_rows(o, true, 4);
  // seq, concurrent, priority, shape k=3,2,1, shape+priority k=3,2,1
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[3].mode, Mode::Shape);
  EXPECT_EQ(rows[3].k(), 3);
  EXPECT_EQ(rows[5].k(), 1);
  EXPECT_EQ(rows[6].mode, Mode::ShapePriority);
  EXPECT_EQ(rows[8].k(), 1);
}

TEST(Expand, AlreadyAtOneBlockPerSmNotes) {
  const auto o = parse({"--compute", "builtin", "--modes", "shape"});
  std::vector<std::string> notes;
  EXPECT_TRUE(expand_rows(o, true, 1, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("nothing to shape"), std::string::npos);
}

TEST(Expand, ExplicitTargetsAndPads) {
  auto o = parse({"--compute", "builtin", "--modes", "concurrent,shape", "--blocks-per-sm", "1,2"});
  auto rows = expand_rows(o, true, 4);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].k(), 1);
  EXPECT_EQ(rows[2].k(), 2);
  o = parse({"--compute", "membound", "--modes", "shape+priority", "--pad", "1K,2K,4K"});
  rows = expand_rows(o, true, 8);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].controls.pad, 4096);
  EXPECT_EQ(rows[2].mode, Mode::ShapePriority);
}

TEST(Expand, GreenPartitionAppliesToOverlappedRowsOnly) {
  const auto o = parse({"--compute", "builtin", "--green-sms", "96", "--blocks-per-sm", "2"});
  const auto rows = expand_rows(o, true, 4);
  ASSERT_EQ(rows.size(), 5u);  // seq, concurrent, priority, shape k=2, shape+priority k=2
  EXPECT_FALSE(rows[0].controls.green_sms) << "the sequential baseline keeps the whole device";
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].controls.green_sms, 96);
  EXPECT_EQ(rows[3].label(), "shape k=2 green=96");
  expect_usage({"--green-sms", "-3"}, "--green-sms");
}

TEST(Expand, ShapeModeOnUnshapeableComputeThrows) {
  Options o;
  o.modes = {Mode::Shape};
  o.modes_given = true;
  EXPECT_THROW(expand_rows(o, false, 0), UsageError);
}

TEST(Sizes, GeometricSweepIncludesTheEnds) {
  Options o;
  o.min_bytes = 1 << 20;
  o.max_bytes = 1 << 24;
  o.step_factor = 4;
  EXPECT_EQ(sizes(o), (std::vector<int64_t>{1 << 20, 1 << 22, 1 << 24}));
  o.max_bytes = (1 << 24) + 5;  // the end need not be on the grid
  EXPECT_EQ(sizes(o).back(), 1 << 24);
}

TEST(Options, TracePathAndPerRankNames) {
  EXPECT_EQ(parse({"--trace", "t.json"}).trace_path, "t.json");
  expect_usage({"--trace", "x.json", "--json", "x.json"}, "same file");
  expect_usage({"--trace", "-"}, "needs a file name");
  EXPECT_EQ(rank_path("trace.json", 3), "trace.rank3.json");
  EXPECT_EQ(rank_path("out/t_%r.json", 1), "out/t_1.json");
  EXPECT_EQ(rank_path("dir.v2/trace", 0), "dir.v2/trace.rank0");
  EXPECT_EQ(rank_path("trace", 2), "trace.rank2");
}

TEST(CtaPolicy, ListMakesRowsAndZeroGetsASymmetricWindow) {
  const auto o = parse({"--collective", "allgather", "--nccl-cta-policy", "default,ZERO"});
  EXPECT_EQ(o.nccl_cta_policy, CtaPolicy::Default);
  ASSERT_EQ(o.row_cta_policies, std::vector<CtaPolicy>{CtaPolicy::Zero});
  EXPECT_EQ(o.nccl_register, cco::model::CommRegister::None) << "the run's own policy is default";
  const auto rows = expand_rows(o, /*shapeable=*/false, 0);
  // seq, concurrent, priority on the run's communicator; the overlapped two again under zero.
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].label(), "concurrent reg=window cta=zero");
  EXPECT_EQ(rows[4].label(), "priority reg=window cta=zero");
  EXPECT_FALSE(rows[3].default_variant()) << "a policy is a communicator of its own";
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(rows[i].controls.cta_policy);
  // The rows travel between ranks as JSON; a row of an older 7-field list has no policy.
  const auto back = rows_from_json(rows_to_json(rows));
  ASSERT_EQ(back.size(), rows.size());
  EXPECT_EQ(back[4], rows[4]);
  EXPECT_FALSE(rows_from_json(nlohmann::json::parse("[[1,0,-1,-1,-1,-1,2]]"))[0].controls.cta_policy);
}

TEST(CtaPolicy, RunWideZeroRegistersAWindowUnlessTheUserChose) {
  EXPECT_EQ(parse({"--nccl-cta-policy", "zero"}).nccl_register, cco::model::CommRegister::Window);
  EXPECT_EQ(parse({"--nccl-cta-policy", "2"}).nccl_cta_policy, CtaPolicy::Zero);
  EXPECT_EQ(parse({"--nccl-cta-policy", "efficiency"}).nccl_register, cco::model::CommRegister::None);
  const auto chosen = parse({"--nccl-cta-policy", "default,zero", "--nccl-register", "none"});
  EXPECT_EQ(chosen.nccl_register, cco::model::CommRegister::None);
  const auto rows = expand_rows(chosen, false, 0);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_FALSE(rows[3].controls.nccl_reg) << "the user's registration is kept; the path probe reports where NCCL ran";
  // Already a window for every row: zero rows use the run's own buffers.
  const auto win = parse({"--nccl-cta-policy", "default,zero", "--nccl-register", "window"});
  EXPECT_FALSE(expand_rows(win, false, 0)[3].controls.nccl_reg);
}

TEST(CtaPolicy, AnEmptyValueGivenIsAnError) {
  Options o;
  parse_cta_policies(o, "", false);
  EXPECT_FALSE(o.nccl_cta_policy) << "not given: NCCL's default";
  EXPECT_THROW(parse_cta_policies(o, "", true), UsageError);
}

TEST(Collectives, GatherAndScatterParse) {
  EXPECT_EQ(parse({"--collective", "gather"}).coll, Collective::Gather);
  EXPECT_EQ(parse({"--collective", "scatter_perf"}).coll, Collective::Scatter);
}

// -d all (issue 19, item 6): every type cco's collectives run, in nccl-tests' order of ours
// (float, half, bfloat16); a list runs each once, in the order given.
TEST(Datatypes, AllAndListsAndTheirRefusals) {
  const auto all = parse({"-d", "all"});
  EXPECT_TRUE(all.dtype_all);
  EXPECT_EQ(run_dtypes(all), (std::vector<DType>{DType::F32, DType::F16, DType::BF16}));
  EXPECT_EQ(all.dtype, DType::F32) << "the first, for code that reads one type";
  EXPECT_EQ(dtypes_label(all), "all");
  EXPECT_EQ(options_json(all).at("datatype"), "all");
  const auto two = parse({"-d", "bf16,half"});
  EXPECT_FALSE(two.dtype_all);
  EXPECT_EQ(run_dtypes(two), (std::vector<DType>{DType::BF16, DType::F16}));
  EXPECT_EQ(dtypes_label(two), "bfloat16,half");
  const auto one = parse({"-d", "half"});
  EXPECT_TRUE(one.dtypes.empty()) << "one type: the run is as it always was";
  EXPECT_EQ(run_dtypes(one), std::vector<DType>{DType::F16});
  EXPECT_EQ(options_json(one).at("datatype"), "half");
  EXPECT_EQ(options_json(parse({})).at("datatype"), "float");
  expect_usage({"-d", "all,half"}, "-d: 'all' stands alone");
  expect_usage({"-d", "half,all"}, "-d: 'all' stands alone");
  expect_usage({"-d", "half,fp16"}, "-d: half is given twice");
  expect_usage({"-d", "float,"}, "-d: empty type");
  expect_usage({"-d", "int8"}, "-d:");
}

// -G N (nccl-tests' --cudagraph): runs timed as N replays of a captured graph; absent, the
// recorded options are as they were; what cannot be captured or checked replayed is refused.
TEST(CudaGraph, ParsedAndRefusedWhereItCannotApply) {
  EXPECT_EQ(parse({}).cudagraph, 0);
  EXPECT_FALSE(options_json(parse({})).contains("cudagraph"));
  EXPECT_FALSE(options_json(parse({"-G", "0"})).contains("cudagraph"));
  const auto on = parse({"-G", "20"});
  EXPECT_EQ(on.cudagraph, 20);
  EXPECT_EQ(options_json(on).at("cudagraph"), 20);
  EXPECT_EQ(parse({"--cudagraph", "3"}).cudagraph, 3);
  EXPECT_EQ(parse({"-G", std::to_string(kMaxGraphReplays)}).cudagraph, kMaxGraphReplays);
  expect_usage({"-G", "-1"}, "-G: expected a number of graph replays from 0 to 10000, got -1");
  expect_usage({"-G", std::to_string(kMaxGraphReplays + 1)}, "-G: expected a number of graph replays");
  expect_usage({"-G", "x"}, "--cudagraph: expected a whole number, got 'x'");
  expect_usage({"-G"}, "needs a value");
  expect_usage({"-G", "5", "--in-place", "1"}, "-G with --in-place 1: a replayed in-place");
  expect_usage({"-G", "5", "--green-sms", "66"}, "-G with --green-sms");
  expect_usage({"-G", "5", "--nccl-cta-policy", "zero"}, "-G with --nccl-cta-policy zero");
  expect_usage({"-G", "5", "--nccl-cta-policy", "default,zero"}, "-G with --nccl-cta-policy zero");
  EXPECT_EQ(parse({"-G", "5", "--nccl-cta-policy", "default,efficiency"}).cudagraph, 5);
  // -G 0 is the stream timing, so it goes with both
  EXPECT_TRUE(parse({"-G", "0", "--in-place", "1"}).in_place);
}

// --in-place 0|1: the collective alone also in place where NCCL allows; the option's absence
// leaves the recorded options as they were (the ranks' job key, tune's cache key).
TEST(InPlace, ParsedAndWhereItApplies) {
  EXPECT_FALSE(parse({}).in_place);
  EXPECT_FALSE(options_json(parse({})).contains("in_place"));
  EXPECT_FALSE(parse({"--in-place", "0"}).in_place);
  const auto on = parse({"--in-place", "1", "-d", "all"});
  EXPECT_TRUE(on.in_place);
  EXPECT_EQ(options_json(on).at("in_place"), true);
  expect_usage({"--in-place", "2"}, "--in-place: expected 0 or 1");
  expect_usage({"--in-place"}, "--in-place needs a value");
  for (auto c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                 Collective::Broadcast, Collective::Reduce})
    EXPECT_EQ(in_place_refusal(c), "") << cco::model::to_string(c);
  for (auto c :
       {Collective::AllToAll, Collective::SendRecv, Collective::Gather, Collective::Scatter}) {
    const auto why = in_place_refusal(c);
    EXPECT_NE(why.find(cco::model::to_string(c)), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
  }
  // Accepted with such a collective: the run says it skips (runner), it is not an input error.
  EXPECT_TRUE(parse({"--in-place", "1", "--collective", "alltoall"}).in_place);
}
