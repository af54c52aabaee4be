#include "cli/run_framework.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "model/env_names.hpp"
#include "model/read_file.hpp"
#include "cli/run_cmd.hpp"
#include "cli/run_support.hpp"

namespace cco::cli {

namespace {
constexpr const char* kHookFile = "sitecustomize.py";
constexpr std::size_t kReportLimit = 1u << 20;  // a report holds at most 4096 short events
constexpr std::size_t kMaxReports = 4096;
}  // namespace

std::string find_startup_dir(const std::string& exe) {
  const std::string dir = dir_of(exe);
  std::string looked;
  for (const char* rel : {"../../inject/startup", "../lib/ccoverlap/startup"}) {
    const std::string p = dir + "/" + rel;
    if (model::is_regular_file(p + "/" + kHookFile)) return absolute(p);
    looked += (looked.empty() ? "" : ", ") + p;
  }
  throw std::runtime_error(std::string("cco's Python start-up hook (") + kHookFile +
                           ") not found (looked in " + looked +
                           "): --framework needs an installed or built cco");
}

std::vector<EnvChange> framework_environment(const model::FrameworkSettings& s,
                                             const std::string& startup_dir,
                                             const std::string& report_dir,
                                             const std::function<const char*(const char*)>& getenv) {
  std::vector<EnvChange> out;
  const char* old = getenv("PYTHONPATH");
  std::string path = old ? old : "";
  // Ours first (the hook chains the sitecustomize it hides); once, also when cco runs cco.
  if (path != startup_dir && path.rfind(startup_dir + ":", 0) != 0)
    out.push_back({"PYTHONPATH", path.empty() ? startup_dir : startup_dir + ":" + path});
  out.push_back({cco::env::kFramework, model::framework_env(s)});
  if (report_dir.empty())
    out.push_back({cco::env::kFrameworkOut, std::nullopt});
  else
    out.push_back({cco::env::kFrameworkOut, report_dir});
  return out;
}

FrameworkSummary read_framework_reports(const std::string& report_dir) {
  FrameworkSummary sum;
  // (control, module, outcome, value) -> processes, times
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::pair<int, int>> seen;
  DIR* d = ::opendir(report_dir.c_str());
  if (!d) return sum;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind("framework-", 0) != 0 || n.size() < 16 || n.compare(n.size() - 5, 5, ".json") != 0)
      continue;
    if (sum.files + sum.notes.size() >= kMaxReports) {
      sum.notes.push_back("more than " + std::to_string(kMaxReports) + " reports: the rest not read");
      break;
    }
    try {
      const auto j = nlohmann::json::parse(model::read_file(report_dir + "/" + n, kReportLimit));
      std::set<std::tuple<std::string, std::string, std::string, std::string>> here;
      if (j.contains("memory") && j["memory"].is_object()) {
        const auto& m = j["memory"];
        const int64_t peak = m.value("peak_reserved_bytes", int64_t{0});
        const int64_t total = m.value("total_bytes", int64_t{0});
        if (peak > 0 && total > 0) {
          sum.peak_reserved_bytes = std::max(sum.peak_reserved_bytes, peak);
          sum.device_bytes = sum.device_bytes == 0 ? total : std::min(sum.device_bytes, total);
        }
      }
      for (const auto& ev : j.at("events")) {
        const std::string value = ev.value("outcome", "") == "applied" ? ev.value("value", "")
                                                                       : ev.value("program_value", "");
        const auto key = std::make_tuple(ev.at("control").get<std::string>(),
                                         ev.at("module").get<std::string>(),
                                         ev.at("outcome").get<std::string>(), value);
        seen[key].second += 1;
        if (here.insert(key).second) seen[key].first += 1;
      }
      ++sum.files;
    } catch (const std::exception& ex) {
      sum.notes.push_back(n + ": not read (" + std::string(ex.what()).substr(0, 200) + ")");
    }
  }
  ::closedir(d);
  for (const auto& [k, v] : seen)
    sum.outcomes.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k),
                            v.first, v.second});
  return sum;
}

std::string memory_text(const FrameworkSummary& sum) {
  if (sum.device_bytes <= 0) return "";
  const double peak = static_cast<double>(sum.peak_reserved_bytes);
  const double total = static_cast<double>(sum.device_bytes);
  char b[96];
  std::snprintf(b, sizeof b, "%.1f of %.1f GiB (%.0f%%)", peak / 1073741824.0, total / 1073741824.0,
                100.0 * peak / total);
  return b;
}

std::string format_framework_summary(const model::FrameworkSettings& s, const FrameworkSummary& sum,
                                     const std::string& command) {
  std::string out;
  auto line = [&](const std::string& t) { out += command + ": framework: " + t + "\n"; };
  for (const auto& n : sum.notes) line(n);
  auto times = [](const FrameworkOutcome& o) {
    return std::to_string(o.times) + (o.times == 1 ? " time" : " times") + " in " +
           std::to_string(o.processes) + (o.processes == 1 ? " process" : " processes");
  };
  for (const auto& x : s) {
    const std::string name = x.control().name;
    bool any = false;
    for (const auto& o : sum.outcomes) {
      if (o.control != name) continue;
      any = true;
      if (o.outcome == "applied")
        line(name + ": applied to " + o.module + " (" + x.control().keyword + "=" + o.value + "), " +
             times(o));
      else if (o.outcome == "kept")
        line(name + ": not applied, " + times(o) + ": the program sets " + x.control().keyword +
             "=" + o.value + " in " + o.module + " itself (remove it there to let cco set it)");
      else if (o.outcome == "same")
        line(name + ": the program already sets " + x.control().keyword + "=" + o.value + " in " +
             o.module + ", " + times(o));
      else
        line(name + ": not applied, " + times(o) + ": this PyTorch's " + o.module +
             " takes no keyword " + x.control().keyword);
    }
    if (!any)
      line(name + ": did nothing: no process " +
           std::string(model::target_use(x.control().target)) +
           (sum.files == 0 ? " (if the program does, its Python did not load cco's start-up hook: "
                             "python -I, -E or -S ignore PYTHONPATH)"
                           : ""));
  }
  if (sum.device_bytes > 0) line("the most device memory a process held: " + memory_text(sum));
  return out;
}

}  // namespace cco::cli
