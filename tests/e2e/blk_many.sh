#!/bin/bash
# blk_many.sh MINIVMM KERNEL INITRD NR_DISKS
# NR_DISKS virtio-blk disks on one VM all work (each written and read back
# in the guest, the data found in each image on the host).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 nd=$4
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/blk_many.XXXXXX")
trap 'rm -rf "$dir"' EXIT
args=()
for ((i = 0; i < nd; i++)); do
	truncate -s 1M "$dir/d$i.img"
	args+=(--disk "path=$dir/d$i.img,serial=d$i")
done

e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" "${args[@]}" --stats \
	--append "guest.run=blk-many guest.disks=$nd"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
for ((i = 0; i < nd; i++)); do
	want=$(printf 'MINIVMM-DISK-%03d' "$i")
	[[ "$(head -c 16 "$dir/d$i.img")" == "$want" ]] || e2e_fail "d$i.img lacks its data"
done
echo "PASS: $nd disks on one VM"
