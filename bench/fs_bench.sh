#!/bin/bash
# bench/fs_bench.sh [--smoke|--quick|--full|--report] BUILD_DIR
#
# virtio-fs (issue 29): minivmm's vhost-user front end vs QEMU 7.2's
# vhost-user-fs-pci, both on Debian's QEMU 7.2 virtiofsd with the same
# cache mode (FS_CACHE, default auto), and a third column, minivmm with an
# ext4 image of the same tree on virtio-blk (what minivmm-oci uses by
# default), side by side in ONE rig L1 (bench/fs_rig.sh through
# tests/e2e/in-rig.sh): three guests booted at once, 1 vCPU each, the
# rounds alternated workload by workload (mvfs, qemu, mvblk, the order
# rotated every round).  In the guest (tests/guest/fs-bench): fio 4k
# randread and randwrite and 1 MiB sequential read and write (psync,
# O_DIRECT, one job) on a file in the share; create + stat + unlink of N
# empty files (tests/guest/fsmeta.c, caches dropped before the stat); the
# untar (+ sync) of this checkout's libvmm/ include/ devices/ and its
# rm -rf (+ sync).  Writes to $BENCH_OUT (default bench/results):
#   fs.json     the records (+ date, run_mode, git commit)
#   fs.md       medians per side, the ratios, the target
#   fs.png      speed relative to QEMU's virtio-fs, per workload
#   fs-run.log  the rig's raw output
#   --smoke  1 round, fio 2 s on 16 MiB, 100 files
#   --quick  3 rounds, fio 2 s on 16 MiB, 300 files
#   --full   3 rounds, fio 3 s on 32 MiB, 1000 files (default)
#   --report remakes fs.json/.md/.png from fs-run.log, no run
# FS_FILES=N overrides the metadata run's file count (the issue's size is
# 10,000: `FS_FILES=10000 bench/fs_bench.sh --smoke` is one round of it).
# FS_REUSE_LOG=FILE re-summarises an earlier run's log instead.  The sizes
# are small for the nested TCG rig (one emulated L1 CPU for all three
# guests, both virtiofsd and the host side): a --full run holds the rig
# about 10 minutes.  Timings are reported, never asserted.  BUILD_DIR must
# hold minivmm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* || ${1:-} == -h ]] && { mode=$1; shift; }
case $mode in
-h | --help) bench_help; exit 0 ;;
--smoke) rounds=1 runtime=2 fsize=$((16 << 20)) files=100 ;;
--quick) rounds=3 runtime=2 fsize=$((16 << 20)) files=300 ;;
--full) rounds=3 runtime=3 fsize=$((32 << 20)) files=1000 ;;
--report) ;;
*) bench_die "unknown mode $mode" ;;
esac
files=${FS_FILES:-${files:-}}
[[ -z $files || $files =~ ^[1-9][0-9]*$ ]] || bench_die "FS_FILES wants a positive number"
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
log=$out/fs-run.log
rc=0
if [[ $mode == --report ]]; then
	[[ -s $log ]] || bench_die "no $log to report on"
	mode=--$(jq -r '.[0].run_mode // "full"' "$out/fs.json" 2>/dev/null || echo full)
elif [[ -n ${FS_REUSE_LOG:-} ]]; then
	[[ $FS_REUSE_LOG -ef $log ]] || cp "$FS_REUSE_LOG" "$log"
else
	build=$(cd "${1:?BUILD_DIR}" && pwd)
	[[ -x $build/minivmm ]] || bench_die "$build/minivmm is missing (build the default targets)"
	# The default guest + ext4 (for the virtio-blk column).
	mk=("$here/../tests/rig/mkguest.sh" --variant fsbench --module ext4)
	"${mk[@]}" --quiet
	mapfile -t guest < <("${mk[@]}" --print-paths)
	tools=$("$here/../tests/rig/mktools.sh")
	bench_log "virtio-fs: minivmm vs QEMU vhost-user-fs-pci vs ext4 on virtio-blk ($mode: $rounds rounds, fio ${runtime} s on $((fsize >> 20)) MiB, $files files, cache=${FS_CACHE:-auto}) through the rig"
	bench_in_rig "$log" $((900 + rounds * (300 + files / 10))) "$here/fs_rig.sh" \
		"$build/minivmm" "${guest[0]}" "${guest[1]}" "$tools" \
		"$rounds" "$runtime" "$fsize" "$files" "${FS_CACHE:-auto}" || rc=$?
fi
bench_rig_results "$log" "$mode" "$out/fs.json"

# The measures: workload, field, label, unit, higher is better, scale.
J() { jq -r "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "fs")] as $r |
	([.[] | select(.bench == "fs_machine")][0] // {}) as $m |
	def med(s; w; f): [$r[] | select(.side == s and .workload == w) | .[f]] | median;
	def n(s; w): [$r[] | select(.side == s and .workload == w)] | length;
	def measures: [
		["randread", "iops", "fio 4k randread", "IOPS", true, 1],
		["randwrite", "iops", "fio 4k randwrite", "IOPS", true, 1],
		["seqread", "kibs", "fio 1 MiB read", "MiB/s", true, 1024],
		["seqwrite", "kibs", "fio 1 MiB write", "MiB/s", true, 1024],
		["meta", "create_ms", "create \($m.meta_files // "?") files", "ms", false, 1],
		["meta", "stat_ms", "stat \($m.meta_files // "?") files (cold)", "ms", false, 1],
		["meta", "unlink_ms", "unlink \($m.meta_files // "?") files", "ms", false, 1],
		["untar", "untar_ms", "untar \($m.tree_files // "?") files + sync", "ms", false, 1],
		["untar", "rm_ms", "rm -rf of it + sync", "ms", false, 1]];
	# speed of side a relative to side b (> 1: a is faster)
	def speed(a; b; m): (med(a; m[0]; m[1])) as $x | (med(b; m[0]; m[1])) as $y |
		if $x == null or $y == null or $x == 0 or $y == 0 then null
		elif m[4] then $x / $y else $y / $x end;
	def v(s; m): med(s; m[0]; m[1]) | if . == null then "-" else (. / m[5] | r(1)) end;
	'"$1" "$out/fs.json"; }
{
	echo "# virtio-fs: minivmm vs QEMU vhost-user-fs-pci (same virtiofsd), and ext4 on virtio-blk ($mode, $date, $(bench_commit))"
	echo
	J '"Three guests booted at once in one rig L1 (nested KVM under TCG, \($m.l1_cpus // "?") L1 CPU: \($m.l1_cpu // "?"), kernel \($m.l1_kernel // "?")), \($m.guest_vcpus // "?") vCPU and \($m.guest_mem_mib // "?") MiB each, memfd RAM, the same guest kernel, initramfs and payload (tests/guest/fs-bench):",
		"",
		"- **mvfs**: minivmm `--fs tag=share,socket=S,queue-size=\($m.queue_size // "?")`;",
		"- **qemu**: \($m.qemu_version // "QEMU") `-M pc -device vhost-user-fs-pci,queue-size=\($m.queue_size // "?")` with `memory-backend-memfd,share=on`;",
		"- **mvblk**: minivmm `--disk` of an ext4 image (mkfs.ext4 -d) of the same tree.",
		"",
		"Each virtio-fs guest has its own \($m.virtiofsd_version // "virtiofsd") (`/usr/lib/qemu/virtiofsd -o cache=\($m.cache // "?") --thread-pool-size=0`) on its own copy of the tree.  \($m.rounds // "?") rounds; in each, every workload ran on each guest in turn (the order rotated every round), the other two idle.",
		"",
		"Scaled for the rig (the issue asks for 10,000 files): fio \($m.fio_runtime_s // "?") s per phase, psync, one job, O_DIRECT, on a \(($m.fio_file_bytes // 0) / 1048576) MiB file; \($m.meta_files // "?") empty files created, stat-ed after a cache drop (`drop_caches` = 2: virtio-fs LOOKUPs, ext4 inode reads) and unlinked (tests/guest/fsmeta.c); untar of a \(($m.tree_tar_bytes // 0) / 1024 | floor) KiB tarball of \($m.tree_files // "?") files (this checkout'"'"'s libvmm/ include/ devices/) from tmpfs, + sync, and its rm -rf + sync.  Medians over the rounds (n); absolute figures are the emulation'"'"'s, compare side by side."'
	echo
	echo "| measure | unit | mvfs (minivmm) | qemu | mvblk (ext4) | n | minivmm / QEMU speed | ext4 / minivmm-fs speed |"
	echo "|---|---|---|---|---|---|---|---|"
	J 'measures[] as $x |
		"| \($x[2]) | \($x[3]) | \(v("mvfs"; $x)) | \(v("qemu"; $x)) | \(v("mvblk"; $x)) | \(n("mvfs"; $x[0]))/\(n("qemu"; $x[0]))/\(n("mvblk"; $x[0])) | **\(speed("mvfs"; "qemu"; $x) | r(2) // "-")** | \(speed("mvblk"; "mvfs"; $x) | r(2) // "-") |"'
	echo
	echo "Speed ratios: throughput and IOPS divided, or the times inverted (> 1: the first is faster)."
	echo
	J '"Target (issue 29): virtio-fs minivmm >= 1.0x QEMU with the same back end: " +
		([measures[] as $x | speed("mvfs"; "qemu"; $x) | select(. != null)] as $s |
		 if ($s | length) == 0 then "no data"
		 else "\([$s[] | select(. >= 1.0)] | length) of \($s | length) measures met, slowest \($s | min | r(2))x, geometric mean \(($s | map(log) | add / length | exp) | r(2))x" end) + "."'
	echo
	echo "Per phase, medians: KVM exits of the VM (debugfs, all of it: timer ticks and console too)"
	echo "and interrupts of the share's / disk's virtio device (guest /proc/interrupts):"
	echo
	echo "| workload | mvfs exits | qemu exits | mvblk exits | mvfs irqs | qemu irqs | mvblk irqs | exits per I/O mvfs / qemu / mvblk | irqs per I/O mvfs / qemu / mvblk |"
	echo "|---|---|---|---|---|---|---|---|---|"
	J 'def per(s; w; f): [$r[] | select(.side == s and .workload == w and .iops != null and .iops > 0 and .[f] != null) |
			.[f] / (.iops * ($m.fio_runtime_s // 1))] | median | r(2) // "-";
		["randread", "randwrite", "seqread", "seqwrite", "meta", "untar"][] as $w |
		"| \($w) | \(med("mvfs"; $w; "kvm_exits") // "-") | \(med("qemu"; $w; "kvm_exits") // "-") | \(med("mvblk"; $w; "kvm_exits") // "-") | \(med("mvfs"; $w; "irqs") // "-") | \(med("qemu"; $w; "irqs") // "-") | \(med("mvblk"; $w; "irqs") // "-") | \(per("mvfs"; $w; "kvm_exits")) / \(per("qemu"; $w; "kvm_exits")) / \(per("mvblk"; $w; "kvm_exits")) | \(per("mvfs"; $w; "irqs")) / \(per("qemu"; $w; "irqs")) / \(per("mvblk"; $w; "irqs")) |"'
	echo
	echo "I/Os of a fio phase: its IOPS x its runtime.  Both virtio-fs columns have the same data"
	echo "path: the guest's kick is a KVM ioeventfd that virtiofsd polls, its completion a KVM irqfd"
	echo "that virtiofsd writes (no VMM thread in between, in minivmm or QEMU); the VMMs differ in"
	echo "the virtual machine around it (firmware, platform devices, the vCPU's exits)."
	echo
	echo "Every phase:"
	echo
	echo "| round | workload | side | IOPS | MiB/s | lat us | create ms | stat ms | unlink ms | untar ms | rm ms | exits | irqs |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	J '$r | sort_by(.round)[] |
		"| \(.round) | \(.workload) | \(.side) | \(.iops // "-") | \(if .kibs then (.kibs / 1024 | r(1)) else "-" end) | \(.lat_us // "-") | \(.create_ms // "-") | \(.stat_ms // "-") | \(.unlink_ms // "-") | \(.untar_ms // "-") | \(.rm_ms // "-") | \(.kvm_exits // "-") | \(.irqs // "-") |"'
	echo
	J '"Guests ready (all three booting at once, ms after each start): \([.[] | select(.bench == "fs_boot") | "\(.side) \(.ready_ms)"] | join(", ")).",
		"",
		"minivmm --stats-json at exit (whole boot): \([.[] | select(.bench == "fs_vmm_stats") | "\(.side): kvm exits \(.stats.kvm.exits // "?")" + (if .stats.fs then ", fs \(.stats.fs | tojson)" else "" end)] | join("; ")).",
		"",
		"Failed phases or guests: \([.[] | select(.bench == "fs_error")] | if length == 0 then "none" else map("\(.side): \(.what)") | join("; ") end)."'
} >"$out/fs.md"

# Plot: speed relative to QEMU's virtio-fs (= 1), per measure.
J 'measures[] as $x | select(speed("mvfs"; "qemu"; $x) != null) |
	"\"\($x[2])\" \(speed("mvfs"; "qemu"; $x)) 1 \(speed("mvblk"; "qemu"; $x) // "NaN")"' >"$dat"
bench_plot 1000,500 "$out/fs.png" <<-EOF
	set title "virtio-fs in the rig: speed relative to QEMU vhost-user-fs-pci (same virtiofsd), medians; > 1 is faster"
	$BENCH_GP_BARS
	set logscale y 2
	set grid ytics
	set xtics rotate by -25
	set key top left
	set ylabel "speed / QEMU virtio-fs"
	plot "$dat" using 2:xtic(1) title "minivmm --fs", "" using 3 title "QEMU vhost-user-fs-pci", "" using 4 title "minivmm --disk ext4"
EOF
bench_rig_end "$out/fs.md" "$rc"
