#!/bin/bash
# The README's first command: install what is needed, build, and boot the
# default guest (a Debian kernel + busybox initramfs) with 2 vCPUs, showing
# its console.  Without /dev/kvm the boot runs inside the nested-KVM rig.
#   scripts/setup.sh [--no-boot] [extra minivmm options...]
set -euo pipefail
cd "$(dirname "$0")/.."

boot=1
if [[ "${1:-}" == --no-boot ]]; then
	boot=0
	shift
fi

scripts/deps.sh
cmake -S . -B build -DVMM_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
tests/rig/mkguest.sh --quiet
[[ $boot -eq 1 ]] || exit 0

mapfile -t paths < <(tests/rig/mkguest.sh --print-paths)
kernel=${paths[0]} initrd=${paths[1]}
echo "setup: booting the default guest (reboots itself when done)" >&2
exec tests/rig/rig-run -- "$PWD/build/minivmm" --smp 2 --mem 512M \
	--kernel "$kernel" --initrd "$initrd" --append "guest.run=smoke" "$@"
