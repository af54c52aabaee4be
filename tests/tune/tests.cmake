cco_add_test(tune_space SOURCES tune/test_space.cpp LIBS cco.tune_core LABELS tune)
if(CCO_ENABLE_CUDA)
  cco_add_test(gpu_tune GPU SOURCES tune/test_tune_gpu.cpp LIBS cco.tune LABELS "gpu;multigpu")
endif()
