# vsockperf: the host side of bench/vsock_bench.sh (the guest's copy is
# built by tests/rig/mkguest.sh from the same file).
add_executable(vsockperf ${CMAKE_SOURCE_DIR}/tests/guest/vsockperf.c)
