#!/bin/bash
# vhost_guest_bench.sh --smoke|--quick|--full BUILD_DIR KERNEL INITRD TOOLS
#
# The KVM half of bench/vhost_bench.sh; runs where /dev/kvm works (inside
# the nested-KVM rig).  The same QEMU guest (Debian's qemu-system-x86_64,
# BENCH_SMP vCPUs, memory-backend-memfd share=on) with two vhost-user-blk
# disks, each served by its own back-end process:
#   q1  num-queues=1          qn  num-queues=vCPUs
# from either minivmm-blkd (BUILD_DIR/minivmm-blkd, defaults, direct=on) or
# qemu-storage-daemon (--export type=vhost-user-blk, io_uring, an iothread,
# cache.direct=on), alternated boot by boot (A B A B ...), one boot per
# queue depth (--smoke: minivmm-blkd at QD 32 only; BENCH_VHOST_BACKENDS
# picks the back ends among blkd, qsd, blkda (--io-sched adaptive) and blkdn -- minivmm-blkd with
# --io-sched normal --; BENCH_QDS the queue depths):
#   qd1   fio 1 job, iodepth 1 (latency)
#   qd32  fio one job per vCPU, iodepth 32 each
# tests/guest/bench-fio runs 4k random reads (io_uring, O_DIRECT) on both
# disks (picked by their queue counts: qsd answers GET_ID with its own
# serial).  Per phase: guest IOPS, mean latency, requests and interrupts
# (guest), KVM exits of the QEMU process (debugfs), CPU time of the disk's
# back-end process (/proc/PID/stat utime+stime, all threads).  Per boot
# and disk, minivmm-blkd's own doorbells (the guest's kicks) and
# interrupts (--stats-json; one QD
# per boot, so they belong to that QD).  Sparse images: reads of holes,
# the request path rather than L1's emulated disk.
#
# Prints "BENCH-JSON {...}" records on stdout, progress on stderr.  A boot
# that fails (QEMU's status or the payload's) prints its guest console and
# back-end stderr tails as "bench: | " lines, leaves a vhost_error record
# and is run once more; a second failure makes the exit status 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

mode=${1:?--smoke|--quick|--full}
build=${2:?BUILD_DIR}
kernel=${3:?KERNEL}
initrd=${4:?INITRD}
tools=${5:?TOOLS}
# ROUND (optional): run only that round of the mode's (bench/vhost_bench.sh
# gives each round of --full its own L1, so an L1 stall costs one round).
only_round=${6:-}
only=
case "$mode" in
--smoke) rounds=1 runtime=1 qds="32" only=blkd ;;
--quick) rounds=1 runtime=3 qds="1 32" ;;
--full) rounds=5 runtime=5 qds="1 32" ;;
*) bench_die "mode must be --smoke, --quick or --full" ;;
esac
rounds=${BENCH_ROUNDS:-$rounds}
qds=${BENCH_QDS:-$qds}
runtime=${BENCH_RUNTIME:-$runtime}
smp=${BENCH_SMP:-2}
mem_mib=512
[[ -r /dev/kvm && -w /dev/kvm ]] || bench_die "no usable /dev/kvm (run through tests/rig/rig-run)"
blkd=$build/minivmm-blkd
[[ -x $blkd ]] || bench_die "$blkd missing"
qemu=$(command -v qemu-system-x86_64) || bench_die "qemu-system-x86_64 missing"
qsd=$(command -v qemu-storage-daemon || true)
backends="blkd"
[[ -n $qsd ]] && backends="blkd qsd"
backends=${BENCH_VHOST_BACKENDS:-${only:-$backends}}
[[ -n $qsd ]] || bench_log "qemu-storage-daemon missing: minivmm-blkd only"
work=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/vhost-bench.XXXXXX")
bpids=()
trap 'for p in "${bpids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
bench_debugfs # KVM exits of the QEMU process
clk_tck=$(getconf CLK_TCK)
for d in q1 qn; do truncate -s 256M "$work/$d.img"; done

bench_emit "$(jq -cn --arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
	--argjson cpus "$(nproc)" --arg qemu "$("$qemu" --version | head -1)" \
	--arg qsd "$([[ -n $qsd ]] && "$qsd" --version | head -1)" --argjson smp "$smp" \
	'{bench:"vhost_machine", kvm_host_cpu:$cpu, kvm_host_cpus:$cpus, qemu_version:$qemu,
	  qsd_version:$qsd, guest_vcpus:$smp, nested_rig:true}')"

# start_backend KIND DISK QUEUES: one back-end process on $work/DISK.sock;
# sets BPID.
start_backend() {
	local kind=$1 d=$2 nq=$3 log=$work/$2.log
	rm -f "$work/$d.sock"
	if [[ $kind == blkd || $kind == blkdn || $kind == blkda ]]; then
		# blkdn: the same daemon with --io-sched normal (the I/O
		# threads preempt a vCPU they share a CPU with: bench/vhost_iosched.sh);
		# blkda: --io-sched adaptive
		local sched=batch
		[[ $kind == blkdn ]] && sched=normal
		[[ $kind == blkda ]] && sched=adaptive
		"$blkd" --socket "$work/$d.sock" --stats-json --io-sched "$sched" \
			--disk "path=$work/$d.img,num-queues=$nq,serial=$d,direct=on" \
			</dev/null >"$work/$d.stats" 2>"$log" &
	else
		"$qsd" --object iothread,id=io0 \
			--blockdev "driver=file,node-name=f,filename=$work/$d.img,cache.direct=on,aio=io_uring" \
			--export "type=vhost-user-blk,id=e,node-name=f,addr.type=unix,addr.path=$work/$d.sock,num-queues=$nq,writable=on,iothread=io0" \
			</dev/null >"$log" 2>&1 &
	fi
	BPID=$!
	bpids+=("$BPID")
	for _ in $(seq 100); do
		[[ -S $work/$d.sock ]] && { sleep 0.2; return 0; }
		sleep 0.1
	done
	cat "$log" >&2
	bench_die "$kind did not start for $d"
}

# Counters without forks (read while the guest measures).
KVMC=
kvm_counters() { # PID -> KVMC="exits"
	local dir v
	KVMC=
	for dir in /sys/kernel/debug/kvm/"$1"-*; do
		[[ -r $dir/exits ]] || continue
		read -r v <"$dir/exits" && KVMC=$v
		return 0
	done
	return 1
}
CPUT=
cpu_ticks() { # PID -> CPUT=utime+stime (ticks)
	local s
	read -r -a s <"/proc/$1/stat" || { CPUT=; return 1; }
	CPUT=$((s[13] + s[14]))
}

# boot KIND QD ROUND
boot() {
	local kind=$1 qd=$2 round=$3 jobs pid_q1 pid_qn log=$work/boot.log
	jobs=$smp
	[[ $qd == 1 ]] && jobs=1
	start_backend "$kind" q1 1
	pid_q1=$BPID
	start_backend "$kind" qn "$smp"
	pid_qn=$BPID
	local disks="@q1,@qn"
	((round % 2 == 0)) && disks="@qn,@q1"
	local cmd=("$qemu" -enable-kvm -cpu host -M pc -smp "$smp" -m "${mem_mib}M"
		-object "memory-backend-memfd,id=mem,size=${mem_mib}M,share=on" -numa node,memdev=mem
		-nographic -nodefaults -no-user-config -serial stdio -no-reboot
		-kernel "$kernel" -initrd "$initrd"
		-chardev "socket,id=c1,path=$work/q1.sock" -device vhost-user-blk-pci,chardev=c1,num-queues=1
		-chardev "socket,id=cn,path=$work/qn.sock" -device "vhost-user-blk-pci,chardev=cn,num-queues=$smp"
		-drive "file=$tools,if=none,id=tools,format=raw,readonly=on"
		-device virtio-blk-pci,drive=tools,serial=tools,num-queues=1
		-append "console=ttyS0 reboot=k panic=-1 pci=conf1 i8042.noaux i8042.nopnp i8042.dumbkbd quiet guest.run=bench-fio guest.disks=$disks guest.rounds=1 guest.runtime=$runtime guest.qd=$qd guest.jobs=$jobs")
	bench_log "round $round: $kind qd$qd"
	rm -f "$work/out.fifo"
	mkfifo "$work/out.fifo"
	"${cmd[@]}" </dev/null >"$work/out.fifo" 2>&1 &
	local qpid=$! fd line rst e0= c0= bp phases=() payload_rc=
	exec {fd}<"$work/out.fifo"
	: >"$log"
	while :; do
		IFS= read -r -t 900 -u "$fd" line
		rst=$?
		((rst == 0)) || break
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$log"
		case "$line" in
		*BENCH-BEGIN*)
			bp=$pid_q1
			[[ $line == *disk=@qn* ]] && bp=$pid_qn
			kvm_counters "$qpid"; e0=$KVMC
			cpu_ticks "$bp"; c0=$CPUT
			;;
		*BENCH-END*)
			kvm_counters "$qpid"
			cpu_ticks "$bp"
			phases+=("${line#*BENCH-END }|$e0|$KVMC|$c0|$CPUT")
			;;
		*MINIVMM-PAYLOAD-EXIT=*) payload_rc=${line##*=} ;;
		esac
	done
	((rst > 128)) && { bench_log "no output for 900 s: killing QEMU"; kill -9 "$qpid"; }
	exec {fd}<&-
	local rc=0
	wait "$qpid" || rc=$?
	for p in $pid_q1 $pid_qn; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	bpids=()
	if [[ $rc != 0 || $payload_rc != 0 ]]; then
		# The log lines carry "bench: " so that vhost_bench.sh's filter
		# keeps them: a failure in CI must be diagnosable from its output.
		bench_log "$kind qd$qd round $round failed (QEMU $rc, payload ${payload_rc:-none}); guest console tail:"
		tail -n 40 "$log" | sed 's/^/bench: | /' >&2
		for d in q1 qn; do
			[[ -s $work/$d.log ]] || continue
			bench_log "$kind $d back end's stderr:"
			tail -n 10 "$work/$d.log" | sed 's/^/bench: | /' >&2
		done
		bench_emit "$(jq -cn --arg b "$kind" --argjson qd "$qd" --argjson r "$round" \
			'{bench:"vhost_error", backend:$b, qd:$qd, round:$r}')"
		return 1
	fi
	local ph pl e0 e1 c0 c1 disk
	for ph in "${phases[@]}"; do
		IFS='|' read -r pl e0 e1 c0 c1 <<<"$ph"
		disk=$(bench_kv "$pl" disk)
		disk=${disk#@}
		local stats=null
		if [[ $kind == blkd* && -s $work/$disk.stats ]]; then
			stats=$(tail -n 1 "$work/$disk.stats")
		fi
		local rec
		rec=$(jq -cn --arg b "$kind" --arg disk "$disk" --argjson r "$round" \
			--argjson qd "$qd" --argjson smp "$smp" \
			--argjson jobs "$(bench_kv "$pl" jobs)" --argjson q "$(bench_kv "$pl" queues)" \
			--argjson iops "$(bench_kv "$pl" iops)" --argjson lat "$(bench_kv "$pl" lat_us)" \
			--argjson reqs "$(bench_kv "$pl" reqs)" --argjson irqs "$(bench_kv "$pl" irqs)" \
			--argjson rt "$(bench_kv "$pl" runtime)" --arg e0 "$e0" --arg e1 "$e1" \
			--arg c0 "$c0" --arg c1 "$c1" --argjson tck "$clk_tck" --argjson st "$stats" '
			{bench:"vhost_guest_io", backend:$b, disk:$disk, round:$r, qd:$qd, vcpus:$smp,
			 queues:$q, fio:{rw:"randread", bs:"4k", ioengine:"io_uring", direct:1,
			   numjobs:$jobs, iodepth:$qd, runtime_s:$rt},
			 iops:$iops, lat_us:$lat, requests:$reqs, guest_interrupts:$irqs,
			 guest_interrupts_per_request:(if $reqs > 0 then $irqs / $reqs else null end)}
			+ (if $e0 != "" and $e1 != "" then
			     {kvm_exits:(($e1 | tonumber) - ($e0 | tonumber)),
			      kvm_exits_per_request:(if $reqs > 0 then (($e1 | tonumber) - ($e0 | tonumber)) / $reqs else null end)}
			   else {} end)
			+ (if $c0 != "" and $c1 != "" and $reqs > 0 then
			     {backend_cpu_us_per_request:((($c1 | tonumber) - ($c0 | tonumber)) * 1e6 / $tck / $reqs)}
			   else {} end)
			+ (if $st != null then
			     {blkd_boot_requests:$st.blkd.requests, blkd_boot_doorbells:$st.blkd.doorbells,
			      blkd_boot_kicks:$st.blkd.kicks, blkd_boot_interrupts:$st.blkd.interrupts,
			      blkd_notifications_per_request:(if $st.blkd.requests > 0 then
			        ($st.blkd.doorbells + $st.blkd.interrupts) / $st.blkd.requests else null end)}
			   else {} end)')
		bench_emit "$rec"
		bench_log "  $kind $disk qd$qd: $(jq -r '"iops=\(.iops) lat=\(.lat_us)us irq/req=\(.guest_interrupts_per_request) exits/req=\(.kvm_exits_per_request // "n/a") cpu_us/req=\(.backend_cpu_us_per_request // "n/a") blkd (doorbells+irqs)/req=\(.blkd_notifications_per_request // "n/a")"' <<<"$rec")"
	done
	return 0
}

fail=0
first=1
[[ -n $only_round ]] && first=$only_round rounds=$only_round
for ((r = first; r <= rounds; r++)); do
	for qd in $qds; do
		# A B A B, the order flipped every other round.
		order=$backends
		((r % 2 == 0)) && order=$(echo "$backends" | tr ' ' '\n' | tac | tr '\n' ' ')
		for b in $order; do
			boot "$b" "$qd" "$r" && continue
			# One failed boot (its console shown above, a vhost_error
			# record kept) is run again once, loudly: L2 guests in
			# the TCG rig occasionally die for the emulator's reasons.
			bench_log "RETRYING $b qd$qd round $r once (the failure above stays in the records)"
			boot "$b" "$qd" "$r" || fail=1
		done
	done
done
exit $fail
