cco_add_test(tune_space SOURCES tune/test_space.cpp LIBS cco.tune_core LABELS tune)
