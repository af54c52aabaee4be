# src/app/report: SVG timelines and sweep charts, results read, printed, drawn and compared (GPU-free).
cco_add_test(trace_report SOURCES app/report/test_report.cpp LIBS cco.report LABELS "trace;report")
target_compile_definitions(cco.test.trace_report PRIVATE
  CCO_BENCH_EXAMPLE="${PROJECT_SOURCE_DIR}/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json")
# Step and tune results read, printed, drawn and compared (hand-made files in tests/fixtures/report).
cco_add_test(trace_report_results SOURCES app/report/test_report_results.cpp LIBS cco.report LABELS "trace;report")
target_compile_definitions(cco.test.trace_report_results PRIVATE CCO_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The Python module's readers against cco report's: the schema names and rule, and the same rows
# from the same fixtures (python/ccoverlap, GPU-free).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME cco.test.report_python_readers
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/app/report/test_python_readers.py
                   $<TARGET_FILE:cco> ${PROJECT_SOURCE_DIR})
  set_tests_properties(cco.test.report_python_readers PROPERTIES LABELS "report;python" TIMEOUT 120)
else()
  list(APPEND CCO_TESTS_NOT_BUILT "cco.test.report_python_readers: no python3 found")
endif()
# Writer -> reader per result format (bench, step bench, a tune's plan): built with the writers'
# own code (cco.bench_core, cco.tune_core), read by cco report's readers, every field compared.
cco_add_test(report_roundtrip SOURCES app/report/test_result_roundtrip.cpp
             LIBS cco.report cco.tune_core LABELS "report;bench;tune")
