#!/bin/bash
# check_smoke.sh OUT_DIR
#
# Checks what `bench/run.sh --smoke` wrote to OUT_DIR, so that no benchmark
# can rot unnoticed: every kind of record is there for every system that
# should produce it, the counts the benchmarks exist to report are present
# and consistent (requests done, ioctls counted, one KVM_SET_GSI_ROUTING per
# batched commit), and the summary and plots were rendered.  It never looks
# at a timing beyond "was measured" (> 0).
set -euo pipefail
out=${1:?OUT_DIR}
# shellcheck source=bench/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
check_results "$out/results.json"
check "results.json is an array with a date and machine on every record" \
	'type == "array" and length > 0 and all(.[]; .date and .machine and .run_mode == "smoke")'
for mode in batched pervector driverok; do
	check "wiring $mode: N = 1 .. 384 and the 16x24 shape, ioctls counted" \
		"[.[] | select(.bench == \"wiring\" and .mode == \"$mode\")] as \$w |
		 ([\"n1\", \"n384\", \"d16q24\"] - [\$w[].shape] | length == 0) and
		 all(\$w[]; .setup_ioctls > 0 and .setup_ns > 0 and .teardown_ioctls > 0)"
done
check "driverok wiring: no ioeventfd at DRIVER_OK, all placed before" \
	'[.[] | select(.bench == "wiring" and .mode == "driverok")] |
	 all(.[]; .setup_ioeventfd == 0 and .placement_ioeventfd == .n and
		  .setup_set_gsi_routing == .setup_commits)'
check "batched wiring: one KVM_SET_GSI_ROUTING per commit, at N=384 too" \
	'[.[] | select(.bench == "wiring" and .mode == "batched")] |
	 all(.[]; .one_set_gsi_routing_per_commit) and
	 all(.[]; .setup_set_gsi_routing == .setup_commits)'
for vmm in minivmm qemu; do
	check "$vmm booted to the init marker, with RSS and first-KVM_RUN CPU time" \
		"any(.[]; .bench == \"boot\" and .vmm == \"$vmm\" and .boot_to_init_ms > 0 and
		     .rss_excl_guest_ram_kib > 0 and .first_kvm_run_cpu_ms > 0)"
done
for d in minivmm:q1 minivmm:qn minivmm:noeidx qemu:q1 qemu:qn; do
	vmm=${d%%:*} disk=${d#*:}
	check "$vmm $disk: guest fio completed reads, interrupts and exits counted" \
		"any(.[]; .bench == \"guest_io\" and .vmm == \"$vmm\" and .disk == \"$disk\" and
		     .iops > 0 and .requests > 0 and .guest_interrupts >= 0 and .kvm_exits > 0)"
done
check "minivmm disk counters: kicks + interrupts per request for q1, qn, noeidx" \
	'[.[] | select(.bench == "disk_counters" and .vmm == "minivmm") | .disk] as $d |
	 (["q1", "qn", "noeidx"] - $d | length == 0) and
	 all(.[] | select(.bench == "disk_counters"); .requests > 0 and .notifications_per_request >= 0)'
# footprint.sh measures natively, on this host's own /dev/kvm, when it has one.
if [[ -r /dev/kvm && -w /dev/kvm ]]; then
	check "footprint on this host: exec -> first KVM_RUN CPU time and RSS" \
		'any(.[]; .bench == "footprint_native" and .first_kvm_run_cpu_ms > 0 and
		     .rss_at_first_kvm_run_excl_guest_ram_kib > 0)'
fi
check "devbench: libvmm null and file backends served requests without errors" \
	'[.[] | select(.bench == "devbench" and .target == "libvmm")] as $d |
	 any($d[]; .backend == "null" and .reqs > 0) and any($d[]; .backend == "file" and .reqs > 0) and
	 all($d[]; .errors == 0)'
if command -v qemu-storage-daemon >/dev/null; then
	check "devbench: the qemu-storage-daemon peer ran (vhost-user front end)" \
		'any(.[]; .bench == "devbench" and .target == "qsd" and .reqs > 0)'
fi
check "minivmm-oci: image builds measured for the 2 and 10 MB trees, both root modes" \
	'[.[] | select(.bench == "oci_image" and .total_ms > 0 and .image_bytes > 0)] as $i |
	 ([2, 10] - [$i[].tree_mb] | length == 0) and any($i[]; .readonly) and any($i[]; .readonly | not)'
for rt in minivmm-oci runc; do
	check "podman run --rm bb true with $rt" \
		"any(.[]; .bench == \"oci_run\" and .runtime == \"$rt\" and .wall_ms > 0)"
done
check "minivmm-oci's phases (create, guest boot, start, delete) recorded" \
	'any(.[]; .bench == "oci_shim" and .create_ms > 0 and .guest_boot_ms > 0 and
	     .delete_ms > 0 and .shim_ms > 0)'
for rt in minivmm-oci runc; do
	check "podman exec, pause and unpause and the runtime's own exec with $rt" \
		"[.[] | select(.bench == \"oci_ops\" and .runtime == \"$rt\" and .wall_ms > 0) | .op] as \$o |
		 ([\"podman exec true\", \"podman pause\", \"podman unpause\", \"runtime exec true\"] - \$o | length == 0)"
done
check "minivmm's API socket: info, stats, pause and resume round trips, none failed" \
	'[.[] | select(.bench == "api_rtt" and .count > 0 and .failures == 0 and .p50_us > 0) | .request] as $r |
	 (["{\"command\":\"info\"}", "{\"command\":\"stats\"}", "{\"command\":\"pause\"}",
	   "{\"command\":\"resume\"}"] - $r | length == 0)'
check "vhost: minivmm-blkd under QEMU, q1 and qn at QD 32: reads, guest interrupts, back-end CPU and its own doorbells + interrupts per request" \
	'[.[] | select(.bench == "vhost_guest_io" and .backend == "blkd" and .qd == 32)] as $v |
	 (["q1", "qn"] - [$v[].disk] | length == 0) and
	 all($v[]; .iops > 0 and .requests > 0 and .guest_interrupts >= 0 and
	     .backend_cpu_us_per_request != null and .blkd_notifications_per_request != null)'
for f in summary.md wiring_time.png wiring_ioctls.png guest_iops.png guest_notifications.png \
	devbench.md devbench_rps.png oci.md oci_image.png vhost.md vhost_iops.png oci_ops.md \
	oci_ops.png; do
	check_file "$f rendered" "$out/$f"
done
check_end check_smoke
