# Training-step workloads (issue 8). GPU-free: the workload-file model (parsing, validation and
# its error positions, ordering, T_ideal, layout, every shipped workload). GPU-labelled: every
# shipped workload measured with -c on 1 and 2 GPUs, and the executor's own checks.
cco_add_test(step_model SOURCES step/test_step_model.cpp LIBS cco.workload cco.bench_core LABELS "workload;step")
target_compile_definitions(cco.test.step_model PRIVATE CCO_WORKLOADS_DIR="${PROJECT_SOURCE_DIR}/workloads"
  CCO_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

if(CCO_ENABLE_CUDA)
  # Until src/bench/CMakeLists.txt lists step_bench.cpp in cco.bench, the tests compile it.
  set(_cco_step_bench_src "")
  get_target_property(_cco_bench_srcs cco.bench SOURCES)
  if(NOT "${_cco_bench_srcs}" MATCHES "step_bench")
    set(_cco_step_bench_src ${PROJECT_SOURCE_DIR}/src/bench/step_bench.cpp)
  endif()
  # The report renderings on a made-up report: runs without a GPU (no label gpu).
  cco_add_test(step_report SOURCES step/test_step_report.cpp ${_cco_step_bench_src} LIBS cco.bench LABELS step)
  cco_add_test(gpu_step GPU SOURCES step/test_step_gpu.cpp ${_cco_step_bench_src} LIBS cco.bench
               LABELS "gpu;multigpu;step")
  target_compile_definitions(cco.test.gpu_step PRIVATE CCO_WORKLOADS_DIR="${PROJECT_SOURCE_DIR}/workloads")
endif()
