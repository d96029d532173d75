#!/bin/bash
# scripts/arm64-sysroot.sh [DIR]: the aarch64 libraries that cannot be
# installed beside their amd64 twins, unpacked from Debian's own .debs into
# a private directory (default ~/.cache/minivmm-arm64-sysroot) that the
# cross build searches (cmake/aarch64-linux-gnu.cmake, VMM_ARM64_SYSROOT).
# Today that is libfdt alone: libfdt-dev is not Multi-Arch, so installing
# libfdt-dev:arm64 would remove the amd64 one.  Prints DIR.  Downloads only
# when the archive's version is not there yet (needs apt's package lists;
# scripts/deps.sh adds the arm64 architecture to them).
set -euo pipefail
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/minivmm-arm64-sysroot}
pkgs=(libfdt-dev:arm64 libfdt1:arm64)
stamp=$dir/.debs

# Fast path: unpacked before and the archive offers nothing newer.
want=$(apt-cache policy "${pkgs[@]}" 2>/dev/null | awk '/Candidate:/ {print $2}' | paste -sd' ')
if [[ -f $dir/usr/lib/aarch64-linux-gnu/libfdt.a && -f $stamp ]] &&
	{ [[ -z $want || $want == *none* ]] || [[ $(cat "$stamp") == "$want" ]]; }; then
	echo "$dir"
	exit 0
fi
[[ -n $want && $want != *none* ]] || {
	echo "arm64-sysroot: apt knows no ${pkgs[*]} (dpkg --add-architecture arm64; apt-get update: scripts/deps.sh)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; as root it drops to
# the _apt user, which must be able to write there.
[[ $(id -u) -ne 0 ]] || chown _apt "$tmp" 2>/dev/null || true
(cd "$tmp" && apt-get download -q "${pkgs[@]}" >&2)
mkdir -p "$dir"
for deb in "$tmp"/*.deb; do
	dpkg-deb -x "$deb" "$dir"
done
echo "$want" >"$stamp"
echo "$dir"
