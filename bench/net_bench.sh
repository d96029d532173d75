#!/bin/bash
# bench/net_bench.sh [--smoke|--quick|--full] BUILD_DIR
#
# virtio-net (issue 28): minivmm vs QEMU 7.2's virtio-net-pci, each with
# vhost=off (minivmm: its per-vCPU I/O threads; QEMU: its main loop) and
# vhost=on (the kernel's vhost-net), one queue pair per vCPU on a
# multi-queue tap, side by side in ONE rig L1 (bench/net_rig.sh through
# tests/e2e/in-rig.sh): four guests booted at once, the rounds alternated
# minivmm-off, minivmm-on, qemu-off, qemu-on, ...; each round, iperf3
# (Debian's, in the guest from a tools disk this script builds, and in
# the L1) TCP one stream each way, TCP one stream per vCPU to the guest,
# UDP 64-byte packets from the guest, and ICMP echo round trips (busybox
# ping -A), with the VMM's host CPU per GB and the NIC's notifications
# (kicks + interrupts) per packet: minivmm's own count (API socket), and
# every side's as its guest driver counts them (tests/guest/netcount.c).
# Writes to $BENCH_OUT (default bench/results):
#   net.json     the records (+ date, run_mode, git commit)
#   net.md       medians per side, the ratios to QEMU, the issue's targets
#   net.png      throughput, packets/s and p50 round trip, side by side
#   net-run.log  the rig's raw output
#   --smoke  1 round, 2 s per test, 2 vCPUs
#   --quick  3 rounds, 3 s, 2 vCPUs
#   --full   3 rounds, 5 s, 4 vCPUs (default)
# NET_REUSE_LOG=FILE re-summarises an earlier run's log instead.
# NET_SIDES="minivmm-off ..." runs only those sides (default minivmm-off
# minivmm-on qemu-off qemu-on); the side minivmm-base is NET_BASE_VMM (an
# earlier minivmm build) with vhost=off, for a before / after comparison
# alternated in one L1, and minivmm-alt NET_ALT_VMM the same (both with
# NET_BASE_ARGS, more minivmm options, e.g. "--io-sched adaptive");
# minivmm-normal and minivmm-adaptive are minivmm-off with --io-sched
# normal / adaptive (minivmm-off: the default, batch); minivmm-1pair is
# minivmm-off with queue-pairs=1 (the "N pairs >= 1.3x one pair" target:
# run it with tcp_rxM tcp_txM and RIG_L1_CPUS=2, an L1 of two CPUs, where
# minivmm is pinned and QEMU's sides are refused: bench/net_rig.sh);
# NET_TESTS="tcp_tx ..." runs only those tests (tcp_rx tcp_tx tcp_rxN
# udp_tx rr, the default, and tcp_rxM / tcp_txM: VCPUS iperf3 processes
# at once each way, one stream each, summed);
# NET_GUEST_APPEND="..." adds to every guest's kernel command
# line (a diagnosis: virtio_net.napi_tx=0); NET_ROUNDS=N overrides the
# mode's round count (more rounds where a close comparison needs them).
# Timings are reported, never asserted.  Needs iperf3 and
# qemu-system-x86_64 (scripts/deps.sh); BUILD_DIR must hold minivmm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* || ${1:-} == -h ]] && { mode=$1; shift; }
case $mode in
-h | --help) bench_help; exit 0 ;;
--smoke) rounds=1 secs=2 vcpus=2 ;;
--quick) rounds=3 secs=3 vcpus=2 ;;
--full) rounds=3 secs=5 vcpus=4 ;;
*) bench_die "unknown mode $mode" ;;
esac
if [[ -n ${NET_ROUNDS:-} ]]; then
	[[ $NET_ROUNDS =~ ^[1-9][0-9]?$ ]] || bench_die "NET_ROUNDS=$NET_ROUNDS: 1 to 99 rounds"
	rounds=$NET_ROUNDS
fi
build=$(cd "${1:?BUILD_DIR}" && pwd)
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
[[ -x $build/minivmm ]] || bench_die "$build/minivmm is missing (build the default targets)"
log=$out/net-run.log
rc=0
if [[ -n ${NET_REUSE_LOG:-} ]]; then
	[[ $NET_REUSE_LOG -ef $log ]] || cp "$NET_REUSE_LOG" "$log"
else
	command -v iperf3 >/dev/null || bench_die "iperf3 is missing (scripts/deps.sh installs it)"
	# The guest's tools disk: iperf3, the libraries ldd lists and the
	# loader, as an uncompressed cpio at their own paths (what
	# tests/guest/blklib's tools_unpack expects), whole 512-byte sectors.
	tools=$build/bench/net-tools.cpio
	mkdir -p "$build/bench"
	(cd / && bench_iperf3_files | cpio -o -H newc -L --quiet) >"$tools.tmp"
	truncate -s %512 "$tools.tmp"
	mv "$tools.tmp" "$tools"
	mapfile -t guest < <("$here/../tests/rig/mkguest.sh" --print-paths)
	"$here/../tests/rig/mkguest.sh" --quiet
	bench_log "net: minivmm vs QEMU, vhost off/on ($mode: $rounds rounds, $secs s a test, $vcpus vCPUs) through the rig"
	bench_in_rig "$log" $((900 + rounds * secs * 4 * 10)) "$here/net_rig.sh" \
		"$build/minivmm" "${guest[0]}" "${guest[1]}" "$tools" \
		"$rounds" "$secs" "$vcpus" "${NET_SIDES:-minivmm-off minivmm-on qemu-off qemu-on}" \
		"${NET_BASE_VMM:-}" "${NET_ALT_VMM:-}" "${NET_TESTS:-tcp_rx tcp_tx tcp_rxN udp_tx rr}" \
		"${NET_GUEST_APPEND:-}" "${NET_BASE_ARGS:-}" || rc=$?
fi
bench_rig_results "$log" "$mode" "$out/net.json"

J() { jq -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "net")] as $r |
	def med(s; t; f): [$r[] | select(.side == s and .test == t) | f | select(. != null)] | median;
	def n(s): [$r[] | select(.side == s) | .round] | unique | length;
	def tcpmed($s; f): [$r[] | select(.side == $s and (.test | startswith("tcp"))) | f | select(. != null)] | median;
	def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
	def verdict(x; ok): if x == null then "no data" elif ok then "met" else "MISSED" end;
	'"$1" "$out/net.json"; }
sides='["minivmm-off", "minivmm-1pair", "minivmm-base", "minivmm-alt", "minivmm-normal", "minivmm-adaptive", "minivmm-on", "qemu-off", "qemu-on"]'
{
	echo "# virtio-net: minivmm vs QEMU 7.2 virtio-net-pci, vhost off and on ($mode, $date, $(bench_commit))"
	echo
	J '([.[] | select(.bench == "net_machine")][0] // {}) as $m |
		"One guest per side, booted at once in one rig L1 (nested KVM under TCG, \($m.l1_cpus // "?") L1 CPU: \($m.l1_cpu // "?"), kernel \($m.l1_kernel // "?"); \($m.qemu_version // "?"); \($m.iperf3_version // "?")), \($m.guest_vcpus // "?") vCPUs, 512 MiB and one NIC each with \($m.queue_pairs // "?") queue pairs on its own multi-queue tap; rounds alternated over the sides in the table below; \($m.rounds // "?") rounds of \($m.secs // "?") s per iperf3 test\(if ($m.minivmm_pinning // "") != "" then "; minivmm pinned: \($m.minivmm_pinning)" else "" end).  Medians over the rounds (n); absolute figures are the emulation'\''s (every guest and the L1 share \(if ($m.l1_cpus // 1) > 1 then "\($m.l1_cpus) emulated CPUs" else "one emulated CPU" end)), compare side by side."'
	echo
	echo "| side | n | TCP to guest Mbit/s | TCP from guest Mbit/s | TCP to guest, 1 stream/vCPU, Mbit/s | TCP to guest, 1 process/vCPU, Mbit/s | TCP from guest, 1 process/vCPU, Mbit/s | UDP 64 B from guest, packets/s | echo RTT p50 us | p99 us | VMM CPU s/GB (TCP) | notifications/packet |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	J '('"$sides"'[] as $s | select(n($s) > 0) |
		"| \($s) | \(n($s)) | \(med($s; "tcp_rx"; .gbps * 1000) | r(1)) | \(med($s; "tcp_tx"; .gbps * 1000) | r(1)) | \(med($s; "tcp_rxN"; .gbps * 1000) | r(1)) | \(med($s; "tcp_rxM"; .gbps * 1000) | r(1)) | \(med($s; "tcp_txM"; .gbps * 1000) | r(1)) | \(med($s; "udp_tx"; .pps) | r(0)) | \(med($s; "rr"; .rtt_p50_us) | r(0)) | \(med($s; "rr"; .rtt_p99_us) | r(0)) | \(tcpmed($s; .cpu_s_per_gb) | r(2)) | \(tcpmed($s; .notifications_per_packet) | r(3)) |")'
	echo
	echo "| round | side | test | Mbit/s | packets/s | p50 us | p99 us | CPU ms | notifications/packet |"
	echo "|---|---|---|---|---|---|---|---|---|"
	J '($r | sort_by(.round, .side, .test)[] |
		"| \(.round) | \(.side) | \(.test) | \(if .gbps then .gbps * 1000 | r(1) else "" end) | \(.pps // "" | if type == "number" then r(0) else . end) | \(.rtt_p50_us // "") | \(.rtt_p99_us // "") | \(.vmm_cpu_ms // "") | \(.notifications_per_packet // "" | if type == "number" then r(3) else . end) |")'
	echo
	echo "Notifications by part (minivmm vhost=off; per packet, packets counted both ways: RX = to the guest, TX = from it):"
	echo
	echo "| round | side | test | RX kicks | TX kicks | RX interrupts | TX interrupts | RX packets | TX packets | policy switches | ms SCHED_OTHER |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	J '($r | map(select(.rx_kicks != null)) | sort_by(.round, .side, .test)[] | .packets_seen as $p |
		"| \(.round) | \(.side) | \(.test) | \(.rx_kicks / $p | r(3)) | \(.tx_kicks / $p | r(3)) | \(.rx_interrupts / $p | r(3)) | \(.tx_interrupts / $p | r(3)) | \(.rx_packets) | \(.tx_packets) | \(.sched_switches // "") | \(.sched_normal_ms // "") |")'
	echo
	echo "Notifications per packet as the guest's driver counts them (every side alike: its ethtool kicks and packets, /proc/interrupts of the NIC's queue vectors; tests/guest/netcount.c), medians per side and test, then the parts per packet:"
	echo
	echo "| side | test | n | notifications/packet | RX kicks | TX kicks | RX interrupts | TX interrupts | packets | device-counted (minivmm vhost=off) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	J '('"$sides"'[] as $s | ["tcp_rx", "tcp_tx", "tcp_rxN", "tcp_rxM", "tcp_txM", "udp_tx"][] as $t |
		[$r[] | select(.side == $s and .test == $t and .guest != null)] as $g | select($g | length > 0) |
		def gm(f): [$g[] | .guest | f] | median;
		def pp(k): gm(.[k] / (.rx_packets + .tx_packets)) | r(3);
		"| \($s) | \($t) | \($g | length) | **\(gm(.notifications_per_packet) | r(3))** | \(pp("rx_kicks")) | \(pp("tx_kicks")) | \(pp("rx_interrupts")) | \(pp("tx_interrupts")) | \(gm(.rx_packets + .tx_packets) | r(0)) | \([$g[] | .notifications_per_packet | select(. != null)] | median // "" | if type == "number" then r(3) else . end) |")'
	J '[.[] | select(.bench == "net_count_cost")] | if length == 0 then empty else
		"", "One count costs itself (two back to back, per side; inside every window above once): " +
		(map("\(.side) \(.notifications) notifications, \(.packets) packets") | join("; ")) + "." end'
	echo
	J 'def q(t; f): ratio(med("minivmm-off"; t; f); med("qemu-off"; t; f));
	   def v(t; f): ratio(med("minivmm-on"; t; f); med("qemu-on"; t; f));
	   def p(t): ratio(med("minivmm-off"; t; .gbps); med("minivmm-1pair"; t; .gbps));
	   def npp: tcpmed("minivmm-off"; .notifications_per_packet);
	   def gnpp($s): tcpmed($s; .guest.notifications_per_packet);
		"Ratios minivmm / QEMU (medians), vhost=off: TCP to guest \(q("tcp_rx"; .gbps) | r(2)), from guest \(q("tcp_tx"; .gbps) | r(2)), 1 stream/vCPU \(q("tcp_rxN"; .gbps) | r(2)), UDP packets/s \(q("udp_tx"; .pps) | r(2)), RTT p50 \(q("rr"; .rtt_p50_us) | r(2)) (lower is better); vhost=on: TCP to guest \(v("tcp_rx"; .gbps) | r(2)), from guest \(v("tcp_tx"; .gbps) | r(2)), 1 stream/vCPU \(v("tcp_rxN"; .gbps) | r(2)), UDP \(v("udp_tx"; .pps) | r(2)), RTT p50 \(v("rr"; .rtt_p50_us) | r(2)).",
		"",
		"Targets (issue 28): vhost=off >= 1.0x QEMU vhost=off: TCP to guest \(verdict(q("tcp_rx"; .gbps); q("tcp_rx"; .gbps) >= 1.0)), from guest \(verdict(q("tcp_tx"; .gbps); q("tcp_tx"; .gbps) >= 1.0)); vhost=on within 10% of QEMU vhost=on: to guest \(verdict(v("tcp_rx"; .gbps); v("tcp_rx"; .gbps) >= 0.9)), from guest \(verdict(v("tcp_tx"; .gbps); v("tcp_tx"; .gbps) >= 0.9)); <= 0.1 notifications per packet under load (minivmm vhost=off, TCP): \(npp | r(3)) (\(verdict(npp; npp <= 0.1)); counted in the guest, TCP: \(["minivmm-off", "minivmm-adaptive", "minivmm-on", "qemu-off", "qemu-on"] | map(select(gnpp(.) != null) | "\(.) \(gnpp(.) | r(3))") | if length == 0 then "no data" else join(", ") end)); N pairs >= 1.3x one pair with N streams: \(if n("minivmm-1pair") == 0 then "not run (side minivmm-1pair)" else
			"\(([.[] | select(.bench == "net_machine")][0] // {}).l1_cpus // "?") L1 CPUs, one pair per vCPU / one pair, to the guest \(p("tcp_rxM") | r(2)) (\(verdict(p("tcp_rxM"); p("tcp_rxM") >= 1.3))), from it \(p("tcp_txM") | r(2)) (\(verdict(p("tcp_txM"); p("tcp_txM") >= 1.3)))" end).",
		"",
		"I/O-thread policy (issue 28 item 7; sides run: \([$r[] | .side] | unique | map(select(. == "minivmm-normal" or . == "minivmm-adaptive")) | if length == 0 then "none" else join(", ") end)): " +
		([["minivmm-off", "batch"], ["minivmm-normal", "normal"], ["minivmm-adaptive", "adaptive"]][] as [$s, $p] | select(n($s) > 0) |
		 "\($p): echo p50 / QEMU vhost=off \(ratio(med($s; "rr"; .rtt_p50_us); med("qemu-off"; "rr"; .rtt_p50_us)) | r(2)) (target <= 1.0), TCP to guest / batch \(ratio(med($s; "tcp_rx"; .gbps); med("minivmm-off"; "tcp_rx"; .gbps)) | r(2)), from guest / batch \(ratio(med($s; "tcp_tx"; .gbps); med("minivmm-off"; "tcp_tx"; .gbps)) | r(2)), UDP / batch \(ratio(med($s; "udp_tx"; .pps); med("minivmm-off"; "udp_tx"; .pps)) | r(2)) (target >= 0.95)") + ".",
		"",
		"Failed tests: \([.[] | select(.bench == "net_error")] | if length == 0 then "none" else map("\(.side) round \(.round) \(.test)") | join(", ") end)."'
} >"$out/net.md"

# Plot: medians per side: TCP both ways (Mbit/s), UDP kpackets/s, p50 RTT.
J "(${sides}[] as \$s | select(n(\$s) > 0) |
	\"\\(\$s) \\(med(\$s; \"tcp_rx\"; .gbps * 1000) // 0) \\(med(\$s; \"tcp_tx\"; .gbps * 1000) // 0) \\((med(\$s; \"udp_tx\"; .pps) // 0) / 1000) \\(med(\$s; \"rr\"; .rtt_p50_us) // 0)\")" >"$dat"
bench_plot 1200,450 "$out/net.png" <<-EOF
	set multiplot layout 1,3 title "virtio-net in the rig: minivmm vs QEMU 7.2, vhost off/on, medians"
	$BENCH_GP_BARS
	set yrange [0:*]
	set grid ytics
	set xtics rotate by -30
	set title "TCP (Mbit/s, higher is better)"
	set key top left
	plot "$dat" using 2:xtic(1) title "to guest", "" using 3 title "from guest"
	set key off
	set title "UDP 64 B from guest (kpackets/s)"
	plot "$dat" using 4:xtic(1)
	set title "echo round trip p50 (us, lower is better)"
	plot "$dat" using 5:xtic(1)
	unset multiplot
EOF
bench_rig_end "$out/net.md" "$rc"
