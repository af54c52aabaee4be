// The compute SM budget: the pure decision (exhaustively), and the cuBLAS / cuBLASLt wrappers
// against a fake vendor table: the program's own target restored and reported, the descriptor's
// attribute restored after each call, carveout, out-of-range targets, the window, a second copy.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "preload/blas.hpp"
#include "preload/blas_call.hpp"
#include "common/log.hpp"
#include "preload/order_window.hpp"

namespace {

using namespace cco::preload;
namespace plan = cco::plan;

plan::Gemm G(int target, plan::When when = plan::When::Always) {
  plan::Gemm g;
  g.sm_target = target;
  g.when = when;
  return g;
}

// ---- the decision ---------------------------------------------------------------------------

TEST(BlasDecision, Table) {
  struct Row {
    int target;
    plan::When when;
    int sms;
    bool open;
    int program;
    int want;
    GemmWhy why;
  } rows[] = {
      {0, plan::When::Always, 132, true, 0, 0, GemmWhy::Off},
      {0, plan::When::Always, 132, true, 40, 40, GemmWhy::Off},
      {100, plan::When::Always, 132, false, 0, 100, GemmWhy::Applied},
      {100, plan::When::Overlap, 132, false, 0, 0, GemmWhy::Outside},
      {100, plan::When::Overlap, 132, false, 77, 77, GemmWhy::Outside},
      {100, plan::When::Overlap, 132, true, 0, 100, GemmWhy::Applied},
      {-32, plan::When::Always, 132, true, 0, 100, GemmWhy::Applied},  // carveout
      {-32, plan::When::Always, 78, true, 0, 46, GemmWhy::Applied},
      {-132, plan::When::Always, 132, true, 0, 0, GemmWhy::OutOfRange},  // 0 SMs left
      {-200, plan::When::Always, 132, true, 5, 5, GemmWhy::OutOfRange},
      {133, plan::When::Always, 132, true, 0, 0, GemmWhy::OutOfRange},
      {132, plan::When::Always, 132, true, 0, 132, GemmWhy::Applied},
      {1, plan::When::Always, 132, true, 0, 1, GemmWhy::Applied},
      {100, plan::When::Always, 132, true, 64, 64, GemmWhy::ProgramStricter},
      {100, plan::When::Always, 132, true, 120, 100, GemmWhy::Applied},
      {100, plan::When::Always, 132, true, 100, 100, GemmWhy::Applied},
      {100, plan::When::Always, 0, true, 7, 7, GemmWhy::NoDevice},
      {100, plan::When::Always, -1, true, 0, 0, GemmWhy::NoDevice},
  };
  for (const auto& r : rows) {
    const GemmDecision d = decide_gemm(G(r.target, r.when), r.sms, r.open, r.program);
    EXPECT_EQ(d.target, r.want) << r.target << " " << r.sms << " open=" << r.open << " prog=" << r.program;
    EXPECT_EQ(d.why, r.why) << r.target << " " << r.sms << " " << to_string(d.why);
  }
}

// Every combination: properties that must hold whatever the inputs.
TEST(BlasDecision, Exhaustive) {
  int applied = 0, kept = 0;
  for (int target = -140; target <= 140; ++target)
    for (int sms : {0, 1, 2, 78, 132, 140})
      for (plan::When when : {plan::When::Always, plan::When::Overlap})
        for (bool open : {false, true})
          for (int program : {0, 1, 50, 100, 132, 500}) {
            const plan::Gemm g = G(target, when);
            const GemmDecision d = decide_gemm(g, sms, open, program);
            // Deterministic.
            const GemmDecision again = decide_gemm(g, sms, open, program);
            ASSERT_EQ(d.target, again.target);
            ASSERT_EQ(d.why, again.why);
            if (d.why != GemmWhy::Applied) {
              // Nothing changes unless the plan's target applies.
              ASSERT_EQ(d.target, program) << target << " " << sms << " " << to_string(d.why);
              ++kept;
              continue;
            }
            ++applied;
            ASSERT_NE(target, 0);
            ASSERT_TRUE(when == plan::When::Always || open);
            ASSERT_GE(d.target, 1);
            ASSERT_LE(d.target, sms);
            ASSERT_EQ(d.target, target > 0 ? target : sms + target);
            ASSERT_TRUE(program == 0 || program >= d.target);
          }
  EXPECT_GT(applied, 1000);
  EXPECT_GT(kept, 1000);
}

// ---- a fake cuBLAS, cuBLASLt and driver -----------------------------------------------------

struct Fake {
  std::map<cublasHandle_t, int> handle_target;           // the handle's SM-count target
  std::map<cublasLtMatmulDesc_t, int32_t> desc_target;  // the descriptor's attribute
  int sets = 0, lt_sets = 0;
  cublasStatus_t set_result = CUBLAS_STATUS_SUCCESS;
  int device = 0;
  std::map<int, int> sms = {{0, 132}, {1, 78}};
} * g_fake = nullptr;

cublasStatus_t fake_set(cublasHandle_t h, int v) {
  if (v < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (g_fake->set_result != CUBLAS_STATUS_SUCCESS) return g_fake->set_result;
  ++g_fake->sets;
  g_fake->handle_target[h] = v;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_get(cublasHandle_t h, int* v) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *v = g_fake->handle_target[h];
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_lt_get(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, void* buf,
                           size_t size, size_t* written) {
  if (a != CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET || size != sizeof(int32_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  *static_cast<int32_t*>(buf) = g_fake->desc_target[d];
  *written = sizeof(int32_t);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_lt_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                           const void* buf, size_t size) {
  if (a != CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET || size != sizeof(int32_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  ++g_fake->lt_sets;
  g_fake->desc_target[d] = *static_cast<const int32_t*>(buf);
  return CUBLAS_STATUS_SUCCESS;
}
CUresult fake_ctx_device(CUdevice* d) {
  *d = g_fake->device;
  return CUDA_SUCCESS;
}
CUresult fake_attr(int* v, CUdevice_attribute a, CUdevice d) {
  if (a != CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT || !g_fake->sms.count(d))
    return CUDA_ERROR_INVALID_VALUE;
  *v = g_fake->sms[d];
  return CUDA_SUCCESS;
}

BlasApi fake_api() {
  BlasApi a;
  a.setSmCountTarget = fake_set;
  a.getSmCountTarget = fake_get;
  a.ltDescGet = fake_lt_get;
  a.ltDescSet = fake_lt_set;
  a.ctxGetDevice = fake_ctx_device;
  a.deviceGetAttribute = fake_attr;
  return a;
}

std::vector<std::string> g_lines;
void keep(const std::string& l) {
  g_lines.push_back(l);
}

cublasHandle_t Hd(uintptr_t v) {
  return reinterpret_cast<cublasHandle_t>(v);
}
cublasLtMatmulDesc_t Dd(uintptr_t v) {
  return reinterpret_cast<cublasLtMatmulDesc_t>(v);
}

class BlasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = &fake;
    g_lines.clear();
    reset_warnings();
    set_log_sink(keep);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    g_fake = nullptr;
  }
  // A GEMM on h as the wrappers run it: returns the target the GEMM ran with.
  int gemm(Blas& b, cublasHandle_t h) {
    b.before_gemm(h);
    return fake.handle_target[h];
  }
  // A cuBLASLt matmul on d: the attribute seen during the call.
  int32_t matmul(Blas& b, cublasLtMatmulDesc_t d) {
    int32_t during = -1;
    const cublasStatus_t r = b.lt_call(d, [&] {
      during = fake.desc_target[d];
      return CUBLAS_STATUS_EXECUTION_FAILED;  // returned unchanged
    });
    EXPECT_EQ(r, CUBLAS_STATUS_EXECUTION_FAILED);
    return during;
  }
  Fake fake;
  Stats stats;
};

TEST_F(BlasTest, NoGemmSectionChangesNothing) {
  Blas b(fake_api(), plan::Gemm{}, nullptr, stats);
  EXPECT_FALSE(b.active());
  EXPECT_EQ(gemm(b, Hd(1)), 0);
  EXPECT_EQ(matmul(b, Dd(1)), 0);
  EXPECT_EQ(fake.sets, 0);
  EXPECT_EQ(fake.lt_sets, 0);
  EXPECT_EQ(b.handles(), 0u);
  EXPECT_EQ(stats.gemm_sm_targeted.load(), 0u);
}

TEST_F(BlasTest, AlwaysSetsOnceAndKeeps) {
  Blas b(fake_api(), G(100), nullptr, stats);
  EXPECT_EQ(gemm(b, Hd(1)), 100);
  EXPECT_EQ(gemm(b, Hd(1)), 100);
  EXPECT_EQ(fake.sets, 1) << "set only when it differs from what the handle has";
  EXPECT_EQ(gemm(b, Hd(2)), 100);
  EXPECT_EQ(fake.sets, 2);
  EXPECT_EQ(stats.gemm_calls.load(), 3u);
  EXPECT_EQ(stats.gemm_sm_targeted.load(), 3u);
  // The program asks: it sees its own value (0), not the library's.
  int v = -1;
  EXPECT_EQ(b.program_get(Hd(1), &v, fake_get), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(v, 0);
}

TEST_F(BlasTest, CarveoutPerDevice) {
  Blas b(fake_api(), G(-32), nullptr, stats);
  EXPECT_EQ(gemm(b, Hd(1)), 100);
  fake.device = 1;
  EXPECT_EQ(gemm(b, Hd(2)), 46);
  EXPECT_EQ(matmul(b, Dd(5)), 46);
  EXPECT_EQ(fake.desc_target[Dd(5)], 0);
}

TEST_F(BlasTest, OutOfRangeWarnsOnceAndIsNotApplied) {
  Blas b(fake_api(), G(100), nullptr, stats);
  fake.device = 1;  // 78 SMs
  EXPECT_EQ(gemm(b, Hd(1)), 0);
  EXPECT_EQ(gemm(b, Hd(1)), 0);
  EXPECT_EQ(matmul(b, Dd(1)), 0);
  EXPECT_EQ(fake.sets, 0);
  EXPECT_EQ(fake.lt_sets, 0);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("warning: gemm.sm_target 100 is out of range for a 78-SM device"),
            std::string::npos)
      << g_lines[0];
  fake.device = 0;  // 132 SMs: applies there
  EXPECT_EQ(gemm(b, Hd(1)), 100);
  // A carveout leaving nothing.
  Blas c(fake_api(), G(-132), nullptr, stats);
  EXPECT_EQ(gemm(c, Hd(9)), 0);
  EXPECT_EQ(g_lines.size(), 2u);
}

TEST_F(BlasTest, UnknownDeviceLeavesItAlone) {
  fake.device = 7;  // no SM count
  Blas b(fake_api(), G(100), nullptr, stats);
  EXPECT_EQ(gemm(b, Hd(1)), 0);
  EXPECT_EQ(fake.sets, 0);
  EXPECT_EQ(g_lines.size(), 1u);
}

TEST_F(BlasTest, WindowOpensAndClosesAndTheProgramsValueComesBack) {
  OrderWindow w;
  Blas b(fake_api(), G(100, plan::When::Overlap), &w, stats);
  const cublasHandle_t h = Hd(1);
  // The program set its own target (120) through the interposed call.
  EXPECT_EQ(b.program_set(h, 120, fake_set), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(b, h), 120);  // window closed: the program's own
  const int sets_before = fake.sets;
  w.collective(0, StreamRef{reinterpret_cast<const void*>(0xD0)});
  w.record(reinterpret_cast<const void*>(0xE), StreamRef{reinterpret_cast<const void*>(0xD0)});
  EXPECT_EQ(gemm(b, h), 100);  // inside the window: the plan's
  EXPECT_EQ(gemm(b, h), 100);
  EXPECT_EQ(fake.sets, sets_before + 1);
  int v = 0;
  EXPECT_EQ(b.program_get(h, &v, fake_get), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(v, 120) << "the program is told its own value";
  // Another device's window is not this one.
  fake.device = 1;
  EXPECT_EQ(gemm(b, Hd(2)), 0);
  fake.device = 0;
  // Joined back: the program's value is restored.
  w.wait(StreamRef{reinterpret_cast<const void*>(0xC0)}, reinterpret_cast<const void*>(0xE), false);
  EXPECT_EQ(gemm(b, h), 120);
  EXPECT_EQ(b.program_get(h, &v, fake_get), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(v, 120);
  EXPECT_EQ(stats.gemm_sm_targeted.load(), 2u);
}

TEST_F(BlasTest, ProgramChangesItsTargetWhileTheLibrarysIsSet) {
  Blas b(fake_api(), G(100), nullptr, stats);
  const cublasHandle_t h = Hd(1);
  EXPECT_EQ(gemm(b, h), 100);
  // The program sets a stricter one through the wrapper: kept, and reported.
  EXPECT_EQ(b.program_set(h, 50, fake_set), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(b, h), 50);
  int v = 0;
  b.program_get(h, &v, fake_get);
  EXPECT_EQ(v, 50);
  // A larger one: the plan's applies, the program still reads its own.
  b.program_set(h, 130, fake_set);
  EXPECT_EQ(gemm(b, h), 100);
  b.program_get(h, &v, fake_get);
  EXPECT_EQ(v, 130);
  // A bad value is the program's error, not remembered.
  EXPECT_EQ(b.program_set(h, -4, fake_set), CUBLAS_STATUS_INVALID_VALUE);
  b.program_get(h, &v, fake_get);
  EXPECT_EQ(v, 130);
  // Changed behind the library's back (not through the wrapper): taken as the program's.
  fake.handle_target[h] = 20;
  EXPECT_EQ(gemm(b, h), 20);
  b.program_get(h, &v, fake_get);
  EXPECT_EQ(v, 20);
}

TEST_F(BlasTest, ANewHandleAtAnOldAddress) {
  Blas b(fake_api(), G(100), nullptr, stats);
  EXPECT_EQ(gemm(b, Hd(1)), 100);
  fake.handle_target[Hd(1)] = 0;  // cublasDestroy + cublasCreate at the same address
  int v = -1;
  b.program_get(Hd(1), &v, fake_get);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(gemm(b, Hd(1)), 100);
}

TEST_F(BlasTest, SetFailureWarnsOnceAndRunsAsIs) {
  Blas b(fake_api(), G(100), nullptr, stats);
  fake.set_result = CUBLAS_STATUS_NOT_SUPPORTED;
  EXPECT_EQ(gemm(b, Hd(1)), 0);
  EXPECT_EQ(gemm(b, Hd(1)), 0);
  EXPECT_EQ(g_lines.size(), 1u);
}

TEST_F(BlasTest, LtDescriptorRestoredAfterEachCall) {
  OrderWindow w;
  Blas b(fake_api(), G(-32, plan::When::Overlap), &w, stats);
  const cublasLtMatmulDesc_t d = Dd(3);
  fake.desc_target[d] = 120;  // the caller's own
  EXPECT_EQ(matmul(b, d), 120);
  EXPECT_EQ(fake.lt_sets, 0);
  w.collective(0, StreamRef{reinterpret_cast<const void*>(0xD0)});
  EXPECT_EQ(matmul(b, d), 100);
  EXPECT_EQ(fake.desc_target[d], 120) << "restored right after the call";
  EXPECT_EQ(fake.lt_sets, 2);
  // The caller's stricter value is kept (no set at all).
  fake.desc_target[d] = 10;
  EXPECT_EQ(matmul(b, d), 10);
  EXPECT_EQ(fake.lt_sets, 2);
  // Default (0): set to the decided value, restored to 0.
  fake.desc_target[Dd(4)] = 0;
  EXPECT_EQ(matmul(b, Dd(4)), 100);
  EXPECT_EQ(fake.desc_target[Dd(4)], 0);
  EXPECT_EQ(stats.gemm_calls.load(), 4u);
}

TEST_F(BlasTest, ManyHandlesBounded) {
  Blas b(fake_api(), G(100), nullptr, stats, 4);
  for (uintptr_t i = 1; i <= 6; ++i) gemm(b, Hd(i));
  EXPECT_EQ(b.handles(), 4u);
  EXPECT_EQ(fake.handle_target[Hd(4)], 100);
  EXPECT_EQ(fake.handle_target[Hd(5)], 0) << "untracked handles are left alone";
  EXPECT_EQ(g_lines.size(), 1u);
}

// ---- a rotation: the control in force is asked at every call -------------------------------

struct Rotation {
  std::vector<plan::Gemm> gemm;
  std::vector<Stats> stats;
  const OrderWindow* window = nullptr;
  int current = 0;
} * g_rot = nullptr;

GemmControl rotation_control() {
  const auto i = static_cast<std::size_t>(g_rot->current);
  return GemmControl{&g_rot->gemm[i], &g_rot->stats[i], g_rot->window};
}

TEST_F(BlasTest, RotationFollowsTheConfigurationInForce) {
  Rotation rot;
  rot.gemm = {plan::Gemm{}, G(100), G(-32)};  // off, sm-target:100, sm-target:-32
  rot.stats = std::vector<Stats>(3);
  g_rot = &rot;
  Blas b(fake_api(), rotation_control);
  EXPECT_TRUE(b.active()) << "a rotation is always active: 'off' must restore the handle";
  const cublasHandle_t h = Hd(1);
  EXPECT_EQ(b.program_set(h, 120, fake_set), CUBLAS_STATUS_SUCCESS);  // the program's own
  EXPECT_EQ(gemm(b, h), 120) << "off: the program's own target";
  rot.current = 1;
  EXPECT_EQ(gemm(b, h), 100);
  EXPECT_EQ(matmul(b, Dd(3)), 100);
  EXPECT_EQ(fake.desc_target[Dd(3)], 0) << "the descriptor's own value restored";
  rot.current = 0;
  EXPECT_EQ(gemm(b, h), 120) << "back to off: the program's own value comes back";
  EXPECT_EQ(matmul(b, Dd(3)), 0);
  rot.current = 2;
  EXPECT_EQ(gemm(b, h), 100) << "132 - 32";
  fake.device = 1;
  EXPECT_EQ(gemm(b, Hd(2)), 46) << "78 - 32: the carveout per device";
  fake.device = 0;
  int v = 0;
  EXPECT_EQ(b.program_get(h, &v, fake_get), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(v, 120) << "the program is told its own value under any configuration";
  rot.current = 0;
  EXPECT_EQ(gemm(b, h), 120);
  // Each configuration counts its own calls and targeted GEMMs.
  EXPECT_EQ(rot.stats[0].gemm_calls.load(), 4u);
  EXPECT_EQ(rot.stats[0].gemm_sm_targeted.load(), 0u);
  EXPECT_EQ(rot.stats[1].gemm_calls.load(), 2u);
  EXPECT_EQ(rot.stats[1].gemm_sm_targeted.load(), 2u);
  EXPECT_EQ(rot.stats[2].gemm_sm_targeted.load(), 2u);
  EXPECT_EQ(stats.gemm_calls.load(), 0u) << "nothing counted outside the configurations";
  g_rot = nullptr;
}

TEST_F(BlasTest, RotationWindowComesWithTheControl) {
  Rotation rot;
  rot.gemm = {plan::Gemm{}, G(64, plan::When::Overlap)};
  rot.stats = std::vector<Stats>(2);
  g_rot = &rot;
  Blas b(fake_api(), rotation_control);
  rot.current = 1;
  EXPECT_EQ(gemm(b, Hd(1)), 0) << "no window yet (made later, by a policy switched to)";
  OrderWindow w;
  rot.window = &w;
  w.collective(0, StreamRef{reinterpret_cast<const void*>(0xD0)});
  w.record(reinterpret_cast<const void*>(0xE), StreamRef{reinterpret_cast<const void*>(0xD0)});
  EXPECT_EQ(gemm(b, Hd(1)), 64) << "inside the window";
  rot.current = 0;
  EXPECT_EQ(gemm(b, Hd(1)), 0) << "off inside the window: the program's own";
  g_rot = nullptr;
}

TEST_F(BlasTest, SecondCopyLeftAloneWarnOnce) {
  BlasCopy copy("cuBLAS");
  int a = 0, b = 0;
  EXPECT_TRUE(copy.accept(&a, "/x/libcublas.so.13"));
  EXPECT_TRUE(copy.accept(&a, "/x/libcublas.so.13"));
  EXPECT_FALSE(copy.accept(&b, "/y/libcublas.so.12"));
  EXPECT_FALSE(copy.accept(&b, "/y/libcublas.so.12"));
  EXPECT_FALSE(copy.accept(nullptr));
  EXPECT_EQ(copy.first(), &a);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("a second copy of cuBLAS is loaded (/y/libcublas.so.12)"),
            std::string::npos)
      << g_lines[0];
}

}  // namespace

// ---- the call a GEMM is, for the trace (blas_call.hpp) --------------------------------------

namespace calls {

// A fake cuBLASLt: descriptors and layouts are addresses of these, their attributes the fields.
struct FakeDesc {
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  bool fail = false;
};
struct FakeLayout {
  uint32_t type = CUDA_R_16BF;
  uint64_t rows = 0, cols = 0;
  int32_t batch = 1;
};

cublasStatus_t desc_get(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, void* buf,
                        size_t size, size_t* written) {
  const auto* f = reinterpret_cast<const FakeDesc*>(d);
  if (f->fail || size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  const int32_t v = attr == CUBLASLT_MATMUL_DESC_TRANSA ? f->transa
                    : attr == CUBLASLT_MATMUL_DESC_TRANSB ? f->transb
                                                          : -1;
  if (v < 0) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, &v, sizeof v);
  *written = sizeof v;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t layout_get(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                          void* buf, size_t size, size_t* written) {
  const auto* f = reinterpret_cast<const FakeLayout*>(l);
  auto put = [&](const auto& v) {
    if (size != sizeof v) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, &v, sizeof v);
    *written = sizeof v;
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      return put(f->type);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      return put(f->rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      return put(f->cols);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return put(f->batch);
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

}  // namespace calls

TEST(BlasCall, LabelSpellsFunctionTypeOperationsAndShape) {
  GemmCall c;
  c.function = "cublasGemmEx";
  c.op_a = 'T';
  c.op_b = 'N';
  c.m = 4096, c.n = 8192, c.k = 2048;
  c.type = CUDA_R_16BF;
  EXPECT_EQ(call_label(c), "cublasGemmEx bf16 TN m=4096 n=8192 k=2048");
  c.type = -1;
  c.batch = 8;
  c.function = "cublasSgemm_v2";
  EXPECT_EQ(call_label(c), "cublasSgemm_v2 TN m=4096 n=8192 k=2048 batch=8");
  EXPECT_EQ(data_type_name(CUDA_R_8F_E4M3), "e4m3");
  EXPECT_EQ(data_type_name(12345), "type 12345");
  EXPECT_EQ(op_letter(CUBLAS_OP_C), 'C');
  EXPECT_EQ(op_letter(77), '?');
}

TEST(BlasCall, IdsFollowTheLabel) {
  GemmCall a;
  a.function = "cublasLtMatmul";
  a.m = 1024, a.n = 1024, a.k = 1024;
  GemmCall b = a;
  EXPECT_EQ(call_id(a), call_id(b));
  for (auto change : {+[](GemmCall& c) { c.m = 2048; }, +[](GemmCall& c) { c.n = 2048; },
                      +[](GemmCall& c) { c.k = 2048; }, +[](GemmCall& c) { c.op_a = 'T'; },
                      +[](GemmCall& c) { c.op_b = 'T'; }, +[](GemmCall& c) { c.batch = 2; },
                      +[](GemmCall& c) { c.type = CUDA_R_16F; },
                      +[](GemmCall& c) { c.function = "cublasGemmEx"; }}) {
    b = a;
    change(b);
    EXPECT_NE(call_id(a), call_id(b)) << call_label(b);
  }
}

TEST(BlasCall, LtShapeFromTheDescriptors) {
  const LtShapeApi api{calls::desc_get, calls::layout_get};
  calls::FakeDesc desc;
  desc.transa = CUBLAS_OP_T;
  // D = op(A) op(B): m x n = 4096 x 512; A stored k x m (transposed) = 2048 x 4096.
  calls::FakeLayout a{CUDA_R_16BF, 2048, 4096, 1}, d{CUDA_R_16BF, 4096, 512, 4};
  auto D = [](calls::FakeDesc& x) { return reinterpret_cast<cublasLtMatmulDesc_t>(&x); };
  auto L = [](calls::FakeLayout& x) { return reinterpret_cast<cublasLtMatrixLayout_t>(&x); };
  auto c = lt_gemm_call(api, D(desc), L(a), L(d));
  ASSERT_TRUE(c);
  EXPECT_EQ(call_label(*c), "cublasLtMatmul bf16 TN m=4096 n=512 k=2048 batch=4");
  desc.transa = CUBLAS_OP_N;  // A stored m x k: k is its columns
  calls::FakeLayout a2{CUDA_R_16BF, 4096, 2048, 1};
  c = lt_gemm_call(api, D(desc), L(a2), L(d));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->k, 2048);
  // A read that fails, or no reader: no call (the GEMM runs unlabelled).
  desc.fail = true;
  EXPECT_FALSE(lt_gemm_call(api, D(desc), L(a), L(d)));
  EXPECT_FALSE(lt_gemm_call(LtShapeApi{}, D(desc), L(a), L(d)));
  EXPECT_FALSE(lt_gemm_call(api, nullptr, L(a), L(d)));
}
