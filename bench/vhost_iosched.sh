#!/bin/bash
# bench/vhost_iosched.sh [ROUNDS|--report] [BUILD_DIR]
#
# minivmm-blkd's I/O-thread scheduling policy under a QEMU guest, in the
# rig's one-CPU L1 where vCPUs and I/O threads share the CPU: blkd
# (--io-sched batch, the default), blkdn (--io-sched normal), blkda
# (--io-sched adaptive) and
# qemu-storage-daemon side by side, QD 1 and 32, 3 s phases
# (bench/vhost_guest_bench.sh --quick; BENCH_QDS="1" runs QD 1 only),
# ROUNDS (default 3) alternated rounds, each in an L1 of its own.  Writes to $BENCH_OUT (default
# bench/results): vhost-iosched-run.log (the rig's output) and
# vhost_iosched.md (medians per back end, disk, QD; then the paired
# figure: the median of the per-round ratios to qsd at QD 1, to batch at
# QD 32).  Timings are
# reported, never asserted.  BUILD_DIR (default build-bench) must hold
# minivmm-blkd (bench/vhost_bench.sh builds it).  --report: only remake
# the table from the log.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
rounds=${1:-3}
build=${2:-${BENCH_BUILD_DIR:-build-bench}}
out=${BENCH_OUT:-bench/results}
log=$out/vhost-iosched-run.log
[[ $rounds == --report ]] && rounds=0
((rounds == 0)) || {
	[[ -x $build/minivmm-blkd ]] || bench_die "$build/minivmm-blkd missing"
	mkdir -p "$out"
	tests/rig/mkguest.sh --quiet
	mapfile -t guest < <(tests/rig/mkguest.sh)
	tools=$(tests/rig/mktools.sh)
	: >"$log"
}
for ((r = 1; r <= rounds; r++)); do
	bench_rig_run_marker "round=$r" >>"$log"
	BENCH_VHOST_BACKENDS="${BENCH_VHOST_BACKENDS:-blkd blkdn blkda qsd}" BENCH_QDS="${BENCH_QDS:-1 32}" \
		RIG_PASS_ENV=BENCH_VHOST_BACKENDS,BENCH_QDS \
		tests/rig/rig-run --timeout 2400 --stall-retries "${RIG_STALL_RETRIES:-1}" -- \
		bench/vhost_guest_bench.sh --quick "$build" "${guest[0]}" "${guest[1]}" "$tools" "$r" \
		>>"$log" 2>&1 || bench_log "round $r: the rig run exited $? (results so far are kept)"
done
bench_records "$log" | jq -s -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "vhost_guest_io")] | group_by([.backend, .disk, .qd, .round]) | map(last) as $r |
	def med(b; d; q; f): [$r[] | select(.backend == b and .disk == d and .qd == q) | f] | median;
	def n(b; d; q): [$r[] | select(.backend == b and .disk == d and .qd == q)] | length;
	"## minivmm-blkd I/O-thread policy vs qemu-storage-daemon (vhost-user-blk, QEMU guest, one-CPU rig)\n",
	"blkd: --io-sched batch (default); blkdn: --io-sched normal; blkda: --io-sched adaptive.  Medians of the rounds (n); fio 4k randread, 3 s phases.\n",
	"| disk | QD | back end | n | IOPS | lat us | KVM exits/req | back-end CPU us/req | blkd (doorbells+irqs)/req |",
	"|---|---|---|---|---|---|---|---|---|",
	(["qn", "q1"][] as $d | [1, 32][] as $q | ["blkd", "blkdn", "blkda", "qsd"][] as $b | select(n($b; $d; $q) > 0) |
	 "| \($d) | \($q) | \($b) | \(n($b; $d; $q)) | \(med($b; $d; $q; .iops) | r(0)) | \(med($b; $d; $q; .lat_us) | r(0)) | \(med($b; $d; $q; .kvm_exits_per_request) | r(2)) | \(med($b; $d; $q; .backend_cpu_us_per_request) | r(0)) | \(med($b; $d; $q; .blkd_notifications_per_request) | r(3) // "-") |"),
	"",
	"Paired per round (each round one L1 with every back end, so a slow L1 slows all of them): the median of the per-round ratios, their range and count.  QD 1: latency / qsd'"'"'s (the target: <= 1.0); QD 32: IOPS / batch'"'"'s (the target: >= 0.95).\n",
	"| disk | QD | back end | ratio | per-round median | range | rounds |",
	"|---|---|---|---|---|---|---|",
	(["qn", "q1"][] as $d | [1, 32][] as $q | ["blkd", "blkdn", "blkda"][] as $b |
	 (if $q == 1 then ["qsd", "lat_us", "latency / qsd"] else ["blkd", "iops", "IOPS / batch"] end) as [$base, $f, $what] |
	 select($b != $base) |
	 [$r[] | select(.backend == $b and .disk == $d and .qd == $q) as $x |
	  ($r[] | select(.backend == $base and .disk == $d and .qd == $q and .round == $x.round)) as $y |
	  select($y[$f] > 0) | $x[$f] / $y[$f]] as $p | select($p | length > 0) |
	 "| \($d) | \($q) | \($b) | \($what) | \($p | median | r(2)) | \($p | min | r(2))-\($p | max | r(2)) | \($p | length) |")
' >"$out/vhost_iosched.md"
cat "$out/vhost_iosched.md" >&2
