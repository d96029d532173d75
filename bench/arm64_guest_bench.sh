#!/bin/bash
# arm64_guest_bench.sh MINIVMM IMAGE INITRD TOOLS ROUND
#
# The in-rig half of bench/arm64_bench.sh: one round, run inside the arm64
# rig's L1 (tests/rig/rig-run --arch arm64), whose userland is a static
# bash and busybox: no jq, no host tools, so the records are written with
# printf.  Prints one "BENCH-JSON {...}" line per measurement on stdout and
# progress ("bench: ...") on stderr.
#
#  1. boot: minivmm boots the arm64 guest (no payload; one data disk with
#     the default queue count, one per vCPU, as bench/boot_curve.sh's
#     "minivmm, 1 queue/vCPU" column on x86) at each
#     vCPU count of BENCH_A64_COUNTS ("1 2 4 8 16"); time from launch to the
#     guest's "MINIVMM-GUEST-UP" line and to minivmm's exit (the guest's
#     reboot -f), and minivmm's own KVM counters (--stats-json: exits over
#     the whole boot; on arm64 only "exits" and "signal_exits" exist in
#     KVM's binary stats, the x86 names read as UINT64_MAX).
#  2. I/O: per queue depth of BENCH_A64_QDS ("1 32"; the order flips with
#     the round) one boot with BENCH_A64_IO_SMP (4) vCPUs and two data
#     disks, "qn" (num-queues = vCPUs, minivmm's default) and "q1"
#     (num-queues=1), plus the read-only tools disk with fio (tests/rig/
#     mktools.sh, RIG_ARCH=arm64); the guest payload tests/guest/bench-fio
#     runs 4k random reads (io_uring, O_DIRECT; QD 1: one job at depth 1;
#     QD 32: one job per vCPU at depth 32 each) for BENCH_RUNTIME (5) s per
#     phase, alternating the disks (qn q1 qn q1 on odd rounds, q1 qn q1 qn
#     on even ones: guest.rounds=2).  Per phase: IOPS, mean latency, the
#     guest's requests and request interrupts, and the VM's KVM exits read
#     from debugfs (/sys/kernel/debug/kvm/PID-FD/: exits, mmio_exit_user,
#     mmio_exit_kernel, wfi_exit_stat, hvc_exit_stat) at the payload's
#     BEGIN and END lines.  Per boot and disk: minivmm's --stats-json
#     counters (requests, doorbells, kicks, interrupts).
# Disks are sparse files on $RIG_SCRATCH (ext4 on a virtio disk of L1) with
# direct=on: reads of holes measure the VMM's request path, not L1's
# emulated disk.  Timings are reported, never asserted.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

vmm=${1:?MINIVMM}
kernel=${2:?IMAGE}
initrd=${3:?INITRD}
tools=${4:?TOOLS}
round=${5:?ROUND}
counts=${BENCH_A64_COUNTS:-1 2 4 8 16}
qds=${BENCH_A64_QDS:-1 32}
io_smp=${BENCH_A64_IO_SMP:-4}
runtime=${BENCH_RUNTIME:-5}
mem_mib=${BENCH_A64_MEM_MIB:-512}
img_mib=256
[[ -r /dev/kvm && -w /dev/kvm ]] || bench_die "no usable /dev/kvm (run through tests/rig/rig-run --arch arm64)"
[[ -x $vmm ]] || bench_die "no minivmm at $vmm"
work=$(mktemp -d "${RIG_SCRATCH:-/tmp}/a64bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

bench_debugfs
# The per-VM KVM counters read around each fio phase (summed over vCPUs).
kvm_files=(exits mmio_exit_user mmio_exit_kernel wfi_exit_stat hvc_exit_stat)

# A JSON string (the values here are plain: names, versions, paths).
js() {
	local s=${1//\\/\\\\}
	printf '"%s"' "${s//\"/\\\"}"
}
# A number, or null.
jn() {
	if [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; then printf '%s' "$1"; else printf null; fi
}

# ---------------------------------------------------------------- machine
# (No process substitution: the L1 has no /dev/fd.)
mem_kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
bench_emit "{\"bench\":\"a64_machine\",\"round\":$round,\"kvm_host_kernel\":$(js "$(uname -r)"),\"kvm_host_arch\":$(js "$(uname -m)"),\"kvm_host_cpus\":$(nproc),\"kvm_host_mem_kib\":$(jn "$mem_kib"),\"kvm_debugfs\":$([[ $have_debugfs == 1 ]] && echo true || echo false),\"nested_rig\":$([[ -n ${RIG_IN_L1:-} ]] && echo true || echo false),\"minivmm\":$(js "$vmm"),\"mem_mib\":$mem_mib}"

# kvm_counters PID: KVMC = the kvm_files of the (first) VM of PID, space
# separated ("-" for a file this kernel lacks); bash builtins only, no fork:
# it runs while the guest measures.
KVMC=
kvm_counters() {
	local dir f v out=()
	KVMC=
	for dir in /sys/kernel/debug/kvm/"$1"-*; do
		[[ -r $dir/exits ]] || continue
		for f in "${kvm_files[@]}"; do
			v=-
			[[ -r $dir/$f ]] && { read -r v <"$dir/$f" || v=-; }
			out+=("$v")
		done
		KVMC="${out[*]}"
		return 0
	done
	return 1
}

# run_vm TAG ARGS...: runs minivmm ARGS with --stats-json, its console into
# $work/TAG.log; sets UP_US (launch -> MINIVMM-GUEST-UP), END_US (launch ->
# exit), RC, PAYLOAD_RC, STATS (the --stats-json line) and, per fio phase,
# appends "END-LINE|counters at BEGIN|counters at END" to $work/TAG.phases.
UP_US='' END_US='' RC='' PAYLOAD_RC='' STATS='' UP_CPUS=''
run_vm() {
	local tag=$1 fd pid line t0 rst begin=""
	shift
	UP_US='' END_US='' RC=0 PAYLOAD_RC='' STATS='' UP_CPUS=''
	rm -f "$work/out.fifo" "$work/$tag.log" "$work/$tag.phases"
	mkfifo "$work/out.fifo"
	t0=${EPOCHREALTIME/./} # microseconds, no fork
	"$vmm" --stats-json "$@" </dev/null >"$work/out.fifo" 2>&1 &
	pid=$!
	exec {fd}<"$work/out.fifo"
	while :; do
		IFS= read -r -t 600 -u "$fd" line
		rst=$?
		((rst == 0)) || break
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$work/$tag.log"
		case "$line" in
		*MINIVMM-GUEST-UP*)
			UP_US=$((${EPOCHREALTIME/./} - t0))
			UP_CPUS=${line##*cpus=}
			;;
		*BENCH-BEGIN*)
			kvm_counters "$pid"
			begin=$KVMC
			;;
		*BENCH-END*)
			kvm_counters "$pid"
			printf '%s|%s|%s\n' "${line#*BENCH-END }" "$begin" "$KVMC" >>"$work/$tag.phases"
			;;
		'{"kvm"'*) STATS=$line ;;
		*MINIVMM-PAYLOAD-EXIT=*) PAYLOAD_RC=${line##*MINIVMM-PAYLOAD-EXIT=} ;;
		esac
	done
	if ((rst > 128)); then
		bench_log "$tag: no output for 600 s, killing minivmm"
		kill "$pid" 2>/dev/null
	fi
	exec {fd}<&-
	wait "$pid" || RC=$?
	END_US=$((${EPOCHREALTIME/./} - t0))
}

# stats_kvm: minivmm's KVM totals of the last run as a JSON object (null).
stats_kvm() {
	local k=${STATS#\{\"kvm\":}
	if [[ -n $STATS && $k == \{* ]]; then printf '%s' "${k%%\}*}}"; else printf null; fi
}

vm_fail() {
	bench_log "$1 failed (exit $RC, payload ${PAYLOAD_RC:-none}); console tail:"
	tail -n 25 "$work/$1.log" >&2 2>/dev/null
	bench_emit "{\"bench\":\"a64_error\",\"round\":$round,\"what\":$(js "$1"),\"exit_status\":$(jn "$RC"),\"payload_exit\":$(js "$PAYLOAD_RC")}"
}

fail=0
# ---------------------------------------------------------------- 1. boot
truncate -s 64M "$work/boot.img"
for n in $counts; do
	bench_log "round $round: boot, $n vCPU(s)"
	run_vm "boot$n" --smp "$n" --mem "${mem_mib}M" --kernel "$kernel" --initrd "$initrd" \
		--disk "path=$work/boot.img,serial=data,direct=on" --append quiet
	if [[ -z $UP_US || $RC != 0 ]]; then
		vm_fail "boot$n"
		fail=1
		continue
	fi
	bench_emit "{\"bench\":\"a64_boot\",\"round\":$round,\"smp\":$n,\"mem_mib\":$mem_mib,\"guest_cpus\":$(jn "$UP_CPUS"),\"boot_to_init_ms\":$(jn "$((UP_US))e-3"),\"launch_to_exit_ms\":$(jn "$((END_US))e-3"),\"vmm_stats_kvm\":$(stats_kvm),\"method\":\"launch to the MINIVMM-GUEST-UP console line; exit after the guest's reboot -f (PSCI SYSTEM_RESET)\"}"
	bench_log "  boot $n vCPUs: $((UP_US / 1000)) ms to init, $((END_US / 1000)) ms to exit"
done

# ---------------------------------------------------------------- 2. I/O
for d in qn q1; do
	truncate -s ${img_mib}M "$work/$d.img"
done
read -r -a qdl <<<"$qds"
order=("${qdl[@]}")
if ((round % 2 == 0)); then # flip the QD order on even rounds
	order=()
	for ((i = ${#qdl[@]} - 1; i >= 0; i--)); do order+=("${qdl[i]}"); done
fi
disks=qn,q1
((round % 2 == 0)) && disks=q1,qn
for qd in "${order[@]}"; do
	jobs=$io_smp
	[[ $qd == 1 ]] && jobs=1
	tag=io$qd
	bench_log "round $round: I/O, $io_smp vCPUs, QD $qd ($jobs job(s)), phases ${disks//,/ } x2, ${runtime} s each"
	run_vm "$tag" --smp "$io_smp" --mem "${mem_mib}M" --kernel "$kernel" --initrd "$initrd" \
		--disk "path=$work/qn.img,num-queues=$io_smp,serial=qn,direct=on" \
		--disk "path=$work/q1.img,num-queues=1,serial=q1,direct=on" \
		--disk "path=$tools,ro=on,serial=tools" \
		--append "quiet guest.run=bench-fio guest.disks=$disks guest.rounds=2 guest.runtime=$runtime guest.qd=$qd guest.jobs=$jobs"
	if [[ -z $UP_US || $PAYLOAD_RC != 0 || $RC != 0 ]]; then
		vm_fail "$tag"
		fail=1
		continue
	fi
	touch "$work/$tag.phases"
	while IFS='|' read -r pl b0 e1; do
		read -r -a kb <<<"$b0"
		read -r -a ke <<<"$e1"
		kvm=
		for ((i = 0; i < ${#kvm_files[@]}; i++)); do
			v=null
			[[ ${kb[i]:-} =~ ^[0-9]+$ && ${ke[i]:-} =~ ^[0-9]+$ ]] && v=$((ke[i] - kb[i]))
			kvm+=",\"kvm_${kvm_files[i]}\":$v"
		done
		bench_emit "{\"bench\":\"a64_guest_io\",\"round\":$round,\"boot_qd\":$qd,\"smp\":$io_smp,\"phase\":$(jn "$(bench_kv "$pl" round)"),\"disk\":$(js "$(bench_kv "$pl" disk)"),\"queues\":$(jn "$(bench_kv "$pl" queues)"),\"qd\":$(jn "$(bench_kv "$pl" qd)"),\"jobs\":$(jn "$(bench_kv "$pl" jobs)"),\"runtime_s\":$(jn "$(bench_kv "$pl" runtime)"),\"iops\":$(jn "$(bench_kv "$pl" iops)"),\"lat_us\":$(jn "$(bench_kv "$pl" lat_us)"),\"requests\":$(jn "$(bench_kv "$pl" reqs)"),\"guest_interrupts\":$(jn "$(bench_kv "$pl" irqs)")$kvm}"
		bench_log "  QD $qd $(bench_kv "$pl" disk): iops=$(bench_kv "$pl" iops) lat_us=$(bench_kv "$pl" lat_us) reqs=$(bench_kv "$pl" reqs) irqs=$(bench_kv "$pl" irqs) exits=${kvm#*kvm_exits\":}"
	done <"$work/$tag.phases"
	# minivmm's counters of the whole boot (disk ids follow --disk order:
	# 0 qn, 1 q1, 2 tools); the host's jq splits the disks.
	bench_emit "{\"bench\":\"a64_vmm_stats\",\"round\":$round,\"boot_qd\":$qd,\"smp\":$io_smp,\"jobs\":$jobs,\"disk_names\":[\"qn\",\"q1\",\"tools\"],\"boot_to_init_ms\":$(jn "$((UP_US))e-3"),\"stats\":${STATS:-null}}"
done
exit $fail
