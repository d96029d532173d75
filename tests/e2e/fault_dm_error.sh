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
e2e_dm_modules
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/fault_dm.XXXXXX")
name=minivmm-faulty-$$
cleanup() {
	e2e_dm_remove "$name"
	rm -rf "$dir"
}
trap cleanup EXIT
truncate -s 16M "$dir/back.img"
e2e_dm_create "$name" "$dir/back.img" "0 2048 linear @LOOP@ 0
2048 2048 error
4096 28672 linear @LOOP@ 4096"
dev=$E2E_DM_DEV
echo "dm device $dev: sectors 2048..4095 fail"

e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dev,serial=faulty,direct=on" \
	--stats-json --append "quiet guest.run=crash-fault guest.fault=dm"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
errs=$(grep -o '"io_errors":[0-9]*' "$dir/log" | cut -d: -f2 | sort -n | tail -1)
echo "io_errors=$errs"
[[ ${errs:-0} -ge 3 ]] || e2e_fail "io_errors=$errs, expected >= 3"
grep -q "Input/output error" "$dir/log" || e2e_fail "the log does not say EIO"
echo "PASS: dm error target -> guest EIO, VM keeps running, errors counted"
