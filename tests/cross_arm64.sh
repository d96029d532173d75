#!/bin/bash
# tests/cross_arm64.sh SOURCE_DIR WARNING-FLAGS...: the arch-neutral core
# (libvmm/core), the devices and the arm64 platform (libvmm/arch/arm64)
# compile for aarch64 with Debian's cross compiler (gcc-aarch64-linux-gnu,
# its linux-libc-dev-arm64-cross KVM headers), with the build's warnings
# (CMake passes its VMM_WARNINGS) as errors: nothing x86-only creeps below
# the machine layer.  Objects only, in seconds, for a plain build's
# `ctest`; scripts/test.sh builds and links the whole tree for aarch64
# (scripts/build-arm64.sh) and leaves this test out.  The
# arch-neutral headers of liburing, libseccomp and libfdt come from the
# host (-idirafter).  Exit 1 on any error.
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 SOURCE_DIR WARNING-FLAGS..."; exit 2; }
cd "$1"
shift
cc=${CROSS_CC:-aarch64-linux-gnu-gcc}
command -v "$cc" >/dev/null || {
	echo "cross_arm64: no $cc (scripts/deps.sh installs gcc-aarch64-linux-gnu)"
	exit 1
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-std=gnu11 -O2 -D_GNU_SOURCE "$@" -Werror
	-Iinclude -Ilibvmm/core -Ilibvmm/arch -Idevices -idirafter /usr/include)
n=0 bad=0
for f in libvmm/core/*.c devices/*/*.c libvmm/arch/arm64/*.c; do
	n=$((n + 1))
	"$cc" "${flags[@]}" -c "$f" -o "$out/$n.o" || { echo "cross_arm64: $f does not build for aarch64"; bad=1; }
done
((bad)) && exit 1
readelf -h "$out/1.o" | grep -q 'AArch64' || { echo "cross_arm64: not aarch64 objects"; exit 1; }
echo "cross_arm64: $n files of core, devices and arch/arm64 build for aarch64"
