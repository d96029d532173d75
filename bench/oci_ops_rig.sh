#!/bin/bash
# oci_ops_rig.sh ROUNDS EXECS MINIVMM API_RTT INITRD COUNT: inside the rig's L1 (bench/oci_ops_bench.sh
# runs it through tests/e2e/oci-rig.sh): with one running container per
# runtime (minivmm-oci and runc, `sleep 1000`), ROUNDS rounds alternating
# the two runtimes, each round timing EXECS `podman exec CTR true` and one
# `podman pause` + `podman unpause`; then the runtimes' own commands
# (exec, pause, resume, without podman and conmon), alternated too.  Prints BENCH-JSON records (wall ms per command).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rounds=${1:-3} execs=${2:-5} vmm=$3 rtt=$4 ginitrd=$5 count=${6:-200}
[[ -w /dev/kvm ]] || { echo "no /dev/kvm"; exit 77; }
# (runc's pause needs the cgroup freezer: bench_oci_setup mounts cgroup2.)
W=$(bench_scratch ocio)
bench_oci_setup "$W"
"${P[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null || bench_die "podman import"
trap '"${P[@]}" rm -f -t 0 ops-minivmm-oci ops-runc >/dev/null 2>&1' EXIT
for rt in minivmm-oci runc; do
	exe=$rt
	[[ $rt == minivmm-oci ]] && exe=$OCI_RUNTIME
	flags=()
	[[ $rt == runc ]] && flags=("${RUNC_FLAGS[@]}")
	"${P[@]}" --runtime "$exe" run -d --name "ops-$rt" --network none "${flags[@]}" \
		localhost/bb sleep 1000 >/dev/null 2>"$W/err" || bench_die "run $rt: $(tail -3 "$W/err")"
done
# The first exec of a fresh container waits for its guest to boot.
for rt in minivmm-oci runc; do
	for _ in $(seq 120); do
		"${P[@]}" exec "ops-$rt" true 2>/dev/null && break
		sleep 1
	done
done
timed() { # KIND RUNTIME ROUND CMD...: one BENCH-JSON record of CMD's wall ms
	local kind=$1 rt=$2 r=$3 t0 t1 rc
	shift 3
	t0=$(bench_now_ns)
	"$@" >/dev/null 2>"$W/err"
	rc=$?
	t1=$(bench_now_ns)
	[[ $rc -eq 0 ]] || { bench_log "$kind $rt failed ($rc): $(tail -3 "$W/err")"; return 1; }
	bench_emit "$(jq -cn --arg k "$kind" --arg rt "$rt" --argjson r "$r" \
		--argjson ms "$(((t1 - t0) / 1000)).0" '{bench:"oci_ops", op:$k, runtime:$rt, round:$r, wall_ms:($ms / 1000)}')"
}
for r in $(seq "$rounds"); do
	for rt in minivmm-oci runc; do
		for _ in $(seq "$execs"); do
			timed "podman exec true" "$rt" "$r" "${P[@]}" exec "ops-$rt" true
		done
		timed "podman pause" "$rt" "$r" "${P[@]}" pause "ops-$rt"
		timed "podman unpause" "$rt" "$r" "${P[@]}" unpause "ops-$rt"
	done
	bench_log "round $r done"
done
# The runtimes alone (no podman, no conmon), alternated the same way.
for r in $(seq "$rounds"); do
	for rt in minivmm-oci runc; do
		exe=$rt
		[[ $rt == minivmm-oci ]] && exe=$OCI_RUNTIME
		id=$("${P[@]}" inspect -f '{{.ID}}' "ops-$rt")
		for _ in $(seq "$execs"); do
			timed "runtime exec true" "$rt" "$r" "$exe" exec "$id" true
		done
		timed "runtime pause" "$rt" "$r" "$exe" pause "$id"
		timed "runtime resume" "$rt" "$r" "$exe" resume "$id"
	done
done
# The containers go first: the API's guest then has the L1 to itself.
"${P[@]}" rm -f -t 0 ops-minivmm-oci ops-runc >/dev/null 2>&1
"$here/api_rtt_rig.sh" "$vmm" "$rtt" "$OCI_KERNEL" "$ginitrd" "$rounds" "$count"
