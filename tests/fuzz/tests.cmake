# libFuzzer targets for the parsers of outside input (issue 9; docs/FUZZING.md). Nothing here
# unless CCO_ENABLE_FUZZ is ON and the compiler is clang; scripts/fuzz.sh configures such a build
# (build-fuzz, with CCO_ENABLE_ASAN and CCO_ENABLE_UBSAN) and runs every target for a bounded time.
#
# Each target tests/fuzz/fuzz_<name>.cpp builds cco.fuzz.<name> (build-fuzz/fuzz/fuzz_<name>) and
# a CTest test cco.fuzz.replay.<name> (label fuzz) that runs it once over its seed corpus
# (tests/fuzz/corpus/<name>/) and every saved reproducer (tests/fuzz/regressions/<name>/): a
# bug the fuzzers found stays fixed.
option(CCO_ENABLE_FUZZ "Build the libFuzzer targets (clang only; see scripts/fuzz.sh)" OFF)
if(NOT CCO_ENABLE_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(WARNING "CCO_ENABLE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: no fuzz targets "
                  "(configure with -DCMAKE_CXX_COMPILER=clang++, or run scripts/fuzz.sh)")
  return()
endif()
if(NOT CCO_ENABLE_ASAN AND NOT CCO_ENABLE_UBSAN)
  message(STATUS "ccoverlap fuzz: no sanitizer on (CCO_ENABLE_ASAN/CCO_ENABLE_UBSAN): only crashes are caught")
endif()

# Coverage feedback from the code under test: every library of ours built in this tree is
# instrumented (the libFuzzer runtime itself is linked only into the fuzz targets).
target_compile_options(cco.warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)

set(_cco_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz/replay-artifacts)

# cco_add_fuzz(<name> LIBS <targets...> [SOURCES <extra sources>])
function(cco_add_fuzz name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
  set(target cco.fuzz.${name})
  add_executable(${target} ${_cco_fuzz_dir}/fuzz_${name}.cpp ${F_SOURCES})
  target_link_libraries(${target} PRIVATE ${F_LIBS} cco.warnings)
  target_compile_options(${target} PRIVATE -fsanitize=fuzzer)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  set_target_properties(${target} PROPERTIES OUTPUT_NAME fuzz_${name}
                        RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  set(dirs ${_cco_fuzz_dir}/corpus/${name})
  if(EXISTS ${_cco_fuzz_dir}/regressions/${name})
    list(APPEND dirs ${_cco_fuzz_dir}/regressions/${name})
  endif()
  # -runs=0: execute the given inputs once, mutate nothing; a failing input is copied to
  # fuzz/replay-artifacts/ (not next to the test).
  add_test(NAME cco.fuzz.replay.${name}
           COMMAND ${target} -runs=0 -artifact_prefix=${CMAKE_BINARY_DIR}/fuzz/replay-artifacts/${name}- ${dirs})
  set_tests_properties(cco.fuzz.replay.${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endfunction()

cco_add_fuzz(plan LIBS cco.core)
cco_add_fuzz(workload LIBS cco.core)
cco_add_fuzz(trace LIBS cco.report cco.core)
cco_add_fuzz(bench_json LIBS cco.report)
# src/inject/preload is built only with CUDA; its configuration code is plain C++ over cco.core.
cco_add_fuzz(preload_env LIBS cco.core SOURCES ${PROJECT_SOURCE_DIR}/src/inject/common/config.cpp)
cco_add_fuzz(parse_bytes LIBS cco.core)
cco_add_fuzz(bench_options LIBS cco.bench_core)
cco_add_fuzz(tune_file LIBS cco.core)
cco_add_fuzz(compare_file LIBS cco.core cco.report)
cco_add_fuzz(int_list LIBS cco.bench_core)
