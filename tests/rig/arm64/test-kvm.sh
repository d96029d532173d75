#!/bin/bash
# test-kvm.sh [OUT_DIR]: the arm64 rig's self-test (CTest rig/arm64_kvm),
# needing no VMM of ours.  Builds tests/rig/arm64/kvm-probe.c static with
# aarch64-linux-gnu-gcc into OUT_DIR (default: a temp dir; it must be a
# path the L1 sees, i.e. not under /usr, /etc, /lib*, /bin, /sbin, /run),
# runs it through `rig-run --arch arm64` (the aarch64 L1 under TCG, or
# directly on an aarch64 host with /dev/kvm) and passes only when the probe
# exits 0 AND printed KVM-PROBE-OK: a missing /dev/kvm in L1 is rig-run's
# 125, a KVM without vGIC v3/ITS/PSCI or a guest that does not run is the
# probe's 1 with a KVM-PROBE-FAIL line; both fail the test.  Stall retries
# follow RIG_STALL_RETRIES (default here 1, announced by rig-run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for c in aarch64-linux-gnu-gcc qemu-system-aarch64; do
	command -v "$c" >/dev/null ||
		{ echo "test-kvm.sh: $c not found (scripts/deps.sh installs it): FAIL" >&2; exit 1; }
done
if [[ -n "${1:-}" ]]; then
	out=$1
	mkdir -p "$out"
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/arm64-kvm-probe.XXXXXX")
	trap 'rm -rf "$out"' EXIT
fi
out=$(cd "$out" && pwd)
aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Wformat=2 -Wmissing-prototypes \
	-Wstrict-prototypes -Wsign-compare -Wundef -Wwrite-strings -Werror \
	-o "$out/kvm-probe.new" "$here/kvm-probe.c"
mv -f "$out/kvm-probe.new" "$out/kvm-probe" # a new inode: never rewritten under a running L1
log="$out/kvm-probe.log"
rc=0
"$here/../rig-run" --arch arm64 --timeout "${RIG_TIMEOUT:-600}" \
	--stall-retries "${RIG_STALL_RETRIES:-1}" -- "$out/kvm-probe" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
if [[ $rc -ne 0 ]]; then
	echo "test-kvm.sh: FAIL: the probe (or the rig) exited $rc (125: rig failure, e.g. no /dev/kvm in L1; 124: L1 stalled)" >&2
	exit 1
fi
grep -qx 'KVM-PROBE-OK' "$log" || { echo "test-kvm.sh: FAIL: exit 0 but no KVM-PROBE-OK line" >&2; exit 1; }
for want in 'vgic_v3=ok its=ok' 'psci_0_2=on' 'msi_route=ok irqfd=ok ioeventfd=ok' 'psci_system_off=ok'; do
	grep -q "$want" "$log" || { echo "test-kvm.sh: FAIL: no '$want' in the probe's output" >&2; exit 1; }
done
echo "test-kvm.sh: PASS"
