#!/bin/bash
# test-stall.sh: rig-run's L1 stall watchdog (CTest rig/stall_watchdog).
#
# Boots the rig's L1 (always, --l1) with a command that freezes the whole
# L1 userland while keeping its vCPU busy: a SCHED_FIFO 99 busy loop with
# RT throttling off on L1's only CPU, console messages off.  Seen from the
# host that is what the real stalls look like: no heartbeat, no console, no
# output, qemu at 100% CPU.  With --stall-seconds 30 and one retry allowed,
# rig-run must:
#  * declare "rig: L1 stalled" twice (both attempts stall), say that it
#    retries, give up with exit status 124 long before --timeout;
#  * append two result=stalled lines to RIG_LOG;
#  * keep, per attempt, a directory beside RIG_LOG (rig-stalls/) with the
#    QEMU monitor's answers (registers of the vCPU, among others), the L1
#    console and a stall.txt.
# Then the other kind: an L1 hung asleep (heartbeat loop stopped, console
# off, the command sleeping: qemu idle and not starved of host CPU) must be
# declared stalled too, once, with no retry allowed (exit 124).
# Needs qemu-system-x86_64 (no KVM).  Takes ~3 x (L1 boot + 30 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ "${1:-}" == --in-l1 ]]; then
	echo "STALL-TEST-START"
	dmesg -n 1 # no console output from here on
	echo -1 >/proc/sys/kernel/sched_rt_runtime_us
	exec chrt -f 99 sh -c 'while :; do :; done'
fi
if [[ "${1:-}" == --in-l1-asleep ]]; then
	echo "STALL-TEST-ASLEEP"
	dmesg -n 1
	pkill -STOP -f rig-heartbeat || { echo "no heartbeat loop to stop"; exit 3; }
	exec sleep 100000
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rig-stall-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "test-stall.sh: FAIL: $*" >&2
	echo "--- rig-run output ---" >&2
	cat "$tmp/out" >&2
	exit 1
}

rc=0
RIG_LOG=$tmp/rig.log RIG_HEARTBEAT_SECONDS=2 "$here/rig-run" --l1 --timeout 900 \
	--stall-seconds 30 --stall-retries 1 -- "$here/test-stall.sh" --in-l1 \
	>"$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
[[ $rc -eq 124 ]] || fail "rig-run exited $rc, want 124 (L1 stalled)"
[[ $(grep -c '^rig: L1 stalled: no progress' "$tmp/out") -eq 2 ]] || fail "want two 'rig: L1 stalled' reports"
grep -q '^rig: L1 stalled: RETRYING the whole command (attempt 2 of 2' "$tmp/out" || fail "the retry is not announced"
grep -q '^rig: L1 stalled in 2 of 2 attempts; giving up' "$tmp/out" || fail "no final verdict"
[[ $(grep -c '^STALL-TEST-START' "$tmp/out") -eq 2 ]] || fail "the command did not run twice"
[[ $(grep -c ' result=stalled status=124 ' "$tmp/rig.log") -eq 2 ]] || fail "RIG_LOG: $(cat "$tmp/rig.log")"
n=0
for d in "$tmp"/rig-stalls/*/; do
	n=$((n + 1))
	grep -q '^(qemu) info registers -a' "$d/monitor.txt" || fail "$d/monitor.txt: no info registers"
	grep -q '^RIP=' "$d/monitor.txt" || fail "$d/monitor.txt has no registers"
	grep -q '^(qemu) info lapic' "$d/monitor.txt" || fail "$d/monitor.txt has no lapic state"
	grep -q 'no L1 progress for' "$d/stall.txt" || fail "$d/stall.txt incomplete"
	grep -q RIG-L1-INIT "$d/console.log" || fail "$d/console.log is not the L1 console"
done
[[ $n -eq 2 ]] || fail "$n kept stall directories, want 2"

# An L1 hung asleep.
rc=0
RIG_LOG=$tmp/rig2.log RIG_HEARTBEAT_SECONDS=2 "$here/rig-run" --l1 --timeout 900 \
	--stall-seconds 30 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-asleep \
	>"$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
[[ $rc -eq 124 ]] || fail "asleep: rig-run exited $rc, want 124 (L1 stalled)"
grep -q '^STALL-TEST-ASLEEP' "$tmp/out" || fail "asleep: the command did not run"
[[ $(grep -c '^rig: L1 stalled: no progress' "$tmp/out") -eq 1 ]] || fail "asleep: want one 'rig: L1 stalled' report"
[[ $(grep -c ' result=stalled status=124 ' "$tmp/rig2.log") -eq 1 ]] || fail "asleep: RIG_LOG: $(cat "$tmp/rig2.log")"
echo "test-stall.sh: OK"
