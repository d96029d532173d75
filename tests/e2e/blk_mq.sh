#!/bin/bash
# blk_mq.sh MINIVMM KERNEL INITRD TOOLS NR_CPUS
# virtio-blk with the default queue count (one per vCPU) under the real
# Linux driver: NR_CPUS queues with distinct MSI-X vectors, fio crc32c
# verify with one job per CPU, seg_max/size_max in the guest's queue limits
# and 4 MiB O_DIRECT requests (max_sectors_kb raised) verified, and a marker
# written + synced in the guest found in the image on the host after minivmm
# exits 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tools=$4 n=$5
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/blk_mq.XXXXXX")
trap 'rm -rf "$dir"' EXIT
img=$dir/data.img
truncate -s 96M "$img"
token=$RANDOM$RANDOM

e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 1G --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$img,serial=data" \
	--disk "path=$tools,ro=on,serial=tools" --stats \
	--append "quiet guest.run=blk-mq guest.queues=$n guest.token=$token"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
got=$(dd if="$img" bs=4096 skip=$((64 * 256)) count=1 2>/dev/null | head -c 64 | tr -d '\0')
[[ "$got" == "MINIVMM-PERSIST-$token" ]] ||
	e2e_fail "synced guest write not in the image (found '$got')"
echo "PASS: --smp $n: $n queues, distinct vectors, fio verify, synced data on the host"
