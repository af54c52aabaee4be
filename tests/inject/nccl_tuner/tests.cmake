# The NCCL tuner plugin (src/inject/nccl_tuner, docs/TUNER.md). GPU-free, and without NCCL: the decision, the
# per-communicator context built from the environment, the built library dlopen'ed and driven
# through NCCL's tuner ABI with a fake logger and cost table, the library file's exports and
# dependencies. `cco run`'s tuner cases are in tests/inject/preload/test_run.sh (given the library here).
if(TARGET cco.tuner)
  cco_add_test(tuner_decide SOURCES inject/nccl_tuner/test_decide.cpp LIBS cco.tuner_core LABELS tuner)
  cco_add_test(tuner_context SOURCES inject/nccl_tuner/test_context.cpp LIBS cco.tuner_core LABELS tuner)

  # Only the ABI header: the library is reached through dlopen, as NCCL reaches it.
  cco_add_test(tuner_plugin SOURCES inject/nccl_tuner/test_plugin.cpp LABELS tuner)
  target_include_directories(cco.test.tuner_plugin PRIVATE ${CCO_SOURCE_ROOTS})
  target_link_libraries(cco.test.tuner_plugin PRIVATE ${CMAKE_DL_LIBS})
  # It plays the preload library's cco_config_index for the plugin's dlsym(RTLD_DEFAULT, ...).
  set_target_properties(cco.test.tuner_plugin PROPERTIES ENABLE_EXPORTS ON)
  add_dependencies(cco.test.tuner_plugin cco.tuner)
  set_tests_properties(cco.test.tuner_plugin PROPERTIES ENVIRONMENT "CCO_TUNER_LIB=$<TARGET_FILE:cco.tuner>")

  add_test(NAME cco.test.tuner_exports
    COMMAND ${CMAKE_COMMAND} -E env CCO_TUNER_LIB=$<TARGET_FILE:cco.tuner>
      bash ${CMAKE_CURRENT_SOURCE_DIR}/inject/nccl_tuner/test_exports.sh)
  set_tests_properties(cco.test.tuner_exports PROPERTIES LABELS tuner TIMEOUT 60)

  # `cco run` finds the plugin next to the preload library; name it for its test anyway.
  if(TEST cco.test.preload_run)
    set_property(TEST cco.test.preload_run APPEND PROPERTY ENVIRONMENT "CCO_TUNER_LIB=$<TARGET_FILE:cco.tuner>")
  endif()
endif()
