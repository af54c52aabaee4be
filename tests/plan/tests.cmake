# Run plans (src/plan): GPU-free.
if(TARGET cco.plan)
  cco_add_test(plan SOURCES plan/test_plan.cpp LIBS cco.plan LABELS plan)
endif()
