#!/bin/bash
# bench/vsock_bench.sh [--smoke|--quick|--full] BUILD_DIR
#
# vsock (issue 29): minivmm's hybrid Unix-socket host side (the userspace
# device on the I/O threads) vs vhost=on (the kernel's vhost-vsock), side
# by side in ONE rig L1 (bench/vsock_rig.sh through tests/e2e/in-rig.sh):
# two guests booted at once, the rounds alternated hybrid, vhost, hybrid,
# vhost, ...; each round from the L1: BYTES host -> guest, BYTES guest ->
# host (MiB/s), and one-byte round trips (p50/p99 us), tests/guest/
# vsockperf.c on both ends.  Writes to $BENCH_OUT (default bench/results):
#   vsock.json     the records (+ date, run_mode, git commit)
#   vsock.md       medians per side, the ratios hybrid/vhost, the target
#   vsock.png      throughput both ways and p50 RTT, side by side
#   vsock-run.log  the rig's raw output
#   --smoke  1 round, 4 MiB, 100 round trips
#   --quick  3 rounds, 16 MiB, 500 round trips
#   --full   5 rounds, 64 MiB, 1000 round trips (default)
# VSOCK_REUSE_LOG=FILE re-summarises an earlier run's log instead.
# Timings are reported, never asserted.  BUILD_DIR must hold minivmm and
# bench/vsockperf (the default targets).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* ]] && { mode=$1; shift; }
case $mode in
-h | --help) bench_help; exit 0 ;;
--smoke) rounds=1 bytes=$((4 << 20)) pings=100 ;;
--quick) rounds=3 bytes=$((16 << 20)) pings=500 ;;
--full) rounds=5 bytes=$((64 << 20)) pings=1000 ;;
*) bench_die "unknown mode $mode" ;;
esac
build=$(cd "${1:?BUILD_DIR}" && pwd)
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
for b in minivmm bench/vsockperf; do
	[[ -x $build/$b ]] || bench_die "$build/$b is missing (build the default targets)"
done
log=$out/vsock-run.log
rc=0
if [[ -n ${VSOCK_REUSE_LOG:-} ]]; then
	[[ $VSOCK_REUSE_LOG -ef $log ]] || cp "$VSOCK_REUSE_LOG" "$log"
else
	# The vsock guest variant (tests/e2e/vsock-rig.sh's): the default guest
	# plus the guest's virtio vsock transport.
	mk=("$here/../tests/rig/mkguest.sh" --variant vsock --module vmw_vsock_virtio_transport)
	"${mk[@]}" --quiet
	mapfile -t guest < <("${mk[@]}" --print-paths)
	bench_log "vsock: hybrid vs vhost=on ($mode: $rounds rounds, $bytes bytes, $pings round trips) through the rig"
	bench_in_rig "$log" $((600 + rounds * 120)) "$here/vsock_rig.sh" \
		"$build/minivmm" "$build/bench/vsockperf" \
		"${guest[0]}" "${guest[1]}" "$rounds" "$bytes" "$pings" || rc=$?
fi
bench_rig_results "$log" "$mode" "$out/vsock.json"

J() { jq -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "vsock")] as $r |
	def med(s; f): [$r[] | select(.side == s) | f] | median;
	def n(s): [$r[] | select(.side == s)] | length;
	def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
	'"$1" "$out/vsock.json"; }
{
	echo "# vsock: hybrid Unix-socket host side vs vhost=on ($mode, $date, $(bench_commit))"
	echo
	J '([.[] | select(.bench == "vsock_machine")][0] // {}) as $m |
		"Both guests booted at once in one rig L1 (nested KVM under TCG, \($m.l1_cpus // "?") L1 CPU: \($m.l1_cpu // "?"), kernel \($m.l1_kernel // "?")), 1 vCPU and 256 MiB each; rounds alternated hybrid, vhost, ...; \($m.rounds // "?") rounds of \(($m.bytes // 0) / 1048576) MiB each way and \($m.pings // "?") one-byte round trips (16 more unmeasured first), timed by the L1 host side (tests/guest/vsockperf.c).  Medians over the rounds (n); absolute figures are the emulation'\''s, compare side by side."'
	echo
	echo "| side | n | to guest MiB/s | from guest MiB/s | RTT p50 us | RTT p99 us |"
	echo "|---|---|---|---|---|---|"
	J '(["hybrid", "vhost"][] as $s | select(n($s) > 0) |
		"| \($s) | \(n($s)) | \(med($s; .to_guest_mibs) | r(2)) | \(med($s; .from_guest_mibs) | r(2)) | \(med($s; .rtt_p50_us) | r(1)) | \(med($s; .rtt_p99_us) | r(1)) |")'
	echo
	echo "| round | side | to guest MiB/s | from guest MiB/s | RTT p50 us | RTT p99 us |"
	echo "|---|---|---|---|---|---|"
	J '($r | sort_by(.round)[] |
		"| \(.round) | \(.side) | \(.to_guest_mibs) | \(.from_guest_mibs) | \(.rtt_p50_us) | \(.rtt_p99_us) |")'
	echo
	J '"Ratios hybrid / vhost (medians): throughput to guest \(ratio(med("hybrid"; .to_guest_mibs); med("vhost"; .to_guest_mibs)) | r(2)), from guest \(ratio(med("hybrid"; .from_guest_mibs); med("vhost"; .from_guest_mibs)) | r(2)); RTT p50 \(ratio(med("hybrid"; .rtt_p50_us); med("vhost"; .rtt_p50_us)) | r(2)), p99 \(ratio(med("hybrid"; .rtt_p99_us); med("vhost"; .rtt_p99_us)) | r(2)) (RTT: lower is better).",
		"",
		"Target (issue 29): hybrid >= 0.7x vhost throughput: to guest \(if ratio(med("hybrid"; .to_guest_mibs); med("vhost"; .to_guest_mibs)) == null then "no data" elif ratio(med("hybrid"; .to_guest_mibs); med("vhost"; .to_guest_mibs)) >= 0.7 then "met" else "MISSED" end), from guest \(if ratio(med("hybrid"; .from_guest_mibs); med("vhost"; .from_guest_mibs)) == null then "no data" elif ratio(med("hybrid"; .from_guest_mibs); med("vhost"; .from_guest_mibs)) >= 0.7 then "met" else "MISSED" end).",
		"",
		"Failed runs: \([.[] | select(.bench == "vsock_error")] | if length == 0 then "none" else map("\(.side) round \(.round)") | join(", ") end)."'
	echo
	echo "QEMU's vhost-vsock-pci is not a column: QEMU is in the L1 (e2e/vhost_user_qemu),"
	echo "but a QEMU guest boot there is slow (bench/vhost_bench.sh budgets about 5"
	echo "minutes per QEMU boot in the rig), more than this whole benchmark, and its"
	echo "data path is the same kernel vhost-vsock as the vhost column's (only the"
	echo "VMM's wiring of the queues' eventfds differs)."
} >"$out/vsock.md"

# Plot: medians per side, throughput both ways (left axis), p50 RTT (right).
J '(["hybrid", "vhost"][] as $s | select(n($s) > 0) |
	"\($s) \(med($s; .to_guest_mibs) // 0) \(med($s; .from_guest_mibs) // 0) \(med($s; .rtt_p50_us) // 0)")' >"$dat"
bench_plot 900,450 "$out/vsock.png" <<-EOF
	set multiplot layout 1,2 title "vsock in the rig: hybrid (minivmm userspace) vs vhost=on (kernel), medians"
	$BENCH_GP_BARS
	set yrange [0:*]
	set grid ytics
	set title "throughput (MiB/s, higher is better)"
	set key top left
	plot "$dat" using 2:xtic(1) title "host -> guest", "" using 3 title "guest -> host"
	set title "1-byte round trip p50 (us, lower is better)"
	set key off
	plot "$dat" using 4:xtic(1) title "p50"
	unset multiplot
EOF
bench_rig_end "$out/vsock.md" "$rc"
