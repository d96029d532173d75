#!/bin/bash
# bench/start_bench.sh [--rounds R] [--queues "1 8 32 128 384"]
#                      [--baseline BIN [--baseline-name NAME]]
#
# What a guest's DRIVER_OK and reset hold a vCPU for in the device start
# and stop, one queue per I/O thread, without KVM (bench/start_bench.c:
# the real transport, device and I/O threads on the unit tests' fake KVM;
# null engine, idle queues).  KVM-free and CPU-bound: it runs on this
# host, not in the rig, and scales with the host's cores (the queues'
# attaches run on their I/O threads at once).  --baseline BIN: another
# build's start_bench, alternated with this build's round by round, so both
# see the same machine; the table then gives the ratios (NAME, say the
# commit it was built from, labels it there).  For a commit older than
# start_bench itself, copy bench/start_bench.c and start_bench.cmake into
# a worktree of it (its internal APIs are older than the bench) and build
# the start_bench target there.
# BENCH_OUT (default bench/results) gets start_bench.json, start_bench.md
# and start_bench.png.  Timings are reported, never asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
root=$(cd "$here/.." && pwd)

rounds=9 queues="1 8 32 128 384" baseline='' baseline_name=''
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--queues) queues=$2; shift 2 ;;
	--baseline) baseline=$2; shift 2 ;;
	--baseline-name) baseline_name=$2; shift 2 ;;
	*) bench_die "usage: $0 [--rounds R] [--queues \"N ...\"] [--baseline BIN [--baseline-name NAME]]" ;;
	esac
done
bin=${BENCH_BUILD_DIR:-$root/build}/bench/start_bench
[[ -x $bin ]] || bench_die "no $bin (build first)"
[[ -z $baseline || -x $baseline ]] || bench_die "--baseline: no $baseline"
baseline_name=${baseline_name:-$baseline}
command -v jq >/dev/null || bench_die "jq is needed"
out=${BENCH_OUT:-$root/bench/results}
mkdir -p "$out"
qargs=()
for q in $queues; do qargs+=(--queues "$q"); done
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/all.json"
for ((r = 1; r <= rounds; r++)); do
	builds=(this)
	[[ -n $baseline ]] && builds+=(baseline)
	# Alternate which build goes first: drift hits both alike.
	((r % 2 == 0)) && [[ -n $baseline ]] && builds=(baseline this)
	for b in "${builds[@]}"; do
		exe=$bin
		[[ $b == baseline ]] && exe=$baseline
		if ! "$exe" --rounds 1 "${qargs[@]}" >"$tmp/run.json" 2>"$tmp/run.err"; then
			cat "$tmp/run.err" >&2
			bench_die "$b build ($exe) failed in round $r"
		fi
		jq -c --arg b "$b" --arg rev "$rev" --argjson r "$r" \
			--argjson cpus "$(nproc)" --arg date "$(date -u +%F)" \
			'.build = $b | .round = $r | .rev = (if $b == "this" then $rev else null end) |
			 .host_cpus = $cpus | .date = $date' "$tmp/run.json" >>"$tmp/all.json"
	done
	bench_log "round $r of $rounds"
done
jq -s . "$tmp/all.json" >"$out/start_bench.json"

# Medians per build and queue count (ms), and the ratios this / baseline
# of the unrounded medians ("NaN" where there is no baseline).
jq -r '
	def med: if length == 0 then null else sort | .[(length - 1) / 2 | floor] end;
	def ms: if . == null then "NaN" else . / 1e6 * 1000 | round / 1000 end;
	def ratio(a; b): if a == null or b == null or b == 0 then "NaN"
		else a / b * 100 | round / 100 end;
	group_by(.queues) | map(
		(map(select(.build == "this"))) as $t |
		(map(select(.build == "baseline"))) as $b |
		($t | map(.driver_ok_ns) | med) as $tu | ($t | map(.reset_ns) | med) as $td |
		($b | map(.driver_ok_ns) | med) as $bu | ($b | map(.reset_ns) | med) as $bd |
		[.[0].queues, ($tu | ms), ($td | ms), ($bu | ms), ($bd | ms),
		 ratio($tu; $bu), ratio($td; $bd)]) |
	.[] | @tsv' "$out/start_bench.json" >"$tmp/med.dat"

{
	echo "# start_bench: DRIVER_OK and reset, one queue per I/O thread (fake KVM)"
	echo
	echo "$(date -u +%F), $(nproc) host CPUs, $rounds rounds, build $rev$([[ -n $baseline ]] && echo ", baseline $baseline_name"); medians in ms."
	echo "The null engine serves the queues, which are idle at the reset; below ~0.5 ms (1 queue) the"
	echo "figures are mostly the run's noise (first-touch page faults, thread wake-ups)."
	echo
	if [[ -n $baseline ]]; then
		echo "| queues | DRIVER_OK | reset | baseline DRIVER_OK | baseline reset | DRIVER_OK this / baseline | reset this / baseline |"
		echo "|---|---|---|---|---|---|---|"
		awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$tmp/med.dat"
	else
		echo "| queues | DRIVER_OK | reset |"
		echo "|---|---|---|"
		awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$tmp/med.dat"
	fi
} >"$out/start_bench.md"
cat "$out/start_bench.md" >&2

if command -v gnuplot >/dev/null; then
	base_plot=
	[[ -n $baseline ]] && base_plot=", \"$tmp/med.dat\" u 1:4 w lp lw 2 dt 2 t \"baseline DRIVER_OK\", \"$tmp/med.dat\" u 1:5 w lp dt 3 t \"baseline reset\""
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output "$out/start_bench.png"
set title "Device start at DRIVER_OK and stop at reset, one queue per I/O thread ($(nproc) host CPUs, fake KVM), median"
set xlabel "queues = I/O threads"; set ylabel "ms"; set logscale xy; set grid; set key left top
plot "$tmp/med.dat" u 1:2 w lp lw 2 t "DRIVER_OK", "$tmp/med.dat" u 1:3 w lp t "reset"$base_plot
EOF
fi
