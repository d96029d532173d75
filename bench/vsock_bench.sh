#!/bin/bash
# bench/vsock_bench.sh [--smoke|--quick|--full] BUILD_DIR
#
# vsock (issue 29): minivmm's hybrid Unix-socket host side (the userspace
# device on the I/O threads) vs minivmm's vhost=on (the kernel's
# vhost-vsock) vs QEMU 7.2's vhost-vsock-pci (the same kernel vhost-vsock
# under QEMU), side by side in ONE rig L1 (bench/vsock_rig.sh through
# tests/e2e/in-rig.sh): three guests booted at once (the same kernel and
# initrd), measured once each one answers, the rounds alternated hybrid,
# vhost, qemu, hybrid, ...; each round from the L1: BYTES host -> guest,
# BYTES guest -> host (MiB/s), and one-byte round trips (p50/p99 us),
# tests/guest/vsockperf.c on both ends (vhost and qemu through AF_VSOCK).
# Writes to $BENCH_OUT (default bench/results):
#   vsock.json     the records (+ date, run_mode, git commit)
#   vsock.md       medians per side, the ratios hybrid/vhost, vhost/QEMU
#                  and hybrid/QEMU, the target
#   vsock.png      throughput both ways and p50 RTT, side by side
#   vsock-run.log  the rig's raw output
#   --smoke  1 round, 4 MiB, 100 round trips
#   --quick  3 rounds, 16 MiB, 500 round trips
#   --full   5 rounds, 64 MiB, 1000 round trips (default)
# VSOCK_REUSE_LOG=FILE re-summarises an earlier run's log instead.
# Timings are reported, never asserted.  BUILD_DIR must hold minivmm and
# bench/vsockperf (the default targets); the rig's L1 has QEMU.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* || ${1:-} == -h ]] && { mode=$1; shift; }
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
	bench_log "vsock: hybrid vs vhost=on vs QEMU vhost-vsock-pci ($mode: $rounds rounds, $bytes bytes, $pings round trips) through the rig"
	bench_in_rig "$log" $((900 + rounds * 180)) "$here/vsock_rig.sh" \
		"$build/minivmm" "$build/bench/vsockperf" \
		"${guest[0]}" "${guest[1]}" "$rounds" "$bytes" "$pings" || rc=$?
fi
bench_rig_results "$log" "$mode" "$out/vsock.json"

J() { jq -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "vsock")] as $r |
	def med(s; f): [$r[] | select(.side == s) | f] | median;
	def n(s): [$r[] | select(.side == s)] | length;
	def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
	def rat(a; b; f): ratio(med(a; f); med(b; f)) | r(2) // "n/a";
	def ratios(a; b): "throughput to guest \(rat(a; b; .to_guest_mibs)), from guest \(rat(a; b; .from_guest_mibs)); RTT p50 \(rat(a; b; .rtt_p50_us)), p99 \(rat(a; b; .rtt_p99_us))";
	'"$1" "$out/vsock.json"; }
sides='["hybrid", "vhost", "qemu"]'
{
	echo "# vsock: minivmm hybrid Unix-socket host side vs minivmm vhost=on vs QEMU vhost-vsock-pci ($mode, $date, $(bench_commit))"
	echo
	J '([.[] | select(.bench == "vsock_machine")][0] // {}) as $m | ($m.sides // ["hybrid", "vhost"]) as $s |
		"\($s | length) guests booted at once in one rig L1 (nested KVM under TCG, \($m.l1_cpus // "?") L1 CPU: \($m.l1_cpu // "?"), kernel \($m.l1_kernel // "?")\(if $m.qemu_version then "; \($m.qemu_version)" else "" end)), the same guest kernel and initrd, 1 vCPU and 256 MiB each: hybrid (minivmm --vsock cid=3,socket=PATH), vhost (minivmm --vsock cid=4,vhost=on)\(if ($s | index("qemu")) then ", qemu (qemu-system-x86_64 -M pc -device vhost-vsock-pci,guest-cid=5)" else "" end); rounds alternated \($s | join(", ")), ...; \($m.rounds // "?") rounds of \(($m.bytes // 0) / 1048576) MiB each way and \($m.pings // "?") one-byte round trips (16 more unmeasured first), timed by the L1 host side (tests/guest/vsockperf.c; the Unix socket for hybrid, AF_VSOCK for \($s - ["hybrid"] | join(" and "))).  Medians over the rounds (n); absolute figures are the emulation'\''s, compare side by side."'
	echo
	echo "| side | n | to guest MiB/s | from guest MiB/s | RTT p50 us | RTT p99 us |"
	echo "|---|---|---|---|---|---|"
	J '('"$sides"'[] as $s | select(n($s) > 0) |
		"| \($s) | \(n($s)) | \(med($s; .to_guest_mibs) | r(2)) | \(med($s; .from_guest_mibs) | r(2)) | \(med($s; .rtt_p50_us) | r(1)) | \(med($s; .rtt_p99_us) | r(1)) |")'
	echo
	echo "| round | side | to guest MiB/s | from guest MiB/s | RTT p50 us | RTT p99 us |"
	echo "|---|---|---|---|---|---|"
	J '('"$sides"' as $o | $r | sort_by(.round, (.side as $x | $o | index($x)))[] |
		"| \(.round) | \(.side) | \(.to_guest_mibs) | \(.from_guest_mibs) | \(.rtt_p50_us) | \(.rtt_p99_us) |")'
	echo
	J '"Ratios of the medians (RTT: lower is better):",
		"",
		"- hybrid / vhost: \(ratios("hybrid"; "vhost"))",
		"- vhost / QEMU: \(ratios("vhost"; "qemu"))",
		"- hybrid / QEMU: \(ratios("hybrid"; "qemu"))",
		"",
		"Target (issue 29): hybrid >= 0.7x vhost throughput: to guest \(if ratio(med("hybrid"; .to_guest_mibs); med("vhost"; .to_guest_mibs)) == null then "no data" elif ratio(med("hybrid"; .to_guest_mibs); med("vhost"; .to_guest_mibs)) >= 0.7 then "met" else "MISSED" end), from guest \(if ratio(med("hybrid"; .from_guest_mibs); med("vhost"; .from_guest_mibs)) == null then "no data" elif ratio(med("hybrid"; .from_guest_mibs); med("vhost"; .from_guest_mibs)) >= 0.7 then "met" else "MISSED" end).",
		"",
		"Failed runs: \([.[] | select(.bench == "vsock_error")] | if length == 0 then "none" else map("\(.side) \(if .round == 0 then "(never answered)" else "round \(.round)" end)") | join(", ") end)."'
	echo
	echo "vhost and qemu move the packets with the same kernel vhost-vsock; what"
	echo "differs is the VMM around it (minivmm's or QEMU's virtio-pci and the"
	echo "wiring of the queues' eventfds)."
} >"$out/vsock.md"

# Plot: medians per side, throughput both ways (left axis), p50 RTT (right).
J '('"$sides"'[] as $s | select(n($s) > 0) |
	"\($s) \(med($s; .to_guest_mibs) // 0) \(med($s; .from_guest_mibs) // 0) \(med($s; .rtt_p50_us) // 0)")' >"$dat"
bench_plot 1000,450 "$out/vsock.png" <<-EOF
	set multiplot layout 1,2 title "vsock in the rig: minivmm hybrid (userspace) vs minivmm vhost=on vs QEMU vhost-vsock-pci, medians"
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
