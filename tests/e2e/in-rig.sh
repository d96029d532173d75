#!/bin/bash
# in-rig.sh TEST [ARGS...]: how CTest runs an end-to-end test.  Resolves the
# default guest's kernel and initrd on this host (placeholders @KERNEL@ and
# @INITRD@ in ARGS, @VMLINUX@ for the same kernel uncompressed, booted
# through PVH, and @TOOLS@ for the tools disk of mktools.sh), then runs
# TEST through the nested-KVM rig (directly when this host has /dev/kvm).
#
# in-rig.sh --arch arm64 TEST [ARGS...]: the same for the arm64 tests
# (tests/e2e/arm64/): @KERNEL@ and @INITRD@ are the arm64 guest's Image and
# initramfs, and TEST runs in the arm64 rig's L1 (rig-run --arch arm64).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ ${1:-} == --arch ]]; then
	export RIG_ARCH=$2 # read by mkguest.sh and rig-run
	shift 2
fi
# Building is cached and locked: a no-op when scripts/test.sh already did it.
mapfile -t paths < <("$here/../rig/mkguest.sh")
tools=
[[ ${RIG_ARCH:-x86_64} == arm64 ]] || tools=$("$here/../rig/mktools.sh")
# fetch-kernel.sh keeps the uncompressed vmlinux beside the bzImage.
vmlinux=$(dirname "$(readlink -f "${paths[0]}")")/vmlinux
args=()
for a in "$@"; do
	a=${a//@KERNEL@/${paths[0]}}
	a=${a//@INITRD@/${paths[1]}}
	a=${a//@TOOLS@/$tools}
	if [[ $a == *@VMLINUX@* ]]; then
		[[ -r $vmlinux ]] || { echo "in-rig: no $vmlinux (tests/rig/fetch-kernel.sh)" >&2; exit 1; }
		a=${a//@VMLINUX@/$vmlinux}
	fi
	args+=("$a")
done
# An L1 stall (rig-run's watchdog, exit 124) is not a test result: the test
# runs again, up to twice, announced in the output and counted in RIG_LOG
# (CTest points it at BUILD/rig-runs.log; scripts/test.sh sums it up).
# Twice: on 2026-12-01 the L1 stalled in about 1 of 8 boots on one machine,
# and a 30-second test failed because both of its attempts stalled.  The
# --timeout still bounds all attempts together.
exec "$here/../rig/rig-run" --timeout "${E2E_RIG_TIMEOUT:-900}" \
	--stall-retries "${RIG_STALL_RETRIES:-2}" -- "${args[@]}"
