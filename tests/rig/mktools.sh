#!/bin/bash
# mktools.sh [--print-path] [--quiet]
#
# Builds the "tools disk" for end-to-end storage tests: a read-only ext4
# image of host binaries (fio, blkdiscard) with the shared libraries ldd
# lists and the dynamic loader.  The tests attach it as a read-only
# virtio-blk disk with serial "tools"; the guest's payload mounts it
# (tests/guest/blklib's tools_open, which loads the guest's ext4 module).
# Keeping fio (about 80 MB with its libraries: ceph's, gluster's, ICU's
# data) out of the initramfs keeps every other boot fast, and mounting
# instead of unpacking reads only what fio touches (an uncompressed cpio
# unpacked into RAM, the earlier form, took 3.5-9.4 s of each guest's
# boot in the rig).  No journal, no metadata checksums (no crc32c module
# to load), owned by root.
#
# Also /hostile, the hostile virtio driver of the abuse test, built static
# from tests/guest/hostile/hostile.c.
#
# Cached by content in CACHE/tools/KEY/tools.img (KEY hashes the binaries,
# their libraries, hostile.c, gcc's version and the rig scripts; the entry
# is created atomically and never rewritten, see tests/rig/README "Cache").
# --print-path prints the path for the current inputs without building.
#
# RIG_ARCH=arm64: the arm64 guest's tools disk, CACHE/arm64/tools/KEY/
# tools.img: Debian's fio:arm64 with the shared-library closure of
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
# image holds fio, its interpreter /lib/ld-linux-aarch64.so.1 and 62
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
hostile_src="$RIG_REPO/tests/guest/hostile/hostile.c"

# --- arm64: fio:arm64 and its library closure, from Debian's .debs ---------
# shellcheck source=tests/rig/arm64-debs.sh
. "$RIG_DIR/arm64-debs.sh"

if [[ $RIG_ARCH == arm64 ]]; then
	rig_need mkfs.ext4 sha256sum flock aarch64-linux-gnu-gcc
	cc=aarch64-linux-gnu-gcc
	arm64_deb_root fio-root fio usr/bin/fio
	FIO_ROOT=$ARM64_DEB_ROOT
	key=$({
		cat "$FIO_ROOT/packages"
		rig_hash "$hostile_src" "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
		$cc --version | head -n1
	} | sha256sum | cut -c1-16)
else
	rig_need mkfs.ext4 ldd sha256sum fio gcc flock
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
		rig_hash "$hostile_src" "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
		gcc --version | head -n1
	} | sha256sum | cut -c1-16)
fi
out_dir="$RIG_CACHE/tools"
entry="$out_dir/$key"
out="$entry/tools.img"
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
$cc -static -O2 -Wall -Wextra -Werror -o "$stage/root/hostile" "$hostile_src"
# The image: the tree's size + 10% + 8 MiB (inode tables, directories).
kib=$(du -sk --apparent-size "$stage/root" | cut -f1)
truncate -s $((kib + kib / 10 + 8192))K "$RIG_NEW/tools.img"
mkfs.ext4 -q -F -b 4096 -m 0 -L tools -O ^has_journal,^resize_inode,^metadata_csum \
	-E root_owner=0:0,nodiscard -d "$stage/root" "$RIG_NEW/tools.img" ||
	rig_die "mkfs.ext4 -d of the tools tree failed"
# The old layout kept it in CACHE/guest/tools.cpio (mkguest.sh's cleanup
# removes that).
rig_entry_publish "$entry"
[[ $quiet -eq 1 ]] || echo "$out"
