# cco's Python start-up hook against a fake PyTorch (GPU-free); with the preload library, also
# `cco run --framework` end to end.
set(_startup_env CCO_STARTUP_DIR=${PROJECT_BINARY_DIR}/src/inject/startup CCO_BIN=$<TARGET_FILE:cco>
    CCO_SOURCE_DIR=${PROJECT_SOURCE_DIR})
if(TARGET cco.preload AND TARGET cco.test.fake_cuda)
  list(APPEND _startup_env CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
       CCO_FAKE_CUDA_DIR=$<TARGET_FILE_DIR:cco.test.fake_cuda>)
endif()
add_test(NAME cco.test.startup_hook
  COMMAND ${CMAKE_COMMAND} -E env ${_startup_env}
    bash ${CMAKE_CURRENT_SOURCE_DIR}/inject/startup/test_startup.sh)
set_tests_properties(cco.test.startup_hook PROPERTIES LABELS "python;cli" TIMEOUT 120)
