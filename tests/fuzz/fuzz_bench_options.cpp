// `cco bench` arguments (cco::bench::parse_options), then what the runner derives from them
// before touching a GPU: the sizes (-b -e -f), the rows (expand_rows) and the options as the
// JSON report records them (argv and config, written with --json after the run). The input is
// the arguments after "bench", one per line. Contract: parse_options returns or throws
// UsageError; sizes() and expand_rows() (which may throw UsageError) stay bounded, and the
// report's JSON can be written, for any options it accepted.
#include "bench/options.hpp"
#include "bench/report.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  std::vector<std::string> args = {"bench"};
  if (size > 0)
    for (auto& a : fuzz::split(fuzz::as_text(data, size), '\n')) args.push_back(std::move(a));
  bench::Options o;
  try {
    o = bench::parse_options(args);
  } catch (const bench::UsageError&) {
    return 0;
  }
  const auto s = bench::sizes(o);
  if (s.empty()) fuzz::violated("no collective size to run");
  if (s.size() > 100000) fuzz::violated("more than 100000 collective sizes");
  for (const bool shapeable : {false, true})
    for (const int natural_bps : {1, 4, 32}) {
      std::vector<std::string> notes;
      try {
        for (const auto& r : bench::expand_rows(o, shapeable, natural_bps, &notes)) (void)r.label();
      } catch (const bench::UsageError&) {
      }
    }
  bench::Report rep;
  rep.argv = o.argv;
  rep.config = bench::options_json(o);
  (void)bench::json_text(bench::to_json(rep));  // as cco bench --json writes it
  return 0;
}
