#!/bin/bash
# console_stall.sh MINIVMM KERNEL INITRD
# A console reader that stops reading must not wedge the VM: minivmm's
# stdout is a FIFO that the test holds open and never reads (a stalled log
# collector, a terminal after Ctrl-S) while the guest prints without end
# (payload "flood").  libvmm must keep the guest running (it drops the
# output it cannot write and says so on stderr), and SIGTERM must then end
# minivmm with status 143; the hang detector gives it 60 s after SIGTERM.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/console_stall.XXXXXX")
pid=
cleanup() {
	[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fifo=$dir/console
log=$dir/stderr.log
mkfifo "$fifo"
# Opened read-write, so that minivmm's open for writing does not wait for a
# reader; this shell then never reads it: after 64 KiB the pipe is full.
exec 3<>"$fifo"

"$vmm" --smp 2 --mem 256M --kernel "$kernel" --initrd "$initrd" \
	--append "guest.run=flood" --stats </dev/null >"$fifo" 2>"$log" &
pid=$!
# The drop warning shows the guest kept running after the pipe filled up.
# (Deadlines in wall-clock seconds: under the rig's TCG a loop iteration
# costs far more than its sleep.)
stalled=
end=$((SECONDS + ${E2E_VMM_TIMEOUT:-300}))
while ((SECONDS < end)); do
	if grep -q "console output stalled" "$log"; then
		stalled=1
		break
	fi
	kill -0 "$pid" 2>/dev/null || { cat "$log"; e2e_fail "minivmm exited before the console stalled"; }
	sleep 1
done
[[ -n "$stalled" ]] || echo "no drop warning after ${E2E_VMM_TIMEOUT:-300} s; stopping minivmm anyway"
# A blocked vCPU would show in wchan (pipe_write) on the old code.
for t in /proc/"$pid"/task/*; do
	printf '%s %s\n' "$(cat "$t/comm" 2>/dev/null)" "$(cat "$t/wchan" 2>/dev/null)"
done | sed 's/^/thread: /'
kill -TERM "$pid"
exited=
end=$((SECONDS + 60))
while ((SECONDS < end)); do
	if ! kill -0 "$pid" 2>/dev/null; then
		exited=1
		break
	fi
	sleep 0.5
done
if [[ -z "$exited" ]]; then
	cat "$log"
	e2e_fail "minivmm still running 60 s after SIGTERM with its console stalled"
fi
rc=0
wait "$pid" || rc=$?
pid=
cat "$log"
[[ $rc -eq 143 ]] || e2e_fail "minivmm exited $rc after SIGTERM, expected 143"
[[ -n "$stalled" ]] || e2e_fail "libvmm never reported dropping console output"
echo "PASS: console stalled, guest kept running, SIGTERM ended minivmm (143)"
