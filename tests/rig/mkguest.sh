#!/bin/bash
# mkguest.sh [--print-paths] [--quiet] [--variant NAME] [--extra BIN]...
#            [--module MOD]...
#
# Builds the L2 "default guest" initramfs for the minivmm tests: busybox-static,
# the virtio modules (virtio_pci, virtio_blk, virtio_net and deps) of the rig's Debian
# kernel, /init = tests/guest/init and every other file of tests/guest/ as an
# executable payload /tests/NAME.  --extra BIN (repeatable; also the
# space-separated env MKGUEST_EXTRA) adds a host binary with the shared
# libraries ldd lists and the dynamic loader (e.g. --extra fio; about 80 MB
# of libraries for Debian's fio).  --module adds kernel modules.
#
# Cached by content: KEY hashes every input (the kernel version, the files
# of tests/guest/, the rig scripts, busybox, extra binaries and their
# libraries, the modules), and the outputs live in their own entry
#   CACHE/guest/VARIANT-KEY/bzImage         (symlink to the rig kernel)
#   CACHE/guest/VARIANT-KEY/initrd.cpio.gz
# (VARIANT: "default", --variant NAME, or "extra" when --extra/--module are
# given), created atomically and never rewritten: checkouts with different
# guests share one cache safely.  Old entries are cleaned up (tests/rig/
# README, "Cache").  Prints the two paths, kernel then initrd.
# --print-paths prints them for the current inputs without building (it
# hashes the inputs; the kernel must have been fetched).
#
# A C file tests/guest/NAME.c (e.g. blkverify.c) is compiled static
# (-O2 -Wall -Wextra -Werror) into the guest as /usr/bin/NAME.
#
# RIG_ARCH=arm64: the arm64 L2 guest, in CACHE/arm64/guest/VARIANT-KEY/
# with the kernel as "Image" (the uncompressed arm64 Image of
# fetch-kernel.sh) instead of bzImage, static aarch64 busybox, the arm64
# kernel's virtio_pci + virtio_blk (+ deps), the same tests/guest/ files,
# C files compiled with aarch64-linux-gnu-gcc -static.  --extra (host
# binaries) is x86-only.
set -euo pipefail
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"

print_only=0
quiet=0
variant=
read -r -a extras <<<"${MKGUEST_EXTRA:-}"
modules=(virtio_pci virtio_blk virtiofs) # virtiofs (+ fuse): tests/e2e/fs.sh
modules+=(virtio_net) # tests/e2e/net_mq.sh
# x86: button + evdev, the ACPI power button reaches /init (vmm_shutdown()).
[[ ${RIG_ARCH:-x86_64} == arm64 ]] || modules+=(button evdev)
# arm64: gpio_keys + evdev, the device tree's power key (a PL061 line) does.
[[ ${RIG_ARCH:-x86_64} != arm64 ]] || modules+=(gpio_keys evdev)
extra_modules=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--print-paths) print_only=1 ;;
	--quiet | -q) quiet=1 ;;
	--variant) variant="$2"; shift ;;
	--extra) extras+=("$2"); shift ;;
	--module) extra_modules+=("$2"); shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) rig_die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
if [[ -z "$variant" ]] && [[ ${#extras[@]} -gt 0 || ${#extra_modules[@]} -gt 0 ]]; then
	variant=extra
fi
[[ "$variant" =~ ^[A-Za-z0-9_.-]*$ ]] || rig_die "bad variant name $variant"

out_dir="$RIG_CACHE/guest"
rig_need_tools
rig_need ldd
if [[ $RIG_ARCH == arm64 ]]; then
	[[ ${#extras[@]} -eq 0 ]] || rig_die "--extra copies host (x86_64) binaries: not for RIG_ARCH=arm64"
	cc=aarch64-linux-gnu-gcc
else
	cc=gcc
fi
csrcs=()
for f in "$RIG_REPO"/tests/guest/*.c; do
	[[ -f "$f" ]] && csrcs+=("$f")
done
[[ ${#csrcs[@]} -eq 0 ]] || rig_need "$cc"
if [[ $print_only == 1 ]]; then
	[[ -f "$RIG_CACHE/kernel-version" ]] ||
		rig_die "no kernel in $RIG_CACHE yet: run tests/rig/mkguest.sh (or fetch-kernel.sh) first"
else
	"$RIG_DIR/fetch-kernel.sh"
fi
rig_kernel_vars

# Cache key over everything that goes into the image.
inputs=("$RIG_DIR/lib.sh" "$RIG_DIR/mkguest.sh" "$(rig_busybox)")
for f in "$RIG_REPO"/tests/guest/*; do
	[[ -f "$f" ]] && inputs+=("$f")
done
for b in "${extras[@]}"; do
	p="$(command -v "$b")" || rig_die "extra binary $b not found"
	p="$(readlink -f "$p")"
	inputs+=("$p")
	while read -r lib; do
		inputs+=("$(readlink -f "$lib")")
	done < <(ldd "$p" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
done
key="$( {
	echo "kernel $RIG_KVER modules ${modules[*]} ${extra_modules[*]}"
	[[ ${#csrcs[@]} -eq 0 ]] || "$cc" --version | head -n1
	rig_hash "${inputs[@]}"
} | sha256sum | cut -c1-16)"
entry="$out_dir/${variant:-default}-$key"
kernel_out="$entry/$RIG_KERNEL_NAME"
initrd_out="$entry/initrd.cpio.gz"

report() {
	[[ $quiet == 1 ]] || printf '%s\n%s\n' "$kernel_out" "$initrd_out"
}
if [[ $print_only == 1 ]]; then
	printf '%s\n%s\n' "$kernel_out" "$initrd_out"
	exit 0
fi
if rig_entry_lookup "$entry"; then
	report
	exit 0
fi
rig_entry_new "$out_dir"
if rig_entry_lookup "$entry"; then # built while we waited for the lock
	rm -rf "$RIG_NEW"
	report
	exit 0
fi

stage="$(mktemp -d "$out_dir/.new.stage.XXXXXX")"
trap 'rm -rf "$stage" "${RIG_NEW:-}"' EXIT
rig_stage_busybox "$stage"
rig_stage_modules "$stage" "${modules[@]}" "${extra_modules[@]}"
for b in "${extras[@]}"; do
	rig_stage_binary "$stage" "$b"
done
mkdir -p "$stage/tests"
for f in "$RIG_REPO"/tests/guest/*; do
	[[ -f "$f" ]] || continue
	case "${f##*/}" in
	init) install -m 0755 "$f" "$stage/init" ;;
	README* | *.md) ;;
	*.c)
		n="${f##*/}"
		"$cc" -static -O2 -Wall -Wextra -Werror -o "$stage/usr/bin/${n%.c}" "$f" ||
			rig_die "$cc could not build $f"
		;;
	*) install -m 0755 "$f" "$stage/tests/${f##*/}" ;;
	esac
done
[[ -x "$stage/init" ]] || rig_die "tests/guest/init missing"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\n' >"$stage/etc/group"

rig_pack_cpio "$stage" "$RIG_NEW/initrd.cpio.gz"
ln -s "../../kernel/$RIG_KVER/vmlinuz" "$RIG_NEW/$RIG_KERNEL_NAME"
# Fixed-path outputs of the old layout (before content keys).
rig_entry_publish "$entry" "$out_dir"/bzImage "$out_dir"/initrd*.cpio.gz "$out_dir"/initrd*.cpio.gz.key \
	"$out_dir"/tools.cpio "$out_dir"/tools.cpio.key
report
