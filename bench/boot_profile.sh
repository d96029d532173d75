#!/bin/bash
# bench/boot_profile.sh [--smp N] [--disks D] [--rounds R]
#
# Where the boot time that one queue per vCPU adds goes (issue 9: the
# 101-disk shape, 32 vCPUs x 101 disks, boots ~50% slower with 32 queues
# per disk than with 1): the guest's own clock and the VMM's counters side
# by side, num-queues = vCPUs (qn) against 1 (q1), alternated, in the
# nested-KVM rig.  Per boot: launch to the init marker (host clock); in
# the guest (tests/guest/bootprof) when the kernel ran /init and when
# virtio_blk met its first and last disk (the module loads of /init); from
# minivmm --stats-json the KVM exits (MMIO, port I/O, halt), wiring
# commits, ioctls and time.  The guest-side spans that grow with the queue
# count while the VMM's time does not are the guest's own per-queue work
# (blk-mq hardware contexts and their request pools, MSI-X vectors), which
# no VMM can remove.  Prints a table and one BENCH-JSON record per boot.
#
# Caution, measured 2026-12-02: in the rig the guest's clock runs slow
# during early boot (the 32-vCPU guest finds its TSCs unsynchronized and
# keeps time with jiffies, losing ticks, until it switches to kvm-clock),
# so its spans are not host seconds: a boot whose init marker came 83 s
# after launch had an uptime of 38 s.  The host-side launch->init marker
# (the boot time bench/boot_curve.sh measures) and the exit counts are the
# numbers to compare; launch->exit also includes the payload's own work.
# Timings are reported, never asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

if [[ ${1:-} == --inner ]]; then
	vmm=$2 kernel=$3 initrd=$4 n=$5 disks=$6 rounds=$7
	[[ -r /dev/kvm && -w /dev/kvm ]] || bench_die "no usable /dev/kvm"
	work=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/boot_profile.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	for ((d = 0; d < disks; d++)); do truncate -s 16M "$work/d$d.img"; done
	ulimit -n 65536 2>/dev/null || true
	# As bench/boot_curve.sh: room for the guest's per-queue request pools.
	mem=$((512 + 4 * n + 8 * disks))
	for ((r = 1; r <= rounds; r++)); do
		for mode in qn q1; do
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
				--append "quiet guest.run=bootprof" --stats-json "${args[@]}" \
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
				--slurpfile sts "$work/st.json" '
				def num: if . == "" then null else tonumber end;
				$sts[0] as $st |
				{bench:"boot_profile", mode:$mode, vcpus:$n, disks:$disks, round:$round,
				 rc:$rc, run_ms:$run_ms, boot_to_init_ms:($up_ms|num),
				 guest_init_s:($init|num),
				 guest_blk_first_s:($first|num), guest_blk_last_s:($last|num),
				 guest_uptime_s:($up|num),
				 kvm_exits:$st.kvm.exits, mmio_exits:$st.kvm.mmio_exits,
				 io_exits:$st.kvm.io_exits, halt_exits:$st.kvm.halt_exits,
				 wiring_commits:([$st.disks[]?.wiring_commits]|add),
				 wiring_ioctls:([$st.disks[]?.wiring_ioctls]|add),
				 wiring_ms:(([$st.disks[]?.wiring_ns]|add // 0) / 1e6)}')"
			bench_log "round $r $mode: exit $rc, $(((t1 - t0) / 1000000)) ms"
		done
	done
	exit 0
fi

n=32 disks=101 rounds=3
while [[ $# -gt 0 ]]; do
	case $1 in
	--smp) n=$2; shift 2 ;;
	--disks) disks=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	*) bench_die "usage: $0 [--smp N] [--disks D] [--rounds R]" ;;
	esac
done
root=$(cd "$here/.." && pwd)
vmm=$root/build/minivmm
[[ -x $vmm ]] || bench_die "no $vmm (build first)"
mapfile -t g < <("$root/tests/rig/mkguest.sh")
out=${BENCH_OUT:-$root/bench/results}
log=$out/boot_profile-run.log
"$root/tests/rig/rig-run" --timeout 3500 --stall-retries 1 -- \
	"$here/boot_profile.sh" --inner "$vmm" "${g[0]}" "${g[1]}" "$n" "$disks" "$rounds" 2>&1 |
	tee "$log" | grep -E '^bench:|^rig:' >&2 || true
bench_records "$log" >"$out/boot_profile.json"
jq -rs '
	def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
	def m(f): map(f) | map(select(. != null)) | med | if . then (. * 1000 | round) / 1000 else . end;
	group_by(.mode) | map({mode: .[0].mode, boots: length,
		boot_to_init_ms: m(.boot_to_init_ms), launch_to_exit_ms: m(.run_ms), kernel_to_init_s: m(.guest_init_s),
		init_to_last_disk_s: m(if .guest_blk_last_s and .guest_init_s then .guest_blk_last_s - .guest_init_s else null end),
		first_to_last_disk_s: m(if .guest_blk_last_s and .guest_blk_first_s then .guest_blk_last_s - .guest_blk_first_s else null end),
		kvm_exits: m(.kvm_exits), mmio_exits: m(.mmio_exits), io_exits: m(.io_exits),
		wiring_ms: m(.wiring_ms), wiring_ioctls: m(.wiring_ioctls)})
	| (["mode","boots","launch->init marker ms","launch->exit ms","kernel->/init s","/init->last disk s","first->last disk s","KVM exits","MMIO exits","PIO exits","wiring ms","wiring ioctls"] | @tsv),
	  (.[] | [.mode, .boots, .boot_to_init_ms, .launch_to_exit_ms, .kernel_to_init_s, .init_to_last_disk_s, .first_to_last_disk_s, .kvm_exits, .mmio_exits, .io_exits, .wiring_ms, .wiring_ioctls] | @tsv)' \
	"$out/boot_profile.json" | column -t -s $'\t'
