#!/bin/bash
# guest_bench.sh --smoke|--quick|--full BUILD_DIR KERNEL INITRD TOOLS
#
# The KVM half of bench/run.sh; runs where /dev/kvm works (inside the
# nested-KVM rig: run.sh calls it through tests/rig/rig-run).  Prints one
# "BENCH-JSON {...}" line per measurement on stdout (the rig discards files
# written in L1; only the output comes back) and progress on stderr.
#
#  1. wiring:  BUILD_DIR/bench/wiring_bench (batched vs per-vector wiring).
#  2.-4. guest: boots minivmm and QEMU alternately (A B A B ...), the same
#     kernel, initramfs, command line, vCPUs, memory and disk images, with
#     tests/guest/bench-fio as the payload.  Per boot: time from launch to
#     "MINIVMM-GUEST-UP", CPU and wall time from exec to the first KVM_RUN
#     (footprint_exec + footprint_preload.so), resident memory without guest
#     RAM at MINIVMM-GUEST-UP (/proc/PID/smaps), then per fio phase the
#     guest's IOPS, requests and interrupts and the VM's KVM exits (debugfs
#     /sys/kernel/debug/kvm/PID-FD/, read at the phase's begin and end
#     markers).  minivmm's --stats-json adds kicks and interrupts per disk.
#
# Disks (sparse raw images on $RIG_SCRATCH, ext4, O_DIRECT on both sides):
#   q1      1 queue                              (minivmm, QEMU)
#   qn      one queue per vCPU                   (minivmm, QEMU)
#   noeidx  one queue per vCPU, EVENT_IDX off    (minivmm)
#   tools   read-only cpio with fio (tests/rig/mktools.sh)
# Reads of a sparse image's holes need no device I/O, so the fio numbers
# measure the VMM's request path rather than L1's emulated disk.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

mode=${1:?--smoke|--quick|--full}
build=${2:?BUILD_DIR}
kernel=${3:?KERNEL}
initrd=${4:?INITRD}
tools=${5:?TOOLS}
case "$mode" in
--smoke) boots=1 rounds=1 runtime=1 wiring_rounds=1 ;;
--quick) boots=1 rounds=1 runtime=2 wiring_rounds=1 ;;
--full) boots=5 rounds=1 runtime=4 wiring_rounds=5 ;;
*) bench_die "mode must be --smoke, --quick or --full" ;;
esac
boots=${BENCH_BOOTS:-$boots}
rounds=${BENCH_ROUNDS:-$rounds}
runtime=${BENCH_RUNTIME:-$runtime}
vmms=${BENCH_VMMS:-minivmm qemu}
smp=${BENCH_SMP:-2}
mem_mib=${BENCH_MEM_MIB:-512}
qd=${BENCH_QD:-32}
img_mib=256
[[ -r /dev/kvm && -w /dev/kvm ]] || bench_die "no usable /dev/kvm (run through tests/rig/rig-run)"
command -v jq >/dev/null || bench_die "jq is missing"

vmm=$build/minivmm
preload=$build/bench/footprint_preload.so
fpexec=$build/bench/footprint_exec
qemu=$(command -v qemu-system-x86_64 || true)
work=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

bench_debugfs

# ---------------------------------------------------------------- machine
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
bench_emit "$(jq -cn --arg kernel "$(uname -r)" --arg cpu "$cpu_model" \
	--argjson cpus "$(nproc)" --argjson mem_kib "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" \
	--arg qemu "$([[ -n $qemu ]] && "$qemu" --version | head -1)" \
	--arg rig "${RIG_IN_L1:+l1}" --argjson debugfs "$have_debugfs" \
	'{bench:"machine_kvm", kvm_host_kernel:$kernel, kvm_host_cpu:$cpu,
	  kvm_host_cpus:$cpus, kvm_host_mem_kib:$mem_kib, qemu_version:$qemu,
	  nested_rig:($rig == "l1"), kvm_debugfs:($debugfs == 1)}')"

# ---------------------------------------------------------------- 1. wiring
bench_log "wiring: $wiring_rounds round(s)"
# (files and FIFOs, not process substitution: the rig's chroot has no /dev/fd)
"$build/bench/wiring_bench" --rounds "$wiring_rounds" >"$work/wiring.jsonl" 2>"$work/wiring.err" ||
	bench_log "wiring_bench exited $?"
while IFS= read -r line; do
	bench_emit "$line"
done <"$work/wiring.jsonl"
grep -E '^wiring (n384|d16q24) ' "$work/wiring.err" >&2
grep -E 'FAIL|error|refused' "$work/wiring.err" >&2

# ---------------------------------------------------------------- 2-4. guests
for d in q1 qn noeidx; do
	truncate -s ${img_mib}M "$work/$d.img"
done
cmdline="console=ttyS0 reboot=k panic=-1 pci=conf1 acpi=off i8042.noaux i8042.nopnp i8042.dumbkbd quiet"

# kvm_counters PID: sets KVMC to "exits io_exits mmio_exits halt_exits
# irq_injections" of the (first) VM of process PID (empty if none).  Bash
# builtins only, no fork: it runs while the guest is measuring.
KVMC=
kvm_counters() {
	local dir f v out=()
	KVMC=
	for dir in /sys/kernel/debug/kvm/"$1"-*; do
		[[ -r $dir/exits ]] || continue
		for f in exits io_exits mmio_exits halt_exits irq_injections; do
			read -r v <"$dir/$f" || return 1
			out+=("$v")
		done
		KVMC="${out[*]}"
		return 0
	done
	return 1
}

# smaps_excl_ram PID: "rss_kib pss_kib guest_ram_rss_kib": guest RAM is any
# mapping of at least 90% of the guest's RAM size (QEMU's pc.ram, minivmm's
# anonymous RAM), or one named "vmm-guest-ram" (minivmm, on kernels with
# CONFIG_ANON_VMA_NAME).
smaps_excl_ram() {
	awk -v ram=$((mem_mib * 1024)) '
		/^[0-9a-f]+-[0-9a-f]+ / { excl = ($0 ~ /vmm-guest-ram/); next }
		/^Size:/ { if ($2 >= ram * 0.9) excl = 1; next }
		/^Rss:/ { if (excl) g += $2; else r += $2; next }
		/^Pss:/ { if (!excl) p += $2; next }
		END { print r + 0, p + 0, g + 0 }' "/proc/$1/smaps" 2>/dev/null
}

# rotate K A B C...: the list, comma-separated, starting at element K-1
# (mod its length): each boot round starts the fio phases on another disk,
# so no disk is always measured first.
rotate() {
	local k=$1
	shift
	local a=("$@") n=$# i out=()
	for ((i = 0; i < n; i++)); do
		out+=("${a[(k - 1 + i) % n]}")
	done
	local IFS=,
	echo "${out[*]}"
}

# run_vm NAME BOOT_ROUND: one boot of minivmm or QEMU with the bench-fio
# payload; emits the boot, footprint, fio-phase and disk-counter records.
run_vm() {
	local name=$1 round=$2
	local disks fp=$work/fp.$name.$round log=$work/log.$name.$round
	local cmd=()
	if [[ $name == minivmm ]]; then
		disks=$(rotate "$round" q1 qn noeidx)
		cmd=("$vmm" --smp "$smp" --mem "${mem_mib}M" --kernel "$kernel" --initrd "$initrd"
			--cmdline "$cmdline"
			--disk "path=$work/q1.img,num-queues=1,serial=q1,direct=on"
			--disk "path=$work/qn.img,num-queues=$smp,serial=qn,direct=on"
			--disk "path=$work/noeidx.img,num-queues=$smp,serial=noeidx,direct=on,event-idx=off"
			--disk "path=$tools,ro=on,serial=tools" --stats-json)
	else
		disks=$(rotate "$round" q1 qn)
		cmd=("$qemu" -enable-kvm -cpu host -M pc -smp "$smp" -m "${mem_mib}M"
			-nographic -nodefaults -no-user-config -serial stdio -no-reboot
			-kernel "$kernel" -initrd "$initrd"
			-object iothread,id=io0 -object iothread,id=io1
			-drive "file=$work/q1.img,if=none,id=q1,format=raw,cache=none,aio=io_uring"
			-device "virtio-blk-pci,drive=q1,num-queues=1,serial=q1,iothread=io0"
			-drive "file=$work/qn.img,if=none,id=qn,format=raw,cache=none,aio=io_uring"
			-device "virtio-blk-pci,drive=qn,num-queues=$smp,serial=qn,iothread=io1"
			-drive "file=$tools,if=none,id=tools,format=raw,readonly=on"
			-device "virtio-blk-pci,drive=tools,serial=tools,num-queues=1")
	fi
	local append="guest.run=bench-fio guest.disks=$disks guest.rounds=$rounds guest.runtime=$runtime guest.qd=$qd"
	if [[ $name == minivmm ]]; then
		cmd+=(--append "$append")
	else
		# QEMU's guest keeps ACPI: without it the guest finds one CPU
		# (SeaBIOS's MP table is not used); everything else is the same.
		cmd+=(-append "${cmdline/ acpi=off/} $append")
	fi

	bench_log "boot $round: $name"
	local t0 fd pid line now boot_ns="" fpline="" stats="" payload_rc=""
	local begin="" end="" phases=$work/phases.$name.$round
	t0=$(bench_now_ns)
	rm -f "$work/out.fifo"
	mkfifo "$work/out.fifo"
	"$fpexec" "$preload" "$fp" "${cmd[@]}" </dev/null >"$work/out.fifo" 2>&1 &
	pid=$!
	exec {fd}<"$work/out.fifo"
	local base
	base=$(jq -cn --arg vmm "$name" --argjson round "$round" --argjson smp "$smp" \
		--argjson mem_mib "$mem_mib" '{vmm:$vmm, boot_round:$round, smp:$smp, mem_mib:$mem_mib}')
	local rst
	while :; do
		IFS= read -r -t 600 -u "$fd" line
		rst=$?
		((rst == 0)) || break
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$log"
		case "$line" in
		*MINIVMM-GUEST-UP*)
			now=$(bench_now_ns)
			boot_ns=$((now - t0))
			local sm
			read -r -a sm <<<"$(smaps_excl_ram "$pid")"
			fpline=$(cat "$fp" 2>/dev/null | head -1)
			local cpu real ecpu ereal
			cpu=$(bench_kv "$fpline" cpu_ns) || cpu=
			real=$(bench_kv "$fpline" realtime_ns) || real=
			ecpu=$(bench_kv "$fpline" exec_cpu_ns) || ecpu=
			ereal=$(bench_kv "$fpline" exec_realtime_ns) || ereal=
			bench_emit "$(jq -cn --argjson b "$base" --argjson boot_ns "$boot_ns" \
				--arg marker "$(echo "$line" | grep -o 'MINIVMM-GUEST-UP cpus=[0-9]*')" \
				--argjson rss "${sm[0]:-null}" --argjson pss "${sm[1]:-null}" \
				--argjson ram "${sm[2]:-null}" \
				--arg cpu "$cpu" --arg real "$real" --arg ecpu "$ecpu" --arg ereal "$ereal" \
				'$b + {bench:"boot", boot_to_init_ms:($boot_ns / 1e6), marker:$marker,
				  rss_excl_guest_ram_kib:$rss, pss_excl_guest_ram_kib:$pss,
				  guest_ram_rss_kib:$ram,
				  first_kvm_run_cpu_ms:(if $cpu == "" then null else (($cpu | tonumber) - ($ecpu | tonumber)) / 1e6 end),
				  first_kvm_run_wall_ms:(if $real == "" then null else (($real | tonumber) - ($ereal | tonumber)) / 1e6 end),
				  method:{boot:"launch to MINIVMM-GUEST-UP line on the console",
				    rss:"sum of Rss in /proc/PID/smaps at MINIVMM-GUEST-UP, guest RAM mapping excluded",
				    first_kvm_run:"CLOCK_PROCESS_CPUTIME_ID at the first ioctl(KVM_RUN) (LD_PRELOAD probe) minus the same clock just before execve"}}')"
			;;
		*BENCH-BEGIN*)
			kvm_counters "$pid"
			begin=$KVMC
			;;
		*BENCH-END*)
			# Only record here (no forks): the guest idles 1 s after
			# END and the counters must be read right now.
			kvm_counters "$pid"
			end=$KVMC
			printf '%s|%s|%s\n' "${line#*BENCH-END }" "$begin" "$end" >>"$phases"
			;;
		'{"kvm"'*)
			stats=$line
			;;
		*MINIVMM-PAYLOAD-EXIT=*)
			payload_rc=${line##*MINIVMM-PAYLOAD-EXIT=}
			;;
		esac
	done
	if ((rst > 128)); then
		bench_log "$name: no output for 600 s, killing it"
		kill "$pid" 2>/dev/null
	fi
	exec {fd}<&-
	local rc=0
	wait "$pid" || rc=$?
	if [[ -z $boot_ns || $payload_rc != 0 || $rc != 0 ]]; then
		bench_log "$name boot $round failed (exit $rc, payload ${payload_rc:-none}); last lines:"
		tail -n 30 "$log" >&2 2>/dev/null
		bench_emit "$(jq -cn --argjson b "$base" --argjson rc "$rc" --arg p "$payload_rc" \
			'$b + {bench:"error", exit_status:$rc, payload_exit:$p}')"
		return 1
	fi
	local pl b0 e1
	touch "$phases"
	while IFS='|' read -r pl b0 e1; do
		local disk ev kv
		disk=$(bench_kv "$pl" disk)
		ev=true
		[[ $disk == noeidx ]] && ev=false
		kv=$(jq -cn --argjson b "$base" --arg disk "$disk" --argjson ev "$ev" \
			--argjson r "$(bench_kv "$pl" round)" \
			--argjson q "$(bench_kv "$pl" queues)" \
			--argjson iops "$(bench_kv "$pl" iops)" \
			--argjson reqs "$(bench_kv "$pl" reqs)" \
			--argjson irqs "$(bench_kv "$pl" irqs)" \
			--argjson jobs "$(bench_kv "$pl" jobs)" \
			--argjson qd "$(bench_kv "$pl" qd)" \
			--argjson rt "$(bench_kv "$pl" runtime)" \
			--arg e0 "$b0" --arg e1 "$e1" \
			'($e0 | split(" ") | map(select(. != "") | tonumber)) as $e0 |
			 ($e1 | split(" ") | map(select(. != "") | tonumber)) as $e1 |
			$b + {bench:"guest_io", round:$r, disk:$disk, queues:$q, event_idx:$ev,
			  fio:{rw:"randread", bs:"4k", ioengine:"io_uring", direct:1, numjobs:$jobs, iodepth:$qd, runtime_s:$rt},
			  iops:$iops, requests:$reqs, guest_interrupts:$irqs,
			  guest_interrupts_per_request:(if $reqs > 0 then $irqs / $reqs else null end)}
			+ (if ($e0 | length) == 5 and ($e1 | length) == 5 then
			    {kvm_exits:($e1[0] - $e0[0]), kvm_io_exits:($e1[1] - $e0[1]),
			     kvm_mmio_exits:($e1[2] - $e0[2]), kvm_halt_exits:($e1[3] - $e0[3]),
			     kvm_irq_injections:($e1[4] - $e0[4]),
			     kvm_exits_per_request:(if $reqs > 0 then ($e1[0] - $e0[0]) / $reqs else null end)}
			  else {} end)')
		bench_emit "$kv"
		bench_log "  $name round $(bench_kv "$pl" round) $disk: iops=$(bench_kv "$pl" iops)" \
			"$(jq -r '"exits/req=\(.kvm_exits_per_request // "n/a") irqs/req=\(.guest_interrupts_per_request // "n/a")"' <<<"$kv")"
	done <"$phases"
	if [[ -n $stats ]]; then
		# Cross-check: KVM exits from debugfs at the last phase's end vs
		# minivmm's own binary-stats total at exit (a little later).
		bench_emit "$(jq -c --argjson b "$base" --argjson last "$(jq -cn --arg e "$end" '$e | split(" ") | map(select(. != "") | tonumber)')" \
			'$b + {bench:"kvm_totals", vmm_stats_kvm:.kvm, debugfs_at_last_phase_end:
			  (if ($last | length) == 5 then {exits:$last[0], io_exits:$last[1], mmio_exits:$last[2],
			   halt_exits:$last[3], irq_injections:$last[4]} else null end)}' <<<"$stats")"
		# minivmm's own counters per disk (disk ids follow the --disk order)
		jq -c --argjson b "$base" '
			(["q1", "qn", "noeidx", "tools"]) as $names |
			.disks[] | select(.id < 3) |
			(.total.requests | add) as $req |
			$b + {bench:"disk_counters", disk:$names[.id], queues:.num_queues,
			  event_idx:(.id != 2), requests:$req, kicks:.total.kicks,
			  interrupts:.total.interrupts, suppressed:.total.suppressed,
			  kicks_per_request:(if $req > 0 then .total.kicks / $req else null end),
			  interrupts_per_request:(if $req > 0 then .total.interrupts / $req else null end),
			  notifications_per_request:(if $req > 0 then (.total.kicks + .total.interrupts) / $req else null end),
			  wiring_commits, wiring_ioctls, wiring_ns}' <<<"$stats" |
			while IFS= read -r l; do bench_emit "$l"; done
	fi
	return 0
}

fail=0
[[ -n $qemu ]] || bench_log "qemu-system-x86_64 missing: minivmm only"
for ((b = 1; b <= boots; b++)); do
	# A B A B ...
	for name in $vmms; do
		[[ $name == qemu && -z $qemu ]] && continue
		run_vm "$name" "$b" || fail=1
	done
done
exit $fail
