# guest_ram_bench: what guest RAM costs per backend (anon, memfd, hugetlb):
# set-up, first-touch page faults, huge pages, KVM memslots, teardown
# (bench/guest_ram_bench.sh drives it).  It calls libvmm's internal
# guest_mem_init(), so it links the static library like wiring_bench; it
# lays RAM out as x86 does.
if(NOT VMM_ARCH STREQUAL "x86")
  return()
endif()
add_executable(guest_ram_bench ${CMAKE_CURRENT_SOURCE_DIR}/guest_ram_bench.c)
target_compile_definitions(guest_ram_bench PRIVATE _GNU_SOURCE)
target_link_libraries(guest_ram_bench PRIVATE vmm_static Threads::Threads)

if(VMM_BUILD_TESTS)
  # Sub-second smoke: 16 MiB, one round, both thread counts, every backend
  # (hugetlb only where the pool has 8 free pages, else a skip record).
  # Asserts no timing, only that it exits 0 and that every stdout line is
  # a BENCH-JSON record that parses, with a machine record and a trial
  # record per backend that ran.
  add_test(NAME bench/guest_ram_smoke
           COMMAND sh -c "command -v jq >/dev/null || exit 77; o=$(\"$1\" --rounds 1 --sizes 16M --threads 1,2) || exit 1; \
printf '%s\\n' \"$o\" | grep -v '^BENCH-JSON {' && exit 1; \
printf '%s\\n' \"$o\" | sed 's/^BENCH-JSON //' | jq -se 'all(.[]; type == \"object\") and \
any(.[]; .bench == \"guest_ram_machine\") and \
([.[] | select(.bench == \"guest_ram\") | .backend] | unique) as $ran | \
([.[] | select(.bench == \"guest_ram_skip\") | .backend] + $ran | unique) == [\"anon\", \"hugetlb\", \"memfd\"] and \
($ran | contains([\"anon\", \"memfd\"])) and \
all(.[] | select(.bench == \"guest_ram\"); .touch_ns > 0 and .pages_4k == 4096 and .smaps_found)' >/dev/null"
                   sh $<TARGET_FILE:guest_ram_bench>)
  set_tests_properties(bench/guest_ram_smoke PROPERTIES LABELS bench TIMEOUT 60
    SKIP_RETURN_CODE 77)
endif()
