# minivmm's control socket round trip (bench/oci_ops_bench.sh).
add_executable(api_rtt ${CMAKE_CURRENT_SOURCE_DIR}/api_rtt.c)
