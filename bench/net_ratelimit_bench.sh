#!/bin/bash
# SPDX-License-Identifier: MIT
#
# net_ratelimit_bench.sh [--smoke|--quick|--full|--help] - NIC rate limits,
# achieved vs configured, and fairness across queue pairs, without KVM.
#
# netbench (bench/netbench.c: libvmm's real virtio-net, virtio-pci
# transport, I/O threads and queue service on a fake KVM, the stream back
# end on socketpairs with the bench as the peer, a simulated driver on
# guest RAM) with the NIC's limits set (the limiter
# vmm_set_net_rate_limit() sets), each direction on its own:
#   - tx (guest -> back end, counted by the peer) and rx (back end ->
#     guest, counted by the driver);
#   - bandwidth 10/50/100 MiB/s, one pair, 1514-byte frames;
#   - frames/s 1000/5000, one pair, 60-byte frames;
#   - fairness: 4 pairs on 4 I/O threads, every one busy, sharing
#     4000 frames/s (60 bytes) and 50 MiB/s (1514 bytes), and the same
#     4 pairs on one I/O thread sharing 4000 frames/s (fair_ops_1t):
#     each pair's share of the frames;
#   - unlimited (no limit set), 60-byte frames: one pair, four pairs on
#     four I/O threads, four pairs on one (unlimited_1t): what the NIC
#     moves at most here, and each pair's share.
# Rounds alternate (every point once, then again).  Bursts are the
# default (one second's worth); the warm-up (2 s) drains the first
# bucket, so the window measures the refill rate.
#
# Output: $BENCH_OUT (default bench/results)/net_ratelimit.json (one record
# per run), net_ratelimit.md (medians, error vs configured, within +-5%
# or not, per-pair shares; the unlimited points in a table of their own),
# net_ratelimit.png (gnuplot, if installed); the
# table also goes into ratelimit.md under "## NICs" (replaced on each
# run; ratelimit_bench.sh keeps it).  Environment: NETBENCH_BIN (default
# build/bench/netbench), RATE_SECONDS, RATE_REPS, RATE_WARMUP.  Timings
# are reported, never asserted.
#
# RATE_BACKEND=tun: every point on the tap back end instead, its frames
# moved by io_uring (netbench --backend tun: a real multi-queue tap in a
# network namespace of netbench's own, root), into net_ratelimit_tun.json,
# .md and .png; ratelimit.md keeps the stream back end's table.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
case "${1:-}" in
-h | --help) sed -n '4,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
bench_rate_setup net_ratelimit_bench NETBENCH_BIN netbench "$@"
WARM=${RATE_WARMUP:-2}
case ${RATE_BACKEND:=stream} in
stream) out=net_ratelimit be_args=() tx_count="the peer" be_desc="the stream back end
(socketpairs, the bench as the peer)" ;;
tun) out=net_ratelimit_tun be_args=(--backend tun --tap-io uring)
	tx_count="the driver (TX chains used: a tap takes every frame)"
	be_desc="the tap back end with its frames moved by io_uring (a real
multi-queue tap in a network namespace of its own; RX frames reach the pair
its flow hash picks)" ;;
*) echo "net_ratelimit_bench: RATE_BACKEND is stream or tun" >&2; exit 1 ;;
esac
[[ $MODE == smoke ]] && WARM=${RATE_WARMUP:-0.3}

run() { # run DIR KIND CONFIGURED PAIRS FRAME-LEN REP NETBENCH-ARGS...
	local dir=$1 kind=$2 conf=$3 pairs=$4 flen=$5 rep=$6
	shift 6
	"$BIN" --dir "$dir" --pairs "$pairs" --frame-len "$flen" \
		--seconds "$SECS" --warmup "$WARM" --rep "$rep" "${be_args[@]}" "$@" |
		jq -c --arg k "$kind" --argjson conf "$conf" \
			'{kind: $k, configured: $conf} + . +
			 {achieved: (if $k == "bw" or $k == "fair_bw" then .bps else .fps end)}' >>"$rec"
}

for ((rep = 0; rep < REPS; rep++)); do
	for dir in tx rx; do
		for m in 10 50 100; do
			run $dir bw $((m * MIB)) 1 1514 $rep --rate-bw $((m * MIB))
		done
		for ops in 1000 5000; do
			run $dir ops $ops 1 60 $rep --rate-ops $ops
		done
		run $dir fair_ops 4000 4 60 $rep --rate-ops 4000
		run $dir fair_bw $((50 * MIB)) 4 1514 $rep --rate-bw $((50 * MIB))
		run $dir fair_ops_1t 4000 4 60 $rep --rate-ops 4000 --iothreads 1
		run $dir unlimited 0 1 60 $rep
		run $dir unlimited 0 4 60 $rep
		run $dir unlimited_1t 0 4 60 $rep --iothreads 1
	done
done

jq -s . "$rec" >"$RES/$out.json"

# ---- summary: medians per point, error vs configured, shares -----------
jq -r '
	def median: sort | if length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	def bw(k): k == "bw" or k == "fair_bw";
	def unit(k): if bw(k) then "MiB/s" else "frames/s" end;
	def scale(k; v): if bw(k) then v / 1048576 else v end;
	def r2: . * 100 | round / 100 | . + 0; # no "-0"
	"| dir | point | pairs | I/O threads | frame | configured | achieved (median) | rounds (min..max) | error | within +-5% | throttled waits | per-pair share of frames (min..max) |",
	"|---|---|---|---|---|---|---|---|---|---|---|---|",
	(map(select(.configured > 0)) | group_by([.dir, .kind, .configured])[] |
	 (map(.achieved) | median) as $a | .[0] as $r |
	 (($a - $r.configured) / $r.configured * 100) as $err |
	 (map(.pair_frames | add as $t | map(. / $t) | min) | median) as $smin |
	 (map(.pair_frames | add as $t | map(. / $t) | max) | median) as $smax |
	 "| \($r.dir) | \($r.kind) | \($r.pairs) | \($r.iothreads) | \($r.frame_len) B | " +
	 "\(scale($r.kind; $r.configured) | floor) \(unit($r.kind)) | " +
	 "\(scale($r.kind; $a) | r2) \(unit($r.kind)) | " +
	 "\(map(scale($r.kind; .achieved)) | min | r2)..\(map(scale($r.kind; .achieved)) | max | r2) | " +
	 "\($err | r2)% | \(if ($err | fabs) <= 5 then "yes" else "NO" end) | " +
	 "\(map(.rate_throttled) | median) | " +
	 "\($smin * 1000 | round / 10)%..\($smax * 1000 | round / 10)% |")
' "$RES/$out.json" >"$tmp/table.md"
jq -r '
	def median: sort | if length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	def r1: . * 10 | round / 10 | . + 0;
	"| dir | pairs | I/O threads | frame | frames/s (median) | rounds (min..max) | per-pair share of frames (min..max) |",
	"|---|---|---|---|---|---|---|",
	(map(select(.configured == 0)) | group_by([.dir, .pairs, .iothreads])[] |
	 .[0] as $r |
	 (map(.pair_frames | add as $t | map(. / $t) | min) | median) as $smin |
	 (map(.pair_frames | add as $t | map(. / $t) | max) | median) as $smax |
	 "| \($r.dir) | \($r.pairs) | \($r.iothreads) | \($r.frame_len) B | " +
	 "\(map(.fps) | median | r1) | \(map(.fps) | min | r1)..\(map(.fps) | max | r1) | " +
	 "\($smin * 1000 | round / 10)%..\($smax * 1000 | round / 10)% |")
' "$RES/$out.json" >"$tmp/unlimited.md"
{
	echo "## NICs: achieved vs configured ($MODE: ${SECS} s x $REPS alternated rounds, $(date -u +%F))"
	echo
	echo "netbench (\`bench/net_ratelimit_bench.sh\`), libvmm's virtio-net on $be_desc, one I/O thread per pair (fair_ops_1t: one for all four), queue size 256, EVENT_IDX,"
	echo "MRG_RXBUF; tx counted by $tx_count, rx by the guest driver; frames without the virtio-net"
	echo "header; default bursts (one second), ${WARM} s warm-up.  Host: $(nproc) CPUs ($(uname -r)); shared"
	echo "machine, no KVM."
	echo
	cat "$tmp/table.md"
	echo
	echo "Unlimited (no limit set; what the NIC moves at most on this host):"
	echo
	cat "$tmp/unlimited.md"
} >"$RES/$out.md"
cat "$RES/$out.md"
# Into ratelimit.md, after the disks' table (an earlier NIC section replaced).
if [[ $RATE_BACKEND == stream && -f $RES/ratelimit.md ]]; then
	sed '/^## NICs/,$d' "$RES/ratelimit.md" >"$tmp/rl.md"
	sed -i -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$tmp/rl.md" # trailing blank lines
	{ cat "$tmp/rl.md"; echo; cat "$RES/$out.md"; } >"$RES/ratelimit.md"
fi

if command -v gnuplot >/dev/null; then
	jq -r 'group_by([.dir, .kind, .configured])[] | select(.[0].kind == "bw" or .[0].kind == "ops") |
		[.[0].dir, .[0].kind, .[0].configured, (map(.achieved) | add / length)] | @tsv' \
		"$RES/$out.json" >"$tmp/pts.dat"
	for d in tx rx; do
		awk -v d=$d '$1 == d && $2 == "bw" { print $3 / 1048576, $4 / 1048576 }' "$tmp/pts.dat" >"$tmp/bw_$d.dat"
		awk -v d=$d '$1 == d && $2 == "ops" { print $3, $4 }' "$tmp/pts.dat" >"$tmp/ops_$d.dat"
	done
	jq -r 'group_by([.dir, .kind])[] | select(.[0].kind | startswith("fair")) |
		.[0].dir + "-" + .[0].kind as $n |
		(map(.pair_frames | add as $t | map(. / $t * 100)) | transpose | map(add / length)) as $s |
		[$n] + $s | @tsv' "$RES/$out.json" >"$tmp/fair.dat"
	gnuplot <<PLOT
set terminal pngcairo size 1600,450 noenhanced
set output "$RES/$out.png"
set multiplot layout 1,3 title "NIC rate limits: achieved vs configured (netbench, $RATE_BACKEND back end)"
set grid; set key left top
set xlabel "configured MiB/s"; set ylabel "achieved MiB/s"
plot [0:110][0:110] "$tmp/bw_tx.dat" u 1:2 w lp pt 7 lw 2 t "tx (1514 B)", \
     "$tmp/bw_rx.dat" u 1:2 w lp pt 5 lw 2 t "rx (1514 B)", x w l dt 2 t "configured", \
     x * 1.05 w l dt 3 lc rgb "gray" t "+-5%", x * 0.95 w l dt 3 lc rgb "gray" notitle
set xlabel "configured frames/s"; set ylabel "achieved frames/s"
plot [0:5500][0:5500] "$tmp/ops_tx.dat" u 1:2 w lp pt 7 lw 2 t "tx (60 B)", \
     "$tmp/ops_rx.dat" u 1:2 w lp pt 5 lw 2 t "rx (60 B)", x w l dt 2 t "configured", \
     x * 1.05 w l dt 3 lc rgb "gray" t "+-5%", x * 0.95 w l dt 3 lc rgb "gray" notitle
set title "4 busy pairs, one limit: each pair's share (mean of rounds)"
set style data histogram; set style histogram cluster gap 1; set style fill solid 0.8
set xtics rotate by -25; set key top right horizontal
set ylabel "% of frames"; set xlabel ""; set yrange [0:45]
plot "$tmp/fair.dat" u 2:xtic(1) t "pair 0", "" u 3 t "pair 1", "" u 4 t "pair 2", "" u 5 t "pair 3", \
     25 w l dt 2 lc rgb "black" t "25%"
unset multiplot
PLOT
fi
