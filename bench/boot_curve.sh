#!/bin/bash
# bench/boot_curve.sh [--quick|--full] [--counts "1 8 32"] [--rounds R] [--disks N]
#                     [--modes "minivmm-qn minivmm-q1 ..."] [--report]
#
# Guest boot time against the vCPU count, the shape of seed 004 (issue 9,
# item 7a): launch to the guest's init marker (MINIVMM-GUEST-UP) for
#   minivmm-qn   one disk with one queue per vCPU (the default)
#   minivmm-q1   the same disk with one queue
#   minivmm-pv   minivmm-qn with each queue's interrupt wired into KVM by
#                a routing update of its own (--disk wiring=per-vector:
#                the per-vector way of kvmtool, Cloud Hypervisor and
#                Firecracker, which the batched default replaces)
#   minivmm-pvh  minivmm-qn booting the uncompressed vmlinux through PVH
#                (no decompressor) instead of the bzImage
#   qemu-qn      QEMU (-machine q35,kernel-irqchip=split -cpu host), the
#                same kernel, initramfs, command line, memory and disk,
#                virtio-blk-pci num-queues = vCPUs (QEMU 7.2's q35 stops
#                at 288 vCPUs: larger counts are minivmm only)
#   qemu-pvh     qemu-qn booting the same vmlinux through PVH (QEMU's
#                pvh.bin option ROM)
#   qemu-q1      QEMU with one queue per disk (with --disks, or when
#                --modes names it)
# alternated within each round (A B C A B C ...), inside the nested-KVM rig
# (one tests/rig/rig-run call per round and vCPU count; an L1 stall reruns
# that call, and only its last attempt's records count).  Beside each
# minivmm time, its counts (--stats-json): KVM exits, wiring commits,
# ioctls and milliseconds.
#
#   --disks N  N disks instead of one (seeds 000/002's shape: --disks 101
#            --counts 32); QEMU gets them as multi-function devices, eight
#            per slot, as minivmm places them.  Results: boot_disksN.*
#   --modes L  only these modes (default: all that apply)
#   BENCH_BOOT_TIMEOUT=S  give up on a boot after S seconds (default 3000;
#            such a boot has no time, exit status 124)
#   --quick  1, 8, 32 vCPUs, 1 round (~5 minutes)
#   --full   1, 8, 32, 64, 128, 255, 288, 384 vCPUs, 3 rounds (hours in
#            the rig: 255-384 vCPUs boot in 11-42 minutes each there;
#            tests/rig/README, "Big guests", says why)
#
# Writes $BENCH_OUT (default bench/results): boot.json (one record per
# boot), boot.md (medians, ratios), boot_curve.png, boot-run.log (raw);
# boot_disksN.* with --disks N.  --report makes the JSON, table and plot
# again from the run log only.
# Timings are reported, never asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

if [[ ${1:-} == --inner ]]; then
	# ---------------------------------------------------------- in L1
	shift
	vmm=$1 kernel=$2 initrd=$3 vmlinux=$4 rounds=$5 disks=$6 round0=$7 only=$8
	shift 8
	counts=("$@")
	qemu=$(command -v qemu-system-x86_64 || true)
	[[ -r /dev/kvm && -w /dev/kvm ]] || bench_die "no usable /dev/kvm"
	work=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/boot_curve.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	truncate -s 64M "$work/data.img"
	for ((d = 1; d < disks; d++)); do
		truncate -s 16M "$work/d$d.img"
	done
	ulimit -n 65536 2>/dev/null || true
	cmdline="console=ttyS0 reboot=k panic=-1 pci=conf1 i8042.noaux i8042.nopnp i8042.dumbkbd quiet"
	bench_emit "$(jq -cn --arg k "$(uname -r)" --arg q "$([[ -n $qemu ]] && "$qemu" --version | head -1)" \
		'{bench:"machine_boot_curve", kvm_host_kernel:$k, qemu_version:$q, nested_rig:true}')"

	# boot MODE N ROUND: one boot; emits its record.
	boot() {
		local mode=$1 n=$2 round=$3 mem cmd=() t0 up="" rc log=$work/log
		mem=$((512 + 4 * n))
		# Many disks: the guest's per-queue request pools (101 disks of
		# 32 queues did not boot in 640 MiB: no init marker).
		((disks == 1)) || mem=$((mem + 8 * disks))
		local k=$kernel
		[[ $mode == *-pvh ]] && k=$vmlinux
		case $mode in
		minivmm-*)
			local nq=$n w=""
			[[ $mode == minivmm-q1 ]] && nq=1
			[[ $mode == minivmm-pv ]] && w=,wiring=per-vector
			cmd=("$vmm" --smp "$n" --mem "${mem}M" --kernel "$k" --initrd "$initrd"
				--cmdline "$cmdline" --stats-json
				--disk "path=$work/data.img,num-queues=$nq,serial=data,lock=off$w")
			for ((d = 1; d < disks; d++)); do
				cmd+=(--disk "path=$work/d$d.img,num-queues=$nq,serial=d$d,lock=off$w")
			done
			;;
		qemu-qn | qemu-q1 | qemu-pvh)
			local qq=$n
			[[ $mode == qemu-q1 ]] && qq=1
			cmd=("$qemu" -enable-kvm -machine q35,kernel-irqchip=split -cpu host
				-smp "$n" -m "${mem}M" -nographic -nodefaults -no-user-config
				-serial stdio -no-reboot -kernel "$k" -initrd "$initrd"
				-append "$cmdline"
				-drive "file=$work/data.img,if=none,id=d,format=raw,cache=none,file.locking=off")
			if ((disks == 1)); then
				cmd+=(-device "virtio-blk-pci,drive=d,num-queues=$qq,serial=data")
			else
				# Eight functions per slot from slot 1, like minivmm.
				local addr id serial
				for ((d = 0; d < disks; d++)); do
					addr=$((1 + d / 8)).$((d % 8)) id=d serial=data
					((d % 8)) || addr+=",multifunction=on"
					if ((d)); then
						id=d$d serial=d$d
						cmd+=(-drive "file=$work/d$d.img,if=none,id=$id,format=raw,cache=none,file.locking=off")
					fi
					cmd+=(-device "virtio-blk-pci,drive=$id,num-queues=$qq,serial=$serial,addr=$addr")
				done
			fi
			;;
		esac
		t0=$(bench_now_ns)
		echo null >"$work/st.json"
		set +e
		timeout --kill-after=10 "${BENCH_BOOT_TIMEOUT:-3000}" "${cmd[@]}" </dev/null 2>&1 |
			while IFS= read -r line; do
				if [[ $line == *MINIVMM-GUEST-UP* ]]; then
					echo "UP $(($(bench_now_ns) - t0)) ${line##*cpus=}"
				elif [[ $line == '{"'* ]]; then
					# minivmm --stats-json at exit (a file: 384
					# queues of statistics are too long for an
					# argument).
					printf '%s\n' "$line" >"$work/st.json"
				fi
			done >"$log"
		rc=${PIPESTATUS[0]}
		set -e
		up=$(awk '/^UP/ { print $2; exit }' "$log")
		local cpus
		cpus=$(awk '/^UP/ { print $3; exit }' "$log")
		if [[ -n $up ]]; then
			bench_log "round $round: $mode --smp $n: $((up / 1000000)) ms (exit $rc)"
		else
			bench_log "round $round: $mode --smp $n: no init marker (exit $rc)"
		fi
		bench_emit "$(jq -cn --arg mode "$mode" --argjson n "$n" --argjson round "$round" \
			--arg up "$up" --arg cpus "$cpus" --argjson rc "$rc" --argjson disks "$disks" \
			--slurpfile sts "$work/st.json" \
			'$sts[0] as $st |
			 {bench:"boot_curve", mode:$mode, vcpus:$n, disks:$disks, round:$round,
			  boot_to_init_ms:(if $up == "" then null else ($up | tonumber) / 1e6 end),
			  cpus_online:(if $cpus == "" then null else ($cpus | tonumber) end),
			  exit_status:$rc,
			  kvm_exits:$st.kvm.exits, mmio_exits:$st.kvm.mmio_exits,
			  io_exits:$st.kvm.io_exits,
			  wiring_commits:([$st.disks[]?.wiring_commits] | add),
			  wiring_ioctls:([$st.disks[]?.wiring_ioctls] | add),
			  wiring_ms:(if $st then ([$st.disks[]?.wiring_ns] | add // 0) / 1e6 else null end),
			  method:"launch to the MINIVMM-GUEST-UP console line (the guest then reboots itself)"}')"
	}

	for ((r = round0; r < round0 + rounds; r++)); do
		for n in "${counts[@]}"; do
			modes=(minivmm-qn minivmm-q1)
			# Per-vector wiring only where it can differ (> 1 queue).
			((n > 1)) && modes+=(minivmm-pv)
			[[ -n $vmlinux && $disks == 1 ]] && modes+=(minivmm-pvh)
			[[ -n $qemu && $n -le 288 ]] && modes+=(qemu-qn)
			# The many-disk shape: QEMU with 1 queue too (seed 002's
			# before/after), with one disk when --modes asks for it;
			# the PVH pair only with one disk.
			[[ -n $qemu && $n -le 288 && ($disks -gt 1 || " $only " == *" qemu-q1 "*) ]] &&
				modes+=(qemu-q1)
			[[ -n $qemu && -n $vmlinux && $n -le 288 && $disks == 1 ]] && modes+=(qemu-pvh)
			if [[ $only != all ]]; then
				keep=()
				for m in "${modes[@]}"; do
					[[ " $only " == *" $m "* ]] && keep+=("$m")
				done
				modes=("${keep[@]}")
			fi
			# Rotate the order each round so no mode always goes first.
			for ((k = 0; k < ${#modes[@]}; k++)); do
				boot "${modes[(k + r - 1) % ${#modes[@]}]}" "$n" "$r"
			done
		done
	done
	exit 0
fi

# -------------------------------------------------------------- outside
cd "$here/.."
mode=--quick counts="" rounds="" report=0 disks=1 only=all
while [[ $# -gt 0 ]]; do
	case $1 in
	--quick | --full) mode=$1; shift ;;
	--report) report=1; shift ;;
	--counts) counts=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--disks) disks=$2; shift 2 ;;
	--modes) only=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
	*) bench_die "unknown option $1" ;;
	esac
done
if [[ $mode == --full ]]; then
	counts=${counts:-1 8 32 64 128 255 288 384} rounds=${rounds:-3}
else
	counts=${counts:-1 8 32} rounds=${rounds:-1}
fi
[[ $disks =~ ^[1-9][0-9]*$ && $disks -le 247 ]] || bench_die "--disks: 1..247"
out=${BENCH_OUT:-bench/results}
# Where the results go: boot.* for one disk, boot_disksN.* for N.
tag=boot
((disks == 1)) || tag=boot_disks$disks
build=${BENCH_BUILD_DIR:-build}
mkdir -p "$out"
for t in jq gnuplot cmake; do
	command -v "$t" >/dev/null || bench_die "$t is missing (scripts/deps.sh installs it)"
done
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
if [[ $report == 0 ]]; then
	cmake --build "$build" --target minivmm >/dev/null
	mapfile -t guest < <(tests/rig/mkguest.sh)
	# The uncompressed vmlinux fetch-kernel.sh keeps beside the bzImage
	# (the rig boots its L1 from it through PVH).
	vmlinux=$(dirname "$(readlink -f "${guest[0]}")")/vmlinux
	[[ -r $vmlinux ]] || { bench_log "no $vmlinux: PVH modes skipped"; vmlinux=""; }
	bench_log "boot curve: vCPUs $counts, $rounds round(s), in the rig"
	# One L1 per round and count: the rig's L1 stalls now and then (about
	# 1 in 8 big boots; rig-run reruns a stalled one), and a stall then
	# costs that group of boots, not the whole curve.
	: >"$out/$tag-run.log"
	export RIG_PASS_ENV=${RIG_PASS_ENV:+$RIG_PASS_ENV,}BENCH_BOOT_TIMEOUT
	for ((r = 1; r <= rounds; r++)); do
		for n in $counts; do
			bench_rig_run_marker "round=$r vcpus=$n" >>"$out/$tag-run.log"
			tests/rig/rig-run --mem "${BENCH_L1_MEM:-8G}" --timeout "${BENCH_TIMEOUT:-7200}" \
				--stall-retries "${RIG_STALL_RETRIES:-1}" -- \
				"$here/${0##*/}" --inner "$PWD/$build/minivmm" "${guest[0]}" "${guest[1]}" \
				"$vmlinux" 1 "$disks" "$r" "$only" "$n" 2>&1 | tee -a "$out/$tag-run.log" |
				grep -v '^BENCH-JSON ' >&2 || true
		done
	done
else
	date=$(stat -c %y "$out/$tag-run.log" | cut -d. -f1)
fi
bench_records "$out/$tag-run.log" | jq -c --arg date "$date" '. + {date:$date}' >"$out/$tag.json"
[[ -s $out/$tag.json ]] || bench_die "no records (see $out/$tag-run.log)"
# What the records cover (also for --report).
counts=$(jq -r 'select(.bench == "boot_curve") | .vcpus' "$out/$tag.json" | sort -nu | tr '\n' ' ')
counts=${counts% }
rounds=$(jq -r 'select(.bench == "boot_curve") | .round' "$out/$tag.json" | sort -nu | wc -l)

# Medians per mode and count; ratios against minivmm-qn.
jq -rs "$BENCH_JQ_DEFS"'
	[.[] | select(.bench == "boot_curve")] as $b |
	($b | map(.vcpus) | unique) as $ns |
	def medf(m; n; f): [$b[] | select(.mode == m and .vcpus == n) | f] | median;
	def med(m; n): medf(m; n; .boot_to_init_ms);
	def q(a; b): if a and b then (a / b | r(2)) else "-" end;
	"| vCPUs | minivmm, 1 queue/vCPU (ms) | minivmm, 1 queue (ms) | minivmm, per-vector wiring (ms) | minivmm PVH, 1 queue/vCPU (ms) | QEMU 7.2, 1 queue/vCPU (ms) | QEMU 7.2, 1 queue (ms) | QEMU 7.2 PVH (ms) | qn / q1 | per-vector / batched | QEMU qn / q1 | minivmm / QEMU | minivmm PVH / QEMU | minivmm PVH / QEMU PVH | wiring ms batched / per-vector (ioctls) | boots |",
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
	($ns[] as $n | [med("minivmm-qn"; $n), med("minivmm-q1"; $n), med("minivmm-pvh"; $n),
			 med("qemu-qn"; $n), med("qemu-pvh"; $n), med("qemu-q1"; $n), med("minivmm-pv"; $n)] as $m |
	 [medf("minivmm-qn"; $n; .wiring_ms), medf("minivmm-pv"; $n; .wiring_ms),
	  medf("minivmm-qn"; $n; .wiring_ioctls), medf("minivmm-pv"; $n; .wiring_ioctls)] as $w |
	 "| \($n) | \($m[0] | r(0) // "-") | \($m[1] | r(0) // "-") | \($m[6] | r(0) // "-") | \($m[2] | r(0) // "-") | \($m[3] | r(0) // "-") | \($m[5] | r(0) // "-") | \($m[4] | r(0) // "-") | " +
	 "\(q($m[0]; $m[1])) | \(q($m[6]; $m[0])) | \(q($m[3]; $m[5])) | \(q($m[0]; $m[3])) | \(q($m[2]; $m[3])) | \(q($m[2]; $m[4])) | " +
	 "\($w[0] | r(1) // "-") / \($w[1] | r(1) // "-") (\($w[2] // "-") / \($w[3] // "-")) | " +
	 "\([$b[] | select(.vcpus == $n)] | length) |")
' "$out/$tag.json" >"$out/$tag-table.md"
{
	echo "# Guest boot time vs vCPUs, $disks disk(s) (bench/boot_curve.sh --counts \"$counts\" --rounds $rounds, $date)"
	echo
	echo "Launch to the guest's init marker, medians of up to $rounds round(s), in the"
	echo "nested-KVM rig (L1 under TCG, one CPU): absolute times are the rig's,"
	echo "ratios are what carries over.  Failed boots have no time and count in"
	echo "\"boots\"; a round whose L1 stalled twice has no boots (see the run log)."
	echo "Records per mode, count and round: $tag.json."
	echo
	cat "$out/$tag-table.md"
} >"$out/$tag.md"
rm -f "$out/$tag-table.md"

# Each boot a point and each mode's medians a line (one colour a mode), on
# log axes so that 1-64 vCPUs (seconds) and 255-384 (tens of minutes) both
# show; with one vCPU count (--disks 101) the modes stand side by side.
dx=1
[[ $counts == *" "* ]] || dx=1.06
titles=("minivmm, 1 queue/vCPU" "minivmm, 1 queue" "minivmm, 1 queue/vCPU, per-vector wiring"
	"minivmm PVH (vmlinux), 1 queue/vCPU" "QEMU 7.2 q35, 1 queue/vCPU" "QEMU 7.2 q35, 1 queue"
	"QEMU 7.2 q35 PVH (vmlinux), 1 queue/vCPU")
plots=() i=0
for m in minivmm-qn minivmm-q1 minivmm-pv minivmm-pvh qemu-qn qemu-q1 qemu-pvh; do
	# shellcheck disable=SC2016 # $m is a jq variable
	sel='select(.bench == "boot_curve" and .mode == $m and .boot_to_init_ms != null)'
	jq -r --arg m "$m" "$sel"' | "\(.vcpus) \(.boot_to_init_ms / 1000)"' \
		"$out/$tag.json" >"$out/.boot.$m.dat"
	jq -rs --arg m "$m" "$BENCH_JQ_DEFS"'[.[] | '"$sel"'] | group_by(.vcpus)[] |
		"\(.[0].vcpus) \(map(.boot_to_init_ms / 1000) | median)"' \
		"$out/$tag.json" >"$out/.boot.$m.med"
	i=$((i + 1))
	[[ -s $out/.boot.$m.dat ]] || continue
	plots+=("\"$out/.boot.$m.med\" using (\$1 * $dx ** ($i - 4)):2 with linespoints lc $i pt 7 ps 0.6 lw 2 title \"${titles[i - 1]}\"")
	plots+=("\"$out/.boot.$m.dat\" using (\$1 * $dx ** ($i - 4)):2 with points lc $i pt $i notitle")
done
# No boot reached init: the table says so, there is nothing to draw.
((${#plots[@]})) && gnuplot <<EOF
set terminal pngcairo size 900,560
set output "$out/${tag}_curve.png"
set title "Guest boot (launch to init) vs vCPUs, nested-KVM rig (lines: medians; points: each boot)"
set xlabel "vCPUs"
set ylabel "seconds"
set logscale xy
set xtics (${counts// /,}) rotate by 90 right
set xrange [${counts%% *} * 0.8:${counts##* } * 1.25]
set key left top
set grid
plot $(IFS=,; echo "${plots[*]}")
EOF
rm -f "$out"/.boot.*.dat "$out"/.boot.*.med
cat "$out/$tag.md"
