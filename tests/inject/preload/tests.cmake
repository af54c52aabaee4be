# The preload library (src/inject/preload). GPU-free: the hook, the decision, the slot table, the NCCL
# companion streams and the configuration against a fake driver; the built library in real
# processes (exports, no-GPU loading, dlsym's RTLD_NEXT, a fake libcuda end to end, CCO_TRACE with
# a fake libcupti); `cco run`.
# GPU: graph capture, threads, residency and priority probes (tests/inject/preload/gpu/).
# The unit tests need only the core (built without CUDA too, where the headers exist: the
# sanitizer builds run them); the rest needs the shared library.
if(TARGET cco.preload_core)
  foreach(_t hook decide resolve config nccl_streams trace_path order_window blas nvtx_steps)
    cco_add_test(preload_${_t} SOURCES inject/preload/test_${_t}.cpp LIBS cco.preload_core LABELS preload)
  endforeach()
  cco_add_test(preload_window SOURCES inject/preload/test_window.cpp LIBS cco.preload_core LABELS preload)
  cco_add_test(preload_step_clock SOURCES inject/preload/test_step_clock.cpp inject/preload/test_tune_clock.cpp LIBS cco.preload_core LABELS preload)
  # What a step boundary costs as the step file grows (issue 46 item 2): a benchmark, not a test.
  add_executable(cco.bench.step_clock inject/preload/bench_step_clock.cpp)
  target_link_libraries(cco.bench.step_clock PRIVATE cco.preload_core cco.core)
else()
  list(APPEND CCO_TESTS_NOT_BUILT
    "the preload library's GPU-free unit tests (preload_hook, _decide, _resolve, _config, _nccl_streams, _trace_path, _order_window, _blas, _nvtx_steps, _window, _step_clock): they need the CUDA and NCCL headers (cuda.h, nccl.h), not found here")
endif()
if(TARGET cco.preload)

  # A fake libcuda.so.1 (in its own folder) and a program that reaches it as cudart does.
  add_library(cco.test.fake_cuda SHARED inject/preload/fake_cuda.cpp)
  target_link_libraries(cco.test.fake_cuda PRIVATE cco.preload_core)
  set_target_properties(cco.test.fake_cuda PROPERTIES OUTPUT_NAME cuda SOVERSION 1
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakecuda)
  add_executable(cco.test.fake_app inject/preload/fake_app.cpp)
  target_link_libraries(cco.test.fake_app PRIVATE cco.preload_core ${CMAKE_DL_LIBS})
  # The same program with a library that looks the driver up from its constructor, before the
  # preload library's own constructors run.
  add_library(cco.test.early_lookup SHARED inject/preload/early_lookup.cpp)
  target_link_libraries(cco.test.early_lookup PRIVATE ${CMAKE_DL_LIBS})
  add_executable(cco.test.fake_app_early inject/preload/fake_app.cpp)
  target_link_libraries(cco.test.fake_app_early PRIVATE -Wl,--no-as-needed cco.test.early_lookup
                        cco.preload_core ${CMAKE_DL_LIBS})
  # A fake libcupti.so.13 (its own folder) for CCO_TRACE: loads, refuses (busy, old), records.
  set(_fake_cupti_env "")
  if(CCO_CUPTI_INCLUDE_DIR)
    add_library(cco.test.fake_cupti SHARED inject/preload/fake_cupti.cpp)
    target_include_directories(cco.test.fake_cupti SYSTEM PRIVATE ${CCO_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
    target_link_libraries(cco.test.fake_cupti PRIVATE ${CMAKE_DL_LIBS})
    set_target_properties(cco.test.fake_cupti PROPERTIES OUTPUT_NAME cupti SOVERSION 13
      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakecupti)
    set(_fake_cupti_env CCO_FAKE_CUPTI=$<TARGET_FILE_DIR:cco.test.fake_cupti>/libcupti.so.13)
  else()
    list(APPEND CCO_TESTS_NOT_BUILT
      "preload_process's CCO_TRACE checks against a fake libcupti: no CUPTI headers (cupti.h) found")
  endif()
  # A fake libcublas.so.13 (its own folder) and a program linked against it: the SM budget.
  add_library(cco.test.fake_cublas SHARED inject/preload/fake_cublas.cpp)
  target_include_directories(cco.test.fake_cublas SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(cco.test.fake_cublas PROPERTIES OUTPUT_NAME cublas SOVERSION 13
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakecublas)
  add_executable(cco.test.fake_blas_app inject/preload/fake_blas_app.cpp)
  target_include_directories(cco.test.fake_blas_app SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(cco.test.fake_blas_app PRIVATE cco.test.fake_cublas ${CMAKE_DL_LIBS})
  # A program whose steps are NVTX ranges only (the header-only NVTX v3): --step-nvtx.
  add_executable(cco.test.fake_nvtx_app inject/preload/fake_nvtx_app.cpp)
  target_include_directories(cco.test.fake_nvtx_app SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(cco.test.fake_nvtx_app PRIVATE ${CMAKE_DL_LIBS})
  # dlsym's RTLD_NEXT from a library loaded after the preload library.
  add_library(cco.test.probe_a SHARED inject/preload/probe_a.cpp)
  add_library(cco.test.probe_b SHARED inject/preload/probe_b.cpp)
  target_link_libraries(cco.test.probe_a PRIVATE ${CMAKE_DL_LIBS})
  add_executable(cco.test.probe_main inject/preload/probe_main.cpp)
  target_link_libraries(cco.test.probe_main PRIVATE -Wl,--no-as-needed cco.test.probe_a cco.test.probe_b ${CMAKE_DL_LIBS})

  set(_preload_o0_env "")
  if(TARGET cco.test.preload_o0)
    set(_preload_o0_env CCO_PRELOAD_LIB_O0=$<TARGET_FILE:cco.test.preload_o0>)
  endif()
  add_test(NAME cco.test.preload_process
    COMMAND ${CMAKE_COMMAND} -E env
      CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      CCO_FAKE_CUDA_DIR=$<TARGET_FILE_DIR:cco.test.fake_cuda>
      CCO_FAKE_APP=$<TARGET_FILE:cco.test.fake_app>
      CCO_FAKE_APP_EARLY=$<TARGET_FILE:cco.test.fake_app_early>
      CCO_PROBE_MAIN=$<TARGET_FILE:cco.test.probe_main>
      CCO_FAKE_BLAS_APP=$<TARGET_FILE:cco.test.fake_blas_app>
      CCO_FAKE_NVTX_APP=$<TARGET_FILE:cco.test.fake_nvtx_app>
      CCO_BIN=$<TARGET_FILE:cco> ${_fake_cupti_env} ${_preload_o0_env}
      bash ${CMAKE_CURRENT_SOURCE_DIR}/inject/preload/test_preload_process.sh)
  set_tests_properties(cco.test.preload_process PROPERTIES LABELS preload TIMEOUT 120)

  # A fake libnccl.so.2 (its own folder) and a program of two-collective steps linked against it:
  # the measuring configuration nocomm end to end.
  add_library(cco.test.fake_nccl SHARED inject/preload/fake_nccl.cpp)
  target_include_directories(cco.test.fake_nccl SYSTEM PRIVATE ${NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(cco.test.fake_nccl PROPERTIES OUTPUT_NAME nccl SOVERSION 2
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakenccl)
  add_executable(cco.test.fake_nccl_app inject/preload/fake_nccl_app.cpp)
  target_include_directories(cco.test.fake_nccl_app SYSTEM PRIVATE ${NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(cco.test.fake_nccl_app PRIVATE cco.test.fake_nccl ${CMAKE_DL_LIBS})
  add_test(NAME cco.test.preload_nocomm
    COMMAND ${CMAKE_COMMAND} -E env
      CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      CCO_FAKE_CUDA_DIR=$<TARGET_FILE_DIR:cco.test.fake_cuda>
      CCO_FAKE_NCCL_APP=$<TARGET_FILE:cco.test.fake_nccl_app>
      bash ${CMAKE_CURRENT_SOURCE_DIR}/inject/preload/test_nocomm_process.sh)
  set_tests_properties(cco.test.preload_nocomm PROPERTIES LABELS preload TIMEOUT 60)

  # `cco run` through its own driver (the command is wired into cco separately).
  add_executable(cco.test.run_driver inject/preload/run_driver.cpp ${PROJECT_SOURCE_DIR}/src/app/cli/run_cmd.cpp
  ${PROJECT_SOURCE_DIR}/src/app/cli/run_signals.cpp ${PROJECT_SOURCE_DIR}/src/app/cli/run_framework.cpp
  ${PROJECT_SOURCE_DIR}/src/app/cli/run_report.cpp)
  target_link_libraries(cco.test.run_driver PRIVATE cco.core cco.bench_core cco.report cco.warnings ${CMAKE_DL_LIBS})
  add_test(NAME cco.test.preload_run
    COMMAND ${CMAKE_COMMAND} -E env
      CCO_RUN=$<TARGET_FILE:cco.test.run_driver>
      CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      CCO_FAKE_CUDA_DIR=$<TARGET_FILE_DIR:cco.test.fake_cuda>
      CCO_FAKE_APP=$<TARGET_FILE:cco.test.fake_app>
      CCO_FAKE_NVTX_APP=$<TARGET_FILE:cco.test.fake_nvtx_app>
      CCO_BIN=$<TARGET_FILE:cco> ${_fake_cupti_env}
      bash ${CMAKE_CURRENT_SOURCE_DIR}/inject/preload/test_run.sh)
  set_tests_properties(cco.test.preload_run PROPERTIES LABELS "preload;cli" TIMEOUT 120)

  # The Python module against the real library and the fake driver.
  add_test(NAME cco.test.preload_python
    COMMAND ${CMAKE_COMMAND} -E env
      CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      CCO_FAKE_CUDA_DIR=$<TARGET_FILE_DIR:cco.test.fake_cuda>
      CCO_BIN=$<TARGET_FILE:cco> CCO_SOURCE_DIR=${PROJECT_SOURCE_DIR}
      bash ${CMAKE_CURRENT_SOURCE_DIR}/inject/preload/test_python.sh)
  set_tests_properties(cco.test.preload_python PROPERTIES LABELS "preload;python" TIMEOUT 120)

  # GPU: run plainly these check results only; `scripts/gpu.sh preload` runs them under the
  # library with CCO_TEST_EXPECT_* set to check shaping and priority too.
  cco_add_test(gpu_preload GPU SOURCES inject/preload/gpu/test_preload_gpu.cu LIBS cco.runtime LABELS "gpu;preload")
  target_include_directories(cco.test.gpu_preload PRIVATE ${NCCL_INCLUDE_DIR})
  # What the library must change, asserted under ctest: the same binary under `cco run`, with the
  # expectations on (a missing library fails them: the padding and the priority would be absent).
  add_test(NAME cco.test.gpu_preload_shaped
    COMMAND ${CMAKE_COMMAND} -E env CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      $<TARGET_FILE:cco> run --policy shape:2 -- env CCO_TEST_EXPECT_BLOCKS=2
      $<TARGET_FILE:cco.test.gpu_preload> --gtest_filter=-*Priority*:*CommunicationWindow*)
  add_test(NAME cco.test.gpu_preload_priority
    COMMAND ${CMAKE_COMMAND} -E env CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      $<TARGET_FILE:cco> run --policy priority -- env CCO_TEST_EXPECT_PRIORITY=1
      $<TARGET_FILE:cco.test.gpu_preload> --gtest_filter=*Priority*)
  set_tests_properties(cco.test.gpu_preload_shaped cco.test.gpu_preload_priority PROPERTIES
    LABELS "gpu;preload" SKIP_RETURN_CODE 77 TIMEOUT 300)
  # A benchmark, not a test (built here, run by `scripts/gpu.sh window h` and `preload tests`).
  add_executable(cco.bench.launch_rate inject/preload/gpu/bench_launch_rate.cu)
  # The communication window needs the library: the same binary under `cco run` with an @overlap
  # shaping policy (the default, priority, shapes nothing).
  add_test(NAME cco.test.gpu_preload_window
    COMMAND ${CMAKE_COMMAND} -E env CCO_TEST_REQUIRE_WINDOW=1 CCO_PRELOAD_LIB=$<TARGET_FILE:cco.preload>
      $<TARGET_FILE:cco> run --policy shape+priority:model@overlap -- $<TARGET_FILE:cco.test.gpu_preload>
      --gtest_filter=PreloadGpu.CommunicationWindow)
  set_tests_properties(cco.test.gpu_preload_window PROPERTIES LABELS "gpu;preload"
    SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
