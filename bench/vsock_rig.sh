#!/bin/bash
# bench/vsock_rig.sh MINIVMM VSOCKPERF KERNEL INITRD ROUNDS BYTES PINGS:
# inside the rig's L1 (bench/vsock_bench.sh runs it through
# tests/e2e/in-rig.sh).  Boots two guests side by side, each 1 vCPU and
# 256 MiB, running vsockperf's server (tests/guest/vsock-bench):
#   hybrid  --vsock cid=3,socket=DIR/v.sock  (minivmm's userspace device)
#   vhost   --vsock cid=4,vhost=on           (the kernel's vhost-vsock)
# then ROUNDS rounds alternating them (hybrid, vhost, hybrid, vhost, ...),
# each one `vsockperf run` from this L1: BYTES to the guest, BYTES from
# it, PINGS one-byte round trips.  The idle guest only waits in accept()
# while the other is measured.  Prints BENCH-JSON records: one per side
# and round (bench "vsock") and one of the machine (bench "vsock_machine").
# Timings are reported, never asserted; a failed run is a record of
# bench "vsock_error" and exit 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
vmm=$1 perf=$2 kernel=$3 initrd=$4 rounds=${5:-3} bytes=${6:-67108864} pings=${7:-1000}
bench_need_kvm
[[ -c /dev/vhost-vsock ]] || bench_die "no /dev/vhost-vsock in the L1 (tests/rig/mkl1.sh)"
dir=$(bench_scratch vsockb)
declare -A pid target
cleanup() {
	bench_kill_all "${pid[@]}"
	rm -rf "$dir"
}
trap cleanup EXIT
boot() { # SIDE SPEC
	"$vmm" --smp 1 --mem 256M --kernel "$kernel" --initrd "$initrd" --vsock "$2" \
		--append "quiet guest.run=vsock-bench" </dev/null >"$dir/$1.log" 2>&1 &
	pid[$1]=$!
}
boot hybrid "cid=3,socket=$dir/v.sock"
target[hybrid]=unix:$dir/v.sock
boot vhost "cid=4,vhost=on"
target[vhost]=vsock:4
# shellcheck disable=SC2016 # the last argument is a jq filter
bench_emit_machine vsock_machine --argjson rounds "$rounds" \
	--argjson bytes "$bytes" --argjson pings "$pings" \
	'{guest_vcpus:1, rounds:$rounds, bytes:$bytes, pings:$pings}'
rc=0
for r in $(seq "$rounds"); do
	for side in hybrid vhost; do
		out=$("$perf" run "${target[$side]}" 5000 "$bytes" "$pings" 2>&1)
		line=$(grep '^VSOCKPERF to_guest' <<<"$out")
		if [[ -z $line ]]; then
			bench_log "$side round $r: $out"
			bench_emit "$(jq -cn --arg s "$side" --argjson r "$r" --arg o "$out" \
				'{bench:"vsock_error", side:$s, round:$r, output:$o}')"
			tail -n 20 "$dir/$side.log" >&2
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
for side in hybrid vhost; do
	kill -0 "${pid[$side]}" 2>/dev/null || { bench_log "$side: minivmm exited early"; tail -n 20 "$dir/$side.log" >&2; rc=1; }
done
exit $rc
