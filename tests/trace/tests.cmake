# Traces, their analysis, the SVG pictures and `cco report` (GPU-free), and CUPTI tracing of
# real kernels (label gpu).
cco_add_test(trace_model SOURCES trace/test_trace_model.cpp LIBS cco.trace_core LABELS trace)
# The per-step diagnosis on hand-built traces with known causes.
cco_add_test(trace_diagnosis SOURCES trace/test_diagnosis.cpp LIBS cco.trace_core LABELS trace)
cco_add_test(trace_report SOURCES trace/test_report.cpp LIBS cco.report LABELS trace)
target_compile_definitions(cco.test.trace_report PRIVATE
  CCO_BENCH_EXAMPLE="${PROJECT_SOURCE_DIR}/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json")
# Step and tune results read, printed, drawn and compared (hand-made files in tests/fixtures/report).
cco_add_test(trace_report_results SOURCES trace/test_report_results.cpp LIBS cco.report LABELS trace)
target_compile_definitions(cco.test.trace_report_results PRIVATE CCO_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# report_main, compiled into its own test (the cco binary wires it in src/cli).
cco_add_test(trace_report_cmd SOURCES trace/test_report_cmd.cpp ${PROJECT_SOURCE_DIR}/src/cli/report_cmd.cpp
             LIBS cco.report cco.bench_core LABELS trace)
target_compile_definitions(cco.test.trace_report_cmd PRIVATE
  CCO_BENCH_EXAMPLE="${PROJECT_SOURCE_DIR}/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json")
find_package(ZLIB QUIET)  # the gzip test writes its .gz with zlib
if(ZLIB_FOUND)
  target_link_libraries(cco.test.trace_report_cmd PRIVATE ZLIB::ZLIB)
endif()
if(CCO_ENABLE_CUDA AND TARGET cco.trace)
  cco_add_test(gpu_trace GPU SOURCES trace/test_trace_gpu.cpp trace/trace_kernels.cu LIBS cco.trace LABELS gpu)
endif()
