#!/bin/bash
# footprint.sh --smoke|--quick|--full BUILD_DIR KERNEL INITRD
#
# VMM start cost on THIS machine's own /dev/kvm, natively (no rig): CPU and
# wall time from exec to the first KVM_RUN (footprint_exec +
# footprint_preload.so) and resident memory without guest RAM at that
# moment, minivmm and QEMU alternately (A B A B ...), each stopped right
# after its first KVM_RUN (the guest is not booted: on the project's CI
# machines /dev/kvm runs a few instructions but hangs a Linux guest, which
# is why boots go through the rig).  Same kernel, initramfs, vCPUs and
# memory as bench/guest_bench.sh, no disks; QEMU with its default -cpu
# (-cpu host fails on the CI hosts' KVM: MSR 0x10a).  Prints "BENCH-JSON {...}"
# lines; exits 0 without records when /dev/kvm is not usable here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
mode=${1:?--smoke|--quick|--full} build=${2:?BUILD_DIR} kernel=${3:?KERNEL} initrd=${4:?INITRD}
rounds=5
[[ $mode == --quick || $mode == --smoke ]] && rounds=1
smp=${BENCH_SMP:-2} mem_mib=${BENCH_MEM_MIB:-512}
if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
	bench_log "footprint: no usable /dev/kvm here, skipped"
	exit 0
fi
qemu=$(command -v qemu-system-x86_64 || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmdline="console=ttyS0 reboot=k panic=-1 pci=conf1 acpi=off i8042.noaux i8042.nopnp i8042.dumbkbd quiet"

one() { # NAME ROUND
	local name=$1 round=$2 fp=$tmp/fp.$1.$2 cmd=() pid i line rss=() ok=0
	if [[ $name == minivmm ]]; then
		cmd=("$build/minivmm" --smp "$smp" --mem "${mem_mib}M" --kernel "$kernel"
			--initrd "$initrd" --cmdline "$cmdline")
	else
		cmd=("$qemu" -enable-kvm -M pc -smp "$smp" -m "${mem_mib}M" -nographic
			-nodefaults -no-user-config -serial null -no-reboot -kernel "$kernel"
			-initrd "$initrd" -append "${cmdline/ acpi=off/}")
	fi
	"$build/bench/footprint_exec" "$build/bench/footprint_preload.so" "$fp" "${cmd[@]}" \
		</dev/null >"$tmp/out.$name.$round" 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		[[ -s $fp ]] && { ok=1; break; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [[ $ok -eq 1 ]]; then
		read -r -a rss <<<"$(awk -v ram=$((mem_mib * 1024)) '
			/^[0-9a-f]+-[0-9a-f]+ / { excl = ($0 ~ /vmm-guest-ram/); next }
			/^Size:/ { if ($2 >= ram * 0.9) excl = 1; next }
			/^Rss:/ { if (!excl) r += $2; next }
			/^Pss:/ { if (!excl) p += $2; next }
			END { print r + 0, p + 0 }' "/proc/$pid/smaps" 2>/dev/null)"
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if [[ $ok -ne 1 ]]; then
		bench_log "footprint: $name never reached KVM_RUN; output:"
		tail -n 5 "$tmp/out.$name.$round" >&2
		return 1
	fi
	line=$(head -1 "$fp")
	bench_emit "$(jq -cn --arg vmm "$name" --argjson round "$round" --argjson smp "$smp" \
		--argjson mem "$mem_mib" --argjson rss "${rss[0]:-null}" --argjson pss "${rss[1]:-null}" \
		--argjson cpu "$(bench_kv "$line" cpu_ns)" --argjson ecpu "$(bench_kv "$line" exec_cpu_ns)" \
		--argjson real "$(bench_kv "$line" realtime_ns)" --argjson ereal "$(bench_kv "$line" exec_realtime_ns)" \
		'{bench:"footprint_native", vmm:$vmm, round:$round, smp:$smp, mem_mib:$mem,
		  first_kvm_run_cpu_ms:(($cpu - $ecpu) / 1e6), first_kvm_run_wall_ms:(($real - $ereal) / 1e6),
		  rss_at_first_kvm_run_excl_guest_ram_kib:$rss, pss_at_first_kvm_run_excl_guest_ram_kib:$pss,
		  where:"this host, native KVM, stopped at the first KVM_RUN (guest not booted), no disks"}')"
}

for ((r = 1; r <= rounds; r++)); do
	one minivmm "$r"
	[[ -n $qemu ]] && one qemu "$r"
done
exit 0
