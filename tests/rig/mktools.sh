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
#
# RIG_ARCH=arm64: the arm64 guest's tools disk, CACHE/arm64/tools/KEY/
# tools.cpio: Debian's fio:arm64 with the shared-library closure of
# /usr/bin/fio (ld-linux-aarch64.so.1 included) and hostile built with
# aarch64-linux-gnu-gcc -static.  Nothing of arm64 is installed: the .debs
# are fetched with `apt-get download` and unpacked with dpkg-deb -x into a
# private directory (`dpkg --add-architecture arm64` and `apt-get update`
# must have run; scripts/deps.sh does).  The closure follows the ELF NEEDED
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
hostile_src="$RIG_REPO/tests/guest/hostile/hostile.c"

# --- arm64: fio:arm64 and its library closure, from Debian's .debs ---------

# deb_depends PKG: the packages PKG:arm64 Depends/PreDepends on (each
# alternative; virtual packages, printed <like-this>, skipped).
deb_depends() {
	apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$1:arm64" 2>/dev/null |
		sed -n 's/^ *|\{0,1\}\(Pre\)\{0,1\}Depends: \([^< ][^ ]*\)$/\2/p' | sed 's/:arm64$//' | sort -u
}

# x_real ROOT PATH: PATH (relative to ROOT) with its symlinks resolved inside
# ROOT (absolute link targets are ROOT-relative); empty when it does not
# exist there.
x_real() {
	local root="$1" p="$2" t i
	for ((i = 0; i < 40; i++)); do
		if [[ -L "$root/$p" ]]; then
			t=$(readlink "$root/$p")
			if [[ $t == /* ]]; then p=${t#/}; else p=$(dirname "$p")/$t; fi
			p=$(realpath -m -s "/$p")
			p=${p#/}
			continue
		fi
		[[ -e "$root/$p" ]] && echo "$p"
		return 0
	done
}

# fetch_fio_arm64 DEST: the closure (see the top) into DEST/root, the list
# of packages into DEST/packages (first line: "fio VERSION").
fetch_fio_arm64() {
	local dest="$1" t p deb f soname dir found real rp rpath rpdirs interp
	t=$(mktemp -d "$RIG_CACHE/.fio-root.XXXXXX")
	mkdir -p "$t/debs" "$t/x" "$t/root"
	declare -A got=() owner=() expanded=() seen=()
	local todo=(fio) want new closure missing
	while :; do
		want=()
		for p in "${todo[@]}"; do
			[[ -n ${got[$p]:-} ]] || want+=("$p:arm64")
		done
		if ((${#want[@]})); then
			if ! (cd "$t/debs" && apt-get download -q "${want[@]}" >>"$t/apt.log" 2>&1); then
				# One at a time: a dependency with no arm64 build
				# (arch all, say) must not sink the others.
				for p in "${want[@]}"; do
					(cd "$t/debs" && apt-get download -q "$p" >>"$t/apt.log" 2>&1) || true
				done
			fi
			for deb in "$t"/debs/*.deb; do
				p=$(dpkg-deb -f "$deb" Package)
				[[ -n ${got[$p]:-} ]] && continue
				got[$p]=$deb
				dpkg-deb -x "$deb" "$t/x"
				while read -r f; do
					owner[${f#./}]=$p
				done < <(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }')
			done
			[[ -n ${got[fio]:-} ]] || {
				cat "$t/apt.log" >&2
				rm -rf "$t"
				rig_die "apt-get download fio:arm64 failed; run 'dpkg --add-architecture arm64 && apt-get update' first (scripts/deps.sh does)"
			}
		fi
		# Walk the NEEDED entries from fio.
		# fio's program interpreter (PT_INTERP) at its own path,
		# where the guest's payloads look for it (tests/guest/blklib).
		interp=$(aarch64-linux-gnu-readelf -l "$t/x/usr/bin/fio" |
			sed -n 's/.*Requesting program interpreter: \/\(.*\)\]$/\1/p')
		todo=() closure=(usr/bin/fio) missing=0 seen=()
		seen[usr/bin/fio]=1
		if [[ -n $interp ]]; then
			closure+=("$interp")
			real=$(x_real "$t/x" "$interp")
			seen[${real:-$interp}]=1
		fi
		local i=0
		while ((i < ${#closure[@]})); do
			f=${closure[i]}
			i=$((i + 1))
			real=$(x_real "$t/x" "$f")
			[[ -n $real ]] || continue # the interpreter, before libc6 is in
			local elf=$real
			rp=()
			while read -r rpath; do
				IFS=: read -r -a rpdirs <<<"$rpath"
				rp+=("${rpdirs[@]}")
			done < <(aarch64-linux-gnu-readelf -d "$t/x/$elf" |
				sed -n 's/.*(\(RUN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p')
			while read -r soname; do
				found=
				for dir in "${rp[@]}" /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /lib /usr/lib; do
					dir=${dir//\$ORIGIN/\/$(dirname "$elf")}
					dir=${dir#/}
					[[ -n $(x_real "$t/x" "$dir/$soname") ]] && { found=$dir/$soname; break; }
				done
				if [[ -z $found ]]; then
					missing=1
					p=${owner[$elf]:-}
					if [[ -n $p && -z ${expanded[$p]:-} ]]; then
						expanded[$p]=1
						mapfile -t -O "${#todo[@]}" todo < <(deb_depends "$p")
					fi
					continue
				fi
				# Once per file (libc names the loader too).
				real=$(x_real "$t/x" "$found")
				[[ -n ${seen[$real]:-} ]] && continue
				seen[$real]=1
				closure+=("$found")
			done < <(aarch64-linux-gnu-readelf -d "$t/x/$elf" |
				sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
		done
		((missing)) || break
		new=0
		for p in "${todo[@]}"; do
			[[ -n ${got[$p]:-} ]] || new=1
		done
		((new)) || {
			rm -rf "$t"
			rig_die "fio:arm64: libraries not found in the Depends of the packages unpacked"
		}
	done
	# The closure, at the paths it is found under (the soname), as files.
	for f in "${closure[@]}"; do
		mkdir -p "$t/root/$(dirname "$f")"
		cp "$t/x/$(x_real "$t/x" "$f")" "$t/root/$f"
	done
	{
		echo "fio $(dpkg-deb -f "${got[fio]}" Version)"
		# Only the packages that contribute a file.
		declare -A used=()
		for f in "${closure[@]}"; do
			used[${owner[$(x_real "$t/x" "$f")]}]=1
		done
		for p in "${!used[@]}"; do
			deb=${got[$p]}
			printf '%s %s %s\n' "$p" "$(dpkg-deb -f "$deb" Version)" "$(sha256sum <"$deb" | cut -d' ' -f1)"
		done | LC_ALL=C sort
	} >"$t/root.packages"
	mv "$t/root.packages" "$t/packages"
	rm -rf "$t/x" "$t/debs"
	rm -rf "$dest"
	mv -T "$t" "$dest"
}

# fio_root_arm64: sets FIO_ROOT to CACHE/fio-root, fetched when missing or
# when fio:arm64's candidate version moved.
fio_root_arm64() {
	FIO_ROOT="$RIG_CACHE/fio-root"
	local cand have=
	cand=$(apt-cache policy fio:arm64 2>/dev/null | sed -n 's/^ *Candidate: //p')
	[[ -s "$FIO_ROOT/packages" ]] && read -r _ have <"$FIO_ROOT/packages"
	if [[ -n $have && ($cand == "$have" || -z $cand || $cand == "(none)") ]]; then
		return 0
	fi
	rig_need apt-get apt-cache dpkg-deb aarch64-linux-gnu-readelf realpath
	mkdir -p "$RIG_CACHE"
	rig_lock "$RIG_CACHE/.fio-root.lock"
	have=
	[[ -s "$FIO_ROOT/packages" ]] && read -r _ have <"$FIO_ROOT/packages"
	[[ -n $have && $cand == "$have" ]] && return 0 # fetched while we waited
	fetch_fio_arm64 "$FIO_ROOT"
	exec 9>&- # (rig_entry_new takes fd 9 next)
}

if [[ $RIG_ARCH == arm64 ]]; then
	rig_need cpio sha256sum flock aarch64-linux-gnu-gcc
	cc=aarch64-linux-gnu-gcc
	fio_root_arm64
	key=$({
		cat "$FIO_ROOT/packages"
		rig_hash "$hostile_src" "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
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
		rig_hash "$hostile_src" "$RIG_DIR/lib.sh" "$RIG_DIR/mktools.sh"
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
$cc -static -O2 -Wall -Wextra -Werror -o "$stage/root/hostile" "$hostile_src"
(cd "$stage/root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) >"$RIG_NEW/tools.cpio"
# Whole sectors: the device exposes only complete 512-byte blocks.
truncate -s %512 "$RIG_NEW/tools.cpio"
# The old layout kept it in CACHE/guest/tools.cpio (mkguest.sh's cleanup
# removes that).
rig_entry_publish "$entry"
[[ $quiet -eq 1 ]] || echo "$out"
