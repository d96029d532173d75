#!/bin/bash
# fetch-virtiofsd.sh: the arm64 rig's virtiofsd (RIG_ARCH=arm64 only).
# Debian's /usr/lib/qemu/virtiofsd (QEMU 7.2, package qemu-system-common)
# is dynamically linked and the arm64 L1's userland is static: this takes
# it from qemu-system-common:arm64 with its library closure
# (tests/rig/arm64-debs.sh) into CACHE/arm64/virtiofsd-root/ (root/ +
# packages: name, version, sha256 of each .deb), fetched again when
# qemu-system-common:arm64's candidate version moves.  Prints that
# directory; the L1 runs ROOT/lib/ld-linux-aarch64.so.1 --library-path
# ROOT/lib/aarch64-linux-gnu:ROOT/usr/lib/aarch64-linux-gnu
# ROOT/usr/lib/qemu/virtiofsd (tests/e2e/arm64/net_vsock.sh).
set -euo pipefail
# shellcheck source=tests/rig/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/rig/arm64-debs.sh
. "$RIG_DIR/arm64-debs.sh"
[[ $RIG_ARCH == arm64 ]] || rig_die "fetch-virtiofsd.sh is for RIG_ARCH=arm64 (x86: qemu-system-common)"
arm64_deb_root virtiofsd-root qemu-system-common usr/lib/qemu/virtiofsd
echo "$ARM64_DEB_ROOT"
