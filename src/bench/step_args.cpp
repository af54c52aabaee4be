#include "bench/step_args.hpp"

#include <charconv>
#include <string>

#include "model/occupancy.hpp"
#include "model/types.hpp"

namespace cco::bench {

using model::Error;
using workload::StepLoadOptions;
using workload::parse_override;
using model::parse_bytes;

// ---- arguments --------------------------------------------------------------------------------

StepLoadOptions StepArgs::load_options() const {
  StepLoadOptions o;
  o.nranks = ngpus > 0 ? ngpus : 2;
  o.overrides = params;
  o.gpu_memory = gpu_memory;
  o.check = check;
  return o;
}

StepArgs split_step_args(const std::vector<std::string>& args) {
  StepArgs a;
  if (!args.empty()) a.rest.push_back(args[0]);
  bool any_step_flag = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& x = args[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (x.size() > flag.size() && x.compare(0, flag.size() + 1, flag + "=") == 0)
        return x.substr(flag.size() + 1);
      if (i + 1 >= args.size()) throw Error(flag + " needs a value");
      return args[++i];
    };
    auto is = [&](const std::string& flag) { return x == flag || x.rfind(flag + "=", 0) == 0; };
    if (is("--workload")) {
      a.workload = value("--workload");
      if (a.workload.empty()) throw Error("--workload needs a file");
    } else if (x == "--validate") {
      a.validate = any_step_flag = true;
    } else if (is("--param")) {
      a.params.push_back(parse_override(value("--param")));
      any_step_flag = true;
    } else if (is("--gpu-memory")) {
      const std::string v = value("--gpu-memory");
      try {
        a.gpu_memory = parse_bytes(v);
      } catch (const Error& e) {
        throw Error("--gpu-memory: " + std::string(e.what()));
      }
      if (a.gpu_memory <= 0) throw Error("--gpu-memory: must be positive");
      any_step_flag = true;
    } else {
      a.rest.push_back(x);
      // Read -g and -c (kept in `rest` for the bench's own parser).
      auto read_int = [&](const std::string& short_f, const std::string& long_f, int* out) {
        std::string v;
        if (x == short_f || x == long_f) {
          if (i + 1 >= args.size()) return;
          v = args[i + 1];
        } else if (x.rfind(long_f + "=", 0) == 0) {
          v = x.substr(long_f.size() + 1);
        } else if (x.size() > 2 && x.rfind(short_f, 0) == 0 &&
                   std::isdigit(static_cast<unsigned char>(x[2]))) {
          v = x.substr(2);
        } else {
          return;
        }
        int val = 0;
        const auto r = std::from_chars(v.data(), v.data() + v.size(), val);
        if (r.ec == std::errc() && r.ptr == v.data() + v.size()) *out = val;
      };
      int c = a.check ? 1 : 0;
      read_int("-g", "--ngpus", &a.ngpus);
      read_int("-c", "--check", &c);
      a.check = c != 0;
    }
  }
  if (any_step_flag && a.workload.empty())
    throw Error("--validate, --param and --gpu-memory go with --workload FILE");
  return a;
}

}  // namespace cco::bench
