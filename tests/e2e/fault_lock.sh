#!/bin/bash
# fault_lock.sh MINIVMM KERNEL INITRD
# Image locking across VMMs and within one VM:
#  1. VMM A runs a guest that writes its image; VMM B on the same image,
#     writable or read-only, exits 1 before booting with "disk image ... is
#     locked by another process or disk (opened writable elsewhere); use
#     lock=off ...".
#  2. While A runs, B boots with that image as lock=off,ro=on plus one
#     read-only image attached twice (read-only sharing), and exits 0.
#  3. One VM with the same image as two writable disks: vmm_start fails,
#     exit 1, with the message, before the guest starts.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/crash_lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/fault_lock.XXXXXX")
apid=
trap '[[ -z $apid ]] || kill -9 "$apid" 2>/dev/null; rm -rf "$dir"' EXIT
img=$dir/shared.img
truncate -s 16M "$img" "$dir/ro.img"
boot=(--smp 1 --mem 256M --kernel "$kernel" --initrd "$initrd")
msg="disk image $img is locked by another process or disk (opened writable elsewhere); use lock=off"

"$vmm" "${boot[@]}" --disk "path=$img,serial=crash" \
	--append "quiet guest.run=crash-write guest.mode=stop" </dev/null >"$dir/a.log" 2>&1 &
apid=$!
crash_wait_for "$dir/a.log" "CRASH-SYNCED n=16" 300 "$apid"
echo "A: running and writing $img"

for spec in "path=$img" "path=$img,ro=on"; do
	rc=0
	timeout 60 "$vmm" "${boot[@]}" --disk "$spec" --append "quiet guest.run=smoke" \
		</dev/null >"$dir/b.log" 2>&1 || rc=$?
	cat "$dir/b.log"
	[[ $rc -eq 1 ]] || e2e_fail "B ($spec) exited $rc, expected 1"
	grep -qF -- "$msg" "$dir/b.log" || e2e_fail "B ($spec): no clear lock message"
	! grep -q "MINIVMM-GUEST-UP" "$dir/b.log" || e2e_fail "B ($spec) booted a guest"
	echo "B ($spec): refused before boot"
done

e2e_run_vmm "$dir/c.log" -- "$vmm" "${boot[@]}" \
	--disk "path=$img,ro=on,lock=off" --disk "path=$dir/ro.img,ro=on" \
	--disk "path=$dir/ro.img,ro=on" --append "quiet guest.run=smoke"
[[ $E2E_RC -eq 0 ]] || { dmesg | grep -i -E "seccomp|type=1326" | tail -3; e2e_fail "lock=off / shared read-only disks: minivmm exited $E2E_RC"; }
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/c.log" || e2e_fail "smoke payload failed"
echo "C: lock=off next to a writer, and one read-only image twice: booted"

kill -TERM "$apid"
wait "$apid" || true
apid=

rc=0
timeout 60 "$vmm" "${boot[@]}" --disk "path=$img" --disk "path=$img" \
	--append "quiet guest.run=smoke" </dev/null >"$dir/d.log" 2>&1 || rc=$?
cat "$dir/d.log"
[[ $rc -eq 1 ]] || e2e_fail "two writable disks on one image: exit $rc, expected 1"
grep -qF -- "$msg" "$dir/d.log" || e2e_fail "two disks: no clear lock message"
! grep -q "MINIVMM-GUEST-UP" "$dir/d.log" || e2e_fail "two disks: the guest booted"
echo "PASS: a locked image is refused before boot (other VMM or same VM); ro sharing and lock=off work"
