#!/bin/bash
# mkl1.sh [--print-path] [--quiet]
#
# Builds the rig's L1 initramfs: busybox-static, /init = tests/rig/l1-init,
# and the modules L1 needs (virtio_pci, 9p over virtio, overlay, virtio_blk,
# ext4, kvm_amd with their dependencies; TCG emulates SVM, not VMX) from the kernel that
# fetch-kernel.sh cached.  Cached in CACHE/l1/initrd.cpio.gz and rebuilt
# when an input changes.  Prints the initrd path (unless --quiet).
set -euo pipefail
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"

quiet=0
out="$RIG_CACHE/l1/initrd.cpio.gz"
while [[ $# -gt 0 ]]; do
	case "$1" in
	--print-path) echo "$out"; exit 0 ;;
	--quiet | -q) quiet=1 ;;
	*) rig_die "unknown argument $1" ;;
	esac
	shift
done

modules=(virtio_pci 9pnet_virtio 9p overlay virtio_blk ext4 kvm_amd)

rig_need busybox cpio gzip modprobe depmod flock sha256sum
"$RIG_DIR/fetch-kernel.sh"
rig_kernel_vars

key="$( {
	echo "kernel $RIG_KVER modules ${modules[*]}"
	rig_hash "$RIG_DIR/lib.sh" "$RIG_DIR/mkl1.sh" "$RIG_DIR/l1-init" "$(command -v busybox)"
} | sha256sum | cut -d' ' -f1)"
stamp="$out.key"
done_msg() {
	[[ $quiet == 1 ]] || echo "$out"
}
if [[ -f "$stamp" && -f "$out" && "$(cat "$stamp")" == "$key" ]]; then
	done_msg
	exit 0
fi
mkdir -p "${out%/*}"
rig_lock "${out%/*}/.lock"
if [[ -f "$stamp" && -f "$out" && "$(cat "$stamp")" == "$key" ]]; then
	done_msg
	exit 0
fi
stage="$(mktemp -d "${out%/*}/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
rig_stage_busybox "$stage"
rig_stage_modules "$stage" "${modules[@]}"
install -m 0755 "$RIG_DIR/l1-init" "$stage/init"
mkdir -p "$stage/rigio" "$stage/host" "$stage/ovl" "$stage/newroot"
rig_pack_cpio "$stage" "$out"
echo "$key" >"$stamp.tmp"
mv -f "$stamp.tmp" "$stamp"
done_msg
