# Bootstrap tests (GPU-free): threads, launcher environments and the factory, and real processes
# meeting over loopback TCP (forked from the test itself; free ports are chosen at run time).
cco_add_test(bootstrap_threads SOURCES lab/bootstrap/test_threads.cpp LIBS cco.bootstrap LABELS bootstrap)
cco_add_test(bootstrap_env SOURCES lab/bootstrap/test_env.cpp LIBS cco.bootstrap LABELS bootstrap)
cco_add_test(bootstrap_process SOURCES lab/bootstrap/test_process.cpp LIBS cco.bootstrap LABELS bootstrap)
set_tests_properties(cco.test.bootstrap_process PROPERTIES TIMEOUT 120)
# torchrun's store (a fake c10d TCPStore in the test); RealTorchrun.* skips unless run under a real
# torchrun with CCO_TEST_REAL_TORCHRUN=1 (see the test).
cco_add_test(bootstrap_store SOURCES lab/bootstrap/test_store.cpp LIBS cco.bootstrap LABELS bootstrap)
set_tests_properties(cco.test.bootstrap_store PROPERTIES TIMEOUT 120)

# MPI: the same exchanges over MPI_COMM_WORLD with 4 ranks (only with -DCCO_ENABLE_MPI=ON).
if(CCO_ENABLE_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI REQUIRED COMPONENTS CXX)
  add_executable(cco.test.bootstrap_mpi lab/bootstrap/test_mpi.cpp)
  target_link_libraries(cco.test.bootstrap_mpi PRIVATE cco.bootstrap cco.warnings GTest::gtest_main)
  add_test(NAME cco.test.bootstrap_mpi
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 --oversubscribe $<TARGET_FILE:cco.test.bootstrap_mpi>)
  # Open MPI refuses root unless told; CI containers run as root.
  set_tests_properties(cco.test.bootstrap_mpi PROPERTIES LABELS bootstrap TIMEOUT 120
                       ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
endif()
