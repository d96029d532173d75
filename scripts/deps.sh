#!/bin/bash
# Installs, from Debian 12's archive, everything libvmm needs to build, test
# and run its nested-KVM rig.  Idempotent: does nothing when all is present.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake pkg-config linux-libc-dev liburing-dev libfdt-dev check
	libseccomp-dev
	# the rig: L1 under TCG, its initramfs, the Debian kernel it boots
	qemu-system-x86 busybox-static kmod cpio xz-utils zstd e2fsprogs util-linux
	# in-guest and bench I/O tools
	fio
	gnuplot-nox jq # bench/run.sh: plots and JSON
	# fuzzing (scripts/fuzz.sh): clang 14 and its libFuzzer/ASan/UBSan
	# runtimes (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev)
	clang libclang-rt-14-dev
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

SUDO=()
[[ $(id -u) -eq 0 ]] || SUDO=(sudo)
echo "deps: installing ${missing[*]}" >&2
"${SUDO[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
