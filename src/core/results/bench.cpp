#include "results/bench.hpp"

#include <cmath>

#include "model/controls.hpp"
#include "model/json_number.hpp"
#include "model/schema_names.hpp"
#include "results/fields.hpp"

namespace cco::results {

using nlohmann::json;
using namespace fields;

namespace {

// The format's field names, spelled once for the writer and the reader.
namespace f {
constexpr const char* kSchemaField = "schema";
constexpr const char* kSchemaVersion = "schema_version";
constexpr const char* kArgv = "argv";
constexpr const char* kDate = "date";
constexpr const char* kHost = "host";
constexpr const char* kBootstrap = "bootstrap";
constexpr const char* kNranks = "nranks";
constexpr const char* kVersions = "versions";
constexpr const char* kDevices = "devices";
constexpr const char* kDeviceName = "name";
constexpr const char* kConfig = "config";
constexpr const char* kWorkload = "workload";
constexpr const char* kCompute = "compute";
constexpr const char* kCollective = "collective";
constexpr const char* kDatatype = "datatype";
constexpr const char* kOp = "op";
constexpr const char* kNotes = "notes";
constexpr const char* kInPlace = "in_place";
constexpr const char* kMeasured = "measured";
constexpr const char* kWhy = "why";
constexpr const char* kResults = "results";
// A row.
constexpr const char* kSizeBytes = "size_bytes";
constexpr const char* kCount = "count";
constexpr const char* kDtype = "dtype";
constexpr const char* kMode = "mode";
// The controls' fields are the control table's (model/controls.hpp).
constexpr const char* kTargetBlocksPerSm = model::json_field(model::Control::Shaping);
constexpr const char* kPadBytes = model::json_field(model::Control::Pad);
constexpr const char* kBlocksPerSm = "blocks_per_sm";
constexpr const char* kTComp = "t_comp";
constexpr const char* kTComm = "t_comm";
constexpr const char* kTSeq = "t_seq";
constexpr const char* kT = "t";
constexpr const char* kTCompPart = "t_comp_part";
constexpr const char* kTCommPart = "t_comm_part";
constexpr const char* kTCompAlone = "t_comp_alone";
constexpr const char* kTCommAlone = "t_comm_alone";
constexpr const char* kCommPath = "comm_path";
constexpr const char* kLabel = "label";
constexpr const char* kTIdealUs = "t_ideal_us";
constexpr const char* kTMemUs = "t_mem_us";
constexpr const char* kReduction = "reduction";
constexpr const char* kIdealReduction = "ideal_reduction";
constexpr const char* kEfficiency = "efficiency";
constexpr const char* kEfficiencyBest = "efficiency_best";
constexpr const char* kCompSlowdown = "comp_slowdown";
constexpr const char* kCommSlowdown = "comm_slowdown";
constexpr const char* kBestPartsUs = "best_parts_us";
constexpr const char* kBestCompute = "compute";
constexpr const char* kBestCollective = "collective";
constexpr const char* kTflops = "tflops";
constexpr const char* kAlgbwGbps = "algbw_gbps";
constexpr const char* kBusbwGbps = "busbw_gbps";
constexpr const char* kChecked = "checked";
constexpr const char* kWrong = "wrong";
constexpr const char* kCommAlgbwGbps = "comm_algbw_gbps";
constexpr const char* kCommBusbwGbps = "comm_busbw_gbps";
constexpr const char* kTCommInPlace = "t_comm_in_place";
constexpr const char* kInPlaceAlgbwGbps = "in_place_algbw_gbps";
constexpr const char* kInPlaceBusbwGbps = "in_place_busbw_gbps";
constexpr const char* kInPlaceWrong = "in_place_wrong";
// A timing object.
constexpr const char* kMedianUs = "median_us";
constexpr const char* kP25Us = "p25_us";
constexpr const char* kP75Us = "p75_us";
constexpr const char* kMinUs = "min_us";
constexpr const char* kMaxUs = "max_us";
constexpr const char* kSamplesUs = "samples_us";
}  // namespace f

json timing_json(const BenchTiming& t) {
  json j;
  j[f::kMedianUs] = model::number_or_null(t.median_us);
  j[f::kP25Us] = model::number_or_null(t.p25_us);
  j[f::kP75Us] = model::number_or_null(t.p75_us);
  j[f::kMinUs] = model::number_or_null(t.min_us);
  j[f::kMaxUs] = model::number_or_null(t.max_us);
  j[f::kSamplesUs] = t.samples_us;
  return j;
}

json row_json(const BenchRow& row) {
  json x;
  x[f::kSizeBytes] = row.size_bytes;
  x[f::kCount] = row.count;
  x[f::kDtype] = row.dtype;
  x[f::kMode] = row.mode;
  x[f::kTargetBlocksPerSm] = row.target_blocks_per_sm;
  x[f::kPadBytes] = row.pad_bytes;
  x[f::kBlocksPerSm] = row.blocks_per_sm;
  x[f::kTComp] = timing_json(row.t_comp);
  x[f::kTComm] = timing_json(row.t_comm);
  x[f::kTSeq] = timing_json(row.t_seq);
  x[f::kT] = timing_json(row.t);
  x[f::kTCompPart] = timing_json(row.t_comp_part);
  x[f::kTCommPart] = timing_json(row.t_comm_part);
  x[f::kTCompAlone] = timing_json(row.t_comp_alone);
  x[f::kTCommAlone] = timing_json(row.t_comm_alone);
  x[f::kCommPath] = row.comm_path;
  x[f::kLabel] = row.label;
  x[f::kTIdealUs] = model::number_or_null(row.t_ideal_us);
  x[f::kTMemUs] = row.t_mem_us > 0 ? json(row.t_mem_us) : json();
  x[f::kReduction] = model::number_or_null(row.reduction);
  x[f::kIdealReduction] = model::number_or_null(row.ideal_reduction);
  x[f::kEfficiency] = model::number_or_null(row.efficiency);
  x[f::kEfficiencyBest] = model::number_or_null(row.efficiency_best);
  x[f::kCompSlowdown] = model::number_or_null(row.comp_slowdown);
  x[f::kCommSlowdown] = model::number_or_null(row.comm_slowdown);
  x[f::kBestPartsUs] = {{f::kBestCompute, row.best_compute_us}, {f::kBestCollective, row.best_collective_us}};
  x[f::kTflops] = model::number_or_null(row.tflops);
  x[f::kAlgbwGbps] = model::number_or_null(row.algbw_gbps);
  x[f::kBusbwGbps] = model::number_or_null(row.busbw_gbps);
  x[f::kChecked] = row.checked;
  x[f::kWrong] = row.wrong;
  if (row.in_place) {  // the collective alone, out of place (T_comm) and in place
    x[f::kCommAlgbwGbps] = model::number_or_null(row.comm_algbw_gbps);
    x[f::kCommBusbwGbps] = model::number_or_null(row.comm_busbw_gbps);
    x[f::kTCommInPlace] = timing_json(row.t_comm_in_place);
    x[f::kInPlaceAlgbwGbps] = model::number_or_null(row.in_place_algbw_gbps);
    x[f::kInPlaceBusbwGbps] = model::number_or_null(row.in_place_busbw_gbps);
    x[f::kInPlaceWrong] = row.in_place_wrong;
  }
  for (const auto& [name, value] : row.controls.items()) x[name] = value;
  return x;
}

// A number, or NaN for anything else (the in-place fields are read leniently).
double lenient(const json& o, const char* key, const char* field = nullptr) {
  auto it = o.find(key);
  if (it == o.end()) return kNaN;
  if (field) {
    if (!it->is_object()) return kNaN;
    return lenient(*it, field);
  }
  return it->is_number() ? it->get<double>() : kNaN;
}

BenchRow read_row(const json& r, const std::string& src, const std::string& w) {
  if (!r.is_object()) fail(src, w + ": not an object");
  BenchRow row;
  row.size_bytes = int_of(r, f::kSizeBytes, src, w, true);
  row.mode = str_of(r, f::kMode);
  if (row.mode.empty()) fail(src, w + ": missing \"" + f::kMode + "\"");
  row.target_blocks_per_sm = static_cast<int>(int_of(r, f::kTargetBlocksPerSm, src, w, false));
  row.pad_bytes = int_of(r, f::kPadBytes, src, w, false);
  row.blocks_per_sm = static_cast<int>(int_of(r, f::kBlocksPerSm, src, w, false));
  if (row.target_blocks_per_sm < 0 || row.pad_bytes < 0 || row.blocks_per_sm < 0)
    fail(src, w + ": " + f::kTargetBlocksPerSm + ", " + f::kPadBytes + " and " + f::kBlocksPerSm +
                  " must not be negative");
  row.t.median_us = median_of(r, f::kT, src, w, f::kMedianUs);
  row.t.p25_us = median_of(r, f::kT, src, w, f::kP25Us);
  row.t.p75_us = median_of(r, f::kT, src, w, f::kP75Us);
  row.t_seq.median_us = median_of(r, f::kTSeq, src, w, f::kMedianUs);
  row.t_comp.median_us = median_of(r, f::kTComp, src, w, f::kMedianUs);
  row.t_comm.median_us = median_of(r, f::kTComm, src, w, f::kMedianUs);
  row.t_ideal_us = num_or_nan(r, f::kTIdealUs, src, w);
  row.efficiency = num_or_nan(r, f::kEfficiency, src, w);
  row.reduction = num_or_nan(r, f::kReduction, src, w);
  row.efficiency_best = num_or_nan(r, f::kEfficiencyBest, src, w);
  row.label = str_of(r, f::kLabel);
  if (std::isnan(row.t.median_us))
    fail(src, w + ": the row has no time (\"" + f::kT + "\".\"" + f::kMedianUs + "\" is null)");
  if (row.t.median_us < 0) fail(src, w + ": negative time or padding");  // the padding: above
  row.dtype = str_of(r, f::kDtype);
  row.in_place = r.contains(f::kTCommInPlace);
  row.t_comm_in_place.median_us = lenient(r, f::kTCommInPlace, f::kMedianUs);
  row.comm_busbw_gbps = lenient(r, f::kCommBusbwGbps);
  row.in_place_busbw_gbps = lenient(r, f::kInPlaceBusbwGbps);
  return row;
}

}  // namespace

json write_bench(const BenchResult& r) {
  json j;
  j[f::kSchemaField] = model::kBenchSchema;
  j[f::kSchemaVersion] = model::kSchemaVersion;
  j[f::kArgv] = r.argv;
  j[f::kDate] = r.date;
  j[f::kHost] = r.host;
  j[f::kBootstrap] = r.bootstrap;
  j[f::kNranks] = r.nranks;
  j[f::kVersions] = r.versions;
  j[f::kDevices] = r.devices;
  j[f::kConfig] = r.config;
  j[f::kWorkload] = {{f::kCompute, r.compute},
                     {f::kCollective, r.collective},
                     {f::kDatatype, r.datatype},
                     {f::kOp, r.op}};
  j[f::kNotes] = r.notes;
  if (!r.in_place.empty())
    j[f::kInPlace] = r.in_place == f::kMeasured ? json{{f::kMeasured, true}}
                                                : json{{f::kMeasured, false}, {f::kWhy, r.in_place}};
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  j[f::kResults] = rows;
  return j;
}

bool is_bench(const json& j) {
  return j.is_object() && str_of(j, f::kSchemaField) == model::kBenchSchema;
}

BenchResult read_bench(const json& j, const std::string& src) {
  check_schema(j, src, model::kBenchSchema, "bench result", "bench");
  BenchResult s;
  s.date = str_of(j, f::kDate);
  if (auto w = j.find(f::kWorkload); w != j.end() && w->is_object()) {
    s.compute = str_of(*w, f::kCompute);
    s.collective = str_of(*w, f::kCollective);
    s.datatype = str_of(*w, f::kDatatype);
  }
  if (auto n = j.find(f::kNranks); n != j.end() && n->is_number_integer()) s.nranks = n->get<int>();
  // The devices as far as readers use them: each object's name.
  if (auto d = j.find(f::kDevices); d != j.end() && d->is_array())
    for (const auto& x : *d)
      s.devices.push_back(x.is_object() ? json{{f::kDeviceName, str_of(x, f::kDeviceName)}} : json());
  auto res = j.find(f::kResults);
  if (res == j.end()) fail(src, std::string("missing \"") + f::kResults + "\"");
  if (!res->is_array()) fail(src, std::string("\"") + f::kResults + "\" is not an array");
  if (res->empty()) fail(src, std::string("\"") + f::kResults + "\" is empty: nothing to report");
  for (std::size_t i = 0; i < res->size(); ++i)
    s.rows.push_back(read_row((*res)[i], src, std::string(f::kResults) + "[" + std::to_string(i) + "]"));
  return s;
}

std::string first_device_name(const BenchResult& r) {
  return !r.devices.empty() && r.devices[0].is_object() ? str_of(r.devices[0], f::kDeviceName) : std::string();
}

}  // namespace cco::results
