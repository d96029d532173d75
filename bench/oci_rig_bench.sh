#!/bin/bash
# oci_rig_bench.sh ROUNDS: inside the rig's L1 (bench/oci_bench.sh runs it
# through tests/e2e/oci-rig.sh): wall time of `podman run --rm bb true`
# with minivmm-oci and with runc (with the ulimit flags runc needs there),
# ROUNDS rounds alternating the two, then minivmm-oci's own timing records
# (create, image build, VM start, guest boot, start, delete).  Prints
# BENCH-JSON records.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rounds=${1:-5}
[[ -w /dev/kvm ]] || { echo "no /dev/kvm"; exit 77; }
timings=/tmp/oci-bench-timings.json
W=$(bench_scratch ocib)
bench_oci_setup "$W" "timings=$timings"
"${P[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null || bench_die "podman import"
run() { # RUNTIME [RUN-FLAGS...]: wall ms of one podman run --rm bb true
	local t0 t1 rc rt=$1
	shift
	t0=$(bench_now_ns)
	"${P[@]}" --runtime "$rt" run "$@" --rm --network none localhost/bb true >/dev/null 2>"$W/err"
	rc=$?
	t1=$(bench_now_ns)
	[[ $rc -eq 0 ]] || { bench_log "run $rt $* failed ($rc): $(tail -3 "$W/err")"; echo -1; return; }
	echo $(((t1 - t0) / 1000000))
}
for i in $(seq "$rounds"); do
	for rt in minivmm-oci runc; do
		if [[ $rt == runc ]]; then
			ms=$(run runc "${RUNC_FLAGS[@]}")
		else
			ms=$(run "$OCI_RUNTIME")
		fi
		bench_log "round $i $rt: $ms ms"
		[[ $ms -ge 0 ]] && bench_emit "$(jq -cn --arg rt "$rt" --argjson r "$i" --argjson ms "$ms" \
			'{bench:"oci_run", runtime:$rt, round:$r, wall_ms:$ms}')"
	done
done
# minivmm-oci's phases, per container (events of one id).
jq -cs 'group_by(.id)[] |
	(map(select(.event == "create"))[0]) as $c |
	def ev(n): (map(select(.event == n))[0].ms);
	(map(select(.event == "delete"))[0].delete_ms) as $d |
	select($c != null and $d != null and ev("guest_ready") != null and ev("process_started") != null) |
	{bench:"oci_shim", id:.[0].id, image_ms:$c.image_ms, mkfs_ms:$c.mkfs_ms,
	 inject_ms:$c.inject_ms, scan_ms:$c.scan_ms, rootfs_bytes:$c.rootfs_bytes,
	 create_ms:$c.create_ms, vm_started_ms:ev("vm_started"),
	 guest_boot_ms:(ev("guest_ready") - ev("vm_started")),
	 start_to_exec_ms:(ev("process_started") - ([ev("guest_ready"), ev("start_requested")] | max)),
	 process_to_exit_ms:(ev("vm_exited") - ev("process_started")),
	 delete_ms:$d,
	 shim_ms:($c.create_ms + $d + (ev("process_started") - ([ev("guest_ready"), ev("start_requested")] | max)))}' \
	"$timings" | while read -r rec; do bench_emit "$rec"; done
