#!/bin/bash
# mkl1.sh [--print-path] [--quiet]
#
# Builds the rig's L1 initramfs: busybox-static, /init = tests/rig/l1-init,
# and the modules L1 needs (virtio_pci, 9p over virtio, overlay, virtio_blk,
# ext4, kvm_amd, tun, vhost_net, vhost_vsock with their dependencies; TCG
# emulates SVM, not VMX) from the kernel that fetch-kernel.sh cached.
# Cached by content in CACHE/l1/KEY/initrd.cpio.gz (KEY hashes the kernel
# version, the modules, l1-init, the rig scripts and busybox; the entry is
# created atomically and never rewritten, see tests/rig/README "Cache").
# Prints the initrd path (unless --quiet); --print-path prints it for the
# current inputs without building (the kernel must have been fetched).
#
# RIG_ARCH=arm64: the arm64 L1's initramfs in CACHE/arm64/l1/KEY/: static
# aarch64 busybox and bash (/bin/bash runs the command script), the same
# l1-init, modules virtio_pci 9pnet_virtio 9p overlay virtio_blk ext4 tun
# vhost_vsock (KVM is built into Debian's arm64 kernel).
set -euo pipefail
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"

quiet=0
print_only=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--print-path) print_only=1 ;;
	--quiet | -q) quiet=1 ;;
	*) rig_die "unknown argument $1" ;;
	esac
	shift
done

if [[ $RIG_ARCH == arm64 ]]; then
	modules=(virtio_pci 9pnet_virtio 9p overlay virtio_blk ext4 tun) # tun: e2e/arm64_net_vsock
else
	modules=(virtio_pci 9pnet_virtio 9p overlay virtio_blk ext4 kvm_amd tun)
fi
# virtio-net vhost=on (e2e/net_vhost): /dev/vhost-net.
[[ $RIG_ARCH == arm64 ]] || modules+=(vhost_net)
# virtio-vsock vhost=on (e2e/vsock, e2e/arm64_net_vsock): /dev/vhost-vsock.
modules+=(vhost_vsock)

rig_need_tools
if [[ $print_only == 1 ]]; then
	[[ -f "$RIG_CACHE/kernel-version" ]] ||
		rig_die "no kernel in $RIG_CACHE yet: run tests/rig/fetch-kernel.sh first"
else
	"$RIG_DIR/fetch-kernel.sh"
fi
rig_kernel_vars

key="$( {
	echo "kernel $RIG_KVER modules ${modules[*]}"
	inputs=("$RIG_DIR/lib.sh" "$RIG_DIR/mkl1.sh" "$RIG_DIR/l1-init" "$(rig_busybox)")
	[[ $RIG_ARCH != arm64 ]] || inputs+=("$RIG_CACHE/userland/bin/bash")
	rig_hash "${inputs[@]}"
} | sha256sum | cut -c1-16)"
out_dir="$RIG_CACHE/l1"
entry="$out_dir/$key"
out="$entry/initrd.cpio.gz"
if [[ $print_only == 1 ]]; then
	echo "$out"
	exit 0
fi
done_msg() {
	[[ $quiet == 1 ]] || echo "$out"
}
if rig_entry_lookup "$entry"; then
	done_msg
	exit 0
fi
rig_entry_new "$out_dir"
if rig_entry_lookup "$entry"; then # built while we waited for the lock
	rm -rf "$RIG_NEW"
	done_msg
	exit 0
fi
stage="$(mktemp -d "$out_dir/.new.stage.XXXXXX")"
trap 'rm -rf "$stage" "${RIG_NEW:-}"' EXIT
rig_stage_busybox "$stage"
rig_stage_modules "$stage" "${modules[@]}"
install -m 0755 "$RIG_DIR/l1-init" "$stage/init"
if [[ $RIG_ARCH == arm64 ]]; then
	# The command script is bash (rig-run's quoting): bash-static:arm64.
	install -m 0755 "$RIG_CACHE/userland/bin/bash" "$stage/bin/bash"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
	printf 'root:x:0:\n' >"$stage/etc/group"
fi
mkdir -p "$stage/rigio" "$stage/host" "$stage/ovl" "$stage/newroot"
rig_pack_cpio "$stage" "$RIG_NEW/initrd.cpio.gz"
# Fixed-path outputs of the old layout (before content keys).
rig_entry_publish "$entry" "$out_dir/initrd.cpio.gz" "$out_dir/initrd.cpio.gz.key"
done_msg
