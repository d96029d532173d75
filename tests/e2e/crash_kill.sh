#!/bin/bash
# crash_kill.sh MINIVMM KERNEL INITRD
# Crash consistency under SIGKILL, with and without O_DIRECT (direct=on;
# the image lives on $RIG_SCRATCH, ext4): the guest writes blocks 0..63,
# fsyncs (FLUSH), prints "CRASH-FLUSHED n=64" and keeps writing; minivmm is
# killed with SIGKILL a moment later.  Every block acknowledged before the
# flush must be in the image, intact; later blocks intact or absent.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/crash_lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/crash_kill.XXXXXX")
trap 'rm -rf "$dir"' EXIT

for direct in off on; do
	img=$dir/crash-$direct.img
	truncate -s 16M "$img"
	crash_start "$vmm" "$kernel" "$initrd" "$img" "$direct" kill "$dir/log"
	pid=$CRASH_PID
	crash_wait_for "$dir/log" "CRASH-FLUSHED n=" 300 "$pid"
	sleep 1 # writes after the flush are in flight now
	kill -9 "$pid"
	rc=0
	{ wait "$pid"; } 2>/dev/null || rc=$? # no "Killed" job notice
	[[ $rc -eq 137 ]] || { cat "$dir/log"; e2e_fail "direct=$direct: minivmm exited $rc, not by SIGKILL"; }
	n=$(sed -n 's/.*CRASH-FLUSHED n=\([0-9]*\).*/\1/p' "$dir/log" | head -1)
	echo "direct=$direct: guest flushed $n blocks, minivmm SIGKILLed"
	crash_check "$img" "$n"
	# The lock died with the process: the image opens again at once.
	rm -f "$img"
done
echo "PASS: SIGKILL after a guest flush loses no acknowledged block (buffered and O_DIRECT)"
