#!/bin/bash
# stderr_stall.sh MINIVMM KERNEL INITRD
# minivmm's stdout *and* stderr on one pipe that stops being read, as
# conmon, systemd and most supervisors give it (`>pipe 2>&1`): a VM with
# two disks (a queue per vCPU each) at 8 vCPUs whose guest prints without
# end (payload "flood").  The test reads the pipe until the guest is up,
# then never again: the guest's output fills it, and libvmm's own lines
# (the console stall warning, -v messages) then meet a full stderr.  No
# thread may block on it (none in pipe_write), and SIGTERM must end
# minivmm within 2 s with status 143.  Before the fix the console thread
# blocked writing its warning to fd 2, and vmm_stop() waited for it: 15 s
# and more, until SIGKILL.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/stderr_stall.XXXXXX")
pid=
cleanup() {
	[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fifo=$dir/out
mkfifo "$fifo"
truncate -s 64M "$dir/d0.img" "$dir/d1.img"
# Held open read-write: minivmm's open for writing does not wait for a
# reader, and the pipe never loses its reader (no EPIPE: a stall).
exec 3<>"$fifo"

"$vmm" -v --smp 8 --mem 512M --kernel "$kernel" --initrd "$initrd" \
	--disk "$dir/d0.img" --disk "$dir/d1.img" \
	--append "guest.run=flood" </dev/null >"$fifo" 2>&1 &
pid=$!

# Read (and show) the output until the guest is up; then stop reading.
up=
end=$((SECONDS + ${E2E_VMM_TIMEOUT:-600}))
while ((SECONDS < end)); do
	if ! IFS= read -r -t 10 -u 3 line; then
		kill -0 "$pid" 2>/dev/null || e2e_fail "minivmm exited before the guest came up"
		continue
	fi
	printf '%s\n' "${line%$'\r'}"
	if [[ $line == *MINIVMM-FLOOD-START* ]]; then
		up=1
		break
	fi
done
[[ -n "$up" ]] || e2e_fail "the guest did not start its flood"
echo "-- the test stops reading the pipe now"

# The flood fills the pipe at once; wait until it takes nothing more (a
# one-page non-blocking write fails), then give libvmm time to log into it
# (the console thread's stall warning comes as soon as its 64 KiB buffer
# is full too).
full=
end=$((SECONDS + 120))
while ((SECONDS < end)); do
	if ! dd if=/dev/zero of="$fifo" bs=4096 count=1 oflag=nonblock status=none 2>/dev/null; then
		full=1
		break
	fi
	sleep 1
done
[[ -n "$full" ]] || e2e_fail "the pipe never filled up (is the guest flooding?)"
sleep 10
kill -0 "$pid" 2>/dev/null || e2e_fail "minivmm exited while its output was stalled"
blocked=0
for t in /proc/"$pid"/task/*; do
	comm=$(cat "$t/comm" 2>/dev/null || true)
	wchan=$(cat "$t/wchan" 2>/dev/null || true)
	echo "thread: $comm $wchan"
	[[ $wchan == pipe_write ]] && blocked=$((blocked + 1))
done
echo "threads blocked in pipe_write: $blocked"

t0=${EPOCHREALTIME/./} # microseconds
kill -TERM "$pid"
exited=
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		exited=1
		break
	fi
	# Give up at 30 s (reported below): a hang, not a slow stop.
	((${EPOCHREALTIME/./} - t0 > 30000000)) && break
	sleep 0.05
done
us=$((${EPOCHREALTIME/./} - t0))
dt=$(printf '%d.%03d' $((us / 1000000)) $((us / 1000 % 1000)))
echo "SIGTERM to exit: ${dt} s"
[[ -n "$exited" ]] || e2e_fail "minivmm still running 30 s after SIGTERM with its stderr stalled"
rc=0
wait "$pid" || rc=$?
pid=
[[ $blocked -eq 0 ]] || e2e_fail "$blocked thread(s) were blocked writing to the stalled pipe"
[[ $rc -eq 143 ]] || e2e_fail "minivmm exited $rc after SIGTERM, expected 143"
((us <= 2000000)) || e2e_fail "SIGTERM took ${dt} s to end minivmm (limit 2 s)"
echo "PASS: stdout+stderr stalled, no thread blocked, SIGTERM ended minivmm in ${dt} s (143)"
