// The preload library's environment (cco::preload::read_env and resolve_plan, src/inject/preload/
// config.cpp), the only outside input the library reads besides a plan file. The input is up to
// six values separated by '\n', for CCO_DISABLE, CCO_POLICY, CCO_PRIORITY_METHOD, CCO_STATS,
// CCO_VERBOSE and CCO_PLAN (a missing piece: unset; CCO_PLAN, when given, names a file
// that does not exist, since plan contents are fuzz_plan's). Contract: nothing throws; the library
// must never fail the host program.
#include <array>
#include <cstring>

#include "fuzz_common.hpp"
#include "common/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  static constexpr std::array<const char*, 6> names = {
      "CCO_DISABLE", "CCO_POLICY", "CCO_PRIORITY_METHOD", "CCO_STATS", "CCO_VERBOSE", "CCO_PLAN"};
  // Environment values end at the first NUL.
  std::string_view text = fuzz::as_text(data, size);
  text = text.substr(0, text.find('\0'));
  const auto values = fuzz::split(text, '\n');
  const auto get = [&](const char* name) -> const char* {
    for (std::size_t i = 0; i < names.size() && i < values.size(); ++i)
      if (std::strcmp(name, names[i]) == 0)
        return i == 5 ? (values[i].empty() ? nullptr : "/nonexistent/cco-fuzz/plan.json")
                      : values[i].c_str();
    return nullptr;
  };
  const preload::EnvConfig c = preload::read_env(get);
  for (const auto& v : values) (void)preload::parse_flag(v.c_str());
  std::vector<std::string> warnings;
  const plan::Plan p = preload::resolve_plan(c, &warnings);
  if ((c.bad || !c.plan_path.empty()) && p.shaping.active())
    fuzz::violated("a bad configuration or missing plan file still shapes kernels");
  return 0;
}
