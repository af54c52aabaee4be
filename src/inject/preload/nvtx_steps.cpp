#include "preload/nvtx_steps.hpp"

#include <atomic>
#include <cstddef>

#include "plan/plan.hpp"

namespace cco::preload {

bool NvtxStepNames::ascii(const char* message) const {
  return message && plan::glob_match(pattern_, message);
}

bool NvtxStepNames::wide(const wchar_t* message) const {
  if (!message) return false;
  char buf[256];
  std::size_t n = 0;
  for (; message[n] != L'\0'; ++n) {
    if (n + 1 >= sizeof buf || message[n] < 0 || message[n] > 127) return false;
    buf[n] = static_cast<char>(message[n]);
  }
  buf[n] = '\0';
  return ascii(buf);
}

bool NvtxStepNames::event(const nvtxEventAttributes_t* a) const {
  if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message) return false;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return ascii(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return wide(a->message.unicode);
    default:
      return false;  // registered strings are not resolved; no message
  }
}

namespace {

std::atomic<const NvtxStepNames*> g_names{nullptr};
std::atomic<NvtxStepFn> g_on_step{nullptr};
std::atomic<uint64_t> g_seen{0};
std::atomic<uint64_t> g_next_id{1};
thread_local int t_depth = 0;  // push/pop nesting of this thread (all domains)

void step_if(bool match) {
  if (!match) return;
  g_seen.fetch_add(1, std::memory_order_relaxed);
  if (NvtxStepFn f = g_on_step.load(std::memory_order_acquire)) f();
}
const NvtxStepNames* names() {
  return g_names.load(std::memory_order_acquire);
}
int push(bool match) {
  step_if(match);
  return t_depth++;
}
int pop() {
  if (t_depth <= 0) return -1;  // NVTX's answer to a pop without a push
  return --t_depth;
}
nvtxRangeId_t start(bool match) {
  step_if(match);
  return g_next_id.fetch_add(1, std::memory_order_relaxed);
}

// The callbacks, with the signatures of NVTX's core and core2 modules.
int NVTX_API push_a(const char* m) {
  const NvtxStepNames* n = names();
  return push(n && n->ascii(m));
}
int NVTX_API push_w(const wchar_t* m) {
  const NvtxStepNames* n = names();
  return push(n && n->wide(m));
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  const NvtxStepNames* n = names();
  return push(n && n->event(a));
}
int NVTX_API pop_core() {
  return pop();
}
nvtxRangeId_t NVTX_API start_a(const char* m) {
  const NvtxStepNames* n = names();
  return start(n && n->ascii(m));
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) {
  const NvtxStepNames* n = names();
  return start(n && n->wide(m));
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  const NvtxStepNames* n = names();
  return start(n && n->event(a));
}
void NVTX_API end_core(nvtxRangeId_t) {}
int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  const NvtxStepNames* n = names();
  return push(n && n->event(a));
}
int NVTX_API domain_pop(nvtxDomainHandle_t) {
  return pop();
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  const NvtxStepNames* n = names();
  return start(n && n->event(a));
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t) {}

template <class Fn>
NvtxFunctionPointer fp(Fn f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

struct Slot {
  unsigned id;
  NvtxFunctionPointer fn;
};

bool fill(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, const Slot* slots,
          std::size_t n) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable || !cb->GetModuleFunctionTable(module, &table, &size) || !table)
    return false;
  for (std::size_t i = 0; i < n; ++i)
    if (slots[i].id < size && table[slots[i].id]) *table[slots[i].id] = slots[i].fn;
  return true;
}

}  // namespace

bool install_nvtx_steps(NvtxGetExportTableFunc_t get_table, const NvtxStepNames* n,
                        NvtxStepFn on_step) {
  if (!get_table || !n) return false;
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return false;
  g_names.store(n, std::memory_order_release);
  g_on_step.store(on_step, std::memory_order_release);
  const Slot core[] = {
      {NVTX_CBID_CORE_RangePushA, fp(push_a)},   {NVTX_CBID_CORE_RangePushW, fp(push_w)},
      {NVTX_CBID_CORE_RangePushEx, fp(push_ex)}, {NVTX_CBID_CORE_RangePop, fp(pop_core)},
      {NVTX_CBID_CORE_RangeStartA, fp(start_a)}, {NVTX_CBID_CORE_RangeStartW, fp(start_w)},
      {NVTX_CBID_CORE_RangeStartEx, fp(start_ex)}, {NVTX_CBID_CORE_RangeEnd, fp(end_core)},
  };
  const Slot core2[] = {
      {NVTX_CBID_CORE2_DomainRangePushEx, fp(domain_push_ex)},
      {NVTX_CBID_CORE2_DomainRangePop, fp(domain_pop)},
      {NVTX_CBID_CORE2_DomainRangeStartEx, fp(domain_start_ex)},
      {NVTX_CBID_CORE2_DomainRangeEnd, fp(domain_end)},
  };
  if (!fill(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof core[0])) return false;
  fill(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]);  // older NVTX: none
  // Tools say which NVTX version they attach as (the header's; NVTX ignores it today).
  if (const auto* v =
          static_cast<const NvtxExportTableVersionInfo*>(get_table(NVTX_ETID_VERSIONINFO)))
    if (v->struct_size >= sizeof(NvtxExportTableVersionInfo) && v->SetInjectionNvtxVersion)
      v->SetInjectionNvtxVersion(NVTX_VERSION);
  return true;
}

uint64_t nvtx_steps_seen() {
  return g_seen.load(std::memory_order_relaxed);
}

}  // namespace cco::preload
