# The steps of a real program (src/steps): GPU-free.
if(TARGET cco.steps)
  cco_add_test(steps SOURCES steps/test_period.cpp steps/test_paired.cpp steps/test_record.cpp steps/test_search.cpp
               LIBS cco.steps LABELS steps)
endif()
