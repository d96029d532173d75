#!/bin/bash
# fault_enospc.sh MINIVMM KERNEL INITRD
# A sparse 64 MiB image on an 8 MiB tmpfs: guest writes beyond what fits
# hit ENOSPC on the host.  The guest must see EIO (not a hang), the VM must
# keep running (the payload reads the disk afterwards and the guest reboots
# normally: exit 0), io_errors in --stats-json must count the errors, and
# the log must carry one line per burst, not one per request.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d /tmp/fault_enospc.XXXXXX)
mkdir "$dir/tiny"
if ! mount -t tmpfs -o size=8M tmpfs "$dir/tiny" 2>/dev/null; then
	rm -rf "$dir"
	echo "SKIP: cannot mount a tmpfs here (not root?)"
	exit 77
fi
trap 'umount "$dir/tiny"; rm -rf "$dir"' EXIT
truncate -s 64M "$dir/tiny/img"

e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dir/tiny/img,serial=faulty" \
	--stats-json --append "quiet guest.run=crash-fault guest.fault=enospc"
grep -q "FAULT-EIO-SEEN" "$dir/log" || e2e_fail "the guest did not see the errors"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
errs=$(grep -o '"io_errors":[0-9]*' "$dir/log" | cut -d: -f2 | sort -n | tail -1)
# Requests a reset or stop cancelled are IOERRs too, but no host error.
cancelled=$(grep -o '"cancelled":[0-9]*' "$dir/log" | cut -d: -f2 | sort -n | tail -1 || true)
# First lines of a burst; summaries ("N more I/O errors ... (last: I/O
# error on ...)") are counted apart.  Every error is either a first line or
# counted in a summary; how many bursts there are depends on how fast the
# guest retries (a burst ends after 1 s without errors, and a loaded rig
# spaces them out), so the check is the accounting, not a line count.
lines=$(grep "libvmm: blk: .*: I/O error on" "$dir/log" | grep -vc "more I/O errors" || true)
sums=$(grep -c "more I/O errors" "$dir/log" || true)
summed=$(grep -o "[0-9]* more I/O errors" "$dir/log" | awk '{ s += $1 } END { print s + 0 }')
echo "io_errors=$errs (cancelled ${cancelled:-0}), first-error log lines=$lines, summary lines=$sums counting $summed"
[[ ${errs:-0} -ge 8 ]] || e2e_fail "io_errors=$errs, expected >= 8"
[[ $((lines + summed)) -eq $((errs - ${cancelled:-0})) ]] ||
	e2e_fail "$lines I/O error lines + $summed summarised for $errs errors ($cancelled cancelled)"
[[ $lines -ge 1 && $sums -ge 1 && $lines -lt $errs ]] ||
	e2e_fail "$lines I/O error log lines, $sums summaries for $errs errors: not per burst"
grep -q "No space left on device" "$dir/log" || e2e_fail "the log does not say ENOSPC"
echo "PASS: host ENOSPC -> guest EIO, VM keeps running, errors counted and logged per burst"
