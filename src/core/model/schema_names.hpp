// Every schema name cco writes or reads ("schema": "ccoverlap.KIND"), and the names of earlier
// versions still read, spelled here once: tests/repo/check_tree.py refuses a second spelling in
// src/ (as it does for CCO_* names in env_names.hpp). Beside each, where its writer and reader
// live. No include: the preload library and the tuner plugin take these too.
#pragma once

namespace cco::model {

/// The version every file cco writes carries; a reader takes major version 1.
inline constexpr const char* kSchemaVersion = "1.0.0";

inline constexpr const char* kBenchSchema = "ccoverlap.bench";             ///< results/bench (written by bench/report, read by report/sweep)
inline constexpr const char* kStepBenchSchema = "ccoverlap.step_bench";    ///< bench/workload_report, report/results
inline constexpr const char* kPlanSchema = "ccoverlap.plan";               ///< plan/plan (+ "tuning": tune/space, tune/workload_space; report/results)
inline constexpr const char* kFootprintSchema = "ccoverlap.footprint";     ///< cli/plan_cmd, report/written_files
inline constexpr const char* kWorkloadSchema = "ccoverlap.workload";       ///< workload/
inline constexpr const char* kTraceSchema = "ccoverlap.trace";             ///< trace/format
inline constexpr const char* kTraceAnalysisSchema = "ccoverlap.trace_analysis";  ///< trace/analysis
inline constexpr const char* kStepDiagnosisSchema = "ccoverlap.step_diagnosis";  ///< trace/diagnosis
inline constexpr const char* kStepsSchema = "ccoverlap.steps";             ///< steps/record
inline constexpr const char* kStepsSchemaLegacy = "cco.steps/1";           ///< its earlier name, read
inline constexpr const char* kRunCompareSchema = "ccoverlap.run_compare";  ///< steps/compare
inline constexpr const char* kRunCompareSchemaLegacy = "cco.compare/1";    ///< its earlier name, read
inline constexpr const char* kTuneDecisionSchema = "ccoverlap.tune_decision";  ///< steps/search
inline constexpr const char* kTuneDecisionSchemaLegacy = "cco.tune/1";     ///< its earlier name, read
inline constexpr const char* kCompareSchema = "ccoverlap.compare";         ///< report/compare
inline constexpr const char* kSweepReportSchema = "ccoverlap.sweep_report";    ///< report/sweep
inline constexpr const char* kResultReportSchema = "ccoverlap.result_report";  ///< report/results
inline constexpr const char* kDoctorSchema = "ccoverlap.doctor";           ///< cli/doctor
inline constexpr const char* kInfoSchema = "ccoverlap.info";               ///< cli/info_cmd

}  // namespace cco::model
