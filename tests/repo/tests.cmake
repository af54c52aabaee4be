# The repository as a product (issue 35 item 4): links in the docs resolve, docs/ small and free of
# raw logs, scripts/ short, tests reading no docs/results; src/ in layers with include rules (GPU-free).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME cco.test.repo_tree
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/repo/check_tree.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(cco.test.repo_tree PROPERTIES LABELS repo TIMEOUT 60)
  # The same check on copies of the tree broken one way at a time: it must fail on each.
  add_test(NAME cco.test.repo_tree_breaks
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/repo/test_check_tree.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(cco.test.repo_tree_breaks PROPERTIES LABELS repo TIMEOUT 120)
else()
  list(APPEND CCO_TESTS_NOT_BUILT "cco.test.repo_tree: no Python 3 interpreter found")
endif()
