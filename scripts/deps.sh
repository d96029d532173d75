#!/bin/bash
# Installs, from Debian 12's archive, everything libvmm needs to build, test
# and run its nested-KVM rig.  Idempotent: does nothing when all is present.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake pkg-config linux-libc-dev liburing-dev libfdt-dev check
	libseccomp-dev
	acpica-tools # tests/unit/check_acpi.c: iasl -d of the ACPI tables
	device-tree-compiler # tests/unit/check_arm64_fdt.c: dtc reads the arm64 device tree
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross # tests/cross_arm64.sh: below the machine builds for aarch64
	# scripts/build-arm64.sh: the libraries of the static aarch64 build
	# (multiarch, beside the amd64 ones; libfdt is not co-installable,
	# scripts/arm64-sysroot.sh unpacks it) and user-mode QEMU for its tests
	liburing-dev:arm64 libseccomp-dev:arm64 check:arm64 libjansson-dev:arm64
	qemu-user-static
	# the rig: L1 under TCG, its initramfs, the Debian kernel it boots
	qemu-system-x86 busybox-static kmod cpio xz-utils zstd e2fsprogs util-linux
	dmsetup # tests/e2e/fault_dm_error.sh (device-mapper error target)
	# in-guest and bench I/O tools
	fio
	gnuplot-nox jq # bench/run.sh: plots and JSON
	# minivmm-oci: config.json parser; podman/containerd drive it in the
	# rig (tests/e2e/oci_*.sh), runc is the benchmark's reference
	libjansson-dev podman conmon containerd runc
	# fuzzing (scripts/fuzz.sh): clang 14 and its libFuzzer/ASan/UBSan
	# runtimes (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev)
	clang libclang-rt-14-dev
)

SUDO=()
[[ $(id -u) -eq 0 ]] || SUDO=(sudo)

# The :arm64 packages need the architecture in dpkg's list.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	"${SUDO[@]}" dpkg --add-architecture arm64
fi

# tests/rig/fetch-kernel.sh and scripts/arm64-sysroot.sh use `apt-get
# download`, which needs package lists (arm64's too) even when every
# package above is already installed.
policy=$(apt-cache policy linux-image-amd64 libfdt-dev:arm64 2>/dev/null || true)
if [[ $(grep -c 'Candidate: [0-9]' <<<"$policy") -ne 2 ]]; then
	"${SUDO[@]}" apt-get update
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "deps: installing ${missing[*]}" >&2
"${SUDO[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
