#!/bin/bash
# fetch-kernel.sh [--refresh] [CACHE_DIR]
#
# Downloads Debian's current amd64 kernel package (what linux-image-amd64
# depends on; override with VMM_RIG_KERNEL_PKG=linux-image-X-amd64) with
# `apt-get download`, unpacks it (not installed) into the rig cache and runs
# depmod.  Idempotent: once a kernel is cached nothing is downloaded again
# unless --refresh is given.  Needs `apt-get update` to have run once.
# CACHE_DIR replaces VMM_RIG_CACHE (the base: arm64 adds /arm64).
#
# RIG_ARCH=arm64: the same for linux-image-arm64:arm64 (VMM_RIG_KERNEL_PKG=
# linux-image-X-arm64) into CACHE/arm64/, whose vmlinuz is an uncompressed
# arm64 Image (EFI stub; booted as is, no vmlinux), plus the static aarch64
# userland of the arm64 images: busybox-static:arm64 and bash-static:arm64,
# downloaded and unpacked (never installed; `dpkg --add-architecture arm64`
# and `apt-get update` must have run) into
#          CACHE/arm64/userland/bin/busybox, bin/bash, versions
#
# Leaves:  CACHE/vmlinuz          bzImage (symlink)
#          CACHE/kernel-version   e.g. 6.1.0-57-amd64
#          CACHE/kernel/VER/lib/modules/VER   module tree with modules.dep
#          CACHE/modules          symlink to that module tree
#          CACHE/vmlinux          uncompressed ELF kernel (symlink), for
#                                 qemu's PVH boot: skips the ~3 s xz
#                                 decompression under TCG (CONFIG_PVH=y)
set -euo pipefail

refresh=0
if [[ "${1:-}" == --refresh ]]; then
	refresh=1
	shift
fi
if [[ $# -gt 0 ]]; then
	VMM_RIG_CACHE="$1"
	export VMM_RIG_CACHE
fi
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"

# The arm64 images' static aarch64 userland (see the top).
arm64_userland=(busybox-static bash-static)
have_userland() {
	[[ $RIG_ARCH != arm64 ]] && return 0
	[[ -x "$RIG_CACHE/userland/bin/busybox" && -x "$RIG_CACHE/userland/bin/bash" &&
		-s "$RIG_CACHE/userland/versions" ]]
}
fetch_userland() {
	[[ $RIG_ARCH == arm64 ]] || return 0
	local t p
	t="$(mktemp -d "$RIG_CACHE/.userland.XXXXXX")"
	(cd "$t" && apt-get download -q "${arm64_userland[@]/%/:arm64}" >"$t/apt.log" 2>&1) || {
		cat "$t/apt.log" >&2
		rm -rf "$t"
		rig_die "apt-get download ${arm64_userland[*]/%/:arm64} failed; run 'dpkg --add-architecture arm64 && apt-get update' first (scripts/deps.sh does)"
	}
	mkdir -p "$t/new/bin"
	for p in "$t"/*.deb; do
		dpkg-deb -x "$p" "$t/root"
		printf '%s %s\n' "$(dpkg-deb -f "$p" Package)" "$(dpkg-deb -f "$p" Version)" >>"$t/new/versions"
	done
	cp "$t/root/bin/busybox" "$t/new/bin/busybox"
	cp "$t/root/bin/bash-static" "$t/new/bin/bash"
	rm -rf "$RIG_CACHE/userland"
	mv -T "$t/new" "$RIG_CACHE/userland"
	rm -rf "$t"
}

have_kernel() {
	[[ -f "$RIG_CACHE/kernel-version" ]] || return 1
	local v
	v="$(cat "$RIG_CACHE/kernel-version")"
	[[ -s "$RIG_CACHE/kernel/$v/vmlinuz" && -s "$RIG_CACHE/kernel/$v/lib/modules/$v/modules.dep" &&
		-e "$RIG_CACHE/kernel/$v/vmlinux.done" ]]
}

# extract_vmlinux DIR: DIR/vmlinux from DIR/vmlinuz when the kernel can be
# booted through PVH; DIR/vmlinux.done records that it was tried.
extract_vmlinux() {
	local dir="$1" off
	rm -f "$dir/vmlinux" "$dir/vmlinux.tmp"
	if grep -qx 'CONFIG_PVH=y' "$dir/config" 2>/dev/null; then
		while read -r off; do
			tail -c +$((off + 1)) "$dir/vmlinuz" | xz -dc --single-stream >"$dir/vmlinux.tmp" 2>/dev/null || true
			if [[ "$(head -c 4 "$dir/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" == 7f454c46 ]]; then
				mv "$dir/vmlinux.tmp" "$dir/vmlinux"
				break
			fi
		done < <(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$dir/vmlinuz" | cut -d: -f1)
		rm -f "$dir/vmlinux.tmp"
	fi
	: >"$dir/vmlinux.done"
}

if [[ $refresh == 0 ]] && have_kernel && have_userland; then
	exit 0
fi
rig_need apt-get apt-cache dpkg-deb depmod flock xz
mkdir -p "$RIG_CACHE"
RIG_CACHE="$(cd "$RIG_CACHE" && pwd)"
rig_lock "$RIG_CACHE/.lock"
if [[ $refresh == 0 ]] && have_kernel && have_userland; then
	exit 0 # another process fetched it while we waited for the lock
fi
if [[ $refresh == 0 ]] && have_kernel; then
	fetch_userland
	exit 0
fi
link_vmlinux() {
	if [[ -s "$RIG_CACHE/kernel/$1/vmlinux" ]]; then
		ln -sfn "kernel/$1/vmlinux" "$RIG_CACHE/vmlinux"
	else
		rm -f "$RIG_CACHE/vmlinux"
	fi
}
if [[ $refresh == 0 && -f "$RIG_CACHE/kernel-version" ]]; then
	# Cache from an older fetch-kernel.sh: only the vmlinux is missing.
	v="$(cat "$RIG_CACHE/kernel-version")"
	if [[ -s "$RIG_CACHE/kernel/$v/vmlinuz" && -s "$RIG_CACHE/kernel/$v/lib/modules/$v/modules.dep" ]]; then
		extract_vmlinux "$RIG_CACHE/kernel/$v"
		link_vmlinux "$v"
		exit 0
	fi
fi

pkg="${VMM_RIG_KERNEL_PKG:-}"
if [[ -z "$pkg" ]]; then
	a=$RIG_DEB_ARCH
	pkg="$(apt-cache depends "linux-image-$a:$a" 2>/dev/null |
		sed -n "s/^ *Depends: \\(linux-image-[0-9][^ :]*-$a\\)\\(:$a\\)\\{0,1\\}\$/\\1/p" | head -n1)"
	[[ -n "$pkg" ]] ||
		rig_die "cannot resolve linux-image-$a:$a with apt-cache; run 'apt-get update' first (the project's setup step must do it; arm64 also needs 'dpkg --add-architecture arm64')"
fi
pkg="${pkg%:*}"
ver="${pkg#linux-image-}"

tmp="$(mktemp -d "$RIG_CACHE/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the cwd; _apt cannot write there when root
# owns a 0700 dir, which only causes a harmless warning.
if ! (cd "$tmp" && apt-get download -q "$pkg:$RIG_DEB_ARCH" >"$tmp/apt.log" 2>&1); then
	cat "$tmp/apt.log" >&2
	rig_die "apt-get download $pkg failed; run 'apt-get update' first (the project's setup step must do it)"
fi
deb="$(ls "$tmp"/*.deb)"
dpkg-deb -x "$deb" "$tmp/root"
[[ -f "$tmp/root/boot/vmlinuz-$ver" ]] || rig_die "$deb has no boot/vmlinuz-$ver"

dest="$RIG_CACHE/kernel/$ver"
rm -rf "$dest"
mkdir -p "$dest/lib/modules"
mv "$tmp/root/lib/modules/$ver" "$dest/lib/modules/$ver"
mv "$tmp/root/boot/vmlinuz-$ver" "$dest/vmlinuz"
mv "$tmp/root/boot/config-$ver" "$dest/config"
depmod -b "$dest" "$ver"
if [[ $RIG_ARCH == arm64 ]]; then
	# Debian's arm64 vmlinuz is the uncompressed Image (magic "ARM\x64" at
	# offset 56); nothing to extract.
	[[ "$(tail -c +57 "$dest/vmlinuz" | head -c 4 | od -An -tx1 | tr -d ' ')" == 41524d64 ]] ||
		rig_die "$deb: vmlinuz-$ver is not an uncompressed arm64 Image"
	: >"$dest/vmlinux.done"
else
	extract_vmlinux "$dest"
fi
link_vmlinux "$ver"

ln -sfn "kernel/$ver/vmlinuz" "$RIG_CACHE/vmlinuz"
ln -sfn "kernel/$ver/lib/modules/$ver" "$RIG_CACHE/modules"
echo "$ver" >"$RIG_CACHE/kernel-version.tmp"
mv -f "$RIG_CACHE/kernel-version.tmp" "$RIG_CACHE/kernel-version"
fetch_userland
# Drop other cached kernel versions.
for d in "$RIG_CACHE"/kernel/*; do
	[[ "$d" == "$dest" ]] || rm -rf "$d"
done
