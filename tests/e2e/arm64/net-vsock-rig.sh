#!/bin/bash
# net-vsock-rig.sh MINIVMM VSOCKT: how CTest runs e2e/arm64_net_vsock.  On
# this host: the arm64 L2 guest variant "vsock" (the default guest plus
# the vsock modules, tests/rig/mkguest.sh --module) and Debian's arm64
# virtiofsd with its libraries (tests/rig/fetch-virtiofsd.sh, cached), then
# net_vsock.sh in the arm64 rig's L1 with those.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export RIG_ARCH=arm64
mk=("$here/../../rig/mkguest.sh" --variant vsock --module vmw_vsock_virtio_transport)
"${mk[@]}" --quiet
mapfile -t paths < <("${mk[@]}" --print-paths)
vfsroot=$("$here/../../rig/fetch-virtiofsd.sh")
exec "$here/../in-rig.sh" --arch arm64 sh "$here/net_vsock.sh" "$1" "${paths[0]}" \
	"${paths[1]}" "$2" "$vfsroot"
