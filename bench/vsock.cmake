# vsockperf: the host side of bench/vsock_bench.sh (the guest's copy is
# built by tests/rig/mkguest.sh from the same file).
add_executable(vsockperf ${CMAKE_SOURCE_DIR}/tests/guest/vsockperf.c)

# The vsock benchmark at its shortest (bench/vsock_bench.sh --smoke: one L1
# of the x86 rig, three guests, 4 MiB each way and 100 round trips per
# side, ~1 minute of rig time), then check_vsock_smoke.sh checks its
# records, summary and plot.  Results go to the build tree.  COST: as
# bench/net_smoke's (netbench.cmake).
if(VMM_BUILD_TESTS AND VMM_ARCH STREQUAL "x86")
  add_test(NAME bench/vsock_smoke
           COMMAND sh -c "rm -rf \"$2\" && BENCH_OUT=\"$2\" \"$1\"/bench/vsock_bench.sh --smoke \"$3\" && \"$1\"/bench/check_vsock_smoke.sh \"$2\""
                   sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/bench-vsock-smoke ${CMAKE_BINARY_DIR})
  set_tests_properties(bench/vsock_smoke PROPERTIES LABELS "bench;kvm" TIMEOUT 900 COST 150
    ENVIRONMENT "RIG_LOG=${CMAKE_BINARY_DIR}/rig-runs.log")
endif()
