#!/bin/bash
# install.sh BUILD_DIR SOURCE_DIR CC: what an embedder does with an install.
#
#  1. cmake --install BUILD_DIR --prefix TMP/prefix (a fresh temporary dir);
#  2. compiles examples/embed.c with `pkg-config --cflags --libs libvmm`
#     (PKG_CONFIG_PATH=TMP/prefix/lib/pkgconfig), and through a tiny CMake
#     project with find_package(libvmm) + libvmm::vmm (consumer/);
#  3. runs both binaries far enough to prove they load the installed
#     libvmm.so (its SONAME, which the ABI policy sets: checked first;
#     ldd resolves it inside TMP/prefix): without arguments
#     embed.c prints its usage and exits 2; with missing files it calls
#     vmm_create() etc. and fails cleanly with 1 (no /dev/kvm, or the
#     missing kernel), never a loader error (127) or a signal;
#  4. moves the prefix elsewhere and checks that libvmm.pc follows it
#     (prefix relative to ${pcfiledir}).
# Exit 0 when all holds.  KVM-free.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) cc=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vmm-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "install.sh: FAIL: $*" >&2
	exit 1
}

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
	{ cat "$tmp/install.log" >&2; fail "cmake --install"; }
pcdir=$(dirname "$(find "$tmp/prefix" -name libvmm.pc -print -quit)")
[[ -f $pcdir/libvmm.pc ]] || fail "no libvmm.pc installed"
export PKG_CONFIG_PATH=$pcdir

# libvmm.pc must point into the install prefix, not the configure-time one.
inc=$(pkg-config --variable=includedir libvmm)
lib=$(pkg-config --variable=libdir libvmm)
[[ -f $inc/vmm/vmm.h ]] || fail "includedir $inc has no vmm/vmm.h"
[[ -e $lib/libvmm.so ]] || fail "libdir $lib has no libvmm.so"
[[ $(cd "$inc" && pwd -P) == "$tmp"/prefix/* ]] || fail "includedir $inc is outside $tmp/prefix"
[[ $(cd "$lib" && pwd -P) == "$tmp"/prefix/* ]] || fail "libdir $lib is outside $tmp/prefix"
echo "install.sh: libvmm.pc: $(pkg-config --cflags --libs libvmm)"

# The ABI policy (README): the SONAME and the CMake package's version file
# make the same promise -- 0.x: libvmm.so.0.MINOR and the same minor only;
# from 1.0: libvmm.so.MAJOR and the same major.
ver=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$lib/cmake/libvmm/libvmmConfigVersion.cmake")
[[ $ver =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || fail "no version in libvmmConfigVersion.cmake"
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
soname=$(objdump -p "$(readlink -f "$lib/libvmm.so")" | awk '$1 == "SONAME" { print $2 }')
if ((major == 0)); then
	want=libvmm.so.0.$minor same=0.$minor.0 other=0.$((minor + 1)).0
else
	want=libvmm.so.$major same=$major.0.0 other=$((major + 1)).0.0
fi
[[ $soname == "$want" ]] || fail "SONAME $soname, the policy says $want for $ver"
# compatible VERSION: whether find_package(libvmm VERSION) accepts this one.
cat >"$tmp/compat.cmake" <<EOF
string(REPLACE "." ";" v "\${PACKAGE_FIND_VERSION}")
list(GET v 0 PACKAGE_FIND_VERSION_MAJOR)
list(GET v 1 PACKAGE_FIND_VERSION_MINOR)
list(GET v 2 PACKAGE_FIND_VERSION_PATCH)
include("$lib/cmake/libvmm/libvmmConfigVersion.cmake")
if(NOT PACKAGE_VERSION_COMPATIBLE)
  message(FATAL_ERROR "incompatible")
endif()
EOF
compatible() {
	cmake -DPACKAGE_FIND_VERSION="$1" -P "$tmp/compat.cmake"
}
compatible "$same" >/dev/null 2>&1 || fail "the package refuses $same (same SONAME $soname)"
if compatible "$other" >/dev/null 2>&1; then
	fail "the package accepts $other, whose SONAME would differ from $soname"
fi
echo "install.sh: ABI: $ver, SONAME $soname, find_package accepts $same, refuses $other"

# check_embed BIN: loads the installed library and behaves as embed.c says.
check_embed() {
	local bin=$1 out rc so
	so=$(ldd "$bin" | awk -v n="$soname" '$1 == n { print $3 }')
	[[ -n $so ]] || fail "$bin: ldd finds no $soname: $(ldd "$bin" | tr '\n' ' ')"
	[[ $(readlink -f "$so") == "$tmp"/prefix/* ]] || fail "$bin loads $so, not the installed one"
	rc=0
	out=$("$bin" 2>&1) || rc=$?
	[[ $rc -eq 2 && $out == *"usage:"* ]] || fail "$bin without arguments: rc $rc, output: $out"
	rc=0
	out=$("$bin" "$tmp/no-such-kernel" "$tmp/no-such-initrd" 2>&1) || rc=$?
	[[ $rc -eq 1 ]] || fail "$bin with missing files: rc $rc (want 1), output: $out"
	echo "install.sh: $(basename "$bin") runs against $so (missing files -> rc 1: ${out//$'\n'/ / })"
}

# 1. pkg-config, the README's way.
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is intended
"$cc" -Wall -Wextra -Werror -o "$tmp/embed-pc" "$src/examples/embed.c" \
	$(pkg-config --cflags --libs libvmm) || fail "compiling embed.c with pkg-config's flags"
LD_LIBRARY_PATH=$lib check_embed "$tmp/embed-pc"

# 2. find_package(libvmm) (the imported target carries the include dir;
# CMake puts the library's dir into the build RPATH).
CC=$cc cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" \
	-DCMAKE_PREFIX_PATH="$tmp/prefix" -DEMBED_SRC="$src/examples/embed.c" \
	>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log" >&2; fail "configuring the find_package(libvmm) project"; }
cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 ||
	{ cat "$tmp/consumer.log" >&2; fail "building the find_package(libvmm) project"; }
check_embed "$tmp/consumer/embed-cmake"

# 3. Relocation: the same tree moved elsewhere still resolves to itself.
mv "$tmp/prefix" "$tmp/moved"
pcdir=${pcdir/"$tmp/prefix"/"$tmp/moved"}
export PKG_CONFIG_PATH=$pcdir
inc=$(pkg-config --variable=includedir libvmm)
[[ -f $inc/vmm/vmm.h && $(cd "$inc" && pwd -P) == "$tmp"/moved/* ]] ||
	fail "after moving the prefix, includedir is $inc"
echo "install.sh: OK"
