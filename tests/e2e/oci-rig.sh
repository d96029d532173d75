#!/bin/bash
# oci-rig.sh BUILD_DIR TEST [ARGS...]: how CTest runs minivmm-oci's
# end-to-end tests.  On this host: fetch the rig kernel (mkguest.sh does),
# build minivmm-oci's initramfs for it from the rig's module tree
# (BUILD_DIR/minivmm-oci-mkinitrd, cached in CACHE/oci/, keyed on the init
# binary and the kernel), then run TEST through the nested-KVM rig with
# OCI_KERNEL/OCI_INITRD/OCI_RUNTIME in its environment.  OCI_VMLINUX is
# the same kernel uncompressed (fetch-kernel.sh keeps it beside the
# bzImage): the e2e tests' containers boot it through PVH, without the
# decompressor (tests/e2e/CMakeLists.txt says why); the benches keep
# OCI_KERNEL, the bzImage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shift
# shellcheck source=tests/rig/lib.sh
. "$here/../rig/lib.sh"
mapfile -t paths < <("$here/../rig/mkguest.sh")
rig_kernel_vars
key=$( {
	echo "$RIG_KVER"
	sha256sum "$build/libexec/minivmm-oci/init" "$build/minivmm-oci-mkinitrd"
} | sha256sum | cut -c1-16)
initrd="$RIG_CACHE/oci/initrd-$key.cpio.gz"
# rig_lock holds fd 9 until it is closed: closed after each build, or the
# exec below would hand the lock to rig-run and every other oci-rig.sh
# would wait for this whole test to end.
if [[ ! -f "$initrd" ]]; then
	rig_lock "$RIG_CACHE/oci/.lock"
	[[ -f "$initrd" ]] || "$build/minivmm-oci-mkinitrd" --init "$build/libexec/minivmm-oci/init" \
		--kver "$RIG_KVER" --modroot "$RIG_CACHE/kernel/$RIG_KVER" --out "$initrd"
	exec 9>&-
fi
# The test image: busybox-static with its applets, and /blob, 1 MiB of
# random bytes (cached: made once).
image="$RIG_CACHE/oci/bb.tar"
if [[ ! -f "$image" ]]; then
	rig_lock "$RIG_CACHE/oci/.lock"
	if [[ ! -f "$image" ]]; then
		stage=$(mktemp -d)
		mkdir -p "$stage"/{bin,etc,tmp,root}
		cp "$(command -v busybox)" "$stage/bin/busybox"
		for a in $("$stage/bin/busybox" --list); do
			[[ "$a" == busybox ]] || ln -s busybox "$stage/bin/$a"
		done
		head -c 1048576 /dev/urandom >"$stage/blob"
		printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$stage/etc/passwd"
		printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage/etc/group"
		tar -C "$stage" -cf "$image.tmp" .
		mv "$image.tmp" "$image"
		rm -rf "$stage"
	fi
	exec 9>&-
fi
# The hostile image (oci_hostile.sh): the same busybox plus /hostile
# (tests/guest/hostile/*.c and *.h, static), keyed on the sources.
hsrc=("$here"/../guest/hostile/*.c)
hkey=$( {
	sha256sum "${hsrc[@]}" "$here"/../guest/hostile/*.h 2>/dev/null
	gcc --version | head -1
} | sha256sum | cut -c1-16)
himage="$RIG_CACHE/oci/hostile-$hkey.tar"
if [[ ! -f "$himage" ]]; then
	rig_lock "$RIG_CACHE/oci/.lock"
	if [[ ! -f "$himage" ]]; then
		stage=$(mktemp -d)
		tar -C "$stage" -xf "$image"
		gcc -static -O2 -Wall -Wextra -Werror -o "$stage/hostile" "${hsrc[@]}"
		tar -C "$stage" -cf "$himage.tmp" .
		mv "$himage.tmp" "$himage"
		rm -rf "$stage"
	fi
fi
export OCI_KERNEL="${paths[0]}" OCI_INITRD="$initrd" OCI_RUNTIME="$build/minivmm-oci"
OCI_VMLINUX="$(dirname "$(readlink -f "${paths[0]}")")/vmlinux"
[[ -r $OCI_VMLINUX ]] || { echo "oci-rig: no $OCI_VMLINUX (tests/rig/fetch-kernel.sh)" >&2; exit 1; }
export OCI_VMLINUX
export OCI_IMAGE_TAR="$image" OCI_HOSTILE_TAR="$himage"
# The L1 kernel's module tree (modprobe -d), for tests that need modules
# beyond the rig's list (oci_network.sh: CNI's bridge and netfilter).
export OCI_MODROOT="$RIG_CACHE/kernel/$RIG_KVER"
export RIG_PASS_ENV="${RIG_PASS_ENV:-} OCI_KERNEL OCI_VMLINUX OCI_INITRD OCI_RUNTIME OCI_IMAGE_TAR OCI_HOSTILE_TAR OCI_MODROOT"
exec "$here/../rig/rig-run" --timeout "${E2E_RIG_TIMEOUT:-1500}" -- "$@"
