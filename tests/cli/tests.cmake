# cco tune --workload's command line, run as users run it (GPU-free; the harness of test_cli.sh).
add_test(NAME cco.test.cli_tune_workload
         COMMAND ${CMAKE_COMMAND} -E env CCO_BIN=$<TARGET_FILE:cco>
                 bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_tune_workload_cli.sh)
set_tests_properties(cco.test.cli_tune_workload PROPERTIES LABELS cli TIMEOUT 300)

# cco without NCCL or cuBLASLt: not linked, loaded when a command needs them (GPU-free).
if(CCO_ENABLE_CUDA)
  add_test(NAME cco.test.cli_lazy_libs
           COMMAND ${CMAKE_COMMAND} -E env CCO_BIN=$<TARGET_FILE:cco>
                   bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_lazy_libs.sh)
  set_tests_properties(cco.test.cli_lazy_libs PROPERTIES LABELS cli TIMEOUT 120)
endif()
