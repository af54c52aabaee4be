# The steps of a real program (src/core/steps): GPU-free.
if(TARGET cco.core)
  cco_add_test(steps SOURCES core/steps/test_period.cpp core/steps/test_paired.cpp core/steps/test_record.cpp core/steps/test_search.cpp
                     core/steps/test_nocomm.cpp core/steps/test_whole_runs.cpp
               LIBS cco.core LABELS steps)
endif()
