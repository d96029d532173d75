# vmm_ci_costs(): each test of the calling directory that tests/ci-costs.txt
# lists gets that many seconds as its COST.  Called at the end of every
# CMakeLists.txt that adds tests.  CTest starts the costliest tests first;
# a fresh clone (CI's) has no timing history of its own, so without these
# it ran the rest in declaration order and a long test declared late ended
# the run beside an idle CPU.  scripts/ci-costs.sh makes the table from a
# CI log.
function(vmm_ci_costs)
  set(table ${CMAKE_SOURCE_DIR}/tests/ci-costs.txt)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${table})
  file(STRINGS ${table} lines REGEX "^[0-9]+ ")
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(line ${lines})
    string(REPLACE " " ";" f "${line}")
    list(GET f 0 secs)
    list(GET f 1 name)
    if(name IN_LIST tests)
      set_tests_properties(${name} PROPERTIES COST ${secs})
    endif()
  endforeach()
endfunction()
