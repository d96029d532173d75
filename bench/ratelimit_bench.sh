#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ratelimit_bench.sh [--smoke|--quick|--full] - disk rate limits, achieved
# vs configured, and fairness across queues, without KVM.
#
# devbench (bench/devbench.sh's simulated virtio-blk driver on libvmm's
# real device, I/O threads and io_uring, null engine: the device is never
# the limit) with the disk's limits set (ratelimit.h, the same limiter
# vmm_set_disk_rate_limit() sets): 4 KiB reads at QD 16
#   - bandwidth 10/50/100 MiB/s on one queue;
#   - IOPS 1000/5000 on one queue;
#   - fairness: 4 queues, each busy (QD 16 each), sharing 4000 IOPS and
#     50 MiB/s: every queue's share of the requests.
# Each point REPS rounds; medians.  Bursts are the default (one second's
# worth): the device drains the first bucket during the warm-up, so the
# window measures the refill rate; a burst also absorbs an I/O thread
# scheduled late (a bucket of 10 ms lost tokens on this loaded 2-core
# host whenever a wake-up came more than 10 ms late).
#
# Output: $BENCH_OUT (default bench/results)/ratelimit.json (one record
# per run), ratelimit.md (medians, error vs configured, within +-5% or
# not, per-queue shares; a "## NICs" section from net_ratelimit_bench.sh
# is kept), ratelimit.png (gnuplot, if installed).
# Environment: DEVBENCH_BIN (default build/bench/devbench), RATE_SECONDS,
# RATE_REPS.  Timings are reported, never asserted.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_rate_setup ratelimit_bench DEVBENCH_BIN devbench "$@"

run() { # run KIND CONFIGURED QUEUES DEVBENCH-ARGS...
	local kind=$1 conf=$2 queues=$3 rep
	shift 3
	for ((rep = 0; rep < REPS; rep++)); do
		"$BIN" --target libvmm --backend null --qd 16 --queues "$queues" \
			--seconds "$SECS" --warmup 0.5 --rep "$rep" "$@" |
			jq -c --arg k "$kind" --argjson conf "$conf" \
				'{bench: "ratelimit", kind: $k, configured: $conf} + . +
				 {achieved: (if $k == "bw" or $k == "fair_bw" then .rps * 4096 else .rps end)}' >>"$rec"
	done
}

for m in 10 50 100; do
	bw=$((m * MIB))
	run bw "$bw" 1 --rate-bw "$bw"
done
for ops in 1000 5000; do
	run ops "$ops" 1 --rate-ops "$ops"
done
run fair_ops 4000 4 --rate-ops 4000
run fair_bw $((50 * MIB)) 4 --rate-bw $((50 * MIB))

jq -s . "$rec" >"$RES/ratelimit.json"

# ---- summary: medians per point, error vs configured, shares -----------
jq -r '
	def median: sort | if length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	def unit(k): if k == "bw" or k == "fair_bw" then "MiB/s" else "IOPS" end;
	def scale(k; v): if k == "bw" or k == "fair_bw" then v / 1048576 else v end;
	"| point | queues | configured | achieved (median) | error | within +-5% | throttled waits | per-queue share of requests (min..max) |",
	"|---|---|---|---|---|---|---|---|",
	(group_by([.kind, .configured])[] |
	 (map(.achieved) | median) as $a | .[0] as $r |
	 (($a - $r.configured) / $r.configured * 100) as $err |
	 (map(.queue_reqs | add as $t | map(. / $t) | min) | median) as $smin |
	 (map(.queue_reqs | add as $t | map(. / $t) | max) | median) as $smax |
	 "| \($r.kind) | \($r.queues) | \(scale($r.kind; $r.configured) | floor) \(unit($r.kind)) | " +
	 "\(scale($r.kind; $a) * 100 | round / 100) \(unit($r.kind)) | \($err * 100 | round / 100)% | " +
	 "\(if ($err | fabs) <= 5 then "yes" else "NO" end) | \(map(.rate_throttled) | median) | " +
	 "\($smin * 1000 | round / 10)%..\($smax * 1000 | round / 10)% |")
' "$RES/ratelimit.json" >"$tmp/table.md"
# The NICs' section (net_ratelimit_bench.sh) stays as it was.
nics=
[[ -f $RES/ratelimit.md ]] && nics=$(sed -n '/^## NICs/,$p' "$RES/ratelimit.md")
{
	echo "# Disk rate limits: achieved vs configured ($MODE: ${SECS} s x $REPS rounds, $(date -u +%F))"
	echo
	echo "devbench, libvmm's virtio-blk on the null engine, 4 KiB reads at QD 16 per queue;"
	echo "default bursts (one second).  Host: $(nproc) CPUs ($(uname -r)); shared machine, no KVM."
	echo
	cat "$tmp/table.md"
	[[ -z $nics ]] || printf '\n%s\n' "$nics"
} >"$RES/ratelimit.md"
cat "$RES/ratelimit.md"

if command -v gnuplot >/dev/null; then
	jq -r 'group_by([.kind, .configured])[] | select(.[0].kind == "bw" or .[0].kind == "ops") |
		[.[0].kind, .[0].configured, (map(.achieved) | add / length)] | @tsv' \
		"$RES/ratelimit.json" >"$tmp/pts.dat"
	awk '$1 == "bw" { print $2 / 1048576, $3 / 1048576 }' "$tmp/pts.dat" >"$tmp/bw.dat"
	awk '$1 == "ops" { print $2, $3 }' "$tmp/pts.dat" >"$tmp/ops.dat"
	gnuplot <<PLOT
set terminal pngcairo size 1000,450 noenhanced
set output "$RES/ratelimit.png"
set multiplot layout 1,2 title "Disk rate limits: achieved vs configured (devbench, 4 KiB, QD 16)"
set grid; set key left top
set xlabel "configured MiB/s"; set ylabel "achieved MiB/s"
plot [0:110][0:110] "$tmp/bw.dat" u 1:2 w lp pt 7 lw 2 t "achieved", x w l dt 2 t "configured", \
     x * 1.05 w l dt 3 lc rgb "gray" t "+-5%", x * 0.95 w l dt 3 lc rgb "gray" notitle
set xlabel "configured IOPS"; set ylabel "achieved IOPS"
plot [0:5500][0:5500] "$tmp/ops.dat" u 1:2 w lp pt 7 lw 2 t "achieved", x w l dt 2 t "configured", \
     x * 1.05 w l dt 3 lc rgb "gray" t "+-5%", x * 0.95 w l dt 3 lc rgb "gray" notitle
unset multiplot
PLOT
fi
