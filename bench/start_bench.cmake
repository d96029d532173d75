# start_bench: what a DRIVER_OK and a reset cost a vCPU in the device start
# and stop (one queue per I/O thread, fake KVM: tests/harness/fake_vpci.c).
# CTest runs a short smoke so that it cannot rot: it asserts no timing, only
# that every start succeeds.
add_executable(start_bench start_bench.c ${CMAKE_SOURCE_DIR}/tests/harness/fake_vpci.c)
target_compile_definitions(start_bench PRIVATE _GNU_SOURCE)
target_include_directories(start_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/harness)
target_link_libraries(start_bench PRIVATE vmm_static)
if(VMM_BUILD_TESTS)
  add_test(NAME bench/start_bench_smoke
           COMMAND start_bench --rounds 2 --queues 1 --queues 64)
  set_tests_properties(bench/start_bench_smoke PROPERTIES LABELS bench TIMEOUT 60)
endif()
