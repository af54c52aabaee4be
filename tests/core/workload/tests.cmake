# Training-step workloads (issue 8). GPU-free: the workload-file model (parsing, validation and
# its error positions, ordering, T_ideal, layout, every shipped workload). GPU-labelled: every
# shipped workload measured with -c on 1 and 2 GPUs, and the executor's own checks.
cco_add_test(step_model SOURCES core/workload/test_step_model.cpp LIBS cco.core cco.bench_core LABELS "workload;step")
target_compile_definitions(cco.test.step_model PRIVATE CCO_WORKLOADS_DIR="${PROJECT_SOURCE_DIR}/examples/workloads"
  CCO_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# The report renderings on a made-up report (bench core): no GPU, no CUDA.
cco_add_test(step_report SOURCES core/workload/test_step_report.cpp LIBS cco.bench_core LABELS step)

if(CCO_ENABLE_CUDA)
  cco_add_test(gpu_step GPU SOURCES core/workload/test_step_gpu.cpp LIBS cco.bench
               LABELS "gpu;multigpu;step")
  target_compile_definitions(cco.test.gpu_step PRIVATE CCO_WORKLOADS_DIR="${PROJECT_SOURCE_DIR}/examples/workloads")
endif()
