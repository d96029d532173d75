#!/bin/bash
# oci-rig.sh BUILD_DIR TEST [ARGS...]: how CTest runs minivmm-oci's
# end-to-end tests.  On this host: fetch the rig kernel (mkguest.sh does),
# build minivmm-oci's initramfs for it from the rig's module tree
# (BUILD_DIR/minivmm-oci-mkinitrd, cached in CACHE/oci/, keyed on the init
# binary and the kernel), then run TEST through the nested-KVM rig with
# OCI_KERNEL/OCI_INITRD/OCI_RUNTIME in its environment.
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
	sha256sum "$build/minivmm-oci-init" "$build/minivmm-oci-mkinitrd"
} | sha256sum | cut -c1-16)
initrd="$RIG_CACHE/oci/initrd-$key.cpio.gz"
if [[ ! -f "$initrd" ]]; then
	rig_lock "$RIG_CACHE/oci/.lock"
	[[ -f "$initrd" ]] || "$build/minivmm-oci-mkinitrd" --init "$build/minivmm-oci-init" \
		--kver "$RIG_KVER" --modroot "$RIG_CACHE/kernel/$RIG_KVER" --out "$initrd"
fi
export OCI_KERNEL="${paths[0]}" OCI_INITRD="$initrd" OCI_RUNTIME="$build/minivmm-oci"
export RIG_PASS_ENV="${RIG_PASS_ENV:-} OCI_KERNEL OCI_INITRD OCI_RUNTIME OCI_KEEP"
exec "$here/../rig/rig-run" --timeout "${E2E_RIG_TIMEOUT:-1500}" -- "$@"
