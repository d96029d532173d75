#!/bin/bash
# vsock-rig.sh MINIVMM VSOCKT: how CTest runs e2e/vsock.  On this host: the
# L2 guest variant "vsock" (the default guest plus the vsock modules,
# tests/rig/mkguest.sh --module), then tests/e2e/vsock.sh through the
# nested-KVM rig (in-rig.sh) with that initramfs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mk=("$here/../rig/mkguest.sh" --variant vsock --module vmw_vsock_virtio_transport)
"${mk[@]}" --quiet
mapfile -t paths < <("${mk[@]}" --print-paths)
exec "$here/in-rig.sh" "$here/vsock.sh" "$1" "${paths[0]}" "${paths[1]}" "$2"
