#!/bin/bash
# test-stall.sh: rig-run's L1 stall watchdog (CTest rig/stall_watchdog).
#
# Boots the rig's L1 (always, --l1) with a command that freezes the whole
# L1 userland while keeping its vCPU busy: a SCHED_FIFO 99 busy loop with
# RT throttling off on L1's only CPU, console messages off.  Seen from the
# host that is what the real stalls look like: no heartbeat, no console, no
# output, qemu at 100% CPU.  With --stall-seconds 20 and one retry allowed,
# rig-run must:
#  * declare "rig: L1 stalled" twice (both attempts stall), say that it
#    retries, give up with exit status 124 long before --timeout;
#  * append two result=stalled lines to RIG_LOG;
#  * keep, per attempt, a directory beside RIG_LOG (rig-stalls/) with the
#    QEMU monitor's answers (registers of the vCPU, among others), the L1
#    console and a stall.txt.
# Before each of those verdicts rig-run sends the stuck L1 one NMI
# (announced) and waits RIG_STALL_NUDGE_SECONDS: neither L1 moves again.
# And the other kind: an L1 hung asleep (heartbeat loop stopped, console
# off, the command sleeping: qemu idle and not starved of host CPU) must be
# declared stalled too, once, with no retry allowed (exit 124).
# Then an L1 that is stuck until it gets an NMI (heartbeat stopped, the
# command waiting for the NMI count in /proc/interrupts to move, then
# restarting the heartbeat): the run must go on and end with the command's
# status 0, "rig: L1 resumed" said and nmi_resumed=1 in RIG_LOG.  And the
# same with a keyboard interrupt (RIG_STALL_KICK_SECONDS): the command
# waits for IRQ 1's count to move; "rig: L1 was stuck ... moved again
# after 1 keyboard interrupt" said, kick_resumed=1, no NMI.
# The busy case runs beside the three others, one after the other (those
# L1s sleep: they cost the host little CPU).  Needs qemu-system-x86_64 (no
# KVM).  Takes ~105-115 s (measured): the three quiet cases one after the
# other, each an L1 boot + ~25 s, and their reports.
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
# fail CASE MESSAGE: the case's rig-run output, then exit 1.
fail() {
	echo "test-stall.sh: FAIL: $1: $2" >&2
	echo "--- rig-run output ($1) ---" >&2
	cat "$tmp/$1/out" >&2
	exit 1
}

# run_rig CASE [VAR=VALUE...] -- RIG-RUN-ARGS...: rig-run --l1 with a 2-s
# heartbeat and RIG_LOG=$tmp/CASE/rig.log (so its kept stall directories
# are $tmp/CASE/rig-stalls/*); its output in $tmp/CASE/out, its exit status
# in $tmp/CASE/rc.  The stall thresholds are 20 s: over 3 heartbeats (the
# floor rig-run accepts) with room for a loaded host (the longest
# heartbeat gap seen in CI is ~10 s).
run_rig() {
	local c=$1 envs=() rc=0
	shift
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	mkdir -p "$tmp/$c"
	env RIG_LOG="$tmp/$c/rig.log" RIG_HEARTBEAT_SECONDS=2 "${envs[@]}" "$here/rig-run" --l1 --timeout 900 "$@" \
		>"$tmp/$c/out" 2>&1 || rc=$?
	echo "$rc" >"$tmp/$c/rc"
}
# check CASE WANT_RC: shows CASE's output; sets out (its path) and fails
# unless rig-run exited WANT_RC.
check() {
	echo "=== $1 ==="
	cat "$tmp/$1/out"
	out=$tmp/$1/out
	local rc
	rc=$(cat "$tmp/$1/rc")
	[[ $rc -eq $2 ]] || fail "$1" "rig-run exited $rc, want $2"
}

# The busy L1 (both attempts) beside the others, which run one after the
# other: an L1 hung asleep; one that only an NMI gets moving again; one
# that a keyboard interrupt does (what QEMU 7.2's lost interrupt requests
# need): heartbeat stopped until IRQ 1 (i8042) moves.
run_rig busy RIG_STALL_NUDGE_SECONDS=5 -- --stall-seconds 20 --stall-retries 1 -- "$here/test-stall.sh" --in-l1 &
busy_pid=$!
run_rig asleep RIG_STALL_NUDGE_SECONDS=5 -- --stall-seconds 20 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-asleep
run_rig nmi RIG_STALL_NUDGE_SECONDS=15 -- --stall-seconds 20 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-until-nmi
run_rig key RIG_STALL_KICK_SECONDS=8 RIG_KEY_TICK_SECONDS=0 -- --stall-seconds 60 --stall-retries 0 -- "$here/test-stall.sh" --in-l1-until-key
wait "$busy_pid"

check busy 124
[[ $(grep -c '^rig: L1 stalled: no progress' "$out") -eq 2 ]] || fail busy "want two 'rig: L1 stalled' reports"
grep -q '^rig: L1 stalled: RETRYING the whole command (attempt 2 of 2' "$out" || fail busy "the retry is not announced"
grep -q '^rig: L1 stalled in 2 of 2 attempts; giving up' "$out" || fail busy "no final verdict"
[[ $(grep -c '^rig: L1 not moving for .* sending it an NMI' "$out") -eq 2 ]] || fail busy "want one NMI per attempt, announced"
! grep -q '^rig: L1 resumed' "$out" || fail busy "a busy-looping L1 'resumed'"
[[ $(grep -c '^STALL-TEST-START' "$out") -eq 2 ]] || fail busy "the command did not run twice"
[[ $(grep -c ' result=stalled status=124 ' "$tmp/busy/rig.log") -eq 2 ]] || fail busy "RIG_LOG: $(cat "$tmp/busy/rig.log")"
n=0
for d in "$tmp"/busy/rig-stalls/*/; do
	n=$((n + 1))
	grep -q '^(qemu) info registers -a' "$d/monitor.txt" || fail busy "$d/monitor.txt: no info registers"
	grep -q '^RIP=' "$d/monitor.txt" || fail busy "$d/monitor.txt has no registers"
	grep -q '^(qemu) info lapic' "$d/monitor.txt" || fail busy "$d/monitor.txt has no lapic state"
	grep -q 'no L1 progress for' "$d/stall.txt" || fail busy "$d/stall.txt incomplete"
	grep -q '^== before an NMI' "$d/stall.txt" || fail busy "$d/stall.txt: no state from before the NMI"
	grep -q '^== stalled (the NMI did not help)' "$d/stall.txt" || fail busy "$d/stall.txt: no final state"
	grep -q RIG-L1-INIT "$d/console.log" || fail busy "$d/console.log is not the L1 console"
done
[[ $n -eq 2 ]] || fail busy "$n kept stall directories, want 2"

check asleep 124
grep -q '^STALL-TEST-ASLEEP' "$out" || fail asleep "the command did not run"
[[ $(grep -c '^rig: L1 stalled: no progress' "$out") -eq 1 ]] || fail asleep "want one 'rig: L1 stalled' report"
[[ $(grep -c ' result=stalled status=124 ' "$tmp/asleep/rig.log") -eq 1 ]] || fail asleep "RIG_LOG: $(cat "$tmp/asleep/rig.log")"

check nmi 0
grep -q '^STALL-TEST-NMI-SEEN' "$out" || fail nmi "the command saw no NMI"
grep -q '^rig: L1 not moving for .* sending it an NMI' "$out" || fail nmi "no NMI announced"
grep -q '^rig: L1 resumed .* after the NMI' "$out" || fail nmi "the resumption is not reported"
! grep -q '^rig: L1 stalled' "$out" || fail nmi "declared stalled"
grep -q ' result=ok status=0 kick_sent=[0-9]* kick_resumed=0 nmi_sent=1 nmi_resumed=1 ' "$tmp/nmi/rig.log" || fail nmi "RIG_LOG: $(cat "$tmp/nmi/rig.log")"
! grep -q '^rig: L1 was stuck' "$out" || fail nmi "the NMI's work credited to a keyboard interrupt"

check key 0
grep -q '^STALL-TEST-KEY-SEEN' "$out" || fail key "the command saw no keyboard interrupt"
grep -q '^rig: L1 was stuck for .* moved again after 1 keyboard interrupt' "$out" || fail key "the resumption is not reported"
! grep -q '^rig: L1 not moving\|^rig: L1 stalled' "$out" || fail key "an NMI or a stall verdict"
grep -q ' result=ok status=0 kick_sent=1 kick_resumed=1 nmi_sent=0 nmi_resumed=0 ' "$tmp/key/rig.log" || fail key "RIG_LOG: $(cat "$tmp/key/rig.log")"
echo "test-stall.sh: OK"
