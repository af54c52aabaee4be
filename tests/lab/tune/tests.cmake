cco_add_test(tune_space SOURCES lab/tune/test_space.cpp LIBS cco.tune_core cco.core LABELS tune)
# The search both tuners run, driven by a fake subject (GPU-free).
cco_add_test(tune_search SOURCES lab/tune/test_search.cpp LIBS cco.tune_core LABELS tune)
cco_add_test(tune_cache SOURCES lab/tune/test_cache.cpp LIBS cco.tune_core LABELS tune)
if(CCO_ENABLE_CUDA)
  cco_add_test(gpu_tune GPU SOURCES lab/tune/test_tune_gpu.cpp LIBS cco.tune LABELS "gpu;multigpu")
endif()
# cco tune --workload: the step's space, pruning, model default, cache key and plan (GPU-free);
# on GPUs, budget rows of the step bench and a tiny shipped workload tuned and cached.
cco_add_test(tune_workload_space SOURCES lab/tune/test_workload_space.cpp LIBS cco.tune_core cco.core
             LABELS "tune;step")
if(CCO_ENABLE_CUDA)
  cco_add_test(gpu_tune_workload GPU SOURCES lab/tune/test_tune_workload_gpu.cpp LIBS cco.tune cco.core
               LABELS "gpu;multigpu;step")
  target_compile_definitions(cco.test.gpu_tune_workload PRIVATE
                             CCO_WORKLOADS_DIR="${PROJECT_SOURCE_DIR}/examples/workloads")
endif()
if(CCO_ENABLE_CUDA)
  # Each control has the effect it claims, seen in a CUPTI trace (NCCL CTAs, cuBLASLt SM target,
  # CTA policies and where NCCL ran them; the policy checks need one GPU, the rest two).
  cco_add_test(gpu_controls GPU SOURCES lab/tune/test_controls_gpu.cpp LIBS cco.bench LABELS "gpu;multigpu")
endif()
