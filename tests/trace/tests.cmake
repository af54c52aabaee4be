# Traces and their analysis (GPU-free), and CUPTI tracing of real kernels (label gpu). The SVG
# pictures and results are in tests/report, `cco report` itself in tests/cli.
cco_add_test(trace_model SOURCES trace/test_trace_model.cpp LIBS cco.trace_core LABELS trace)
# The per-step diagnosis on hand-built traces with known causes.
cco_add_test(trace_diagnosis SOURCES trace/test_diagnosis.cpp LIBS cco.trace_core LABELS trace)
if(CCO_ENABLE_CUDA AND TARGET cco.trace)
  cco_add_test(gpu_trace GPU SOURCES trace/test_trace_gpu.cpp trace/trace_kernels.cu LIBS cco.trace LABELS gpu)
endif()
