# Run plans (src/core/plan): GPU-free.
if(TARGET cco.core)
  cco_add_test(plan SOURCES core/plan/test_plan.cpp LIBS cco.core LABELS plan)
endif()
