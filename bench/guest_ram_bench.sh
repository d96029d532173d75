#!/bin/bash
# bench/guest_ram_bench.sh [--quick|--full] [--rounds N] [--sizes 512M,2G]
#                          [--out DIR] [--no-hugetlb] [--report]
#
# What guest RAM costs per backend (issue 11, item 2): anon (today's
# private anonymous memory, MADV_HUGEPAGE) against memfd (sealed shmem memfd
# mapped shared) and hugetlb (hugetlbfs memfd, 2 MiB pages reserved), made by
# libvmm's own guest_mem_init() (bench/guest_ram_bench.c says what each
# trial times): set-up, KVM_SET_USER_MEMORY_REGION, first touch of every
# 4 KiB page by 1 and by 2 threads, huge pages in smaps, teardown.  The
# backends take turns within every round, in an order that rotates round by
# round, after one warm-up round that is recorded but not summarised.
#
#   --quick    1 round of 512 MiB (~5 s)
#   --full     (default) 7 rounds of 512 MiB and 2 GiB (~2 minutes)
#   --rounds N rounds (>= 1)
#   --sizes L  RAM sizes, comma-separated, multiples of 2 MiB
#   --out DIR  results directory (default $BENCH_OUT or bench/results)
#   --no-hugetlb  leave hugetlb out (and the pool alone)
#   --report   make guest_ram.json, .md and .png again from the run's log
#
# hugetlb needs 2 MiB pages in the pool: as root the script raises
# /proc/sys/vm/nr_hugepages by what the largest size needs for the run and
# puts the old value back on exit; where it cannot, the records say hugetlb
# was skipped and the table shows "-".
#
# Writes DIR/guest_ram.json (JSON Lines, one record per trial plus the
# machine), guest_ram.md (medians, min-max, ratios to anon), guest_ram.png
# and guest_ram-run.log (the raw output).  Timings are reported, never
# asserted.  The binary comes from $BENCH_BUILD_DIR (default build), built
# here unless BENCH_PREBUILT=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
cd "$here/.."

mode=full rounds="" sizes="" report=0 hugetlb=1
out=${BENCH_OUT:-bench/results}
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) mode=quick; shift ;;
	--full) mode=full; shift ;;
	--rounds) rounds=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--no-hugetlb) hugetlb=0; shift ;;
	--report) report=1; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
	*) bench_die "unknown option $1" ;;
	esac
done
if [[ $mode == quick ]]; then
	rounds=${rounds:-1} sizes=${sizes:-512M}
else
	rounds=${rounds:-7} sizes=${sizes:-512M,2G}
fi
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bench_die "--rounds wants a number >= 1"
for t in jq gnuplot; do
	command -v "$t" >/dev/null || bench_die "$t is missing (scripts/deps.sh installs it)"
done
build=${BENCH_BUILD_DIR:-build}
bin=$build/bench/guest_ram_bench
log=$out/guest_ram-run.log
mkdir -p "$out"

# bytes SIZE: 512M / 2G / 16K / N in bytes.
bytes() {
	local n=${1%[KkMmGg]}
	case ${1: -1} in
	K | k) echo $((n << 10)) ;;
	M | m) echo $((n << 20)) ;;
	G | g) echo $((n << 30)) ;;
	*) echo "$n" ;;
	esac
}
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
old_pool="" tmp=""
# The hugetlb pool goes back to its old size however the script ends.
restore_pool() {
	[[ -n $old_pool ]] && { echo "$old_pool" >/proc/sys/vm/nr_hugepages || true; }
	old_pool=""
}
trap 'restore_pool; [[ -n $tmp ]] && rm -rf "$tmp"' EXIT

if [[ $report == 0 ]]; then
	if [[ ${BENCH_PREBUILT:-0} != 1 ]]; then
		cmake --build "$build" --target guest_ram_bench >/dev/null
	fi
	[[ -x $bin ]] || bench_die "no $bin (build the guest_ram_bench target)"
	backends=anon,memfd,hugetlb
	pool_note="not tried (--no-hugetlb)"
	[[ $hugetlb == 1 ]] || backends=anon,memfd
	max=0
	for s in ${sizes//,/ }; do
		b=$(bytes "$s")
		((b > max)) && max=$b
	done
	# Memory: one mapping at a time, plus the pool while it is held.
	free_kib=$(meminfo MemAvailable)
	(((max >> 10) * 2 < free_kib)) || bench_die "not enough free memory for ${max} bytes twice (pool + mapping)"
	if [[ $hugetlb == 1 ]]; then
		need=$((max >> 21))
		have=$(($(meminfo HugePages_Free) - $(meminfo HugePages_Rsvd)))
		if ((have >= need)); then
			pool_note="the pool already had $have free pages"
		elif [[ -w /proc/sys/vm/nr_hugepages ]]; then
			old_pool=$(cat /proc/sys/vm/nr_hugepages)
			echo $((old_pool + need - have)) >/proc/sys/vm/nr_hugepages || true
			have=$(($(meminfo HugePages_Free) - $(meminfo HugePages_Rsvd)))
			if ((have >= need)); then
				pool_note="nr_hugepages raised from $old_pool to $(cat /proc/sys/vm/nr_hugepages) for the run, restored after"
			else
				pool_note="nr_hugepages raised from $old_pool but only $have of $need pages came (fragmented memory): hugetlb skipped where short"
			fi
		else
			pool_note="$have free 2 MiB pages, $need needed, and /proc/sys/vm/nr_hugepages not writable (not root): hugetlb skipped where short"
		fi
		bench_log "hugetlb pool: $pool_note"
	fi
	bench_log "guest RAM: $backends, sizes $sizes, 1 warm-up + $rounds round(s)"
	{
		bench_emit "$(jq -cn --arg p "$pool_note" --arg m "$mode" --arg c "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
			'{bench:"guest_ram_run", run_mode:$m, hugetlb_pool:$p, commit:$c}')"
		"$bin" --warmup --rounds "$rounds" --sizes "$sizes" --threads 1,2 \
			--backends "$backends" 2>&1
		bench_emit "$(jq -cn --arg l "$(cut -d' ' -f1-3 /proc/loadavg)" '{bench:"guest_ram_run_end", loadavg:$l}')"
	} | tee "$log" | grep -v '^BENCH-JSON ' >&2 || true
	restore_pool
	date=$(date -u '+%Y-%m-%d %H:%M:%S')
else
	[[ -s $log ]] || bench_die "no $log to report from"
	date=$(date -u -r "$log" '+%Y-%m-%d %H:%M:%S')
fi
bench_records "$log" | jq -c --arg date "$date" '. + {date:$date}' >"$out/guest_ram.json"
jq -se 'any(.[]; .bench == "guest_ram")' "$out/guest_ram.json" >/dev/null ||
	bench_die "no guest_ram records (see $log)"

# ------------------------------------------------------------------ table
# Medians over the measured rounds (the warm-up round left out), min-max in
# brackets, and each backend over anon.
jq -rs "$BENCH_JQ_DEFS"'
	(.[] | select(.bench == "guest_ram_machine")) as $m |
	(first(.[] | select(.bench == "guest_ram_run")) // {}) as $run |
	(first(.[] | select(.bench == "guest_ram_run_end")) // {}) as $fin |
	[.[] | select(.bench == "guest_ram" and .warmup == false)] as $t |
	[.[] | select(.bench == "guest_ram_skip")] as $skip |
	($t | map(.size_mib) | unique) as $sizes |
	($t | map(.round) | unique | length) as $rounds |
	def sel(b; s; th): [$t[] | select(.backend == b and .size_mib == s and
		(th == null or .threads == th))];
	def st(f): map(f) | {med: median, min: min, max: max};
	def fmt(x; n): if x == null then "-" else (x | r(n) | tostring) end;
	def cell(s; n): if s.med == null then "-"
		else "\(fmt(s.med; n)) [\(fmt(s.min; n))-\(fmt(s.max; n))]" end;
	def ratio(a; b): if a.med == null or b.med == null or b.med == 0 then "-"
		else fmt(a.med / b.med; 2) end;
	# row LABEL SIZE THREADS FIELD-FILTER DIGITS
	def row(lbl; s; th; f; n):
		(sel("anon"; s; th) | st(f)) as $a |
		(sel("memfd"; s; th) | st(f)) as $f |
		(sel("hugetlb"; s; th) | st(f)) as $h |
		"| \(lbl) | \(cell($a; n)) | \(cell($f; n)) | \(cell($h; n)) | \(ratio($f; $a)) | \(ratio($h; $a)) |";
	def head(what): "| \(what) | anon | memfd | hugetlb | memfd / anon | hugetlb / anon |",
		"|---|---|---|---|---|---|";
	def per_size(f; n): $sizes[] as $s | row("\($s) MiB"; $s; null; f; n);
	def per_thr(f; n): $sizes[] as $s | (1, 2) as $th |
		row("\($s) MiB, \($th) thread\(if $th > 1 then "s" else "" end)"; $s; $th; f; n);
	"Host: Linux \($m.kernel), \($m.cpus) CPUs (\($m.cpu)), \($m.mem_total_kib / 1048576 | r(1)) GiB;",
	"THP `enabled` \($m.thp_enabled), `defrag` \($m.thp_defrag),",
	"`shmem_enabled` \($m.thp_shmem_enabled); hugetlb pool: \($run.hugetlb_pool // "?");",
	"KVM: \(if $m.kvm then "yes" else "no" end) (\($m.kvm_note)); load average at the start \($m.loadavg | split(" ")[0:3] | join(" ")), at the end \($fin.loadavg // "?").",
	"\($rounds) measured round(s) after a warm-up round; median [min-max] per cell;",
	"set-up, KVM and teardown rows pool both thread counts (\(2 * $rounds) trials a cell).",
	(if ($skip | length) > 0 then "", "Skipped: " + ([$skip[] | "\(.backend) \(.size_mib) MiB (\(.reason))"] | join("; ")) + "." else empty end),
	"",
	"### First touch: one byte written per 4 KiB page of all guest RAM",
	"",
	head("ns per 4 KiB page"), per_thr(.touch_ns_per_4k; 0),
	"",
	head("GiB/s"), per_thr(.touch_gib_s; 2),
	"",
	head("page faults (minor)"), per_thr(.minor_faults; 0),
	"",
	"### Huge pages after the touch (smaps of the mapping: AnonHugePages + ShmemPmdMapped + Shared/Private_Hugetlb)",
	"",
	head("% of RAM on 2 MiB pages"), per_size(.huge_fraction * 100; 1),
	"",
	"### Set-up (guest_mem_init), KVM memslots, teardown (guest_mem_destroy)",
	"",
	head("set-up, µs"), per_size(.setup_ns / 1000; 1),
	"",
	head("KVM_SET_USER_MEMORY_REGION (all slots), µs"), per_size(.kvm_register_ns / 1000; 1),
	"",
	head("slots deleted again, µs"), per_size(.kvm_unregister_ns / 1000; 1),
	"",
	head("teardown (munmap + close), ms"), per_size(.teardown_ns / 1e6; 2)
' "$out/guest_ram.json" >"$out/.guest_ram-table.md"
{
	echo "# Guest RAM backends: memfd and hugetlb against anon (bench/guest_ram_bench.sh --$mode, $date UTC)"
	echo
	echo "Each trial maps fresh guest RAM with libvmm's guest_mem_init(), registers"
	echo "it with KVM, writes one byte per 4 KiB page (1 or 2 threads, each its"
	echo "half), reads smaps, deletes the memslots and calls guest_mem_destroy();"
	echo "anon, memfd and hugetlb take turns within each round in a rotating"
	echo "order.  Before each trial as much THP anonymous memory is touched and"
	echo "freed (prewarm_ns in the records): this host is itself a VM with free"
	echo "page reporting, whose first touch of returned guest-physical memory"
	echo "costs a fault in the hypervisor below too, and without the prewarm single"
	echo "anon runs varied several-fold.  Records: guest_ram.json; plot: guest_ram.png."
	echo
	cat "$out/.guest_ram-table.md"
} >"$out/guest_ram.md"
rm -f "$out/.guest_ram-table.md"

# ------------------------------------------------------------------- plot
tmp=$(mktemp -d)
# per line: label, then median, min, max of anon, memfd, hugetlb ("-": none)
for w in touch setup register teardown; do
	WHAT=$w jq -rs "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "guest_ram" and .warmup == false)] as $t |
	def m(b; s; th; f): [$t[] | select(.backend == b and .size_mib == s and
		(th == null or .threads == th)) | f | select(. != null)] |
		if length == 0 then ["-", "-", "-"] else [median, min, max] end;
	def line(lbl; s; th; f): [lbl] + m("anon"; s; th; f) + m("memfd"; s; th; f) +
		m("hugetlb"; s; th; f) | @tsv;
	($t | map(.size_mib) | unique) as $sizes |
	if $ENV.WHAT == "touch" then $sizes[] as $s | (1, 2) as $th |
		line("\($s)M, \($th)t"; $s; $th; .touch_ns_per_4k)
	elif $ENV.WHAT == "setup" then $sizes[] as $s | line("\($s) MiB"; $s; null; .setup_ns / 1000)
	elif $ENV.WHAT == "register" then $sizes[] as $s | line("\($s) MiB"; $s; null; .kvm_register_ns / 1000)
	else $sizes[] as $s | line("\($s) MiB"; $s; null; .teardown_ns / 1e6) end
	' "$out/guest_ram.json" >"$tmp/$w.dat"
done
gnuplot <<EOF
set terminal pngcairo size 1200,900 noenhanced
set output "$out/guest_ram.png"
set datafile separator "\t"
set datafile missing "-"
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.7 border -1
set grid ytics
set key left top
set multiplot layout 2,2 title "Guest RAM backends (libvmm guest_mem_init), medians of $rounds round(s), bars min-max"
set title "first touch, ns per 4 KiB page (RAM, threads)"
set logscale y
plot "$tmp/touch.dat" u 2:3:4:xtic(1) t "anon", "" u 5:6:7 t "memfd", "" u 8:9:10 t "hugetlb"
set title "set-up (guest_mem_init), µs"
plot "$tmp/setup.dat" u 2:3:4:xtic(1) t "anon", "" u 5:6:7 t "memfd", "" u 8:9:10 t "hugetlb"
set title "KVM_SET_USER_MEMORY_REGION, µs"
plot "$tmp/register.dat" u 2:3:4:xtic(1) t "anon", "" u 5:6:7 t "memfd", "" u 8:9:10 t "hugetlb"
set title "teardown (munmap + close), ms"
plot "$tmp/teardown.dat" u 2:3:4:xtic(1) t "anon", "" u 5:6:7 t "memfd", "" u 8:9:10 t "hugetlb"
unset multiplot
EOF
cat "$out/guest_ram.md"
