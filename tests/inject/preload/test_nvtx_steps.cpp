// Steps from NVTX ranges (src/inject/preload/nvtx_steps.hpp) against a fake NVTX copy: the callback
// tables it hands out are filled, every start of a matching range (push or start; ASCII, wide or
// an event attribute; core or domain) is one step, other ranges are none, nesting levels and
// range ids are what NVTX promises, and a copy without tables changes nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "preload/nvtx_steps.hpp"

namespace {

using cco::preload::install_nvtx_steps;
using cco::preload::NvtxStepNames;

// A fake NVTX copy: one slot per callback id of the core and core2 modules.
struct FakeNvtx {
  NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core_ptrs[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* core2_ptrs[NVTX_CBID_CORE2_SIZE] = {};
  bool give_tables = true;
  uint32_t version_set = 0;
  FakeNvtx() {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_ptrs[i] = &core[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_ptrs[i] = &core2[i];
  }
  template <class Fn>
  Fn core_fn(int id) const {
    return reinterpret_cast<Fn>(core[id]);
  }
  template <class Fn>
  Fn core2_fn(int id) const {
    return reinterpret_cast<Fn>(core2[id]);
  }
} * g_nvtx = nullptr;

int NVTX_API get_module(NvtxCallbackModule m, NvtxFunctionTable* out, unsigned int* size) {
  if (!g_nvtx->give_tables) return 0;
  if (m == NVTX_CB_MODULE_CORE) {
    *out = g_nvtx->core_ptrs;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (m == NVTX_CB_MODULE_CORE2) {
    *out = g_nvtx->core2_ptrs;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}
void NVTX_API set_version(uint32_t v) {
  g_nvtx->version_set = v;
}
const NvtxExportTableCallbacks kCallbacks = {sizeof(NvtxExportTableCallbacks), get_module};
const NvtxExportTableVersionInfo kVersion = {sizeof(NvtxExportTableVersionInfo), NVTX_VERSION, 0,
                                             set_version};
const void* NVTX_API get_table(uint32_t id) {
  if (id == NVTX_ETID_CALLBACKS) return &kCallbacks;
  if (id == NVTX_ETID_VERSIONINFO) return &kVersion;
  return nullptr;
}

int g_steps = 0;
void on_step() {
  ++g_steps;
}

nvtxEventAttributes_t attr_ascii(const char* m) {
  nvtxEventAttributes_t a;
  std::memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = m;
  return a;
}

TEST(NvtxStepNames, GlobsAsciiWideAndAttributes) {
  const NvtxStepNames n("train_step*");
  EXPECT_TRUE(n.ascii("train_step"));
  EXPECT_TRUE(n.ascii("train_step 12"));
  EXPECT_FALSE(n.ascii("eval_step"));
  EXPECT_FALSE(n.ascii(nullptr));
  EXPECT_TRUE(n.wide(L"train_step 3"));
  EXPECT_FALSE(n.wide(L"train_step \u00e9"));  // not ASCII: never matches
  EXPECT_FALSE(n.wide(nullptr));
  auto a = attr_ascii("train_step");
  EXPECT_TRUE(n.event(&a));
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = L"train_step";
  EXPECT_TRUE(n.event(&a));
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;  // not resolved
  EXPECT_FALSE(n.event(&a));
  a = attr_ascii("train_step");
  a.size = 8;  // too small to hold a message
  EXPECT_FALSE(n.event(&a));
  EXPECT_FALSE(n.event(nullptr));
}

TEST(NvtxSteps, MatchingRangeStartsAreSteps) {
  FakeNvtx fake;
  g_nvtx = &fake;
  static const NvtxStepNames names("step");
  ASSERT_TRUE(install_nvtx_steps(get_table, &names, on_step));
  EXPECT_EQ(fake.version_set, static_cast<uint32_t>(NVTX_VERSION));
  for (int id : {NVTX_CBID_CORE_RangePushA, NVTX_CBID_CORE_RangePushW, NVTX_CBID_CORE_RangePushEx,
                 NVTX_CBID_CORE_RangePop, NVTX_CBID_CORE_RangeStartA, NVTX_CBID_CORE_RangeStartW,
                 NVTX_CBID_CORE_RangeStartEx, NVTX_CBID_CORE_RangeEnd})
    EXPECT_NE(fake.core[id], nullptr) << id;
  EXPECT_EQ(fake.core[NVTX_CBID_CORE_MarkA], nullptr) << "marks are not taken over";
  EXPECT_EQ(fake.core[NVTX_CBID_CORE_NameOsThreadA], nullptr);
  EXPECT_NE(fake.core2[NVTX_CBID_CORE2_DomainRangePushEx], nullptr);
  EXPECT_EQ(fake.core2[NVTX_CBID_CORE2_DomainRegisterStringA], nullptr);

  using PushA = int(NVTX_API*)(const char*);
  using PushW = int(NVTX_API*)(const wchar_t*);
  using PushEx = int(NVTX_API*)(const nvtxEventAttributes_t*);
  using Pop = int(NVTX_API*)();
  using StartA = nvtxRangeId_t(NVTX_API*)(const char*);
  using End = void(NVTX_API*)(nvtxRangeId_t);
  using DPushEx = int(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  using DPop = int(NVTX_API*)(nvtxDomainHandle_t);
  using DStartEx = nvtxRangeId_t(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  const auto push_a = fake.core_fn<PushA>(NVTX_CBID_CORE_RangePushA);
  const auto push_w = fake.core_fn<PushW>(NVTX_CBID_CORE_RangePushW);
  const auto push_ex = fake.core_fn<PushEx>(NVTX_CBID_CORE_RangePushEx);
  const auto pop = fake.core_fn<Pop>(NVTX_CBID_CORE_RangePop);
  const auto start_a = fake.core_fn<StartA>(NVTX_CBID_CORE_RangeStartA);
  const auto end = fake.core_fn<End>(NVTX_CBID_CORE_RangeEnd);
  const auto dpush = fake.core2_fn<DPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  const auto dpop = fake.core2_fn<DPop>(NVTX_CBID_CORE2_DomainRangePop);
  const auto dstart = fake.core2_fn<DStartEx>(NVTX_CBID_CORE2_DomainRangeStartEx);

  g_steps = 0;
  // A training loop: "step" around "forward" and "backward"; only "step" starts a step.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(push_a("step"), 0);
    EXPECT_EQ(push_a("forward"), 1);
    EXPECT_EQ(pop(), 1);
    EXPECT_EQ(push_w(L"backward"), 1);
    EXPECT_EQ(pop(), 1);
    EXPECT_EQ(pop(), 0);
  }
  EXPECT_EQ(g_steps, 3);
  EXPECT_EQ(pop(), -1) << "a pop without a push";
  const auto a = attr_ascii("step");
  EXPECT_EQ(push_ex(&a), 0);
  EXPECT_EQ(pop(), 0);
  EXPECT_EQ(push_w(L"step"), 0);
  EXPECT_EQ(pop(), 0);
  const nvtxRangeId_t r1 = start_a("step");
  const nvtxRangeId_t r2 = start_a("other");
  EXPECT_NE(r1, 0u);
  EXPECT_NE(r1, r2);
  end(r1);
  end(r2);
  EXPECT_EQ(g_steps, 6);
  // A domain's ranges (NCCL's, a framework's).
  const auto b = attr_ascii("step");
  const auto c = attr_ascii("ncclAllReduce");
  EXPECT_EQ(dpush(nullptr, &c), 0);
  EXPECT_EQ(dpop(nullptr), 0);
  EXPECT_EQ(g_steps, 6);
  EXPECT_EQ(dpush(nullptr, &b), 0);
  EXPECT_EQ(dpop(nullptr), 0);
  EXPECT_NE(dstart(nullptr, &b), 0u);
  EXPECT_EQ(g_steps, 8);
  EXPECT_EQ(cco::preload::nvtx_steps_seen(), 8u);
  g_nvtx = nullptr;
}

TEST(NvtxSteps, ACopyWithoutTablesIsLeftAlone) {
  FakeNvtx fake;
  fake.give_tables = false;
  g_nvtx = &fake;
  static const NvtxStepNames names("step");
  EXPECT_FALSE(install_nvtx_steps(get_table, &names, on_step));
  for (auto f : fake.core) EXPECT_EQ(f, nullptr);
  EXPECT_FALSE(install_nvtx_steps(nullptr, &names, on_step));
  EXPECT_FALSE(install_nvtx_steps([](uint32_t) -> const void* { return nullptr; }, &names, on_step));
  g_nvtx = nullptr;
}

}  // namespace
