// Where a plan was made (made_for) against where it runs: the machine (cco run) and the
// libraries the program loaded (the preload library).
#include "plan/plan.hpp"

namespace cco::plan {

std::vector<std::string> made_for_mismatch(const MadeFor& made, const std::string& device, int sms,
                                           const std::vector<std::pair<std::string, std::string>>& versions) {
  std::vector<std::string> out;
  if (!made.set) return out;
  if (!made.device.empty() && made.device != device)
    out.push_back("device: " + device + " (plan: " + made.device + ")");
  if (made.sms > 0 && made.sms != sms)
    out.push_back("SMs: " + std::to_string(sms) + " (plan: " + std::to_string(made.sms) + ")");
  for (const auto& [k, v] : made.versions)
    for (const auto& [k2, v2] : versions)
      if (k == k2 && !v.empty() && v != v2) out.push_back(k + ": " + v2 + " (plan: " + v + ")");
  return out;
}

std::string made_for_library(const Plan& plan, const std::string& key, const std::string& what,
                             const std::string& loaded) {
  if (!plan.made_for.set || loaded.empty()) return {};
  for (const auto& [k, v] : plan.made_for.versions)
    if (k == key && !v.empty() && v != loaded)
      return "plan '" + plan.policy + "' was made with " + what + " " + v + ", this program loads " +
             what + " " + loaded + ": its tuned settings may not carry over (re-tune with `cco tune -- CMD`)";
  return {};
}

}  // namespace cco::plan
