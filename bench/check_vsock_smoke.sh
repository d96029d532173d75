#!/bin/bash
# check_vsock_smoke.sh OUT_DIR
#
# Checks what `bench/vsock_bench.sh --smoke` wrote to OUT_DIR (CTest's
# bench/vsock_smoke), so that the vsock benchmark cannot rot: each of the
# three sides (minivmm hybrid, minivmm vhost=on, QEMU vhost-vsock-pci)
# moved its bytes both ways and answered every one-byte round trip, no run
# failed, and the summary (and the plot, where gnuplot is) was written.  It
# never looks at a timing beyond "was measured" (> 0).
set -euo pipefail
out=${1:?OUT_DIR}
# shellcheck source=bench/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
check_results "$out/vsock.json"
check_smoke_records
check "the machine record names the three sides" \
	'[.[] | select(.bench == "vsock_machine")][0].sides == ["hybrid", "vhost", "qemu"]'
for side in hybrid vhost qemu; do
	check "$side: bytes both ways and every round trip measured" \
		"([.[] | select(.bench == \"vsock_machine\")][0].pings) as \$p |
		 any(.[]; .bench == \"vsock\" and .side == \"$side\" and .bytes > 0 and
		     .to_guest_mibs > 0 and .from_guest_mibs > 0 and .rtt_n == \$p and .rtt_p50_us > 0)"
done
check "no failed run" '[.[] | select(.bench == "vsock_error")] | length == 0'
check_line "vsock.md has the target line" 'Target \(issue 29\): hybrid >= 0\.7x vhost throughput' "$out/vsock.md"
command -v gnuplot >/dev/null && check_file "vsock.png rendered" "$out/vsock.png"
check_end check_vsock_smoke
