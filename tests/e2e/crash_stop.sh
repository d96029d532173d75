#!/bin/bash
# crash_stop.sh MINIVMM KERNEL INITRD
# Clean stops with writes in flight drain them:
#  1. SIGTERM (minivmm: vmm_stop, vmm_wait, vmm_destroy) while the guest
#     writes 16-block chunks, each fsynced and reported "CRASH-SYNCED n=N":
#     every block reported before the stop is in the image, intact; later
#     blocks are intact or absent, never torn.  With and without O_DIRECT.
#  2. The guest writes 64 blocks (acknowledged, not flushed), starts more
#     writes and reboot -f at once: minivmm exits 0 and the 64 blocks are
#     in the image.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/crash_lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/crash_stop.XXXXXX")
trap 'rm -rf "$dir"' EXIT

for direct in off on; do
	img=$dir/stop-$direct.img
	truncate -s 16M "$img"
	crash_start "$vmm" "$kernel" "$initrd" "$img" "$direct" stop "$dir/log"
	pid=$CRASH_PID
	crash_wait_for "$dir/log" "CRASH-SYNCED n=48" 300 "$pid"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[[ $rc -eq 143 ]] || { cat "$dir/log"; e2e_fail "direct=$direct: minivmm exited $rc after SIGTERM, not 143"; }
	n=$(sed -n 's/.*CRASH-SYNCED n=\([0-9]*\).*/\1/p' "$dir/log" | tail -1)
	echo "direct=$direct: guest synced $n blocks before SIGTERM; minivmm exited $rc"
	crash_check "$img" "$n"
	sum=$(sha256sum <"$img")
	sleep 1
	[[ "$(sha256sum <"$img")" == "$sum" ]] || e2e_fail "image changed after minivmm exited"
	rm -f "$img"
done

img=$dir/reboot.img
truncate -s 16M "$img"
e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$img,serial=crash" \
	--append "quiet guest.run=crash-write guest.mode=reboot"
[[ $E2E_RC -eq 0 ]] || e2e_fail "reboot -f with writes in flight: minivmm exited $E2E_RC"
grep -q "CRASH-WRITTEN n=64" "$dir/log" || e2e_fail "guest did not write its blocks"
crash_check "$img" 64
echo "PASS: SIGTERM and guest reboot -f with writes in flight lose no acknowledged block"
