#!/bin/bash
# bench/boot_profile.sh [--smp N] [--disks D] [--rounds R] [--modes "qn q1"]
#                       [--report]
#
# Where the boot time that one queue per vCPU adds goes (issue 9: the
# 101-disk shape, 32 vCPUs x 101 disks, boots ~50% slower with 32 queues
# per disk than with 1): the guest's own clock and the VMM's counters side
# by side, num-queues = vCPUs (qn) against 1 (q1), alternated, in the
# nested-KVM rig.  Per boot: launch to the init marker (host clock); in
# the guest (tests/guest/bootprof) when the kernel ran /init, when
# virtio_blk met its first and last disk (the module loads of /init) and
# how long its probes took in all (initcall_debug's "probe of virtioN
# returned 0 after U usecs"); from minivmm --stats-json the KVM exits
# (MMIO, port I/O, halt), wiring commits, ioctls and time, and the longest
# DRIVER_OK stall of any disk (driver_ok_ns_max).
#
# The probes are the guest's whole setup of its disks and their queues
# (features, MSI-X vectors, each virtqueue, blk-mq's hardware contexts and
# request pools, the partition scan: every guest register access to the
# device, and the wiring minivmm does at DRIVER_OK, happen inside them);
# minivmm's wiring_ms adds what it did outside them (the notify ioeventfds
# placed before the guest runs; it counts the DRIVER_OK wiring a second
# time, and the unwiring at the guest's final reboot, after the marker).
# So "probes qn - probes q1 + wiring qn - wiring q1" bounds the boot time
# one queue per vCPU costs from above, measured directly,
# where the difference of two whole boots is buried in the rig's noise
# (CPU bring-up of a 128-vCPU guest varies by a minute from boot to boot).
# The report prints it against the median q1 boot.  initcall_debug adds
# ~1,700 lines to the kernel's log buffer (not the console: quiet), the
# same in both modes: these boot times are not bench/boot_curve.sh's.
#
# The guest's clock in the rig: a guest with more than one vCPU finds its
# TSCs unsynchronized (an AMD CPU without the invariant-TSC bit: Linux's
# rule, and TCG's CPU has no such bit, so neither does KVM's) and keeps
# time with jiffies, losing ticks, until it switches to kvm-clock: its
# uptime and early log stamps are not host seconds (a boot whose init
# marker came 83 s after launch had an uptime of 38 s).  Durations taken
# after the switch (the probes: /init loads the modules) are.  On a host
# with an invariant TSC, KVM offers the bit and this does not happen.
#
# --modes qn or q1 boots only that one (two runs side by side, each in its
# own L1, where one boot takes half an hour: 384 vCPUs; then put both run
# logs into one boot_profile-run.log and --report); BENCH_OUT (default
# bench/results) gets boot_profile.json and boot_profile-run.log (other
# shapes than 32 x 101: boot_profile_NxD.*); --report (with the same --smp
# and --disks) makes the JSON and the table again from that log only;
# BENCH_TIMEOUT (3500) bounds the whole rig run in seconds.
# Timings are reported, never asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

if [[ ${1:-} == --inner ]]; then
	vmm=$2 kernel=$3 initrd=$4 n=$5 disks=$6 rounds=$7 modes=$8
	[[ -r /dev/kvm && -w /dev/kvm ]] || bench_die "no usable /dev/kvm"
	work=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/boot_profile.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	for ((d = 0; d < disks; d++)); do truncate -s 16M "$work/d$d.img"; done
	ulimit -n 65536 2>/dev/null || true
	# As bench/boot_curve.sh: room for the guest's per-queue request pools.
	mem=$((512 + 4 * n + 8 * disks))
	for ((r = 1; r <= rounds; r++)); do
		for mode in $modes; do
			nq=$n
			[[ $mode == q1 ]] && nq=1
			args=()
			for ((d = 0; d < disks; d++)); do
				args+=(--disk "path=$work/d$d.img,num-queues=$nq,serial=d$d,lock=off")
			done
			t0=$(bench_now_ns)
			set +e
			# Each console line with the host's time of arrival (ms):
			# the init marker's is the boot time the curve measures.
			"$vmm" --smp "$n" --mem "${mem}M" --kernel "$kernel" --initrd "$initrd" \
				--append "quiet initcall_debug log_buf_len=4M guest.run=bootprof" --stats-json "${args[@]}" \
				</dev/null 2>"$work/err" |
				while IFS= read -r line; do
					printf '%s %s\n' $((($(bench_now_ns) - t0) / 1000000)) "$line"
				done >"$work/out.t"
			rc=${PIPESTATUS[0]}
			set -e
			t1=$(bench_now_ns)
			up_ms=$(awk '/MINIVMM-GUEST-UP/ { print $1; exit }' "$work/out.t")
			cut -d' ' -f2- "$work/out.t" >"$work/out"
			tr -d '\r' <"$work/out" >"$work/out.txt" # the UART's CRLFs
			mv "$work/out.txt" "$work/out"
			g() { sed -n "s/^BOOTPROF $1 \[ *\([0-9.]*\)\].*/\1/p" "$work/out" | head -1; }
			# A file, not an argument: 101 disks x 32 queues of stats
			# are longer than an argument may be.
			grep '^{' "$work/err" | tail -1 >"$work/st.json"
			[[ -s $work/st.json ]] || echo null >"$work/st.json"
			bench_emit "$(jq -cn --arg mode "$mode" --argjson n "$n" --argjson disks "$disks" \
				--argjson round "$r" --argjson rc "$rc" --argjson run_ms $(((t1 - t0) / 1000000)) \
				--arg up_ms "$up_ms" \
				--arg init "$(g init)" --arg first "$(g blk-first)" --arg last "$(g blk-last)" \
				--arg up "$(sed -n 's/^BOOTPROF uptime=//p' "$work/out" | head -1)" \
				--arg probes "$(sed -n 's/^BOOTPROF probes n=\([0-9]*\).*/\1/p' "$work/out" | head -1)" \
				--arg probe_ms "$(sed -n 's/^BOOTPROF probes .*ms=\([0-9.]*\).*/\1/p' "$work/out" | head -1)" \
				--slurpfile sts "$work/st.json" '
				def num: if . == "" then null else tonumber end;
				$sts[0] as $st |
				{bench:"boot_profile", mode:$mode, vcpus:$n, disks:$disks, round:$round,
				 rc:$rc, run_ms:$run_ms, boot_to_init_ms:($up_ms|num),
				 guest_init_s:($init|num),
				 guest_blk_first_s:($first|num), guest_blk_last_s:($last|num),
				 guest_uptime_s:($up|num),
				 guest_blk_probes:($probes|num), guest_blk_probe_ms:($probe_ms|num),
				 kvm_exits:$st.kvm.exits, mmio_exits:$st.kvm.mmio_exits,
				 io_exits:$st.kvm.io_exits, halt_exits:$st.kvm.halt_exits,
				 wiring_commits:([$st.disks[]?.wiring_commits]|add),
				 wiring_ioctls:([$st.disks[]?.wiring_ioctls]|add),
				 wiring_ms:(([$st.disks[]?.wiring_ns]|add // 0) / 1e6),
				 driver_ok_ms_max:(([$st.disks[]?.driver_ok_ns_max // empty]|max) as $d |
					if $d then $d / 1e6 else null end)}')"
			bench_log "round $r $mode: exit $rc, $(((t1 - t0) / 1000000)) ms"
		done
	done
	exit 0
fi

n=32 disks=101 rounds=3 modes="qn q1" report=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--smp) n=$2; shift 2 ;;
	--disks) disks=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--report) report=1; shift ;;
	*) bench_die "usage: $0 [--smp N] [--disks D] [--rounds R] [--modes \"qn q1\"] [--report]" ;;
	esac
done
root=$(cd "$here/.." && pwd)
out=${BENCH_OUT:-$root/bench/results}
# The default shape's files are boot_profile.*; others boot_profile_NxD.*.
tag=boot_profile
[[ $n == 32 && $disks == 101 ]] || tag=boot_profile_${n}x$disks
log=$out/$tag-run.log
if [[ $report == 0 ]]; then
	vmm=$root/build/minivmm
	[[ -x $vmm ]] || bench_die "no $vmm (build first)"
	for m in $modes; do
		[[ $m == qn || $m == q1 ]] || bench_die "--modes: qn and/or q1"
	done
	mapfile -t g < <("$root/tests/rig/mkguest.sh")
	mkdir -p "$out"
	"$root/tests/rig/rig-run" --timeout "${BENCH_TIMEOUT:-3500}" --stall-retries 1 -- \
		"$here/${0##*/}" --inner "$vmm" "${g[0]}" "${g[1]}" "$n" "$disks" "$rounds" "$modes" 2>&1 |
		tee "$log" | grep -E '^bench:|^rig:' >&2 || true
fi
bench_records "$log" >"$out/$tag.json"
# The lower middle of the values present (null with none), for the table
# and the cost line alike.
med_defs='def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
	def mraw(f): map(f) | map(select(. != null)) | med;'
jq -rs "$med_defs"'
	def m(f): mraw(f) | if . then (. * 1000 | round) / 1000 else . end;
	group_by(.mode) | map({mode: .[0].mode, boots: length,
		boot_to_init_ms: m(.boot_to_init_ms), launch_to_exit_ms: m(.run_ms), kernel_to_init_s: m(.guest_init_s),
		init_to_last_disk_s: m(if .guest_blk_last_s and .guest_init_s then .guest_blk_last_s - .guest_init_s else null end),
		first_to_last_disk_s: m(if .guest_blk_last_s and .guest_blk_first_s then .guest_blk_last_s - .guest_blk_first_s else null end),
		probe_ms: m(.guest_blk_probe_ms),
		kvm_exits: m(.kvm_exits), mmio_exits: m(.mmio_exits), io_exits: m(.io_exits),
		wiring_ms: m(.wiring_ms), wiring_ioctls: m(.wiring_ioctls),
		driver_ok_ms_max: m(.driver_ok_ms_max)})
	| (["mode","boots","launch->init marker ms","launch->exit ms","kernel->/init s","/init->last disk s","first->last disk s","virtio_blk probes ms","KVM exits","MMIO exits","PIO exits","wiring ms","wiring ioctls","longest DRIVER_OK ms"] | @tsv),
	  (.[] | [.mode, .boots, .boot_to_init_ms, .launch_to_exit_ms, .kernel_to_init_s, .init_to_last_disk_s, .first_to_last_disk_s, .probe_ms, .kvm_exits, .mmio_exits, .io_exits, .wiring_ms, .wiring_ioctls, .driver_ok_ms_max] | @tsv)' \
	"$out/$tag.json" | column -t -s $'\t'
# What one queue per vCPU costs, from the medians above.
jq -rs "$med_defs"'
	def m(f): mraw(f);
	(map(select(.mode == "qn"))) as $qn | (map(select(.mode == "q1"))) as $q1 |
	($qn | m(.guest_blk_probe_ms)) as $pn | ($q1 | m(.guest_blk_probe_ms)) as $p1 |
	($qn | m(.wiring_ms)) as $wn | ($q1 | m(.wiring_ms)) as $w1 | ($q1 | m(.boot_to_init_ms)) as $b1 |
	if $pn and $p1 and $wn and $w1 and $b1 then
		(($pn - $p1) + ($wn - $w1)) as $c |
		"one queue per vCPU costs at most \($c | round) ms (virtio_blk probes \($pn | round) - \($p1 | round) ms, wiring \($wn | round) - \($w1 | round) ms) = \($c * 1000 / $b1 | round / 10)% of the median boot with one queue (\($b1 | round) ms)"
	else "one queue per vCPU: no probe times (a guest without initcall_debug?)" end' \
	"$out/$tag.json"
