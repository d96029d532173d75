#!/bin/bash
# bench/arm64_bench.sh [--quick|--full] [--rounds "R..."] [--report] [MINIVMM]
#
# minivmm on arm64 KVM, in the arm64 nested rig (tests/rig/rig-run --arch
# arm64: an aarch64 L1 under qemu-system-aarch64 TCG with one vCPU, KVM
# inside): boot time launch -> MINIVMM-GUEST-UP at 1, 2, 4, 8 and 16 vCPUs,
# and in-guest fio 4k random reads on a 4-vCPU guest, num-queues = vCPUs
# ("qn") vs num-queues=1 ("q1") at QD 1 and QD 32, with the counts the x86
# guest bench reports: KVM exits per request (debugfs, per fio phase) and
# notifications per request (minivmm's --stats-json: doorbells + interrupts,
# and kicks + interrupts as summary.md has them on x86).  Each round is one
# L1 (bench/arm64_guest_bench.sh inside; see it for the method), its fio
# phases alternate the disks (qn q1 qn q1, the first disk and the QD order
# flipping with the round).  Writes to $BENCH_OUT (default bench/results):
#   arm64.json     the records (+ date, run mode, git commit)
#   arm64.md       medians per vCPU count / disk and QD, ratios
#   arm64.png      boot time vs vCPUs, IOPS qn vs q1
#   arm64-run.log  the rig's raw output
#   --quick  1 round: 1, 4 vCPUs; QD 32; 3 s phases (checks the script)
#   --full   5 rounds (default; BENCH_A64_ROUNDS), 5 s phases
#   --rounds "R..."  with --full: run only these rounds, appended to the
#            existing arm64-run.log (e.g. one whose L1 stalled twice); the
#            report keeps the last record of each round
#   --report remake arm64.json/.md/.png from arm64-run.log, no run
# MINIVMM: a static aarch64 minivmm (default $BENCH_A64_MINIVMM, else
# build-arm64/minivmm of scripts/build-arm64.sh), copied to a private
# /tmp directory for the run.  Timings are reported, never asserted; under TCG
# they are not hardware figures: the ratios and the counts are what carries
# over.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
mode=--full
vmm=${BENCH_A64_MINIVMM:-build-arm64/minivmm}
only_rounds='' report=0 copy=
while (($#)); do
	case "$1" in
	--quick | --full) mode=$1 ;;
	--rounds) only_rounds=${2:?--rounds needs a list}; shift ;;
	--report) report=1 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
	-*) bench_die "unknown option $1" ;;
	*) vmm=$1 ;;
	esac
	shift
done
out=${BENCH_OUT:-bench/results}
mkdir -p "$out"
log=$out/arm64-run.log
command -v jq >/dev/null || bench_die "jq is missing"

run() {
	[[ -x $vmm ]] || bench_die "no minivmm at $vmm (build it: scripts/build-arm64.sh, or pass its path)"
	file -b "$(readlink -f "$vmm")" | grep -q 'ARM aarch64.*statically linked' ||
		bench_die "$vmm is not a static aarch64 executable"
	# A private copy (the rig sees the host's /tmp): a rebuild of the
	# build tree during the rounds must not change or remove what they run.
	copy=$(mktemp -d /tmp/arm64-bench.XXXXXX)
	trap 'rm -rf "$copy"' EXIT
	cp "$vmm" "$copy/minivmm"
	vmm_src=$(readlink -f "$vmm")
	vmm=$copy/minivmm
	export RIG_ARCH=arm64
	mapfile -t guest < <(tests/rig/mkguest.sh)
	local tools rounds=() r rc
	tools=$(tests/rig/mktools.sh)
	local -a env=()
	if [[ $mode == --quick ]]; then
		rounds=(1)
		env=(BENCH_A64_COUNTS="1 4" BENCH_A64_QDS=32 BENCH_RUNTIME=3)
	else
		read -r -a rounds <<<"$(seq -s ' ' 1 "${BENCH_A64_ROUNDS:-5}")"
		env=(BENCH_RUNTIME="${BENCH_RUNTIME:-5}")
	fi
	if [[ -n $only_rounds ]]; then
		[[ $mode == --full ]] || bench_die "--rounds goes with --full"
		read -r -a rounds <<<"$only_rounds"
	else
		: >"$log"
	fi
	bench_log "arm64 ($mode, rounds ${rounds[*]}) through the arm64 rig; minivmm $vmm"
	# The host and the binary measured (the rig's records come from L1).
	bench_emit "$(jq -cn --arg vmm "$vmm_src" --arg sha "$(sha256sum <"$vmm" | cut -c1-16)" \
		--arg host "$(uname -sr)" --arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
		--argjson cpus "$(nproc)" --arg qemu "$(qemu-system-aarch64 --version | head -1)" \
		--arg rounds "${rounds[*]}" \
		'{bench:"a64_host", minivmm:$vmm, minivmm_sha256_16:$sha, host_kernel:$host, host_cpu:$cpu,
		  host_cpus:$cpus, qemu_version:$qemu, rounds_run:$rounds}')" >>"$log"
	for r in "${rounds[@]}"; do
		bench_rig_run_marker "round=$r" >>"$log"
		rc=0
		env "${env[@]}" RIG_PASS_ENV="BENCH_A64_COUNTS BENCH_A64_QDS BENCH_RUNTIME BENCH_A64_IO_SMP" \
			tests/rig/rig-run --arch arm64 --timeout 900 --stall-retries "${RIG_STALL_RETRIES:-1}" -- \
			bench/arm64_guest_bench.sh "$vmm" "${guest[0]}" "${guest[1]}" "$tools" "$r" \
			>>"$log" 2>&1 || rc=$?
		((rc == 0)) || bench_log "round $r: the rig run exited $rc (results so far are kept)"
		grep -E '^rig: (L1 boot|L1 stalled|note)' "$log" | tail -n 2 >&2 || true
	done
}

if ((report)); then
	[[ -s $log ]] || bench_die "no $log to report on"
	m=$(jq -r '.[0].run_mode // "full"' "$out/arm64.json" 2>/dev/null) || m=''
	mode=--${m:-full}
else
	run
fi

# Records: the last run of each round counts (a round run again with
# --rounds supersedes the earlier one); minivmm's per-boot --stats-json
# becomes one disk-counter record per data disk.
bench_records "$log" |
	jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg m "${mode#--}" \
		--arg c "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" '
	def per(a; b): if (b // 0) > 0 and a != null then a / b else null end;
	def u64: if . != null and . >= 9.2e18 then null else . end;
	(map(.round) | unique) as $rounds |
	([$rounds[] as $r | [.[] | select(.round == $r)] |
	   # the records after the last machine record of the round: its last run
	   (to_entries | map(select(.value.bench == "a64_machine")) | last.key // 0) as $k |
	   .[$k:][]]) as $recs |
	[$recs[] |
	 if .bench == "a64_guest_io" then
	   . + {kvm_exits_per_request: per(.kvm_exits; .requests),
	        guest_interrupts_per_request: per(.guest_interrupts; .requests)}
	 elif .bench == "a64_boot" then
	   . + {vmm_stats_kvm: (.vmm_stats_kvm | if . == null then null else with_entries(.value |= u64) end)}
	 elif .bench == "a64_vmm_stats" then
	   . as $s | ($s.stats.disks // [])[] | select(.id < 2) |
	   (.total.requests | add) as $req |
	   {bench:"a64_disk_counters", round:$s.round, boot_qd:$s.boot_qd, smp:$s.smp, jobs:$s.jobs,
	    disk:$s.disk_names[.id], queues:.num_queues, requests:$req, doorbells, kicks:.total.kicks,
	    interrupts:.total.interrupts, suppressed:.total.suppressed,
	    doorbells_per_request: per(.doorbells; $req), kicks_per_request: per(.total.kicks; $req),
	    interrupts_per_request: per(.total.interrupts; $req),
	    notifications_per_request: per(.doorbells + .total.interrupts; $req),
	    kicks_interrupts_per_request: per(.total.kicks + .total.interrupts; $req),
	    vm_kvm_exits: ($s.stats.kvm.exits // null | u64),
	    wiring_commits, wiring_ioctls, wiring_ns}
	 else . end] |
	 map(. + {date:$date, run_mode:$m, git_commit:$c})' >"$out/arm64.json"

# ------------------------------------------------------------------ report
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$copy"' EXIT
J() { jq -r "$BENCH_JQ_DEFS $1" "$out/arm64.json"; }
J '[.[] | select(.bench == "a64_boot")] | group_by(.smp)[] |
	[.[0].smp, (map(.boot_to_init_ms) | median), (map(.boot_to_init_ms) | min), (map(.boot_to_init_ms) | max)] | @tsv' >"$tmp/boot.dat"
# shellcheck disable=SC2016 # jq programs
J '[.[] | select(.bench == "a64_guest_io")] as $r | [1, 32][] as $q |
	def m(d): [$r[] | select(.qd == $q and .disk == d) | .iops] | median // "NaN";
	select([$r[] | select(.qd == $q)] | length > 0) |
	["QD \($q)", m("qn"), m("q1")] | @tsv' >"$tmp/io.dat"
if [[ -s $tmp/boot.dat || -s $tmp/io.dat ]]; then
	gnuplot <<EOF
set terminal pngcairo size 1100,480 noenhanced
set output "$out/arm64.png"
set multiplot layout 1,2 title "minivmm on arm64 KVM, nested rig (aarch64 L1 under QEMU TCG, 1 CPU): medians of the rounds"
set title "boot: launch -> MINIVMM-GUEST-UP"
set xlabel "vCPUs"; set ylabel "ms"; set logscale x 2; set grid; set key left top; set yrange [0:*]
plot "$tmp/boot.dat" u 1:2:3:4 w yerrorlines lw 2 t "median (bars: min-max)"
unset logscale x
set title "fio 4k randread, 4 vCPUs (QD 1: 1 job; QD 32: 4 jobs)"
set xlabel ""; set ylabel "IOPS"; set logscale y; set yrange [*:*]
set datafile separator "\t"; set style data histograms; set style histogram clustered gap 1
set style fill solid 0.7 border -1; set boxwidth 0.9; set key left top
plot "$tmp/io.dat" u 2:xtic(1) t "num-queues = vCPUs (qn)", "" u 3 t "num-queues = 1 (q1)"
unset multiplot
EOF
fi

# shellcheck disable=SC2016 # a jq program
J '
	def per(a; b): if (b // 0) > 0 and a != null then a / b else null end;
	. as $all |
	([.[] | select(.bench == "a64_machine")][0] // {}) as $m |
	[.[] | select(.bench == "a64_boot")] as $b |
	[.[] | select(.bench == "a64_guest_io")] as $r |
	[.[] | select(.bench == "a64_disk_counters")] as $c |
	[.[] | select(.bench == "a64_error")] as $e |
	def io(d; q; f): [$r[] | select(.disk == d and .qd == q) | f] | median;
	def nio(d; q): [$r[] | select(.disk == d and .qd == q)] | length;
	def cnt(d; q; f): [$c[] | select(.disk == d and .boot_qd == q) | f] | median;
	def ratio(a; b): if a != null and b != null and b > 0 then (a / b | r(2)) else "-" end;
	def v(x): if x == null then "-" else x end;
	"# minivmm on arm64: boot time and guest I/O (bench/arm64_bench.sh, \(.[0].date // "?"), run mode \(.[0].run_mode // "?"), commit \(.[0].git_commit // "?"))\n",
	"In the arm64 nested-KVM rig: an aarch64 L1 (Linux \($m.kvm_host_kernel // "?"), \($m.kvm_host_cpus // "?") vCPU, \((($m.kvm_host_mem_kib // 0) / 1024) | floor) MiB) under qemu-system-aarch64 TCG (`-cpu max,pauth-impdef=on`, `virtualization=on`, GICv3), KVM inside it, the L2 guest Debian'"'"'s arm64 kernel with the busybox initramfs of tests/rig/mkguest.sh.  **Not hardware figures**: every L2 vCPU, minivmm'"'"'s I/O threads and L1 itself share one emulated CPU, so absolute times are TCG'"'"'s; ratios and counts are what carries over.  \($all | map(select(.bench == "a64_machine") | .round) | unique | length) rounds, each an L1 of its own; medians over rounds (n = samples).  Records: arm64.json; raw output: arm64-run.log.\n",
	(if ($e | length) > 0 then "Failed boots: \($e | map("round \(.round) \(.what) (exit \(.exit_status), payload \(.payload_exit))") | join(", ")).\n" else empty end),
	"## Boot: launch -> MINIVMM-GUEST-UP\n",
	"One data disk with the default queue count (one per vCPU), 512 MiB; \"exit\" is minivmm'"'"'s exit after the guest'"'"'s `reboot -f` (PSCI SYSTEM_RESET); KVM exits of the whole run from minivmm --stats-json.\n",
	"| vCPUs | n | boot to init ms (median) | min - max | launch to exit ms | KVM exits per boot | vs 1 vCPU |",
	"|---|---|---|---|---|---|---|",
	(([$b[] | select(.smp == 1) | .boot_to_init_ms] | median) as $one |
	 $b | group_by(.smp)[] |
	 "| \(.[0].smp) | \(length) | \(map(.boot_to_init_ms) | median | r(0)) | \(map(.boot_to_init_ms) | min | r(0)) - \(map(.boot_to_init_ms) | max | r(0)) | \(map(.launch_to_exit_ms) | median | r(0)) | \(map(.vmm_stats_kvm.exits) | median | r(0)) | \(ratio(map(.boot_to_init_ms) | median; $one)) |"),
	"",
	"## Guest I/O: num-queues = vCPUs (qn) vs 1 queue (q1)\n",
	"4 vCPUs, 512 MiB; fio 4k randread, io_uring, O_DIRECT, \([$r[0].runtime_s // "?"][0]) s phases, QD 1 = 1 job at depth 1, QD 32 = 4 jobs (one per vCPU, pinned) at depth 32 each; sparse raw images with direct=on.  Per phase: KVM exits from debugfs (L1'"'"'s /sys/kernel/debug/kvm/PID-FD/exits, summed over vCPUs) and the guest'"'"'s request-vector interrupts, per request the block layer completed.  Per boot (one per QD, both disks, every phase): minivmm'"'"'s --stats-json counters per disk: doorbells (notify writes the guest made), kicks (I/O-thread wake-ups serving them), interrupts sent.\n",
	"| QD | disk | queues | n | IOPS | mean lat us | KVM exits/req | KVM exits/s | MMIO exits (kernel, ioeventfd)/req | WFI exits/req | guest irqs/req | doorbells/req | interrupts/req | (doorbells + interrupts)/req | (kicks + interrupts)/req |",
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
	([1, 32][] as $q | ["qn", "q1"][] as $d | select(nio($d; $q) > 0) |
	 "| \($q) | \($d) | \([$r[] | select(.disk == $d)][0].queues) | \(nio($d; $q)) | \(io($d; $q; .iops) | r(0)) | \(io($d; $q; .lat_us) | r(0)) | \(io($d; $q; .kvm_exits_per_request) | r(3)) | \(io($d; $q; per(.kvm_exits; .runtime_s)) | r(0)) | \(io($d; $q; per(.kvm_mmio_exit_kernel; .requests)) | r(3)) | \(io($d; $q; per(.kvm_wfi_exit_stat; .requests)) | r(3)) | \(io($d; $q; .guest_interrupts_per_request) | r(3)) | \(v(cnt($d; $q; .doorbells_per_request) | r(3))) | \(v(cnt($d; $q; .interrupts_per_request) | r(3))) | \(v(cnt($d; $q; .notifications_per_request) | r(3))) | \(v(cnt($d; $q; .kicks_interrupts_per_request) | r(3))) |"),
	"",
	"| QD | IOPS qn / q1 | latency qn / q1 | KVM exits/req qn / q1 |",
	"|---|---|---|---|",
	([1, 32][] as $q | select(nio("qn"; $q) > 0 and nio("q1"; $q) > 0) |
	 "| \($q) | \(ratio(io("qn"; $q; .iops); io("q1"; $q; .iops))) | \(ratio(io("qn"; $q; .lat_us); io("q1"; $q; .lat_us))) | \(ratio(io("qn"; $q; .kvm_exits_per_request); io("q1"; $q; .kvm_exits_per_request))) |"),
	"",
	"Per round (IOPS, QD 32 / QD 1):\n",
	"| round | qn QD 32 | q1 QD 32 | qn QD 1 | q1 QD 1 |",
	"|---|---|---|---|---|",
	($r | map(.round) | unique[] as $k |
	 def rr(d; q): [$r[] | select(.round == $k and .disk == d and .qd == q) | .iops | tostring] | join(", ");
	 "| \($k) | \(rr("qn"; 32)) | \(rr("q1"; 32)) | \(rr("qn"; 1)) | \(rr("q1"; 1)) |"),
	"",
	"![arm64](arm64.png)"
' >"$out/arm64.md"
grep -q 'jq: error' "$out/arm64.md" && bench_die "report failed"
bench_log "wrote $out/arm64.json, $out/arm64.md, $out/arm64.png"
