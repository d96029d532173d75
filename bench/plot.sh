#!/bin/bash
# bench/plot.sh RESULTS.json OUTDIR: PNG plots (gnuplot) and summary.md
# (medians over rounds, ratios, the targets) from bench/run.sh's records.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
res=${1:?RESULTS.json}
out=${2:?OUTDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
J() { jq -r "$BENCH_JQ_DEFS $1" "$res"; }

# ------------------------------------------------------------------ data
# wiring: N, batched ms, pervector ms, batched ioctls, pervector ioctls,
# batched SET_GSI_ROUTING, pervector SET_GSI_ROUTING, routing ms (2),
# teardown ms (2), driverok ms (DRIVER_OK with the ioeventfds placed
# before), driverok placement ms (medians over rounds)
J '[.[] | select(.bench == "wiring" and .devices == 1)] | group_by(.n)[] |
	def m(mode; f): map(select(.mode == mode) | f) | median;
	[.[0].n, m("batched"; .setup_ns / 1e6), m("pervector"; .setup_ns / 1e6),
	 m("batched"; .setup_ioctls), m("pervector"; .setup_ioctls),
	 m("batched"; .setup_set_gsi_routing), m("pervector"; .setup_set_gsi_routing),
	 m("batched"; .setup_routing_ns / 1e6), m("pervector"; .setup_routing_ns / 1e6),
	 m("batched"; .teardown_ns / 1e6), m("pervector"; .teardown_ns / 1e6),
	 m("driverok"; .setup_ns / 1e6), m("driverok"; .placement_ns / 1e6)] |
	map(. // "NaN") | @tsv' >"$tmp/wiring.dat"

if [[ -s $tmp/wiring.dat ]]; then
	gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output "$out/wiring_time.png"
set title "Wiring N queues (N MSI routes + N irqfds + N ioeventfds), median setup time"
set xlabel "queues (N)"; set ylabel "ms"; set logscale xy; set grid; set key left top
plot "$tmp/wiring.dat" u 1:2 w lp lw 2 t "libvmm batched (1 transaction)", \
     "$tmp/wiring.dat" u 1:3 w lp lw 2 t "per vector (full table resent, kvmtool/CH/Firecracker way)", \
     "$tmp/wiring.dat" u 1:8 w lp dt 2 t "batched: inside KVM_SET_GSI_ROUTING", \
     "$tmp/wiring.dat" u 1:9 w lp dt 2 t "per vector: inside KVM_SET_GSI_ROUTING", \
     "$tmp/wiring.dat" u 1:12 w lp lw 2 t "libvmm DRIVER_OK (routes + irqfds; ioeventfds placed before)", \
     "$tmp/wiring.dat" u 1:13 w lp dt 3 t "libvmm ioeventfd placement (at start, before the guest runs)"
set output "$out/wiring_ioctls.png"
set title "Wiring N queues: KVM ioctls"
set ylabel "ioctls"
plot "$tmp/wiring.dat" u 1:4 w lp lw 2 t "batched: all ioctls", \
     "$tmp/wiring.dat" u 1:5 w lp lw 2 t "per vector: all ioctls", \
     "$tmp/wiring.dat" u 1:6 w lp t "batched: KVM_SET_GSI_ROUTING", \
     "$tmp/wiring.dat" u 1:7 w lp t "per vector: KVM_SET_GSI_ROUTING"
EOF
fi

# guest I/O: per (vmm, disk): median IOPS
J '[.[] | select(.bench == "guest_io")] | group_by(.vmm + "/" + .disk)[] |
	[.[0].vmm + "/" + .[0].disk, (map(.iops) | median),
	 (map(.guest_interrupts_per_request) | median)] | @tsv' >"$tmp/io.dat"
# notifications per request (minivmm counters)
J '[.[] | select(.bench == "disk_counters")] | group_by(.disk)[] |
	[.[0].disk + (if .[0].event_idx then " (EVENT_IDX)" else " (no EVENT_IDX)" end),
	 (map(.kicks_per_request) | median), (map(.interrupts_per_request) | median)] | @tsv' >"$tmp/notify.dat"
if [[ -s $tmp/io.dat ]]; then
	gnuplot <<EOF
set terminal pngcairo size 900,520 noenhanced
set output "$out/guest_iops.png"
set title "In-guest 4 KiB random read (fio io_uring, O_DIRECT, one job per vCPU, QD 32), median IOPS"
set datafile separator "\t"; set style data histograms; set style fill solid 0.7 border -1; set boxwidth 0.8
set ylabel "IOPS"; set grid ytics; set yrange [0:*]; set xtics rotate by -20
plot "$tmp/io.dat" u 2:xtic(1) t "IOPS"
EOF
fi
if [[ -s $tmp/notify.dat ]]; then
	gnuplot <<EOF
set terminal pngcairo size 900,520 noenhanced
set output "$out/guest_notifications.png"
set title "minivmm: notifications per request (median over boots)"
set datafile separator "\t"; set style data histograms; set style histogram rowstacked; set style fill solid 0.7 border -1
set boxwidth 0.6; set ylabel "per request"; set grid ytics; set yrange [0:*]; set key below
plot "$tmp/notify.dat" u 2:xtic(1) t "kicks (driver -> device)", "" u 3 t "interrupts (device -> driver)"
EOF
fi

# ------------------------------------------------------------------ summary
J '
def f(n): if . == null then "n/a" else (r(n) | tostring) end;
def pct(x): if x == null then "n/a" else (x | r(2) | tostring) + "x" end;
def ratio(a; b): if a == null or b == null or b == 0 then null else a / b end;
def med(sel; g): [.[] | select(sel) | g] | median;
. as $all |
(.[0] // {}) as $first |
# ---- wiring at N = 384
med(.bench == "wiring" and .shape == "n384" and .mode == "batched"; .setup_ns / 1e6) as $wb |
med(.bench == "wiring" and .shape == "n384" and .mode == "pervector"; .setup_ns / 1e6) as $wp |
med(.bench == "wiring" and .shape == "n384" and .mode == "batched"; .setup_routing_ns / 1e6) as $wrb |
med(.bench == "wiring" and .shape == "n384" and .mode == "pervector"; .setup_routing_ns / 1e6) as $wrp |
med(.bench == "wiring" and .shape == "n384" and .mode == "driverok"; .setup_ns / 1e6) as $wd |
med(.bench == "wiring" and .shape == "n384" and .mode == "driverok"; .placement_ns / 1e6) as $wdp |
([.[] | select(.bench == "wiring" and .mode == "batched") | .one_set_gsi_routing_per_commit] | all) as $one |
([.[] | select(.bench == "wiring" and .mode == "batched" and .devices == 1)] | length) as $nwb |
# linearity: batched ms per queue at N=384 vs at N=64
med(.bench == "wiring" and .shape == "n64" and .mode == "batched"; .setup_ns / 1e6 / 64) as $per64 |
med(.bench == "wiring" and .shape == "n384" and .mode == "batched"; .setup_ns / 1e6 / 384) as $per384 |
# ---- EVENT_IDX
med(.bench == "disk_counters" and .disk == "qn"; .notifications_per_request) as $nq_on |
med(.bench == "disk_counters" and .disk == "noeidx"; .notifications_per_request) as $nq_off |
med(.bench == "disk_counters" and .disk == "q1"; .notifications_per_request) as $n1_on |
med(.bench == "guest_io" and .vmm == "minivmm" and .disk == "qn"; .kvm_exits_per_request) as $x_on |
med(.bench == "guest_io" and .vmm == "minivmm" and .disk == "noeidx"; .kvm_exits_per_request) as $x_off |
# ---- boot, IOPS, footprint
med(.bench == "boot" and .vmm == "minivmm"; .boot_to_init_ms) as $bm |
med(.bench == "boot" and .vmm == "qemu"; .boot_to_init_ms) as $bq |
med(.bench == "guest_io" and .vmm == "minivmm" and .disk == "q1"; .iops) as $im1 |
med(.bench == "guest_io" and .vmm == "minivmm" and .disk == "qn"; .iops) as $imn |
med(.bench == "guest_io" and .vmm == "qemu" and .disk == "q1"; .iops) as $iq1 |
med(.bench == "guest_io" and .vmm == "qemu" and .disk == "qn"; .iops) as $iqn |
med(.bench == "boot" and .vmm == "minivmm"; .rss_excl_guest_ram_kib / 1024) as $rm |
med(.bench == "boot" and .vmm == "qemu"; .rss_excl_guest_ram_kib / 1024) as $rq |
med(.bench == "boot" and .vmm == "minivmm"; .first_kvm_run_cpu_ms) as $cm |
med(.bench == "boot" and .vmm == "qemu"; .first_kvm_run_cpu_ms) as $cq |
med(.bench == "footprint_native" and .vmm == "minivmm"; .first_kvm_run_cpu_ms) as $ncm |
med(.bench == "footprint_native" and .vmm == "qemu"; .first_kvm_run_cpu_ms) as $ncq |
med(.bench == "footprint_native" and .vmm == "minivmm"; .rss_at_first_kvm_run_excl_guest_ram_kib / 1024) as $nrm |
med(.bench == "footprint_native" and .vmm == "qemu"; .rss_at_first_kvm_run_excl_guest_ram_kib / 1024) as $nrq |
([.[] | select(.bench == "boot" and .vmm == "minivmm")] | length) as $nbm |
([.[] | select(.bench == "boot" and .vmm == "qemu")] | length) as $nbq |
def ok(c): if c == null then "n/a" elif c then "met" else "**missed**" end;
"# libvmm benchmark results",
"",
"Run: \($first.date // "?"), mode `\($first.run_mode // "?")`, commit `\($first.machine.git_commit // "?")`" +
  (if $first.machine.git_dirty then " (+ uncommitted changes)" else "" end) + ".",
"Host: \($first.machine.host_cpu // "?"), \($first.machine.host_cpus // "?") CPUs, Linux \($first.machine.host_kernel // "?").",
"KVM host: " + (if $first.machine.kvm == null then "none" else
  "\($first.machine.kvm.kvm_host_cpu), \($first.machine.kvm.kvm_host_cpus) CPU(s), Linux \($first.machine.kvm.kvm_host_kernel)" +
  (if $first.machine.kvm.nested_rig then " -- the nested-KVM rig: an L1 Linux under TCG (software emulation) with one vCPU; every timing below is slow and noisy, counts are the primary results." else "" end) +
  " QEMU: \($first.machine.kvm.qemu_version)." end),
"All values are medians over rounds; systems were alternated A B A B (boot rounds: minivmm, QEMU, minivmm, QEMU, ...; fio phases inside a boot rotate their starting disk).",
"",
"## Targets",
"",
"| # | target | measured | |",
"|---|---|---|---|",
"| 1 | wiring 384 queues: batched >= 10x faster than per-vector | \(pct(ratio($wp; $wb))) (\($wb | f(2)) ms vs \($wp | f(2)) ms; inside KVM_SET_GSI_ROUTING alone: \(pct(ratio($wrp; $wrb)))) | \(ok(if ratio($wp; $wb) == null then null else ratio($wp; $wb) >= 10 end)) |",
"| 1 | exactly one KVM_SET_GSI_ROUTING per transaction | \(if $nwb == 0 then "n/a" elif $one then "yes, in every batched transaction" else "NO" end) | \(ok(if $nwb == 0 then null else $one end)) |",
"| 1 | DRIVER_OK wiring stall at 384 queues <= 10 ms (ioeventfds placed with the BAR) | \($wd | f(2)) ms (routes + irqfds; everything in one transaction: \($wb | f(2)) ms; the placement before the guest runs: \($wdp | f(2)) ms) | \(ok(if $wd == null then null else $wd <= 10 end)) |",
"| 1 | linear growth (batched) | \($per64 * 1000 | f(1)) us/queue at N=64, \($per384 * 1000 | f(1)) us/queue at N=384 | \(ok(if $per64 == null or $per384 == null then null else $per384 <= 2 * $per64 end)) |",
"| 2 | (kicks + interrupts) per request <= 0.1 at QD 32 with EVENT_IDX | \($nq_on | f(3)) (num-queues=smp), \($n1_on | f(3)) (1 queue); without EVENT_IDX \($nq_off | f(3)) | \(ok(if $nq_on == null then null else ($nq_on <= 0.1) end)) |",
"| 2 | KVM exits per request, EVENT_IDX on vs off (num-queues=smp) | \($x_on | f(3)) vs \($x_off | f(3)) (debugfs; see the note below) | |",
"| 3 | boot to init <= 0.7x QEMU | \(pct(ratio($bm; $bq))) (\($bm | f(0)) ms vs \($bq | f(0)) ms) | \(ok(if ratio($bm; $bq) == null then null else ratio($bm; $bq) <= 0.7 end)) |",
"| 3 | IOPS num-queues=smp >= 1.3x one queue (minivmm) | \(pct(ratio($imn; $im1))) (\($imn | f(0)) vs \($im1 | f(0))) | \(ok(if ratio($imn; $im1) == null then null else ratio($imn; $im1) >= 1.3 end)) |",
"| 3 | IOPS >= 1.0x QEMU (num-queues=smp) | \(pct(ratio($imn; $iqn))) (\($imn | f(0)) vs \($iqn | f(0)); 1 queue: \(pct(ratio($im1; $iq1)))) | \(ok(if ratio($imn; $iqn) == null then null else ratio($imn; $iqn) >= 1.0 end)) |",
"| 4 | resident memory without guest RAM <= 4 MiB | \($rm | f(2)) MiB (QEMU \($rq | f(2)) MiB) | \(ok(if $rm == null then null else $rm <= 4 end)) |",
"| 4 | CPU time exec -> first KVM_RUN <= 5 ms | native: \($ncm | f(2)) ms (QEMU \($ncq | f(2)) ms); in the rig (TCG): \($cm | f(1)) ms (QEMU \($cq | f(1)) ms) | \(ok(if $ncm != null then $ncm <= 5 elif $cm == null then null else $cm <= 5 end)) |",
"",
"Boots: \($nbm) minivmm, \($nbq) QEMU.",
"",
"## 1. Wiring N queues into KVM (`bench/wiring_bench.c`)",
"",
"Fresh VM with an in-kernel irqchip per measurement; N eventfd pairs, N MSI GSIs; N MSI routes + N irqfds + N ioeventfds (MMIO, 4 bytes apart). *batched*: one transaction for everything; *per vector*: one transaction per vector, each resending the whole route table (what kvmtool, Cloud Hypervisor and Firecracker do); *DRIVER_OK*: what libvmm does at a driver'"'"'s DRIVER_OK now -- the routes and irqfds in one transaction, the ioeventfds having been placed with the BAR before the guest ran (*placement*). ioctls counted by a hook in front of ioctl(2) and cross-checked with libvmm'"'"'s statistics.",
"",
"| N | batched ms | per-vector ms | ratio | batched ioctls (SET_GSI_ROUTING) | per-vector ioctls (SET_GSI_ROUTING) | routing ms batched / per-vector | teardown ms batched / per-vector | DRIVER_OK ms (placement ms) |",
"|---|---|---|---|---|---|---|---|---|",
([.[] | select(.bench == "wiring")] | group_by(.shape) | sort_by(.[0].n, .[0].devices) | .[] |
	def m(mode; f): map(select(.mode == mode) | f) | median;
	"| \(.[0].shape | if startswith("n") then .[1:] else . + " (" + (.[1:] | sub("q"; " devices x ")) + " queues)" end) | \(m("batched"; .setup_ns / 1e6) | f(3)) | \(m("pervector"; .setup_ns / 1e6) | f(3)) | \(pct(ratio(m("pervector"; .setup_ns); m("batched"; .setup_ns)))) | \(m("batched"; .setup_ioctls) | f(0)) (\(m("batched"; .setup_set_gsi_routing) | f(0))) | \(m("pervector"; .setup_ioctls) | f(0)) (\(m("pervector"; .setup_set_gsi_routing) | f(0))) | \(m("batched"; .setup_routing_ns / 1e6) | f(3)) / \(m("pervector"; .setup_routing_ns / 1e6) | f(3)) | \(m("batched"; .teardown_ns / 1e6) | f(1)) / \(m("pervector"; .teardown_ns / 1e6) | f(1)) | \(m("driverok"; .setup_ns / 1e6) | f(3)) (\(m("driverok"; .placement_ns / 1e6) | f(3))) |"),
"",
"![wiring time](wiring_time.png) ![wiring ioctls](wiring_ioctls.png)",
"",
"## 2. EVENT_IDX and notifications per request (minivmm, in-guest fio)",
"",
"| disk | queues | EVENT_IDX | kicks/req | interrupts/req | (kicks+interrupts)/req | suppressed batches | guest-counted interrupts/req | KVM exits/req (debugfs) |",
"|---|---|---|---|---|---|---|---|---|",
([.[] | select(.bench == "disk_counters")] | group_by(.disk)[] | . as $d |
	($all | [.[] | select(.bench == "guest_io" and .vmm == "minivmm" and .disk == $d[0].disk)]) as $io |
	"| \(.[0].disk) | \(.[0].queues) | \(.[0].event_idx) | \(map(.kicks_per_request) | median | f(3)) | \(map(.interrupts_per_request) | median | f(3)) | \(map(.notifications_per_request) | median | f(3)) | \(map(.suppressed) | median | f(0)) | \($io | map(.guest_interrupts_per_request) | median | f(3)) | \($io | map(.kvm_exits_per_request) | median | f(3)) |"),
"",
"QEMU (EVENT_IDX on, its default), for reference: guest-counted interrupts/req " +
  ([.[] | select(.bench == "guest_io" and .vmm == "qemu")] | group_by(.disk) | map("\(.[0].disk) \(map(.guest_interrupts_per_request) | median | f(3)), KVM exits/req \(map(.kvm_exits_per_request) | median | f(3))") | join("; ")) + ".",
"",
"![notifications](guest_notifications.png)",
"",
"## 3. Guest end to end: minivmm vs QEMU",
"",
"| | minivmm | QEMU | ratio |",
"|---|---|---|---|",
"| boot: launch -> MINIVMM-GUEST-UP (ms) | \($bm | f(0)) | \($bq | f(0)) | \(pct(ratio($bm; $bq))) |",
"| IOPS, 1 queue | \($im1 | f(0)) | \($iq1 | f(0)) | \(pct(ratio($im1; $iq1))) |",
"| IOPS, num-queues = vCPUs | \($imn | f(0)) | \($iqn | f(0)) | \(pct(ratio($imn; $iqn))) |",
"| IOPS ratio multi-queue / 1 queue | \(pct(ratio($imn; $im1))) | \(pct(ratio($iqn; $iq1))) | |",
"",
"![IOPS](guest_iops.png)",
"",
"## 4. Footprint",
"",
"| | minivmm | QEMU |",
"|---|---|---|",
"| RSS without guest RAM at MINIVMM-GUEST-UP (MiB) | \($rm | f(2)) | \($rq | f(2)) |",
"| PSS without guest RAM (MiB) | \(med(.bench == "boot" and .vmm == "minivmm"; .pss_excl_guest_ram_kib / 1024) | f(2)) | \(med(.bench == "boot" and .vmm == "qemu"; .pss_excl_guest_ram_kib / 1024) | f(2)) |",
"| CPU time exec -> first KVM_RUN (ms) | \($cm | f(2)) | \($cq | f(2)) |",
"| wall time exec -> first KVM_RUN (ms) | \(med(.bench == "boot" and .vmm == "minivmm"; .first_kvm_run_wall_ms) | f(2)) | \(med(.bench == "boot" and .vmm == "qemu"; .first_kvm_run_wall_ms) | f(2)) |",
"| native (this host'"'"'s /dev/kvm, no disks, stopped at the first KVM_RUN): CPU time exec -> first KVM_RUN (ms) | \($ncm | f(2)) | \($ncq | f(2)) |",
"| native: wall time exec -> first KVM_RUN (ms) | \(med(.bench == "footprint_native" and .vmm == "minivmm"; .first_kvm_run_wall_ms) | f(2)) | \(med(.bench == "footprint_native" and .vmm == "qemu"; .first_kvm_run_wall_ms) | f(2)) |",
"| native: RSS without guest RAM at the first KVM_RUN (MiB) | \($nrm | f(2)) | \($nrq | f(2)) |",
"",
"Method: resident memory = sum of `Rss` over /proc/PID/smaps minus the guest-RAM mapping (any mapping of >= 90% of the guest RAM size: QEMU'"'"'s and minivmm'"'"'s are anonymous; minivmm names its `vmm-guest-ram` where the kernel has CONFIG_ANON_VMA_NAME), read when the console shows MINIVMM-GUEST-UP. CPU time = `CLOCK_PROCESS_CPUTIME_ID` (all threads) read by an LD_PRELOAD probe (`bench/footprint_preload.c`) at the first `ioctl(KVM_RUN)`, minus the same clock read by `bench/footprint_exec` just before `execve`. QEMU runs with `-cpu host` in the rig and its default CPU model natively (`-cpu host` fails on the CI host'"'"'s KVM).",
"",
"Errors: \([.[] | select(.bench == "error")] | length)."
' >"$out/summary.md"

cat "$here/plot-notes.md" >>"$out/summary.md" 2>/dev/null || true
if [[ -f $out/devbench.md ]]; then
	{ echo; cat "$out/devbench.md"; } >>"$out/summary.md"
fi
bench_log "wrote $out/summary.md and $(find "$out" -maxdepth 1 -name '*.png' | wc -l) plots"
