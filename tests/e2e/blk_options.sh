#!/bin/bash
# blk_options.sh MINIVMM KERNEL INITRD TOOLS
# num-queues=1, ro=on (writes refused in the guest, image opened O_RDONLY
# and left unchanged) and poll queues (virtio_blk.poll_queues=1: a queue
# without MSI-X vector, fio io_uring hipri on it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tools=$4
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/blk_opts.XXXXXX")
trap 'rm -rf "$dir"' EXIT
truncate -s 16M "$dir/one.img" "$dir/poll.img" "$dir/ro.img"
printf 'MINIVMM-RO-PATTERN' | dd of="$dir/ro.img" conv=notrunc 2>/dev/null
chmod 0444 "$dir/ro.img"
sum=$(sha256sum <"$dir/ro.img")

e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 1G --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dir/one.img,num-queues=1,serial=one" \
	--disk "path=$dir/ro.img,ro=on,serial=ro" \
	--disk "path=$dir/poll.img,num-queues=2,serial=poll" \
	--disk "path=$tools,ro=on,serial=tools" --stats \
	--append "quiet guest.run=blk-opts virtio_blk.poll_queues=1"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
[[ "$(sha256sum <"$dir/ro.img")" == "$sum" ]] || e2e_fail "read-only image changed"
echo "PASS: num-queues=1, read-only disk, poll queue with io_uring hipri"
