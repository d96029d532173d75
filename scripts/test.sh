#!/bin/bash
# The README's second command, and what CI runs (.ci/run): installs what is
# missing, builds twice (warnings as errors; ASan+UBSan), runs the unit tests
# in both builds and in the static aarch64 build (scripts/build-arm64.sh),
# then every test of the normal build and the aarch64 build's end-to-end
# tests in one CTest run (VMM_ARM64_TESTS, tests/CMakeLists.txt) -- they
# boot real guests on real KVM, inside the nested-KVM rigs (x86 and arm64)
# when this machine has no usable /dev/kvm -- with the fuzz smoke
# (scripts/fuzz.sh --smoke) running beside them at a lower priority.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
t0=$SECONDS
# phase TEXT: a heading with the time since the start, so that a CI log
# shows where its minutes went.
phase() { echo "== $* (at $((SECONDS - t0)) s)" >&2; }

scripts/deps.sh
tests/rig/mkguest.sh --quiet
tests/rig/mktools.sh --quiet
RIG_ARCH=arm64 tests/rig/mkguest.sh --quiet
RIG_ARCH=arm64 tests/rig/fetch-virtiofsd.sh >/dev/null # e2e/arm64_net_vsock

phase "builds: plain and ASan+UBSan"
cmake -S . -B build -DVMM_WERROR=ON -DVMM_ARM64_TESTS="$PWD/build-arm64/tests/e2e/arm64" >/dev/null
cmake --build build -j"$jobs"
cmake -S . -B build-asan -DVMM_WERROR=ON -DVMM_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"

phase "unit tests, ASan+UBSan build"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest -L unit -j"$jobs" --output-on-failure)
# The static aarch64 build and its unit tests under qemu-aarch64-static.
phase "arm64: static cross build, unit tests under qemu-aarch64-static"
scripts/build-arm64.sh build-arm64
# The fuzz smoke (each libFuzzer target for 10 s, one per CPU at a time,
# scripts/fuzz.sh) runs beside the tests instead of before them: the rig
# tests leave CPU time unused while their L1s and L2s wait (timeouts, guests
# asleep, a stalled L1 on purpose), and the fuzz tree's build at nice 19
# takes only that.  The 10-second runs at nice 10: a target that shares a
# CPU with a rig gets about a tenth of it, far inside the 5 s per-input
# timeout (the slowest input of any target takes well under 1 s).  Its
# output waits in build/fuzz-*.log and is printed after the tests.
phase "fuzz smoke: started beside the tests (build at nice 19, runs at nice 10)"
(nice -n 19 scripts/fuzz.sh --build-only >build/fuzz-build.log 2>&1 &&
	exec nice -n 10 scripts/fuzz.sh --smoke >build/fuzz-smoke.log 2>&1) &
fuzz_pid=$!
# The arm64 platform on real KVM (the aarch64 build's end-to-end tests and
# the unit tests user-mode QEMU cannot run, in the arm64 rig) in the same
# CTest run as the x86 tests, which keeps both CPUs busy to the end.
phase "all tests (unit + end-to-end on real KVM, x86 and arm64 rigs)"
# Every L1 boot of the rig appends a line to build/rig-runs.log (CTest sets
# RIG_LOG; build-arm64/rig-runs.log for the arm64 rig); the summary counts
# runs and L1 stalls, pass or fail.
rm -f build/rig-runs.log build-arm64/rig-runs.log
rc=0
# cpu_idle: the idle and total jiffies of all CPUs so far (/proc/stat), to
# say how much CPU time the tests left unused.
cpu_idle() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat; }
read -r idle0 total0 < <(cpu_idle)
(cd build && ctest -j"$jobs" --output-on-failure) || rc=$?
read -r idle1 total1 < <(cpu_idle)
phase "tests done; CPU idle during them: $((100 * (idle1 - idle0) / (total1 - total0 + 1)))% (fuzz smoke beside them included)"
scripts/rig-summary.sh build/rig-runs.log >&2 || true
scripts/rig-summary.sh build-arm64/rig-runs.log >&2 || true
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
phase "fuzz smoke (ran beside the tests): exit $fuzz_rc"
if [[ -s build/fuzz-smoke.log ]]; then
	sed -n '/^== fuzz_/,$p' build/fuzz-smoke.log >&2 # not the no-op build's lines
else
	tail -40 build/fuzz-build.log >&2
fi
[[ $fuzz_rc -eq 0 ]] || rc=1
echo "test.sh: done in $((SECONDS - t0)) s" >&2
exit $rc
