#!/bin/bash
# bench/oci_ops_bench.sh [--smoke|--quick|--full] BUILD_DIR
#
# The benchmark of issue 32 (containers users manage); writes to $BENCH_OUT
# (default bench/results): oci_ops.json (records), oci_ops.md (summary) and
# oci_ops.png.
#  - in one rig run (tests/e2e/oci-rig.sh -> bench/oci_ops_rig.sh): `podman
#    exec CTR true` and `podman pause` + `unpause` with minivmm-oci and with
#    runc on running containers, the runtimes alternated round by round;
#    then the runtimes' own exec/pause/resume without podman and conmon;
#  - then, in the same L1 (bench/api_rtt_rig.sh): minivmm's JSON control
#    socket, `info` and `stats` round trips and pause + resume
#    pairs on a 4-vCPU guest (bench/api_rtt).
# Rounds: --smoke 1 (2 execs, 20 requests), --quick 2 (3, 100), --full 3
# (5 execs, 200 requests).  Timings are reported, never asserted.  OCI_OPS_REUSE_LOG=
# oci_ops-run.log re-summarises an earlier run instead of taking it again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* ]] && { mode=$1; shift; }
build=$(cd "${1:?BUILD_DIR}" && pwd)
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
case $mode in
--smoke) rounds=1 execs=2 count=20 ;;
--quick) rounds=2 execs=3 count=100 ;;
*) rounds=3 execs=5 count=200 ;;
esac
for b in minivmm minivmm-oci bench/api_rtt; do
	[[ -x $build/$b ]] || bench_die "$build/$b is missing (build the default targets)"
done
records=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$records" "$tmp"' EXIT
log=$out/oci_ops-run.log
rc=0
if [[ -n ${OCI_OPS_REUSE_LOG:-} ]]; then
	[[ $OCI_OPS_REUSE_LOG -ef $log ]] || cp "$OCI_OPS_REUSE_LOG" "$log"
else
	: >"$log"
	# The default guest's initramfs for the API part (the kernel is the
	# rig's, OCI_KERNEL); one L1 boot for both parts.
	mapfile -t guest < <("$here/../tests/rig/mkguest.sh")
	set +e
	E2E_RIG_TIMEOUT=$((900 + rounds * 300)) "$here/../tests/e2e/oci-rig.sh" "$build" \
		"$here/oci_ops_rig.sh" "$rounds" "$execs" "$build/minivmm" "$build/bench/api_rtt" \
		"${guest[1]}" "$count" >>"$log" 2>&1 || rc=$?
	set -e
fi
grep -v '^BENCH-JSON ' "$log" | tail -20 >&2
bench_records "$log" >>"$records"
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
bench_stamp "$records" "$mode" "$date" "$out/oci_ops.json"

J() { jq -r "$BENCH_JQ_DEFS $1" "$out/oci_ops.json"; }
# Medians per operation: minivmm-oci, runc.
J '[.[] | select(.bench == "oci_ops")] | group_by(.op)[] |
	[.[0].op, (map(select(.runtime == "minivmm-oci") | .wall_ms) | median | r(1)),
	 (map(select(.runtime == "runc") | .wall_ms) | median | r(1))] | @tsv' >"$tmp/ops.dat"
if [[ -s $tmp/ops.dat ]] && command -v gnuplot >/dev/null; then
	gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output "$out/oci_ops.png"
set title "exec / pause on a running container, minivmm-oci vs runc (rig, median ms)"
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set datafile separator "\t"; set ylabel "ms"; set grid ytics; set key right top
set xtics rotate by -25 offset -1,0; set bmargin 6
plot "$tmp/ops.dat" u 2:xtic(1) t "minivmm-oci", "" u 3 t "runc"
GP
fi
{
	echo "# minivmm-oci exec / pause and minivmm's API socket ($mode, $date, $(git -C "$here" rev-parse --short HEAD 2>/dev/null))"
	echo
	echo "In the rig's L1 (nested KVM under TCG): absolute times mean little, compare"
	echo "side by side.  Medians over $rounds rounds (exec: $execs per round)."
	echo
	echo "| operation | minivmm-oci ms | runc ms | ratio | samples |"
	echo "|---|---|---|---|---|"
	J '[.[] | select(.bench == "oci_ops")] | group_by(.op)[] |
		(map(select(.runtime == "minivmm-oci") | .wall_ms) | median) as $m |
		(map(select(.runtime == "runc") | .wall_ms) | median) as $c |
		"| \(.[0].op) | \($m | r(1)) | \(if $c then ($c | r(1)) else "-" end) | \(if $m and $c then ($m / $c | r(2)) else "-" end) | \(length) |"'
	echo
	echo "minivmm --api-socket round trips (api_rtt: one connection per request,"
	echo "$count per round; median over the rounds of each round's p50 / p99, us):"
	echo
	echo "| request | p50 us | p99 us | failures |"
	echo "|---|---|---|---|"
	J '[.[] | select(.bench == "api_rtt")] | group_by(.request)[] |
		"| \(.[0].request) | \(map(.p50_us) | median | r(1)) | \(map(.p99_us) | median | r(1)) | \(map(.failures) | add) |"'
} >"$out/oci_ops.md"
cat "$out/oci_ops.md" >&2
[[ $rc -eq 0 ]] || bench_log "a rig part exited $rc"
exit $rc
