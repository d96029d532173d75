# devbench: device throughput without KVM (bench/devbench.sh drives it).
# The simulated driver, libvmm's real device on a fake KVM (the unit tests'
# tests/harness/fake_vpci.c), and a small vhost-user front end for
# vhost-user-blk back ends (qemu-storage-daemon, minivmm-blkd).
add_executable(devbench devbench.c devbench_driver.c devbench_libvmm.c
               vhost_user.c ${CMAKE_SOURCE_DIR}/tests/harness/fake_vpci.c
               ${CMAKE_SOURCE_DIR}/tests/harness/vu_front.c
               ${CMAKE_SOURCE_DIR}/tests/harness/test_clock.c)
target_compile_definitions(devbench PRIVATE _GNU_SOURCE)
target_include_directories(devbench PRIVATE ${CMAKE_SOURCE_DIR}/tests/harness)
target_link_libraries(devbench PRIVATE vmm_static)
