#!/bin/bash
# install.sh BUILD_DIR SOURCE_DIR CC: what an embedder does with an install.
#
#  1. cmake --install BUILD_DIR --prefix TMP/prefix (a fresh temporary dir);
#  2. compiles examples/embed.c with `pkg-config --cflags --libs libvmm`
#     (PKG_CONFIG_PATH=TMP/prefix/lib/pkgconfig), and through a tiny CMake
#     project with find_package(libvmm) + libvmm::vmm (consumer/);
#  3. runs both binaries far enough to prove they load the installed
#     libvmm.so.0 (ldd resolves it inside TMP/prefix): without arguments
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

# check_embed BIN: loads the installed library and behaves as embed.c says.
check_embed() {
	local bin=$1 out rc so
	so=$(ldd "$bin" | awk '$1 == "libvmm.so.0" { print $3 }')
	[[ -n $so ]] || fail "$bin: ldd finds no libvmm.so.0: $(ldd "$bin" | tr '\n' ' ')"
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
