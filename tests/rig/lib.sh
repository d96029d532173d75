# shellcheck shell=bash
# Common helpers for the nested-KVM test rig (sourced by fetch-kernel.sh,
# mkguest.sh, mkl1.sh and rig-run).  Not executable on its own.

RIG_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034 # used by the scripts that source this
RIG_REPO="$(cd "$RIG_DIR/../.." && pwd)"

# rig_set_arch ARCH: which rig the scripts serve (RIG_ARCH, default x86_64).
#   x86_64  L1 = qemu-system-x86_64 (TCG, nested SVM), the amd64 kernel, the
#           host's busybox-static; cache CACHE = $VMM_RIG_CACHE
#   arm64   L1 = qemu-system-aarch64 -M virt,virtualization=on (TCG, nested
#           EL2), the arm64 kernel and static aarch64 busybox/bash unpacked
#           from their arm64 .debs; cache CACHE = $VMM_RIG_CACHE/arm64 (same
#           layout inside)
# Sets RIG_ARCH (exported: the scripts rig-run and mk*.sh start inherit it),
# RIG_CACHE, RIG_DEB_ARCH (Debian's name) and RIG_KERNEL_NAME (what the L2
# guest's kernel is called in a guest entry).
rig_set_arch() {
	# shellcheck disable=SC2034 # used by the scripts that source this
	case "$1" in
	x86_64 | x86 | amd64) RIG_ARCH=x86_64 RIG_DEB_ARCH=amd64 RIG_KERNEL_NAME=bzImage ;;
	arm64 | aarch64) RIG_ARCH=arm64 RIG_DEB_ARCH=arm64 RIG_KERNEL_NAME=Image ;;
	*) rig_die "unknown rig architecture '$1' (x86_64 or arm64)" ;;
	esac
	export RIG_ARCH
	RIG_CACHE="${VMM_RIG_CACHE:-${HOME:-/root}/.cache/minivmm-rig}"
	[[ $RIG_ARCH == x86_64 ]] || RIG_CACHE="$RIG_CACHE/$RIG_ARCH"
}

rig_die() {
	printf '%s: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

rig_set_arch "${RIG_ARCH:-x86_64}"

rig_need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			rig_die "'$c' not found; install the rig's packages (see tests/rig/README)"
	done
}

# rig_lock FILE: take an exclusive lock on FILE for the rest of the process
# (fd 9).  Serialises concurrent cache builds.
rig_lock() {
	mkdir -p "$(dirname "$1")"
	exec 9>"$1"
	flock 9
}

# Kernel installed by fetch-kernel.sh: sets RIG_KVER, RIG_KERNEL, RIG_MODDIR.
rig_kernel_vars() {
	[[ -f "$RIG_CACHE/kernel-version" && -e "$RIG_CACHE/vmlinuz" ]] ||
		rig_die "no kernel in $RIG_CACHE; run tests/rig/fetch-kernel.sh first"
	RIG_KVER="$(cat "$RIG_CACHE/kernel-version")"
	# shellcheck disable=SC2034
	RIG_KERNEL="$RIG_CACHE/vmlinuz"
	RIG_MODDIR="$RIG_CACHE/kernel/$RIG_KVER/lib/modules/$RIG_KVER"
	[[ -d "$RIG_MODDIR" ]] || rig_die "module tree $RIG_MODDIR missing; rerun tests/rig/fetch-kernel.sh"
}

# rig_stage_modules STAGE MODULE...: copy MODULE(s) and their dependencies
# into STAGE/lib/modules/$RIG_KVER (keeping the tree layout), write
# STAGE/etc/modules.load (dependency-ordered, one path relative to the module
# dir per line, loaded with insmod) and run depmod on the staged tree so that
# modprobe also works.
rig_stage_modules() {
	local stage="$1" m line path rel
	shift
	local base="$RIG_CACHE/kernel/$RIG_KVER"
	local dst="$stage/lib/modules/$RIG_KVER"
	mkdir -p "$dst" "$stage/etc"
	: >"$stage/etc/modules.load"
	for m in "$@"; do
		while read -r line; do
			case "$line" in
			insmod\ *) ;;
			builtin\ *) continue ;;
			*) continue ;;
			esac
			path="${line#insmod }"
			path="${path%% *}"
			rel="${path#"$RIG_MODDIR"/}"
			grep -qxF "$rel" "$stage/etc/modules.load" && continue
			mkdir -p "$dst/$(dirname "$rel")"
			case "$rel" in
			*.ko.xz)
				xz -dc "$path" >"$dst/${rel%.xz}"
				rel="${rel%.xz}"
				;;
			*.ko.zst | *.ko.gz)
				rig_die "compressed module $rel not supported"
				;;
			*) cp "$path" "$dst/$rel" ;;
			esac
			echo "$rel" >>"$stage/etc/modules.load"
		done < <(modprobe -d "$base" -S "$RIG_KVER" --show-depends "$m" ||
			rig_die "module $m not found for kernel $RIG_KVER")
	done
	local f
	for f in modules.builtin modules.builtin.modinfo modules.order; do
		[[ -f "$RIG_MODDIR/$f" ]] && cp "$RIG_MODDIR/$f" "$dst/"
	done
	depmod -b "$stage" "$RIG_KVER"
}

# rig_busybox: the static busybox that goes into the images: the host's
# busybox-static (x86_64), or the aarch64 one fetch-kernel.sh unpacked from
# busybox-static:arm64 into CACHE/userland (arm64; never installed).
rig_busybox() {
	if [[ $RIG_ARCH == arm64 ]]; then
		echo "$RIG_CACHE/userland/bin/busybox"
	else
		command -v busybox || rig_die "busybox not found (apt-get install busybox-static)"
	fi
}

# rig_need_tools: what building the images needs on this host, per arch.
rig_need_tools() {
	rig_need cpio gzip modprobe depmod flock sha256sum
	if [[ $RIG_ARCH == arm64 ]]; then
		rig_need qemu-aarch64-static # runs busybox --list
	else
		rig_need busybox
	fi
}

# rig_stage_busybox STAGE: busybox-static at STAGE/bin/busybox plus applet
# symlinks in STAGE/bin, and the usual top-level directories.
rig_stage_busybox() {
	local stage="$1" bb a list
	bb="$(rig_busybox)"
	if [[ $RIG_ARCH == arm64 ]]; then
		[[ -x "$bb" ]] || rig_die "$bb missing; rerun tests/rig/fetch-kernel.sh (RIG_ARCH=arm64)"
		list="$(qemu-aarch64-static "$bb" --list)" || rig_die "qemu-aarch64-static $bb --list failed"
	else
		file_is_static "$bb" || rig_die "$bb is not statically linked (apt-get install busybox-static)"
		list="$("$bb" --list)"
	fi
	mkdir -p "$stage"/{bin,sbin,etc,proc,sys,dev,tmp,root,run,mnt,lib,lib64,usr/bin,usr/sbin}
	cp "$bb" "$stage/bin/busybox"
	for a in $list; do
		[[ "$a" == busybox ]] && continue
		ln -sf busybox "$stage/bin/$a"
	done
	# Best effort: the kernel wants /dev/console before init runs; the init
	# scripts also redirect to it after mounting devtmpfs.
	mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
}

file_is_static() {
	# ldd exits non-zero ("not a dynamic executable") on static binaries.
	! ldd "$1" >/dev/null 2>&1
}

# rig_stage_binary STAGE BIN: copy a dynamically linked host binary and the
# shared libraries ldd lists (and the dynamic loader) into STAGE, at the same
# paths as on the host.
rig_stage_binary() {
	local stage="$1" bin="$2" lib
	[[ -x "$bin" ]] || bin="$(command -v "$bin")" || rig_die "binary $2 not found"
	bin="$(readlink -f "$bin")"
	mkdir -p "$stage$(dirname "$bin")"
	cp "$bin" "$stage$bin"
	while read -r lib; do
		[[ -n "$lib" ]] || continue
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done < <(ldd "$bin" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
}

# rig_pack_cpio STAGE OUT: pack STAGE as a gzip'd newc cpio, atomically.
rig_pack_cpio() {
	local stage="$1" out="$2"
	(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --quiet -R 0:0 --reproducible) |
		gzip -1 -n >"$out.tmp.$$"
	mv -f "$out.tmp.$$" "$out"
}

# rig_hash FILE...: one sha256 over names and contents of the given files.
# Files of this checkout are named relative to its root, so two checkouts
# with the same content get the same key (host files keep their path).
rig_hash() {
	local f
	for f in "$@"; do
		printf '%s\n' "${f#"$RIG_REPO"/}"
		sha256sum <"$f"
	done | sha256sum | cut -d' ' -f1
}

# --- Content-keyed cache entries --------------------------------------------
# Every image the rig builds lives in its own directory named after the hash
# of its inputs, CACHE/KIND/NAME/ (KIND: guest, tools, l1), so checkouts
# with different inputs sharing one cache (the default ~/.cache/minivmm-rig)
# never rebuild over each other.  An entry is immutable: built in
# CACHE/KIND/.new.XXXXXX and published by rename(2), which is atomic; a
# path once printed always names the same bytes until the entry is deleted.
#   NAME/.used   mtime = last use (touched by every mk*.sh call that returns
#                the entry, and by rig-run when it holds it)
#   NAME/.lock   flock(2)ed shared by rig-run for as long as a run whose
#                command line names a path inside NAME lasts (inherited by
#                qemu, and by CMD in direct mode)
# Locks, per KIND: .build (exclusive while building: one builder at a time,
# no duplicate work); .gc (shared while an entry is looked up and touched,
# exclusive while the collector picks and removes entries).
#
# Cleanup (rig_gc, after each publish): keeps the RIG_CACHE_KEEP (default 4)
# most recently used entries of the kind and deletes older ones, except an
# entry used within the last RIG_CACHE_GRACE_MIN minutes (default 120: covers
# a consumer between mk*.sh printing a path and rig-run locking it, and
# consumers that never go through rig-run) or locked by a running rig-run.
# The cache therefore holds at most KEEP entries per kind plus those in use.

# rig_entry_lookup DIR: 0 (and records a use) when the published entry DIR
# exists.  Under the shared gc lock, so the collector cannot be deleting it
# at the same moment: once touched, it is the most recently used.
rig_entry_lookup() {
	local dir="$1" kind="${1%/*}"
	mkdir -p "$kind"
	(
		flock -s 8
		[[ -d "$dir" ]] || exit 1
		touch "$dir/.used"
	) 8>>"$kind/.gc"
}

# rig_entry_new KIND_DIR: takes the kind's build lock (fd 9, for the rest of
# the process), removes stage dirs that crashed builders left behind (no one
# else builds while we hold the lock) and sets RIG_NEW to a fresh stage dir.
rig_entry_new() {
	local kind="$1" d
	rig_lock "$kind/.build"
	for d in "$kind"/.new.* "$kind"/.trash.*; do
		[[ -e "$d" ]] && rm -rf "$d"
	done
	RIG_NEW="$(mktemp -d "$kind/.new.XXXXXX")"
	chmod 0755 "$RIG_NEW"
}

# rig_entry_publish DIR [LEGACY_FILE...]: renames RIG_NEW to DIR
# (atomically; DIR does not exist: we hold the build lock and looked it up
# under it), then collects (rig_gc).
rig_entry_publish() {
	local dir="$1"
	shift
	: >"$RIG_NEW/.lock"
	touch "$RIG_NEW/.used"
	mv -T "$RIG_NEW" "$dir" || rig_die "cannot publish $dir"
	RIG_NEW=
	rig_gc "${dir%/*}" "$@"
}

# rig_mtime FILE: seconds since the epoch, 0 when FILE is missing.
rig_mtime() {
	stat -c %Y "$1" 2>/dev/null || echo 0
}

# rig_gc KIND_DIR [LEGACY_FILE...]: the cleanup described above.  LEGACY_FILEs
# (fixed-path outputs of the old cache layout) go once older than the grace
# period.
rig_gc() {
	local kind="$1" keep="${RIG_CACHE_KEEP:-4}" grace="${RIG_CACHE_GRACE_MIN:-120}"
	shift
	[[ "$keep" =~ ^[0-9]+$ && "$grace" =~ ^[0-9]+$ ]] ||
		rig_die "bad RIG_CACHE_KEEP '$keep' or RIG_CACHE_GRACE_MIN '$grace'"
	local now cutoff d f n=0 victims=()
	now="$(date +%s)"
	cutoff=$((now - grace * 60))
	for f in "$@"; do
		[[ -e "$f" || -L "$f" ]] || continue
		[[ "$(rig_mtime "$f")" -lt "$cutoff" ]] && rm -f "$f"
	done
	exec 8>>"$kind/.gc"
	flock -x 8
	while read -r _ d; do
		n=$((n + 1))
		[[ $n -le $keep ]] && continue
		[[ "$(rig_mtime "$d/.used")" -ge "$cutoff" ]] && continue
		# Held by a running rig-run?  A new open file description conflicts
		# with every shared holder, even ones in this process.
		if [[ -e "$d/.lock" ]]; then
			exec 7<"$d/.lock"
			if ! flock -n -x 7; then
				exec 7<&-
				continue
			fi
		fi
		local trash
		trash="$(mktemp -u "$kind/.trash.XXXXXX")"
		mv -T "$d" "$trash" 2>/dev/null && victims+=("$trash")
		exec 7<&-
	done < <(for d in "$kind"/*/; do
		d="${d%/}"
		[[ -d "$d" ]] || continue
		printf '%s %s\n' "$(rig_mtime "$d/.used")" "$d"
	done | sort -rn)
	exec 8>&-
	[[ ${#victims[@]} -eq 0 ]] || rm -rf "${victims[@]}"
}

# rig_hold ARG...: for every cache entry a path in ARGs points into (any
# CACHE/KIND/NAME/... substring), record a use and keep a shared lock on
# its .lock until this process and everything that inherits the descriptor
# (qemu, an exec'd command) exit, so that rig_gc never deletes an image a
# running test uses.  Entries of the old layout and other paths are ignored.
rig_hold() {
	local a rest d fd
	declare -A held=()
	for a in "$@"; do
		rest="$a"
		# The quoted part matches literally (RIG_CACHE has dots).
		while [[ "$rest" =~ "$RIG_CACHE"/(guest|tools|l1)/[^/.][^/[:space:]]* ]]; do
			d="${BASH_REMATCH[0]}"
			rest="${rest#*"$d"}"
			[[ -n "${held[$d]:-}" || ! -f "$d/.lock" ]] && continue
			held[$d]=1
			# (It may have been collected since the test: then there is
			# nothing left to protect and the command will say so.)
			# (A bare exec's redirections would stay: group them.)
			{ exec {fd}<"$d/.lock"; } 2>/dev/null || continue
			flock -s "$fd"
			touch "$d/.used" 2>/dev/null || true
		done
	done
}
