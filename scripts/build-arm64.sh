#!/bin/bash
# scripts/build-arm64.sh [BUILD_DIR]: the static aarch64 build (default
# build-arm64), cross-compiled on x86_64 with gcc-aarch64-linux-gnu
# (cmake/aarch64-linux-gnu.cmake), then its unit tests as aarch64 programs
# under qemu-aarch64-static (CTest runs them through it).  Packages come
# from scripts/deps.sh; libfdt from scripts/arm64-sysroot.sh (cached).
# Reruns reuse the build tree: only what changed is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-arm64}
jobs=$(nproc)
t0=$SECONDS

for tool in aarch64-linux-gnu-gcc qemu-aarch64-static; do
	command -v "$tool" >/dev/null ||
		{ echo "build-arm64: no $tool (scripts/deps.sh installs it)" >&2; exit 1; }
done
sysroot=$(scripts/arm64-sysroot.sh)

cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
	-DVMM_ARM64_SYSROOT="$sysroot" -DVMM_STATIC=ON -DVMM_WERROR=ON >/dev/null
cmake --build "$dir" -j"$jobs"

# What the arm64 rig boots with: aarch64, and no program interpreter.
for bin in minivmm minivmm-blkd; do
	readelf -h "$dir/$bin" | grep -q 'Machine: *AArch64' ||
		{ echo "build-arm64: $dir/$bin is not an aarch64 program" >&2; exit 1; }
	! readelf -l "$dir/$bin" | grep -q INTERP ||
		{ echo "build-arm64: $dir/$bin is not static" >&2; exit 1; }
done

echo "== unit tests, aarch64 under qemu-aarch64-static" >&2
rc=0
(cd "$dir" && ctest -L unit -j"$jobs" --output-on-failure) || rc=$?
echo "build-arm64: done in $((SECONDS - t0)) s" >&2
exit $rc
