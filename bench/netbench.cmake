# netbench: a NIC's rate limits without KVM (bench/net_ratelimit_bench.sh
# drives the measurement): libvmm's virtio-net on a fake KVM (the unit
# tests' tests/harness/fake_vpci.c), the stream back end on socketpairs,
# a simulated driver on guest RAM (devbench_driver.c's db_ram).
add_executable(netbench netbench.c devbench_driver.c
               ${CMAKE_SOURCE_DIR}/tests/harness/fake_vpci.c)
target_compile_definitions(netbench PRIVATE _GNU_SOURCE)
target_include_directories(netbench PRIVATE ${CMAKE_SOURCE_DIR}/tests/harness)
target_link_libraries(netbench PRIVATE vmm_static)

# CTest runs a sub-second, KVM-free smoke, as for the disks
# (ratelimit.cmake): a 1000 frames/s limit on two busy pairs, each way,
# moves frames on both pairs without error and throttles (counts, never
# timings).
if(VMM_BUILD_TESTS)
  add_test(NAME bench/net_ratelimit_smoke
           COMMAND sh -c "for d in tx rx; do \"$1\" --dir $d --pairs 2 --frame-len 60 --seconds 0.3 --warmup 0.1 --rate-ops 1000 | jq -e '.errors == 0 and .frames > 0 and .rate_throttled > 0 and .rate_ops == 1000 and (.pair_frames | length == 2 and all(. > 0))' >/dev/null || exit 1; done"
                   sh $<TARGET_FILE:netbench>)
  set_tests_properties(bench/net_ratelimit_smoke PROPERTIES LABELS bench TIMEOUT 60)
  # The same limit on the tap back end, its frames moved by io_uring (a
  # real multi-queue tap: root and /dev/net/tun, else skipped, 77).  RX
  # frames reach the pair the tap's flow hash picks, so only TX checks
  # that both pairs moved frames.
  add_test(NAME bench/net_ratelimit_tun_smoke
           COMMAND sh -c "[ \"$(id -u)\" = 0 ] && [ -c /dev/net/tun ] || exit 77; for d in tx rx; do \"$1\" --dir $d --pairs 2 --frame-len 60 --seconds 0.3 --warmup 0.1 --rate-ops 1000 --backend tun --tap-io uring | jq -e --arg d $d '.errors == 0 and .frames > 0 and .rate_throttled > 0 and .rate_ops == 1000 and .backend == \"tun\" and .tap_io == \"uring\" and (.pair_frames | length == 2) and ($d == \"rx\" or (.pair_frames | all(. > 0)))' >/dev/null || exit 1; done"
                   sh $<TARGET_FILE:netbench>)
  set_tests_properties(bench/net_ratelimit_tun_smoke PROPERTIES LABELS bench
                       TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()

# The virtio-net benchmark at its shortest (bench/net_bench.sh --smoke: one
# L1 of the x86 rig, two guests -- minivmm vhost=off and QEMU vhost=off,
# the sides of the main target -- each test 2 s, one round), checked by
# check_net_smoke.sh (bench/CMakeLists.txt: vmm_bench_smoke).
vmm_bench_smoke(net_smoke net_bench.sh check_net_smoke.sh "NET_SIDES=minivmm-off qemu-off")
