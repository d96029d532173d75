#!/bin/bash
# blk_many.sh MINIVMM KERNEL INITRD NR_DISKS [NR_CPUS]
# NR_DISKS virtio-blk disks on one VM all work (each written and read back
# in the guest, the data found in each image on the host).  NR_CPUS
# (default 2) vCPUs, every disk with the default one queue per vCPU; disk
# i is written from CPU i mod NR_CPUS and its completion must arrive there.
# More than 31 disks take multi-function PCI slots.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 nd=$4 n=${5:-2}
# A big guest boots for minutes in the rig (one emulated L1 CPU).
[[ $n -le 8 ]] || export E2E_VMM_TIMEOUT=${E2E_VMM_TIMEOUT:-1500}
# Two eventfds a queue: 101 disks x 32 queues need ~6,700 descriptors,
# above the usual hard limit of 4096 (vmm_start() fails with -EMFILE).
(( nd * n < 1500 )) || ulimit -n 16384
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/blk_many.XXXXXX")
trap 'rm -rf "$dir"' EXIT
args=()
for ((i = 0; i < nd; i++)); do
	truncate -s 1M "$dir/d$i.img"
	args+=(--disk "path=$dir/d$i.img,serial=d$i")
done

# --stats only for small shapes: 101 disks x 32 queues print 3,232 lines,
# 24 s through the rig's console.
stats=(--stats)
((nd * n <= 512)) || stats=()
e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 1G --kernel "$kernel" \
	--initrd "$initrd" "${args[@]}" "${stats[@]}" \
	--append "quiet guest.run=blk-many guest.disks=$nd"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
for ((i = 0; i < nd; i++)); do
	printf -v want 'MINIVMM-DISK-%03d' "$i"
	got=
	read -r -N 16 got <"$dir/d$i.img" || true # no process per disk (L1 is emulated)
	[[ "$got" == "$want" ]] || e2e_fail "d$i.img lacks its data"
done
grep -q "BLK many: $nd disks written and read back" "$dir/log" || e2e_fail "not every disk was checked"
echo "PASS: $nd disks on one VM with $n vCPUs, each completion on its submitting CPU"
