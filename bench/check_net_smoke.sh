#!/bin/bash
# check_net_smoke.sh OUT_DIR
#
# Checks what `bench/net_bench.sh --smoke` wrote to OUT_DIR (CTest's
# bench/net_smoke, two sides: minivmm-off and qemu-off), so that the
# virtio-net benchmark cannot rot: each side measured every test (TCP both
# ways, one stream per vCPU, UDP packets, echo round trips), minivmm's side
# its notification counters through the API socket, both sides' guests
# theirs (tests/guest/netcount.c), no test failed, and
# the summary with the targets line (and the plot, where gnuplot is) was
# written.  It never looks at a timing beyond "was measured" (> 0).
set -euo pipefail
out=${1:?OUT_DIR}
# shellcheck source=bench/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
check_results "$out/net.json"
check_smoke_records
for side in minivmm-off qemu-off; do
	for t in tcp_rx tcp_tx tcp_rxN; do
		check "$side $t: bytes moved" \
			"any(.[]; .bench == \"net\" and .side == \"$side\" and .test == \"$t\" and .bytes > 0 and .gbps > 0)"
	done
	check "$side udp_tx: packets received" \
		"any(.[]; .bench == \"net\" and .side == \"$side\" and .test == \"udp_tx\" and .pps > 0)"
	check "$side rr: echoes answered" \
		"any(.[]; .bench == \"net\" and .side == \"$side\" and .test == \"rr\" and .replies > 0 and .rtt_p50_us > 0)"
done
check "minivmm-off: kicks, interrupts and packets counted (API socket stats)" \
	'[.[] | select(.bench == "net" and .side == "minivmm-off" and (.test | startswith("tcp")))] |
	 length >= 3 and all(.[]; .packets_seen > 0 and .notifications_per_packet != null)'
for side in minivmm-off qemu-off; do
	check "$side: kicks, interrupts and packets counted by the guest's driver (netcount)" \
		"[.[] | select(.bench == \"net\" and .side == \"$side\" and (.test | startswith(\"tcp\")))] |
		 length >= 3 and all(.[]; .guest.rx_packets + .guest.tx_packets > 0 and
			.guest.rx_interrupts + .guest.tx_interrupts > 0 and .guest.notifications_per_packet > 0)"
done
check "no failed test" '[.[] | select(.bench == "net_error")] | length == 0'
check_line "net.md has the targets line" '^Targets \(issue 28\): vhost=off >= 1\.0x QEMU' "$out/net.md"
command -v gnuplot >/dev/null && check_file "net.png rendered" "$out/net.png"
check_end check_net_smoke
