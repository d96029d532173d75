#!/bin/bash
# mktools.sh [--print-path] [--quiet]
#
# Builds the "tools disk" for end-to-end storage tests: an uncompressed cpio
# archive of host binaries (fio) with the shared libraries ldd lists and the
# dynamic loader, padded to whole 512-byte sectors.  The tests attach it as a
# read-only virtio-blk disk with serial "tools"; the guest's payload unpacks
# it into RAM with `cpio -i < /dev/vdX` (no filesystem module needed).
# Keeping fio (about 80 MB with its libraries) out of the initramfs keeps
# every other boot fast, and reading it exercises the device under test.
#
# Also /hostile, the hostile virtio driver of the abuse test, built static
# from tests/guest/hostile/hostile.c; "./hostile" sorts before lib/ and usr/,
# so it is the archive's first member and the payload reads only the head of
# the disk to get it (tests/guest/abuse).
#
# Cached in CACHE/guest/tools.cpio; rebuilt when the binaries or hostile.c
# change.
set -euo pipefail
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"

print_only=0 quiet=0
for a in "$@"; do
	case "$a" in
	--print-path) print_only=1 ;;
	--quiet) quiet=1 ;;
	*) rig_die "unknown option $a" ;;
	esac
done
out="$RIG_CACHE/guest/tools.cpio"
if [[ $print_only -eq 1 ]]; then
	echo "$out"
	exit 0
fi
rig_need cpio ldd sha256sum fio gcc
hostile_src="$RIG_REPO/tests/guest/hostile/hostile.c"
rig_lock "$RIG_CACHE/.lock-tools"

bins=(fio)
files=()
for b in "${bins[@]}"; do
	p=$(command -v "$b")
	files+=("$p")
	while read -r lib; do
		files+=("$lib")
	done < <(ldd "$p" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
done
key=$({
	for f in "${files[@]}"; do sha256sum "$(readlink -f "$f")"; done
	sha256sum "$hostile_src"
	gcc --version | head -n1
} | sha256sum | cut -d' ' -f1)
if [[ -f "$out" && "$(cat "$out.key" 2>/dev/null)" == "$key" ]]; then
	[[ $quiet -eq 1 ]] || echo "$out"
	exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in "${files[@]}"; do
	mkdir -p "$stage/$(dirname "$f")"
	cp -L "$f" "$stage/$f"
done
gcc -static -O2 -Wall -Wextra -Werror -o "$stage/hostile" "$hostile_src"
mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) >"$out.tmp"
# Whole sectors: the device exposes only complete 512-byte blocks.
truncate -s %512 "$out.tmp"
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
[[ $quiet -eq 1 ]] || echo "$out"
