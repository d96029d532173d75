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
	# scripts/arm64-sysroot.sh unpacks it); its tests run under
	# qemu-user-static (below)
	liburing-dev:arm64 libseccomp-dev:arm64 check:arm64 libjansson-dev:arm64
	# the rig: L1 under TCG, its initramfs, the Debian kernel it boots
	qemu-system-x86 busybox-static kmod cpio xz-utils zstd e2fsprogs util-linux
	# the arm64 rig (RIG_ARCH=arm64, tests/rig/README): qemu-system-aarch64
	# for its L1; qemu-aarch64-static runs the arm64 busybox at image build
	# time (its applet list) and the arm64 unit tests.  Its kernel, busybox and bash are arm64 .debs
	# that fetch-kernel.sh downloads and unpacks, never installs.
	qemu-system-arm qemu-user-static
	dmsetup # tests/e2e/fault_dm_error.sh (device-mapper error target)
	qemu-system-common # /usr/lib/qemu/virtiofsd: tests/e2e/fs.sh, minivmm --fs path=
	socat # raw requests to minivmm's API socket: tests/e2e/api_socket.sh
	# in-guest and bench I/O tools
	fio
	gnuplot-nox jq # bench/run.sh: plots and JSON
	# minivmm-oci: config.json parser; podman/containerd drive it in the
	# rig (tests/e2e/oci_*.sh), runc is the benchmark's reference
	libjansson-dev podman conmon containerd runc
	# fuzzing (scripts/fuzz.sh): clang 14 and its libFuzzer/ASan/UBSan
	# runtimes (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev)
	clang libclang-rt-14-dev
	iproute2 # tests/e2e/net_mq.sh: the tap and its address in L1's namespace
	# minivmm-oci on podman's default network (tc is iproute2's):
	# tests/e2e/oci_network.sh, CNI's bridge plugins and iptables
	containernetworking-plugins iptables
	# rootless podman there (tests/e2e/oci_network.sh section 3): the
	# subordinate id maps' newuidmap/newgidmap and podman 4.3's rootless
	# network
	uidmap slirp4netns
	catatonit # podman's pod infra container (its pause image): e2e/oci_network
	passt # tests/e2e/net_stream.sh: minivmm --net stream= to an unprivileged passt
	iperf3 # bench/net_bench.sh: in the L1 and (its tools disk) in the guest
)

SUDO=()
[[ $(id -u) -eq 0 ]] || SUDO=(sudo)

# The :arm64 packages (build-arm64.sh's libraries) and the arm64 rig's
# `apt-get download`s (linux-image-arm64, busybox-static, bash-static,
# libfdt, fio and qemu-system-common's virtiofsd with their libraries:
# downloaded and unpacked, never installed) need the foreign
# architecture; tests/rig/fetch-kernel.sh and scripts/arm64-sysroot.sh
# need package lists even when every package above is already installed.
updated=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	"${SUDO[@]}" dpkg --add-architecture arm64
	"${SUDO[@]}" apt-get update
	updated=1
fi
policy=$(apt-cache policy linux-image-amd64 linux-image-arm64:arm64 libfdt-dev:arm64 2>/dev/null || true)
if [[ $updated == 0 && $(grep -c 'Candidate: [0-9]' <<<"$policy") -lt 3 ]]; then
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
