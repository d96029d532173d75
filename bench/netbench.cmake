# netbench: a NIC's rate limits without KVM (bench/net_ratelimit_bench.sh
# drives the measurement): libvmm's virtio-net on a fake KVM (the unit
# tests' tests/harness/fake_vpci.c), the stream back end on socketpairs,
# a simulated driver on guest RAM (devbench_driver.c's db_ram).
add_executable(netbench netbench.c devbench_driver.c
               ${CMAKE_SOURCE_DIR}/tests/harness/fake_vpci.c)
target_compile_definitions(netbench PRIVATE _GNU_SOURCE)
target_include_directories(netbench PRIVATE ${CMAKE_SOURCE_DIR}/tests/harness)
target_link_libraries(netbench PRIVATE vmm_static)
