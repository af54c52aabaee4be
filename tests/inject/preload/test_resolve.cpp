// Which pointer the program gets from dlsym and cuGetProcAddress: wrapper slots, variants kept
// apart, names, exhaustion, concurrency.
#include <gtest/gtest.h>

#include <thread>

#include "common/log.hpp"
#include "preload/resolve.hpp"

namespace {

using namespace cco::preload;

void* P(uintptr_t v) {
  return reinterpret_cast<void*>(v);
}

WrapperSet wrappers() {
  WrapperSet w{};
  for (int s = 0; s < kSymCount; ++s)
    for (int i = 0; i < kSlots; ++i) w[s][i] = P(0x100000 + 0x100 * s + i);
  return w;
}

std::vector<std::string> g_lines;
void keep(const std::string& l) {
  g_lines.push_back(l);
}

TEST(Resolve, DlsymNames) {
  EXPECT_EQ(sym_for_dlsym("cuLaunchKernel"), Sym::LaunchKernel);
  EXPECT_EQ(sym_for_dlsym("cuLaunchKernel_ptsz"), Sym::LaunchKernel);
  EXPECT_EQ(sym_for_dlsym("cuLaunchKernelEx"), Sym::LaunchKernelEx);
  EXPECT_EQ(sym_for_dlsym("cuLaunchKernelEx_ptsz"), Sym::LaunchKernelEx);
  EXPECT_EQ(sym_for_dlsym("cuGetProcAddress"), Sym::GetProcAddressV1);
  EXPECT_EQ(sym_for_dlsym("cuGetProcAddress_v2"), Sym::GetProcAddressV2);
  EXPECT_FALSE(sym_for_dlsym("cuMemAlloc_v2"));
  EXPECT_FALSE(sym_for_dlsym("cuLaunchCooperativeKernel"));
  EXPECT_FALSE(sym_for_dlsym("malloc"));
  EXPECT_FALSE(sym_for_dlsym(""));
}

TEST(Resolve, WindowAndBlasNames) {
  EXPECT_EQ(sym_for_dlsym("cuEventRecord"), Sym::EventRecord);
  EXPECT_EQ(sym_for_dlsym("cuEventRecord_ptsz"), Sym::EventRecord);
  EXPECT_EQ(sym_for_dlsym("cuEventRecordWithFlags_ptsz"), Sym::EventRecordWithFlags);
  EXPECT_EQ(sym_for_dlsym("cuStreamWaitEvent"), Sym::StreamWaitEvent);
  EXPECT_EQ(sym_for_dlsym("cuStreamSynchronize_ptsz"), Sym::StreamSynchronize);
  EXPECT_EQ(sym_for_dlsym("cuEventSynchronize"), Sym::EventSynchronize);
  EXPECT_EQ(sym_for_dlsym("cuCtxSynchronize"), Sym::CtxSynchronize);
  EXPECT_EQ(sym_for_dlsym("cuCtxSynchronize_v2"), Sym::CtxSynchronizeV2);
  EXPECT_EQ(sym_for_dlsym("cuModuleUnload"), Sym::ModuleUnload);
  EXPECT_EQ(sym_for_dlsym("cuLibraryUnload"), Sym::LibraryUnload);
  EXPECT_EQ(sym_for_proc("cuModuleUnload", 12000), Sym::ModuleUnload);
  EXPECT_EQ(sym_for_proc("cuLibraryUnload", 13000), Sym::LibraryUnload);
  EXPECT_FALSE(sym_for_dlsym("cuModuleLoad"));
  EXPECT_FALSE(sym_for_proc("cuLibraryLoadData", 12000));
  EXPECT_FALSE(sym_for_dlsym("cuEventQuery"));
  EXPECT_FALSE(sym_for_dlsym("cuStreamWaitValue32"));
  EXPECT_FALSE(sym_for_dlsym("cuEventRecordX"));
  EXPECT_EQ(sym_for_dlsym("cublasGemmEx"), Sym::BlasGemmEx);
  EXPECT_EQ(sym_for_dlsym("cublasGemmEx_64"), Sym::BlasGemmEx64);
  EXPECT_EQ(sym_for_dlsym("cublasSgemm_v2"), Sym::BlasSgemm);
  EXPECT_EQ(sym_for_dlsym("cublasSetSmCountTarget"), Sym::BlasSetSmCountTarget);
  EXPECT_EQ(sym_for_dlsym("cublasLtMatmul"), Sym::BlasLtMatmul);
  EXPECT_EQ(sym_for_dlsym("cublasLtMatmulAlgoGetHeuristic"), Sym::BlasLtMatmulAlgoGetHeuristic);
  EXPECT_FALSE(sym_for_dlsym("cublasSgemm"));  // the legacy API (no handle) is not wrapped
  EXPECT_FALSE(sym_for_dlsym("cublasCreate_v2"));
  EXPECT_FALSE(sym_for_dlsym("cublasLtMatmulDescSetAttribute"));
  EXPECT_TRUE(is_blas(Sym::BlasGemmEx));
  EXPECT_TRUE(is_blas(Sym::BlasLtMatmulAlgoGetHeuristic));
  EXPECT_FALSE(is_blas(Sym::CtxSynchronizeV2));
  EXPECT_FALSE(is_blas(Sym::Count));
  // cuGetProcAddress never answers for cuBLAS; the driver names keep their ABI.
  EXPECT_FALSE(sym_for_proc("cublasGemmEx", 13000));
  EXPECT_EQ(sym_for_proc("cuEventRecord", 12000), Sym::EventRecord);
  EXPECT_EQ(sym_for_proc("cuStreamWaitEvent", 13000), Sym::StreamWaitEvent);
  EXPECT_EQ(sym_for_proc("cuCtxSynchronize", 12080), Sym::CtxSynchronize);
  EXPECT_EQ(sym_for_proc("cuCtxSynchronize", 13000), Sym::CtxSynchronizeV2);
  EXPECT_EQ(sym_for_proc("cuCtxSynchronize_v2", 12000), Sym::CtxSynchronizeV2);
  // Each kind has its own slots: the same real pointer under two names gets two wrappers.
  SlotTable t(wrappers());
  void* w1 = substitute_proc(t, "cuEventRecord", P(0xE0), 12000);
  void* w2 = substitute_dlsym(t, "cuStreamSynchronize", P(0xE0));
  EXPECT_NE(w1, w2);
  EXPECT_EQ(w1, P(0x100000 + 0x100 * static_cast<int>(Sym::EventRecord)));
  EXPECT_EQ(substitute_dlsym(t, "cublasGemmEx", P(0xF0)),
            P(0x100000 + 0x100 * static_cast<int>(Sym::BlasGemmEx)));
}

TEST(Resolve, ProcNamesAndTheAbiOfGetProcAddress) {
  EXPECT_EQ(sym_for_proc("cuLaunchKernel", 12000), Sym::LaunchKernel);
  EXPECT_EQ(sym_for_proc("cuLaunchKernelEx", 11060), Sym::LaunchKernelEx);
  EXPECT_EQ(sym_for_proc("cuGetProcAddress", 12000), Sym::GetProcAddressV2);
  EXPECT_EQ(sym_for_proc("cuGetProcAddress", 13000), Sym::GetProcAddressV2);
  EXPECT_EQ(sym_for_proc("cuGetProcAddress", 11030), Sym::GetProcAddressV1);
  EXPECT_EQ(sym_for_proc("cuLaunchKernel_ptsz", 12000), Sym::LaunchKernel);
  EXPECT_EQ(sym_for_proc("cuLaunchKernelEx_ptsz", 12000), Sym::LaunchKernelEx);
  EXPECT_EQ(sym_for_proc("cuGetProcAddress_v2", 11030), Sym::GetProcAddressV2);
  EXPECT_FALSE(sym_for_proc("cuLaunchCooperativeKernel", 12000));
}

TEST(Resolve, SameRealSameWrapperVariantsApart) {
  SlotTable t(wrappers());
  void* legacy = P(0xA0);
  void* ptsz = P(0xB0);
  void* w1 = substitute_proc(t, "cuLaunchKernel", legacy, 12000);
  void* w2 = substitute_proc(t, "cuLaunchKernel", ptsz, 12000);
  EXPECT_EQ(w1, P(0x100000));
  EXPECT_EQ(w2, P(0x100001));
  EXPECT_EQ(t.real(Sym::LaunchKernel, 0), legacy);
  EXPECT_EQ(t.real(Sym::LaunchKernel, 1), ptsz);
  // dlsym of the _ptsz name finds the same real pointer: the same wrapper.
  EXPECT_EQ(substitute_dlsym(t, "cuLaunchKernel_ptsz", ptsz), w2);
  EXPECT_EQ(substitute_proc(t, "cuLaunchKernel", legacy, 12000), w1);
  EXPECT_EQ(t.used(Sym::LaunchKernel), 2);
  EXPECT_EQ(t.used(Sym::LaunchKernelEx), 0);
  // Ex has its own slots.
  EXPECT_EQ(substitute_proc(t, "cuLaunchKernelEx", legacy, 12000), P(0x100100));
}

TEST(Resolve, GetProcAddressReturnsOurOwn) {
  SlotTable t(wrappers());
  void* real_v2 = P(0xC0);
  EXPECT_EQ(substitute_proc(t, "cuGetProcAddress", real_v2, 12040), P(0x100300));
  EXPECT_EQ(substitute_proc(t, "cuGetProcAddress", P(0xC8), 11030), P(0x100200));
  EXPECT_EQ(substitute_dlsym(t, "cuGetProcAddress_v2", real_v2), P(0x100300));
  EXPECT_EQ(t.any_real(Sym::GetProcAddressV2), real_v2);
}

TEST(Resolve, OtherNamesNullAndOursPassThrough) {
  const void* own = P(0xDD);
  SlotTable t(wrappers(), {own});
  EXPECT_EQ(substitute_dlsym(t, "cuMemAlloc_v2", P(0x1)), P(0x1));
  EXPECT_EQ(substitute_dlsym(t, "cuLaunchKernel", nullptr), nullptr);
  EXPECT_EQ(substitute_proc(t, "cuMemcpy", P(0x2), 12000), P(0x2));
  // A lookup that already found our export or one of our wrappers is not wrapped again.
  EXPECT_EQ(substitute_dlsym(t, "cuLaunchKernel", const_cast<void*>(own)), own);
  EXPECT_EQ(substitute_dlsym(t, "cuLaunchKernel", P(0x100005)), P(0x100005));
  EXPECT_EQ(t.used(Sym::LaunchKernel), 0);
}

TEST(Resolve, ExhaustedSlotsHandOutTheRealPointerAndWarnOnce) {
  g_lines.clear();
  reset_warnings();
  set_log_sink(keep);
  SlotTable t(wrappers());
  for (int i = 0; i < kSlots; ++i)
    EXPECT_EQ(t.bind(Sym::LaunchKernel, P(0x1000 + i)), P(0x100000 + i));
  EXPECT_EQ(t.bind(Sym::LaunchKernel, P(0x9999)), P(0x9999));
  EXPECT_EQ(t.bind(Sym::LaunchKernel, P(0x9998)), P(0x9998));
  EXPECT_EQ(t.bind(Sym::LaunchKernel, P(0x1003)), P(0x100003));  // known ones still work
  set_log_sink(nullptr);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("warning: more than 8 distinct driver entry points"),
            std::string::npos);
}

TEST(Resolve, ConcurrentBinds) {
  SlotTable t(wrappers());
  std::vector<std::thread> ts;
  std::vector<std::vector<void*>> got(8);
  for (int n = 0; n < 8; ++n)
    ts.emplace_back([&, n] {
      for (int i = 0; i < 1000; ++i)
        got[n].push_back(t.bind(Sym::LaunchKernelEx, P(0x500 + (i % 4))));
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(t.used(Sym::LaunchKernelEx), 4);
  for (int n = 0; n < 8; ++n)
    for (int i = 0; i < 1000; ++i) {
      void* w = got[n][i];
      const int slot = static_cast<int>(reinterpret_cast<uintptr_t>(w) - 0x100100);
      ASSERT_GE(slot, 0);
      ASSERT_LT(slot, kSlots);
      EXPECT_EQ(t.real(Sym::LaunchKernelEx, slot), P(0x500 + (i % 4)));
    }
}

}  // namespace
