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
# Cached by content in CACHE/tools/KEY/tools.cpio (KEY hashes the binaries,
# their libraries, hostile.c, gcc's version and the rig scripts; the entry
# is created atomically and never rewritten, see tests/rig/README "Cache").
# --print-path prints the path for the current inputs without building.
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
rig_need cpio ldd sha256sum fio gcc flock
hostile_src="$RIG_REPO/tests/guest/hostile/hostile.c"

bins=(fio blkdiscard)
files=()
for b in "${bins[@]}"; do
	p=$(command -v "$b")
	files+=("$p")
	while read -r lib; do
		files+=("$lib")
	done < <(ldd "$p" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
done
key=$({
	for f in "${files[@]}"; do
		echo "$f"
		sha256sum <"$(readlink -f "$f")"
	done
	rig_hash "$hostile_src" "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
	gcc --version | head -n1
} | sha256sum | cut -c1-16)
out_dir="$RIG_CACHE/tools"
entry="$out_dir/$key"
out="$entry/tools.cpio"
if [[ $print_only -eq 1 ]]; then
	echo "$out"
	exit 0
fi
if rig_entry_lookup "$entry"; then
	[[ $quiet -eq 1 ]] || echo "$out"
	exit 0
fi
rig_entry_new "$out_dir"
if rig_entry_lookup "$entry"; then # built while we waited for the lock
	rm -rf "$RIG_NEW"
	[[ $quiet -eq 1 ]] || echo "$out"
	exit 0
fi

stage=$(mktemp -d "$out_dir/.new.stage.XXXXXX")
trap 'rm -rf "$stage" "${RIG_NEW:-}"' EXIT
for f in "${files[@]}"; do
	mkdir -p "$stage/root/$(dirname "$f")"
	cp -L "$f" "$stage/root/$f"
done
gcc -static -O2 -Wall -Wextra -Werror -o "$stage/root/hostile" "$hostile_src"
(cd "$stage/root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) >"$RIG_NEW/tools.cpio"
# Whole sectors: the device exposes only complete 512-byte blocks.
truncate -s %512 "$RIG_NEW/tools.cpio"
# The old layout kept it in CACHE/guest/tools.cpio (mkguest.sh's cleanup
# removes that).
rig_entry_publish "$entry"
[[ $quiet -eq 1 ]] || echo "$out"
