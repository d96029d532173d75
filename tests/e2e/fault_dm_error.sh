#!/bin/bash
# fault_dm_error.sh MINIVMM KERNEL INITRD
# EIO from the host's block layer: a device-mapper device whose sectors
# 2048..4095 are an "error" target (the rest linear on a loop device),
# used with direct=on.  The guest's reads and writes in that range fail
# with EIO, around it they work, the VM keeps running and reboots
# normally, and io_errors counts the failures.  Needs root, dmsetup,
# losetup and the dm-mod / loop modules (loaded from the rig's module tree
# when missing); exits 77 where that is not possible.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
skip() { echo "SKIP: $*"; exit 77; }
for t in dmsetup losetup; do command -v "$t" >/dev/null || skip "no $t"; done
mods=${VMM_RIG_CACHE:-$HOME/.cache/minivmm-rig}/modules
if [[ ! -e /dev/mapper/control ]]; then
	insmod "$mods/kernel/drivers/md/dm-mod.ko" 2>/dev/null ||
		modprobe dm-mod 2>/dev/null || skip "cannot load dm-mod"
fi
if [[ ! -e /dev/loop-control ]]; then
	insmod "$mods/kernel/drivers/block/loop.ko" 2>/dev/null ||
		modprobe loop 2>/dev/null || skip "cannot load loop"
fi
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/fault_dm.XXXXXX")
name=minivmm-faulty-$$
loop=
cleanup() {
	dmsetup remove "$name" 2>/dev/null || true
	[[ -z $loop ]] || losetup -d "$loop" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
truncate -s 16M "$dir/back.img"
loop=$(losetup -f --show "$dir/back.img") || skip "losetup failed"
printf '0 2048 linear %s 0\n2048 2048 error\n4096 28672 linear %s 4096\n' \
	"$loop" "$loop" | dmsetup create --noudevsync "$name" || skip "dmsetup create failed"
minor=$(dmsetup info -c --noheadings -o minor "$name" | tr -d ' ')
dev=/dev/dm-$minor
for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -b $dev ]] && break; sleep 0.2; done
[[ -b $dev ]] || skip "no $dev node"
echo "dm device $dev: sectors 2048..4095 fail"

e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dev,serial=faulty,direct=on" \
	--stats-json --append "guest.run=crash-fault guest.fault=dm"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
errs=$(grep -o '"io_errors":[0-9]*' "$dir/log" | cut -d: -f2 | sort -n | tail -1)
echo "io_errors=$errs"
[[ ${errs:-0} -ge 3 ]] || e2e_fail "io_errors=$errs, expected >= 3"
grep -q "Input/output error" "$dir/log" || e2e_fail "the log does not say EIO"
echo "PASS: dm error target -> guest EIO, VM keeps running, errors counted"
