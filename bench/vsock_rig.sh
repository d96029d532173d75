#!/bin/bash
# bench/vsock_rig.sh MINIVMM VSOCKPERF KERNEL INITRD ROUNDS BYTES PINGS:
# inside the rig's L1 (bench/vsock_bench.sh runs it through
# tests/e2e/in-rig.sh).  Boots three guests side by side, each 1 vCPU and
# 256 MiB, the same kernel and initrd, running vsockperf's server
# (tests/guest/vsock-bench) on vsock port 5000:
#   hybrid  minivmm --vsock cid=3,socket=DIR/v.sock (its userspace device)
#   vhost   minivmm --vsock cid=4,vhost=on          (the kernel's vhost-vsock)
#   qemu    QEMU 7.2 -M pc -device vhost-vsock-pci,guest-cid=5 (the same
#           kernel vhost-vsock, QEMU's virtio-pci around it)
# waits until each guest's server answers (a zero-byte `vsockperf run`,
# its time logged), then ROUNDS rounds alternating them (hybrid, vhost,
# qemu, hybrid, ...), each one `vsockperf run` from this L1: BYTES to the
# guest, BYTES from it, PINGS one-byte round trips; vhost and qemu both
# through AF_VSOCK (their CIDs), hybrid through the Unix socket.  The idle
# guests only wait in accept() while one is measured.  Prints BENCH-JSON
# records: one per side and round (bench "vsock") and one of the machine
# (bench "vsock_machine").  Timings are reported, never asserted; a failed
# run, or a guest that never answered (round 0, then left out of the
# rounds), is a record of bench "vsock_error" and exit 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
vmm=$1 perf=$2 kernel=$3 initrd=$4 rounds=${5:-3} bytes=${6:-67108864} pings=${7:-1000}
bench_need_kvm
[[ -c /dev/vhost-vsock ]] || bench_die "no /dev/vhost-vsock in the L1 (tests/rig/mkl1.sh)"
qemu=$(command -v qemu-system-x86_64) || bench_die "qemu-system-x86_64 missing"
dir=$(bench_scratch vsockb)
sides=(hybrid vhost qemu)
declare -A pid target
cleanup() {
	bench_kill_all "${pid[@]}"
	rm -rf "$dir"
}
trap cleanup EXIT
boot_minivmm() { # SIDE SPEC
	"$vmm" --smp 1 --mem 256M --kernel "$kernel" --initrd "$initrd" --vsock "$2" \
		--append "quiet guest.run=vsock-bench" </dev/null >"$dir/$1.log" 2>&1 &
	pid[$1]=$!
}
t0=$(bench_now_ns)
boot_minivmm hybrid "cid=3,socket=$dir/v.sock"
target[hybrid]=unix:$dir/v.sock
boot_minivmm vhost "cid=4,vhost=on"
target[vhost]=vsock:4
# QEMU as bench/net_rig.sh boots it (the legacy PC, no default devices,
# the console on stdout), the guest CID its own.
"$qemu" -enable-kvm -cpu host -M pc -smp 1 -m 256M \
	-nographic -nodefaults -no-user-config -serial stdio -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-device vhost-vsock-pci,guest-cid=5 \
	-append "console=ttyS0 reboot=k panic=-1 quiet guest.run=vsock-bench pci=conf1 i8042.noaux i8042.nopnp i8042.dumbkbd" \
	</dev/null >"$dir/qemu.log" 2>&1 &
pid[qemu]=$!
target[qemu]=vsock:5
rc=0
# Until each guest's server answers a zero-byte run (vsockperf retries
# its first connection for 300 s; up to three of those while the VMM
# lives), so that no round is measured beside a booting guest.
up=()
for side in "${sides[@]}"; do
	ok=
	for _ in 1 2 3; do
		out=$("$perf" run "${target[$side]}" 5000 0 0 2>&1)
		grep -q '^VSOCKPERF to_guest' <<<"$out" && { ok=1; break; }
		kill -0 "${pid[$side]}" 2>/dev/null || break
	done
	if [[ -z $ok ]]; then
		bench_log "$side: the guest did not answer: $out"
		bench_emit "$(jq -cn --arg s "$side" --arg o "$out" \
			'{bench:"vsock_error", side:$s, round:0, output:("not up: " + $o)}')"
		tr -d '\r' <"$dir/$side.log" | tail -n 30 >&2
		rc=1
		continue
	fi
	up+=("$side")
	bench_log "$side up after $((($(bench_now_ns) - t0) / 1000000)) ms"
done
# shellcheck disable=SC2016 # the last argument is a jq filter
bench_emit_machine vsock_machine --argjson rounds "$rounds" \
	--argjson bytes "$bytes" --argjson pings "$pings" \
	--arg qemu "$("$qemu" --version | head -1)" \
	--argjson sides "$(printf '%s\n' "${sides[@]}" | jq -R . | jq -sc .)" \
	'{guest_vcpus:1, rounds:$rounds, bytes:$bytes, pings:$pings, sides:$sides,
	  qemu_version:$qemu}'
for r in $(seq "$rounds"); do
	for side in "${up[@]}"; do
		out=$("$perf" run "${target[$side]}" 5000 "$bytes" "$pings" 2>&1)
		line=$(grep '^VSOCKPERF to_guest' <<<"$out")
		if [[ -z $line ]]; then
			bench_log "$side round $r: $out"
			bench_emit "$(jq -cn --arg s "$side" --argjson r "$r" --arg o "$out" \
				'{bench:"vsock_error", side:$s, round:$r, output:$o}')"
			tr -d '\r' <"$dir/$side.log" | tail -n 20 >&2
			rc=1
			continue
		fi
		# "VSOCKPERF k=v k=v ..." -> {"k":v, ...}
		obj=$(sed 's/^VSOCKPERF //; s/\([a-z0-9_]*\)=\([0-9.]*\)/"\1":\2/g; s/ /,/g; s/.*/{&}/' <<<"$line")
		bench_emit "$(jq -c --arg s "$side" --argjson r "$r" --argjson b "$bytes" \
			'{bench:"vsock", side:$s, round:$r, bytes:$b} + .' <<<"$obj")"
		bench_log "$side round $r: ${line#VSOCKPERF }"
	done
done
for side in "${up[@]}"; do
	kill -0 "${pid[$side]}" 2>/dev/null || { bench_log "$side: the VMM exited early"; tr -d '\r' <"$dir/$side.log" | tail -n 20 >&2; rc=1; }
done
exit $rc
