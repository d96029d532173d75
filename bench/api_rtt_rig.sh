#!/bin/bash
# api_rtt_rig.sh MINIVMM API_RTT KERNEL INITRD ROUNDS COUNT: inside the rig's
# L1 (bench/oci_ops_rig.sh runs it once its containers are gone): a
# 4-vCPU ticker guest with --api-socket; ROUNDS rounds of api_rtt: COUNT
# `info` and `stats` requests, then COUNT pause + resume pairs (each
# answered once every vCPU is parked / running again).  Prints BENCH-JSON
# records.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
vmm=$1 rtt=$2 kernel=$3 initrd=$4 rounds=${5:-3} count=${6:-200}
[[ -w /dev/kvm ]] || { echo "no /dev/kvm"; exit 77; }
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/api_rtt.XXXXXX")
sock=$dir/api.sock log=$dir/vmm.log
"$vmm" --smp 4 --mem 256M --kernel "$kernel" --initrd "$initrd" \
	--api-socket "$sock" --append "quiet guest.run=ticker" </dev/null >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 600); do
	(($(grep -c 'MINIVMM-TICK ' "$log") >= 2)) && break
	kill -0 $pid 2>/dev/null || bench_die "minivmm ended: $(tail -5 "$log")"
	sleep 0.5
done
for r in $(seq "$rounds"); do
	"$rtt" "$sock" "$count" '{"command":"info"}' '{"command":"stats"}' >"$dir/a" ||
		bench_log "round $r: info/stats had failures"
	"$rtt" "$sock" "$count" '{"command":"pause"}' '{"command":"resume"}' >>"$dir/a" ||
		bench_log "round $r: pause/resume had failures"
	while read -r rec; do
		bench_emit "$(jq -c --argjson r "$r" '{bench:"api_rtt", round:$r} + .' <<<"$rec")"
	done <"$dir/a"
	bench_log "round $r: $(jq -r '"\(.request) p50 \(.p50_us) us"' "$dir/a" | tr '\n' ';')"
done
grep -q 'MINIVMM-TICK ' "$log" && kill -0 $pid || bench_die "the guest did not survive"
exit 0
