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
# from tests/guest/hostile/*.c (and hostile.h); "./hostile" sorts before
# lib/ and usr/, so it is the archive's first member and the payload reads
# only the head of the disk to get it (tests/guest/abuse).
#
# Cached by content in CACHE/tools/KEY/tools.cpio (KEY hashes the binaries,
# their libraries, hostile's sources, gcc's version and the rig scripts; the
# entry is created atomically and never rewritten, see tests/rig/README
# "Cache").
# --print-path prints the path for the current inputs without building.
#
# RIG_ARCH=arm64: the arm64 guest's tools disk, CACHE/arm64/tools/KEY/
# tools.cpio: Debian's fio:arm64 with the shared-library closure of
# /usr/bin/fio (ld-linux-aarch64.so.1 included) and hostile built with
# aarch64-linux-gnu-gcc -static.  Nothing of arm64 is installed: the .debs
# are fetched with `apt-get download` and unpacked with dpkg-deb -x into a
# private directory (`dpkg --add-architecture arm64` and `apt-get update`
# must have run; scripts/deps.sh does).  The closure (tests/rig/
# arm64-debs.sh, shared with fetch-virtiofsd.sh) follows the ELF NEEDED
# entries (aarch64-linux-gnu-readelf -d) from fio: a library not yet
# unpacked is looked for in the Depends/PreDepends of the package owning
# the file that needs it, so only those Depends lines are downloaded (60
# .debs, where fio:arm64's recursive Depends name 165 packages); the
# archive holds fio, its interpreter /lib/ld-linux-aarch64.so.1 and 62
# libraries (81 MB, as on x86: ceph's, gluster's, ICU's data).  The unpacked
# closure is kept in CACHE/arm64/fio-root/ (root/ + packages: name, version,
# sha256 of each .deb) and fetched again when fio:arm64's candidate version
# changes; KEY hashes that packages list.  --print-path fetches it when
# missing (a download, not a build).
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
hostile_dir="$RIG_REPO/tests/guest/hostile"
hostile_src=("$hostile_dir"/*.c)

# --- arm64: fio:arm64 and its library closure, from Debian's .debs ---------
# shellcheck source=tests/rig/arm64-debs.sh
. "$RIG_DIR/arm64-debs.sh"

if [[ $RIG_ARCH == arm64 ]]; then
	rig_need cpio sha256sum flock aarch64-linux-gnu-gcc
	cc=aarch64-linux-gnu-gcc
	arm64_deb_root fio-root fio usr/bin/fio
	FIO_ROOT=$ARM64_DEB_ROOT
	key=$({
		cat "$FIO_ROOT/packages"
		rig_hash "${hostile_src[@]}" "$hostile_dir"/*.h "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
		$cc --version | head -n1
	} | sha256sum | cut -c1-16)
else
	rig_need cpio ldd sha256sum fio gcc flock
	cc=gcc
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
		rig_hash "${hostile_src[@]}" "$hostile_dir"/*.h "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
		gcc --version | head -n1
	} | sha256sum | cut -c1-16)
fi
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
if [[ $RIG_ARCH == arm64 ]]; then
	cp -a "$FIO_ROOT/root" "$stage/root"
else
	for f in "${files[@]}"; do
		mkdir -p "$stage/root/$(dirname "$f")"
		cp -L "$f" "$stage/root/$f"
	done
fi
$cc -static -O2 -Wall -Wextra -Werror -o "$stage/root/hostile" "${hostile_src[@]}"
(cd "$stage/root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) >"$RIG_NEW/tools.cpio"
# Whole sectors: the device exposes only complete 512-byte blocks.
truncate -s %512 "$RIG_NEW/tools.cpio"
# The old layout kept it in CACHE/guest/tools.cpio (mkguest.sh's cleanup
# removes that).
rig_entry_publish "$entry"
[[ $quiet -eq 1 ]] || echo "$out"
