# cco tune --workload's command line, run as users run it (GPU-free; the harness of test_cli.sh).
add_test(NAME cco.test.cli_tune_workload
         COMMAND ${CMAKE_COMMAND} -E env CCO_BIN=$<TARGET_FILE:cco>
                 bash ${CMAKE_CURRENT_SOURCE_DIR}/app/cli/test_tune_workload_cli.sh)
set_tests_properties(cco.test.cli_tune_workload PROPERTIES LABELS cli TIMEOUT 300)

# cco without NCCL or cuBLASLt: not linked, loaded when a command needs them (GPU-free).
if(CCO_ENABLE_CUDA)
  add_test(NAME cco.test.cli_lazy_libs
           COMMAND ${CMAKE_COMMAND} -E env CCO_BIN=$<TARGET_FILE:cco>
                   bash ${CMAKE_CURRENT_SOURCE_DIR}/app/cli/test_lazy_libs.sh)
  set_tests_properties(cco.test.cli_lazy_libs PROPERTIES LABELS cli TIMEOUT 120)
endif()

# report_main, compiled into its own test (the cco binary wires it in src/app/cli).
cco_add_test(trace_report_cmd SOURCES app/cli/test_report_cmd.cpp ${PROJECT_SOURCE_DIR}/src/app/cli/report_cmd.cpp
             ${PROJECT_SOURCE_DIR}/src/app/cli/report_args.cpp
             LIBS cco.report cco.bench_core LABELS "trace;cli")
target_compile_definitions(cco.test.trace_report_cmd PRIVATE
  CCO_BENCH_EXAMPLE="${PROJECT_SOURCE_DIR}/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json")
find_package(ZLIB QUIET)  # the gzip test writes its .gz with zlib
if(ZLIB_FOUND)
  target_link_libraries(cco.test.trace_report_cmd PRIVATE ZLIB::ZLIB)
endif()
