# Traces and their analysis (GPU-free), and CUPTI tracing of real kernels (label gpu). The SVG
# pictures and results are in tests/app/report, `cco report` itself in tests/cli.
cco_add_test(trace_model SOURCES core/trace/test_trace_model.cpp core/trace/test_trace_format.cpp core/trace/test_trace_fast_read.cpp core/trace/test_trace_merge.cpp LIBS cco.core LABELS trace)
# The per-step diagnosis on hand-built traces with known causes (compute slowed by cause too).
cco_add_test(trace_diagnosis SOURCES core/trace/test_diagnosis.cpp core/trace/test_step_find.cpp core/trace/test_headline.cpp core/trace/test_slowdown.cpp core/trace/test_levers.cpp core/trace/test_regather.cpp LIBS cco.core cco.report LABELS trace)
if(CCO_ENABLE_CUDA AND TARGET cco.trace)
  cco_add_test(gpu_trace GPU SOURCES core/trace/test_trace_gpu.cpp core/trace/trace_kernels.cu LIBS cco.trace LABELS gpu)
endif()
# What reading and diagnosing a long trace costs (issue 46 item 1): a benchmark, not a test.
add_executable(cco.bench.trace_scale core/trace/bench_trace_scale.cpp)
target_link_libraries(cco.bench.trace_scale PRIVATE cco.core cco.warnings)
