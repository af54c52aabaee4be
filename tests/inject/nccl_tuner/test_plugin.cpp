// libcco_tuner.so as NCCL uses it: dlopen'ed (RTLD_NOW | RTLD_LOCAL, as NCCL 2.28 does), its
// `ncclTunerPlugin_v5` / `_v4` objects looked up with dlsym and driven through the C ABI with a
// fake NCCL logger and a fake cost table: init with a plan from CCO_POLICY / CCO_PLAN,
// getCollInfo, finalize; a bad plan (one warning, NCCL's choice kept); statistics; no logger
// (warnings on stderr, once). No GPU, no NCCL: the plugin needs neither.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nccl_tuner/nccl_tuner_abi.h"

// The preload library's C API function the plugin asks in a rotation (src/inject/preload/cco_api.h),
// played by this test program: exported from the executable (ENABLE_EXPORTS), so the plugin's
// dlsym(RTLD_DEFAULT, ...) finds it as it finds the preload library's.
int g_config_index = 0;
extern "C" __attribute__((visibility("default"))) int cco_config_index() {
  return g_config_index;
}

namespace {

struct Logged {
  int level;
  std::string text;
};
std::vector<Logged> g_logged;
void fake_logger(ccoNcclDebugLogLevel level, unsigned long, const char*, int, const char* fmt,
                 ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_logged.push_back({level, buf});
}
int warnings_logged() {
  int n = 0;
  for (const auto& l : g_logged) n += l.level == ccoNcclLogWarn;
  return n;
}

// Standard error of the calls in between, from a temporary file.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = ::dup(2);
    path_ = ::testing::TempDir() + "tuner_stderr_" + std::to_string(::getpid());
    FILE* f = std::fopen(path_.c_str(), "w");
    ::dup2(::fileno(f), 2);
    std::fclose(f);
  }
  std::string finish() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    std::remove(path_.c_str());
    return s.str();
  }

 private:
  int saved_ = -1;
  std::string path_;
};

// NCCL's cost table for one collective: float[7][3], handed over as float**.
struct CostTable {
  float t[CCO_NCCL_NUM_ALGORITHMS_V5][CCO_NCCL_NUM_PROTOCOLS_V5];
  CostTable() {
    for (int a = 0; a < CCO_NCCL_NUM_ALGORITHMS_V5; ++a)
      for (int p = 0; p < CCO_NCCL_NUM_PROTOCOLS_V5; ++p)
        t[a][p] = (a + p) % 4 == 0 ? -1.0f : 10.0f * static_cast<float>(a) + static_cast<float>(p);
  }
  float** ptr() { return reinterpret_cast<float**>(t); }
  bool operator==(const CostTable& o) const { return std::memcmp(t, o.t, sizeof t) == 0; }
};

class TunerPlugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* path = std::getenv("CCO_TUNER_LIB");
    ASSERT_NE(path, nullptr) << "CCO_TUNER_LIB must name libcco_tuner.so";
    handle_ = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    v5_ = static_cast<ccoNcclTuner_v5_t*>(::dlsym(handle_, "ncclTunerPlugin_v5"));
    v4_ = static_cast<ccoNcclTuner_v4_t*>(::dlsym(handle_, "ncclTunerPlugin_v4"));
  }
  void SetUp() override {
    ASSERT_NE(handle_, nullptr);
    ASSERT_NE(v5_, nullptr);
    for (const char* v : {"CCO_POLICY", "CCO_PLAN", "CCO_STATS", "CCO_DISABLE",
                          "CCO_PRIORITY_METHOD", "CCO_COMPARE"})
      ::unsetenv(v);
    g_logged.clear();
  }
  static std::string write_file(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + name;
    std::ofstream(path) << text;
    return path;
  }
  // One communicator's life through v5: init, the calls, finalize. Returns the channels NCCL
  // would get for each (size, collective) and checks that nothing else changed.
  static std::vector<int> run_v5(const std::vector<std::pair<int, size_t>>& calls,
                                 ccoNcclDebugLogger_t logger = fake_logger) {
    void* ctx = reinterpret_cast<void*>(0x1);  // must be overwritten
    ccoNcclNvlDomainInfo_v5_t nvl{1, 2, 2};
    ccoNcclTunerConstants_v5_t constants;
    std::memset(&constants, 0x5a, sizeof constants);
    ccoNcclTunerConstants_v5_t before = constants;
    EXPECT_EQ(v5_->init(&ctx, 0x42, 2, 1, logger, &nvl, &constants), CCO_NCCL_SUCCESS);
    EXPECT_EQ(std::memcmp(&before, &constants, sizeof constants), 0) << "constants changed";
    std::vector<int> out;
    for (const auto& [coll, bytes] : calls) {
      CostTable table;
      const CostTable orig;
      int n = 0;  // NCCL 2.28 always passes 0
      EXPECT_EQ(v5_->getCollInfo(ctx, static_cast<ccoNcclFunc_t>(coll), bytes, 1, table.ptr(),
                                 CCO_NCCL_NUM_ALGORITHMS_V5, CCO_NCCL_NUM_PROTOCOLS_V5, 0, &n),
                CCO_NCCL_SUCCESS);
      EXPECT_TRUE(table == orig) << "cost table changed";
      out.push_back(n);
    }
    EXPECT_EQ(v5_->finalize(ctx), CCO_NCCL_SUCCESS);
    return out;
  }

  static void* handle_;
  static ccoNcclTuner_v5_t* v5_;
  static ccoNcclTuner_v4_t* v4_;
};
void* TunerPlugin::handle_ = nullptr;
ccoNcclTuner_v5_t* TunerPlugin::v5_ = nullptr;
ccoNcclTuner_v4_t* TunerPlugin::v4_ = nullptr;

TEST_F(TunerPlugin, ExportsBothVersions) {
  ASSERT_NE(v4_, nullptr);
  EXPECT_STREQ(v5_->name, "ccoverlap");
  EXPECT_STREQ(v4_->name, "ccoverlap");
  EXPECT_NE(v5_->init, nullptr);
  EXPECT_NE(v5_->getCollInfo, nullptr);
  EXPECT_NE(v5_->finalize, nullptr);
  // Nothing of ccoverlap's own is visible.
  EXPECT_EQ(::dlsym(handle_, "ncclTunerPlugin_v3"), nullptr);
  EXPECT_EQ(
      ::dlsym(handle_,
              "_ZN3cco4plan11channel_capERKNS0_4NcclESt17basic_string_viewIcSt11char_traitsIcEEl"),
      nullptr);
}

TEST_F(TunerPlugin, PolicyCapsThroughTheAbi) {
  ::setenv("CCO_POLICY", "channels:4", 1);
  const auto n = run_v5({{ccoNcclFuncAllReduce, 1 << 20},
                         {ccoNcclFuncAllGather, 1 << 30},
                         {ccoNcclFuncBroadcast, 8},
                         {ccoNcclFuncSendRecv, 1 << 20},
                         {ccoNcclFuncAlltoAll, 1 << 20}});
  EXPECT_EQ(n, (std::vector<int>{4, 4, 4, 0, 0}));
  EXPECT_EQ(warnings_logged(), 0);
  // The INFO line NCCL prints with NCCL_DEBUG=INFO.
  ASSERT_EQ(g_logged.size(), 1u);
  EXPECT_EQ(
      g_logged[0].text.rfind("cco-tuner: policy channels:4: 1 channel rule(s) for comm 42", 0), 0u)
      << g_logged[0].text;
}

// cco run --compare off,channels:4: the cap follows the library's configuration in force.
TEST_F(TunerPlugin, RotationFollowsTheLibrarysConfiguration) {
  ::setenv("CCO_COMPARE", "off,channels:4", 1);
  g_config_index = 0;
  EXPECT_EQ(run_v5({{ccoNcclFuncAllReduce, 1 << 20}}), (std::vector<int>{0}));
  g_config_index = 1;
  EXPECT_EQ(run_v5({{ccoNcclFuncAllReduce, 1 << 20}, {ccoNcclFuncAllGather, 1 << 10}}),
            (std::vector<int>{4, 4}));
  EXPECT_EQ(warnings_logged(), 0);
  g_config_index = 0;
}

TEST_F(TunerPlugin, PlanFileCapsThroughTheAbi) {
  const auto path =
      write_file("plugin_plan.json", R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"channels": [{"collective": "allreduce", "max_bytes": "64M", "max_channels": 16},
                          {"collective": "reducescatter", "max_channels": 2}]}})");
  ::setenv("CCO_PLAN", path.c_str(), 1);
  const auto n = run_v5({{ccoNcclFuncAllReduce, 64u << 20},
                         {ccoNcclFuncAllReduce, (64u << 20) + 1},
                         {ccoNcclFuncReduceScatter, 1},
                         {ccoNcclFuncAllGather, 1 << 20}});
  EXPECT_EQ(n, (std::vector<int>{16, 0, 2, 0}));
  EXPECT_EQ(warnings_logged(), 0);
}

TEST_F(TunerPlugin, NoPlanChangesNothing) {
  const auto n = run_v5({{ccoNcclFuncAllReduce, 1 << 20}, {ccoNcclFuncReduce, 1 << 20}});
  EXPECT_EQ(n, (std::vector<int>{0, 0}));
  EXPECT_TRUE(g_logged.empty());
}

TEST_F(TunerPlugin, BadPlanOneWarningNcclsChoiceKept) {
  const auto path =
      write_file("plugin_bad.json", R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0",
    "nccl": {"channels": [{"collective": "allreduce", "max_channels": 65}]}})");
  ::setenv("CCO_PLAN", path.c_str(), 1);
  for (int comm = 0; comm < 4; ++comm) {
    const auto n = run_v5({{ccoNcclFuncAllReduce, 1 << 20}, {ccoNcclFuncAllGather, 1 << 10}});
    EXPECT_EQ(n, (std::vector<int>{0, 0}));
  }
  ASSERT_EQ(warnings_logged(), 1);
  EXPECT_EQ(g_logged[0].text.rfind("cco-tuner: warning: CCO_PLAN: plan " + path +
                                       ": nccl.channels[0].max_channels: must be in 1..64",
                                   0),
            0u)
      << g_logged[0].text;
  // A missing file: another problem, another (single) warning.
  ::setenv("CCO_PLAN", "/nonexistent/plan.json", 1);
  run_v5({{ccoNcclFuncAllReduce, 1}});
  run_v5({{ccoNcclFuncAllReduce, 1}});
  EXPECT_EQ(warnings_logged(), 2);
}

TEST_F(TunerPlugin, WithoutLoggerWarningsGoToStderrOnce) {
  ::setenv("CCO_POLICY", "channels:fast", 1);
  StderrCapture cap;
  const auto a = run_v5({{ccoNcclFuncAllReduce, 1 << 20}}, nullptr);
  const auto b = run_v5({{ccoNcclFuncAllReduce, 1 << 20}}, nullptr);
  const std::string err = cap.finish();
  EXPECT_EQ(a, std::vector<int>{0});
  EXPECT_EQ(b, std::vector<int>{0});
  EXPECT_EQ(err.rfind("cco-tuner: warning: CCO_POLICY: ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(TunerPlugin, StatisticsAtFinalize) {
  ::setenv("CCO_POLICY", "channels:2", 1);
  ::setenv("CCO_STATS", "1", 1);
  StderrCapture cap;
  run_v5({{ccoNcclFuncAllReduce, 1}, {ccoNcclFuncAllReduce, 2}, {ccoNcclFuncSend, 3}});
  const std::string err = cap.finish();
  const std::string want = "cco-tuner: stats pid=" + std::to_string(::getpid()) +
                           " comm=42 calls=3 capped=2 allreduce=2/2 other=1/0 policy=channels:2\n";
  EXPECT_EQ(err, want);
}

TEST_F(TunerPlugin, V4Abi) {
  ASSERT_NE(v4_, nullptr);
  ::setenv("CCO_POLICY", "channels:3", 1);
  void* ctx = nullptr;
  ASSERT_EQ(v4_->init(8, 1, fake_logger, &ctx), CCO_NCCL_SUCCESS);
  CostTable table;
  int n = 0;
  EXPECT_EQ(v4_->getCollInfo(ctx, ccoNcclFuncReduceScatter, 1 << 20, 1, table.ptr(),
                             CCO_NCCL_NUM_ALGORITHMS_V5, CCO_NCCL_NUM_PROTOCOLS_V5, 1, &n),
            CCO_NCCL_SUCCESS);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(v4_->destroy(ctx), CCO_NCCL_SUCCESS);
}

TEST_F(TunerPlugin, NullArgumentsAnswerSuccess) {
  ::setenv("CCO_POLICY", "channels:3", 1);
  EXPECT_EQ(v5_->init(nullptr, 1, 2, 1, fake_logger, nullptr, nullptr), CCO_NCCL_SUCCESS);
  EXPECT_EQ(v5_->getCollInfo(nullptr, ccoNcclFuncAllReduce, 1, 1, nullptr, 0, 0, 0, nullptr),
            CCO_NCCL_SUCCESS);
  int n = 0;
  EXPECT_EQ(v5_->getCollInfo(nullptr, ccoNcclFuncAllReduce, 1, 1, nullptr, 0, 0, 0, &n),
            CCO_NCCL_SUCCESS);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(v5_->finalize(nullptr), CCO_NCCL_SUCCESS);
  void* ctx = nullptr;
  ASSERT_EQ(v5_->init(&ctx, 1, 2, 1, nullptr, nullptr, nullptr), CCO_NCCL_SUCCESS);
  EXPECT_EQ(v5_->getCollInfo(ctx, ccoNcclFuncAllReduce, 1, 1, nullptr, 0, 0, 0, nullptr),
            CCO_NCCL_SUCCESS);
  EXPECT_EQ(v5_->finalize(ctx), CCO_NCCL_SUCCESS);
}

TEST_F(TunerPlugin, Disabled) {
  ::setenv("CCO_POLICY", "channels:3", 1);
  ::setenv("CCO_DISABLE", "1", 1);
  EXPECT_EQ(run_v5({{ccoNcclFuncAllReduce, 1}}), std::vector<int>{0});
  EXPECT_TRUE(g_logged.empty());
}

}  // namespace
