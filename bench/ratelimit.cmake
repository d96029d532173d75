# Disk rate limits through devbench (bench/ratelimit_bench.sh drives the
# full measurement).  CTest runs a sub-second, KVM-free smoke: a 1000
# IOPS limit on two busy queues completes every request without error and
# throttles (counts, never timings).
if(VMM_BUILD_TESTS)
  add_test(NAME bench/ratelimit_smoke
           COMMAND sh -c "\"$1\" --target libvmm --backend null --qd 16 --queues 2 --seconds 0.3 --warmup 0.1 --rate-ops 1000 --rate-bw 104857600 | jq -e '.errors == 0 and .reqs > 0 and .rate_throttled > 0 and .rate_ops == 1000 and (.queue_reqs | length == 2 and all(. > 0))'"
                   sh $<TARGET_FILE:devbench>)
  set_tests_properties(bench/ratelimit_smoke PROPERTIES LABELS bench TIMEOUT 60)
endif()
