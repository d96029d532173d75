#!/bin/bash
# bench/vhost_bench.sh [--smoke|--quick|--full] [BUILD_DIR]
#
# minivmm-blkd vs qemu-storage-daemon as the vhost-user-blk back end of the
# same QEMU guest, side by side in one rig run (bench/vhost_guest_bench.sh
# inside tests/rig/rig-run): 4k random-read IOPS and latency at QD 1 and
# 32, num-queues 1 and = vCPUs; guest interrupts, KVM exits and back-end CPU
# per request; minivmm-blkd's own doorbells + interrupts per request.  Writes
# to $BENCH_OUT (default bench/results):
#   vhost.json       the records (+ date, run_mode, git commit)
#   vhost.md         medians per back end / disk / QD, ratios, the targets
#   vhost_iops.png   IOPS side by side
#   vhost-run.log    the rig's raw output
#   --smoke  one boot, minivmm-blkd at QD 32, 1 s phases (bench/smoke in CI:
#            the script and the counters, no comparison)
#   --quick  the same, 3 s phases
#   --full   5 alternated rounds, 5 s phases, one L1 each (default)
#   --rounds "R..."  with --full: run only these rounds, appended to the
#            existing vhost-run.log (e.g. one whose L1 stalled twice); the
#            report keeps the last record of each back end/disk/QD/round
#   --report remake vhost.json/.md/.png from vhost-run.log, no run
# Timings are reported, never asserted.  BUILD_DIR (default
# $BENCH_BUILD_DIR or build-bench) must hold minivmm-blkd (built here when
# BENCH_PREBUILT is not 1).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
mode=--full
build=${BENCH_BUILD_DIR:-build-bench}
only_rounds= report=0
while (($#)); do
	case "$1" in
	--smoke | --quick | --full) mode=$1 ;;
	--rounds) only_rounds=${2:?--rounds needs a list}; shift ;;
	--report) report=1 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
	-*) bench_die "unknown option $1" ;;
	*) build=$1 ;;
	esac
	shift
done
out=${BENCH_OUT:-bench/results}
mkdir -p "$out"
rc=0

# run: the rig runs, into $out/vhost-run.log.
run() {
	if [[ ${BENCH_PREBUILT:-0} != 1 ]]; then
		bench_log "building minivmm-blkd ($build)"
		cmake -S . -B "$build" -DVMM_BUILD_TESTS=OFF >/dev/null
		cmake --build "$build" -j"$(nproc)" --target minivmm-blkd >/dev/null
	fi
	[[ -x $build/minivmm-blkd ]] || bench_die "$build/minivmm-blkd missing"
	tests/rig/mkguest.sh --quiet
	mapfile -t guest < <(tests/rig/mkguest.sh)
	tools=$(tests/rig/mktools.sh)

	# About 5 minutes per boot in the rig on the loaded team machine.
	# --full runs each round in an L1 of its own (BENCH-RIG-RUN lines
	# separate them in the log): the rig's L1 stalls now and then, mostly
	# in QEMU L2 boots, and rig-run's retry of a stalled one then reruns
	# one round, not all five.
	local timeout=900 r arg rounds=(all)
	[[ $mode == --quick ]] && timeout=2700
	[[ $mode == --full ]] && timeout=2700 rounds=(1 2 3 4 5)
	if [[ -n $only_rounds ]]; then
		[[ $mode == --full ]] || bench_die "--rounds goes with --full"
		read -r -a rounds <<<"$only_rounds"
	else
		: >"$out/vhost-run.log"
	fi
	bench_log "vhost-user back ends ($mode, rounds ${rounds[*]}) through the rig"
	for r in "${rounds[@]}"; do
		arg=()
		[[ $r == all ]] || { arg=("$r"); bench_rig_run_marker "round=$r" >>"$out/vhost-run.log"; }
		tests/rig/rig-run --timeout "$timeout" --stall-retries "${RIG_STALL_RETRIES:-1}" -- \
			bench/vhost_guest_bench.sh "$mode" "$build" "${guest[0]}" "${guest[1]}" "$tools" \
			"${arg[@]}" >>"$out/vhost-run.log" 2>&1 || {
			rc=$?
			bench_log "round $r: the rig run exited $rc (results so far are kept)"
		}
	done
	grep -v '^BENCH-JSON ' "$out/vhost-run.log" | grep -E '^bench:|rig:' >&2 || true
}

if ((report)); then
	[[ -s $out/vhost-run.log ]] || bench_die "no $out/vhost-run.log to report on"
	mode=--$(jq -r '.[0].run_mode // "full"' "$out/vhost.json" 2>/dev/null || echo full)
else
	run
fi

# A round run again (--rounds) supersedes what an earlier, stalled run of it
# left: the last record of each back end, disk, QD and round counts.
bench_records "$out/vhost-run.log" |
	jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg m "${mode#--}" \
		--arg c "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		'(map(select(.bench == "vhost_guest_io")) | group_by([.backend, .disk, .qd, .round]) | map(last)) as $io |
		 [(.[] | select(.bench != "vhost_guest_io")), $io[]] |
		 map(. + {date:$date, run_mode:$m, git_commit:$c})' >"$out/vhost.json"

# Medians per back end, disk and QD; ratios blkd / qsd.
jq -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "vhost_guest_io")] as $r |
	([.[] | select(.bench == "vhost_machine")][0] // {}) as $m |
	def med(b; d; q; f): [$r[] | select(.backend == b and .disk == d and .qd == q) | f] | median;
	def n(b; d; q): [$r[] | select(.backend == b and .disk == d and .qd == q)] | length;
	"## minivmm-blkd vs qemu-storage-daemon (vhost-user-blk, QEMU guest)\n",
	"QEMU \($m.qemu_version // "?"), \($m.qsd_version // "no qsd"); guest \($m.guest_vcpus // "?") vCPUs in the nested-KVM rig (\($m.kvm_host_cpus // "?") L1 CPUs, \($m.kvm_host_cpu // "?")); run mode \(.[0].run_mode // "?"); medians of the rounds (n).\n",
	"| disk | QD | back end | n | IOPS | lat us | guest irq/req | KVM exits/req | back-end CPU us/req | blkd (doorbells+irqs)/req |",
	"|---|---|---|---|---|---|---|---|---|---|",
	(["q1", "qn"][] as $d | [1, 32][] as $q | ["blkd", "qsd"][] as $b |
	 select(n($b; $d; $q) > 0) |
	 "| \($d) | \($q) | \($b) | \(n($b; $d; $q)) | \(med($b; $d; $q; .iops) | r(0)) | \(med($b; $d; $q; .lat_us) | r(1)) | \(med($b; $d; $q; .guest_interrupts_per_request) | r(3)) | \(med($b; $d; $q; .kvm_exits_per_request) | r(3)) | \(med($b; $d; $q; .backend_cpu_us_per_request) | r(2)) | \(med($b; $d; $q; .blkd_notifications_per_request) | r(3) // "-") |"),
	"",
	"| disk | QD | IOPS blkd/qsd | latency blkd/qsd |",
	"|---|---|---|---|",
	(["q1", "qn"][] as $d | [1, 32][] as $q |
	 select(n("blkd"; $d; $q) > 0 and n("qsd"; $d; $q) > 0) |
	 "| \($d) | \($q) | \((med("blkd"; $d; $q; .iops) / med("qsd"; $d; $q; .iops)) | r(2)) | \((med("blkd"; $d; $q; .lat_us) / med("qsd"; $d; $q; .lat_us)) | r(2)) |"),
	"",
	"Targets (issue 11): IOPS blkd/qsd >= 1.5 at QD32 with num-queues = vCPUs (qn, QD 32);",
	"(kicks + interrupts)/request <= 0.1 at QD32 (last column, qn QD 32: the back end'\''s own doorbells, i.e. the guest'\''s kicks, and interrupts for that boot);",
	"QD1 latency no worse than qsd (latency ratio <= 1 at QD 1).",
	"",
	"Failed boots (each retried once; vhost-run.log has the guest console): \([.[] | select(.bench == "vhost_error")] | if length == 0 then "none" else map("\(.backend) qd\(.qd) round \(.round)") | join(", ") end)."
' "$out/vhost.json" >"$out/vhost.md"

# Plot: median IOPS per (disk, QD), the two back ends side by side.
dat=$(mktemp)
jq -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "vhost_guest_io")] as $r |
	def med(b; d; q): [$r[] | select(.backend == b and .disk == d and .qd == q) | .iops] | median // 0;
	(["q1", "qn"][] as $d | [1, 32][] as $q |
	 "\($d)-qd\($q) \(med("blkd"; $d; $q)) \(med("qsd"; $d; $q))")' "$out/vhost.json" >"$dat"
if command -v gnuplot >/dev/null && [[ -s $dat ]]; then
	gnuplot <<-EOF
		set terminal pngcairo size 800,450
		set output "$out/vhost_iops.png"
		set title "vhost-user-blk back ends under QEMU: guest 4k randread IOPS (medians)"
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.8 border -1
		set ylabel "IOPS"
		set yrange [0:*]
		set key top left
		plot "$dat" using 2:xtic(1) title "minivmm-blkd", "" using 3 title "qemu-storage-daemon"
	EOF
fi
rm -f "$dat"
cat "$out/vhost.md" >&2
exit "$rc"
