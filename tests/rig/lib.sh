# shellcheck shell=bash
# Common helpers for the nested-KVM test rig (sourced by fetch-kernel.sh,
# mkguest.sh, mkl1.sh and rig-run).  Not executable on its own.

RIG_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034 # used by the scripts that source this
RIG_REPO="$(cd "$RIG_DIR/../.." && pwd)"
RIG_CACHE="${VMM_RIG_CACHE:-${HOME:-/root}/.cache/minivmm-rig}"

rig_die() {
	printf '%s: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

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

# rig_stage_busybox STAGE: busybox-static at STAGE/bin/busybox plus applet
# symlinks in STAGE/bin, and the usual top-level directories.
rig_stage_busybox() {
	local stage="$1" bb a
	bb="$(command -v busybox)" || rig_die "busybox not found (apt-get install busybox-static)"
	file_is_static "$bb" || rig_die "$bb is not statically linked (apt-get install busybox-static)"
	mkdir -p "$stage"/{bin,sbin,etc,proc,sys,dev,tmp,root,run,mnt,lib,lib64,usr/bin,usr/sbin}
	cp "$bb" "$stage/bin/busybox"
	for a in $("$bb" --list); do
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
rig_hash() {
	local f
	for f in "$@"; do
		printf '%s\n' "$f"
		sha256sum <"$f"
	done | sha256sum | cut -d' ' -f1
}
