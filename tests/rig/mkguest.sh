#!/bin/bash
# mkguest.sh [--print-paths] [--quiet] [--variant NAME] [--extra BIN]...
#            [--module MOD]...
#
# Builds the L2 "default guest" initramfs for the minivmm tests: busybox-static,
# the virtio modules (virtio_pci, virtio_blk and deps) of the rig's Debian
# kernel, /init = tests/guest/init and every other file of tests/guest/ as an
# executable payload /tests/NAME.  --extra BIN (repeatable; also the
# space-separated env MKGUEST_EXTRA) adds a host binary with the shared
# libraries ldd lists and the dynamic loader (e.g. --extra fio; about 80 MB
# of libraries for Debian's fio).  --module adds kernel modules.
#
# Cached: rebuilt only when its inputs change (the kernel, tests/guest/*,
# the rig scripts, busybox, extra binaries and their libraries).
# Outputs (printed one per line: kernel, then initrd):
#   CACHE/guest/bzImage            (symlink to the rig kernel)
#   CACHE/guest/initrd.cpio.gz     (default variant)
#   CACHE/guest/initrd-NAME.cpio.gz  (--variant NAME; default name "extra"
#                                    when --extra/--module are given)
# --print-paths prints the paths without building anything.
set -euo pipefail
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"

print_only=0
quiet=0
variant=
read -r -a extras <<<"${MKGUEST_EXTRA:-}"
modules=(virtio_pci virtio_blk)
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
kernel_out="$out_dir/bzImage"
if [[ -n "$variant" ]]; then
	initrd_out="$out_dir/initrd-$variant.cpio.gz"
else
	initrd_out="$out_dir/initrd.cpio.gz"
fi
if [[ $print_only == 1 ]]; then
	printf '%s\n%s\n' "$kernel_out" "$initrd_out"
	exit 0
fi

rig_need busybox cpio gzip modprobe depmod flock sha256sum ldd
"$RIG_DIR/fetch-kernel.sh"
rig_kernel_vars

# Cache key over everything that goes into the image.
inputs=("$RIG_DIR/lib.sh" "$RIG_DIR/mkguest.sh" "$(command -v busybox)")
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
	rig_hash "${inputs[@]}"
} | sha256sum | cut -d' ' -f1)"
stamp="$initrd_out.key"
mkdir -p "$out_dir"
[[ "$(readlink "$kernel_out" 2>/dev/null)" == ../vmlinuz ]] || ln -sfn ../vmlinuz "$kernel_out"

report() {
	[[ $quiet == 1 ]] || printf '%s\n%s\n' "$kernel_out" "$initrd_out"
}
if [[ -f "$stamp" && -f "$initrd_out" && "$(cat "$stamp")" == "$key" ]]; then
	report
	exit 0
fi
rig_lock "$out_dir/.lock"
if [[ -f "$stamp" && -f "$initrd_out" && "$(cat "$stamp")" == "$key" ]]; then
	report
	exit 0
fi

stage="$(mktemp -d "$out_dir/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
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
	*) install -m 0755 "$f" "$stage/tests/${f##*/}" ;;
	esac
done
[[ -x "$stage/init" ]] || rig_die "tests/guest/init missing"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\n' >"$stage/etc/group"

rig_pack_cpio "$stage" "$initrd_out"
echo "$key" >"$stamp.tmp"
mv -f "$stamp.tmp" "$stamp"
report
