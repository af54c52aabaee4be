# src/app/report: SVG timelines and sweep charts, results read, printed, drawn and compared (GPU-free).
cco_add_test(trace_report SOURCES app/report/test_report.cpp LIBS cco.report LABELS "trace;report")
target_compile_definitions(cco.test.trace_report PRIVATE
  CCO_BENCH_EXAMPLE="${PROJECT_SOURCE_DIR}/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json")
# Step and tune results read, printed, drawn and compared (hand-made files in tests/fixtures/report).
cco_add_test(trace_report_results SOURCES app/report/test_report_results.cpp LIBS cco.report LABELS "trace;report")
target_compile_definitions(cco.test.trace_report_results PRIVATE CCO_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
