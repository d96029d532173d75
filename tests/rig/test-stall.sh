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
# Before each of those verdicts rig-run sends the stuck L1 one NMI
# (announced) and waits RIG_STALL_NUDGE_SECONDS: neither L1 moves again.
# Then the other kind: an L1 hung asleep (heartbeat loop stopped, console
# off, the command sleeping: qemu idle and not starved of host CPU) must be
# declared stalled too, once, with no retry allowed (exit 124).
# Last, an L1 that is stuck until it gets an NMI (heartbeat stopped, the
# command waiting for the NMI count in /proc/interrupts to move, then
# restarting the heartbeat): the run must go on and end with the command's
# status 0, "rig: L1 resumed" said and nmi_resumed=1 in RIG_LOG.  And the
# same with a keyboard interrupt (RIG_STALL_KICK_SECONDS): the command
# waits for IRQ 1's count to move; "rig: L1 was stuck ... moved again
# after 1 keyboard interrupt" said, kick_resumed=1, no NMI.
# Needs qemu-system-x86_64 (no KVM).  Takes ~4 x (L1 boot + 30 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ "${1:-}" == --in-l1 ]]; then
	echo "STALL-TEST-START"
	dmesg -n 1 # no console output from here on
	echo -1 >/proc/sys/kernel/sched_rt_runtime_us
	exec chrt -f 99 sh -c 'while :; do :; done'
fi
if [[ "${1:-}" == --in-l1-until-nmi ]]; then
	echo "STALL-TEST-UNTIL-NMI"
	dmesg -n 1
	nmis() { awk '$1 == "NMI:" { print $2 }' /proc/interrupts; }
	n0=$(nmis)
	pkill -STOP -f rig-heartbeat || { echo "no heartbeat loop to stop"; exit 3; }
	while [ "$(nmis)" = "$n0" ]; do sleep 1; done
	pkill -CONT -f rig-heartbeat
	sleep 6 # a heartbeat or two: rig-run sees L1 move before it ends
	echo "STALL-TEST-NMI-SEEN $n0 -> $(nmis)"
	exit 0
fi
if [[ "${1:-}" == --in-l1-until-key ]]; then
	echo "STALL-TEST-UNTIL-KEY"
	dmesg -n 1
	keys() { awk '$1 == "1:" { print $2 }' /proc/interrupts; } # i8042
	k0=$(keys)
	pkill -STOP -f rig-heartbeat || { echo "no heartbeat loop to stop"; exit 3; }
	while [ "$(keys)" = "$k0" ]; do sleep 1; done
	pkill -CONT -f rig-heartbeat
	sleep 6
	echo "STALL-TEST-KEY-SEEN $k0 -> $(keys)"
	exit 0
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

# run_rig LOG [VAR=VALUE...] -- RIG-RUN-ARGS...: rig-run --l1 with a 2-s
# heartbeat and RIG_LOG=$tmp/LOG; its output in $tmp/out (also shown), its
# exit status in rc.
run_rig() {
	local log=$1 envs=()
	shift
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	rc=0
	env RIG_LOG="$tmp/$log" RIG_HEARTBEAT_SECONDS=2 "${envs[@]}" "$here/rig-run" --l1 --timeout 900 "$@" \
		>"$tmp/out" 2>&1 || rc=$?
	cat "$tmp/out"
}

run_rig rig.log RIG_STALL_NUDGE_SECONDS=10 -- --stall-seconds 30 --stall-retries 1 -- "$here/test-stall.sh" --in-l1
[[ $rc -eq 124 ]] || fail "rig-run exited $rc, want 124 (L1 stalled)"
[[ $(grep -c '^rig: L1 stalled: no progress' "$tmp/out") -eq 2 ]] || fail "want two 'rig: L1 stalled' reports"
grep -q '^rig: L1 stalled: RETRYING the whole command (attempt 2 of 2' "$tmp/out" || fail "the retry is not announced"
grep -q '^rig: L1 stalled in 2 of 2 attempts; giving up' "$tmp/out" || fail "no final verdict"
[[ $(grep -c '^rig: L1 not moving for .* sending it an NMI' "$tmp/out") -eq 2 ]] || fail "want one NMI per attempt, announced"
! grep -q '^rig: L1 resumed' "$tmp/out" || fail "a busy-looping L1 'resumed'"
[[ $(grep -c '^STALL-TEST-START' "$tmp/out") -eq 2 ]] || fail "the command did not run twice"
[[ $(grep -c ' result=stalled status=124 ' "$tmp/rig.log") -eq 2 ]] || fail "RIG_LOG: $(cat "$tmp/rig.log")"
n=0
for d in "$tmp"/rig-stalls/*/; do
	n=$((n + 1))
	grep -q '^(qemu) info registers -a' "$d/monitor.txt" || fail "$d/monitor.txt: no info registers"
	grep -q '^RIP=' "$d/monitor.txt" || fail "$d/monitor.txt has no registers"
	grep -q '^(qemu) info lapic' "$d/monitor.txt" || fail "$d/monitor.txt has no lapic state"
	grep -q 'no L1 progress for' "$d/stall.txt" || fail "$d/stall.txt incomplete"
	grep -q '^== before an NMI' "$d/stall.txt" || fail "$d/stall.txt: no state from before the NMI"
	grep -q '^== stalled (the NMI did not help)' "$d/stall.txt" || fail "$d/stall.txt: no final state"
	grep -q RIG-L1-INIT "$d/console.log" || fail "$d/console.log is not the L1 console"
done
[[ $n -eq 2 ]] || fail "$n kept stall directories, want 2"

# An L1 hung asleep.
run_rig rig2.log RIG_STALL_NUDGE_SECONDS=10 -- --stall-seconds 30 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-asleep
[[ $rc -eq 124 ]] || fail "asleep: rig-run exited $rc, want 124 (L1 stalled)"
grep -q '^STALL-TEST-ASLEEP' "$tmp/out" || fail "asleep: the command did not run"
[[ $(grep -c '^rig: L1 stalled: no progress' "$tmp/out") -eq 1 ]] || fail "asleep: want one 'rig: L1 stalled' report"
[[ $(grep -c ' result=stalled status=124 ' "$tmp/rig2.log") -eq 1 ]] || fail "asleep: RIG_LOG: $(cat "$tmp/rig2.log")"

# An L1 that only an NMI gets moving again.
run_rig rig3.log RIG_STALL_NUDGE_SECONDS=20 -- --stall-seconds 30 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-until-nmi
[[ $rc -eq 0 ]] || fail "until-nmi: rig-run exited $rc, want 0 (L1 moved again after the NMI)"
grep -q '^STALL-TEST-NMI-SEEN' "$tmp/out" || fail "until-nmi: the command saw no NMI"
grep -q '^rig: L1 not moving for .* sending it an NMI' "$tmp/out" || fail "until-nmi: no NMI announced"
grep -q '^rig: L1 resumed .* after the NMI' "$tmp/out" || fail "until-nmi: the resumption is not reported"
! grep -q '^rig: L1 stalled' "$tmp/out" || fail "until-nmi: declared stalled"
grep -q ' result=ok status=0 kick_sent=[0-9]* kick_resumed=0 nmi_sent=1 nmi_resumed=1 ' "$tmp/rig3.log" || fail "until-nmi: RIG_LOG: $(cat "$tmp/rig3.log")"
! grep -q '^rig: L1 was stuck' "$tmp/out" || fail "until-nmi: the NMI's work credited to a keyboard interrupt"

# An L1 that a keyboard interrupt gets moving again (what QEMU 7.2's lost
# interrupt requests need): heartbeat stopped until IRQ 1 (i8042) moves.
run_rig rig4.log RIG_STALL_KICK_SECONDS=8 RIG_KEY_TICK_SECONDS=0 -- --stall-seconds 60 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-until-key
[[ $rc -eq 0 ]] || fail "until-key: rig-run exited $rc, want 0 (L1 moved again after the key)"
grep -q '^STALL-TEST-KEY-SEEN' "$tmp/out" || fail "until-key: the command saw no keyboard interrupt"
grep -q '^rig: L1 was stuck for .* moved again after 1 keyboard interrupt' "$tmp/out" || fail "until-key: the resumption is not reported"
! grep -q '^rig: L1 not moving\|^rig: L1 stalled' "$tmp/out" || fail "until-key: an NMI or a stall verdict"
grep -q ' result=ok status=0 kick_sent=1 kick_resumed=1 nmi_sent=0 nmi_resumed=0 ' "$tmp/rig4.log" || fail "until-key: RIG_LOG: $(cat "$tmp/rig4.log")"
echo "test-stall.sh: OK"
