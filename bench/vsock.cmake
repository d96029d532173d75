# vsockperf: the host side of bench/vsock_bench.sh (the guest's copy is
# built by tests/rig/mkguest.sh from the same file).
add_executable(vsockperf ${CMAKE_SOURCE_DIR}/tests/guest/vsockperf.c)

# The vsock benchmark at its shortest (bench/vsock_bench.sh --smoke: one L1
# of the x86 rig, three guests, 4 MiB each way and 100 round trips per
# side, ~1 minute of rig time), checked by check_vsock_smoke.sh
# (bench/CMakeLists.txt: vmm_bench_smoke).
vmm_bench_smoke(vsock_smoke vsock_bench.sh check_vsock_smoke.sh)
