#!/bin/bash
# bench/run.sh [--smoke|--quick|--full]
#
# Runs every benchmark and writes bench/results/:
#   results.json   one record per measurement (all parameters, machine, date)
#   summary.md     medians, ratios and the targets, as Markdown tables
#   *.png          gnuplot plots
#   kvm-run.log    raw output of the KVM part (inside the nested-KVM rig)
#   native-run.log raw output of bench/footprint.sh (this host's /dev/kvm)
#
#   --smoke  the shortest run of every benchmark: one boot each, 1 s fio
#            phases, 0.3 s device runs (CI's bench/smoke test, which checks
#            the records with bench/check_smoke.sh; ~3 minutes here)
#   --quick  one round of everything (~6 minutes here)
#   --full   >= 5 alternating rounds (default; ~15 minutes here)
#
# bench/oci_bench.sh (minivmm-oci: podman run vs runc, the shim's phases,
# image build vs size) runs in a second rig call; its records are merged
# and its summary is bench/results/oci.md; bench/oci_ops_bench.sh (exec,
# pause/unpause vs runc, minivmm's API round trip) a third, summary
# bench/results/oci_ops.md.
#
# The KVM benchmarks (wiring, guest boot/IO, footprint) run in ONE
# tests/rig/rig-run call (bench/guest_bench.sh; an L1 stall runs it once
# more from the start, as for the e2e tests: RIG_STALL_RETRIES, default 1,
# and only the last attempt's records count); the KVM-free device
# benchmark bench/devbench.sh runs here when it exists and its records
# (bench/results/devbench.json) are merged.  Builds what it needs in
# $BENCH_BUILD_DIR (default build-bench).  Counts (ioctls, exits, kicks,
# interrupts per request) are the primary results; timings are reported,
# never asserted.
#
# Environment: BENCH_OUT (default bench/results) for the results;
# BENCH_PREBUILT=1 uses $BENCH_BUILD_DIR as it is (a CMake build with the
# bench targets, e.g. CTest's) instead of configuring and building it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

mode=--full
for a in "$@"; do
	case "$a" in
	--smoke | --quick | --full) mode=$a ;;
	-h | --help)
		sed -n '2,/^set -e/p' "$0" | sed '$d'
		exit 0
		;;
	*) bench_die "unknown option $a (use --smoke, --quick or --full)" ;;
	esac
done
out=${BENCH_OUT:-bench/results}
build=${BENCH_BUILD_DIR:-build-bench}
mkdir -p "$out"
for t in jq gnuplot cmake; do
	command -v "$t" >/dev/null || bench_die "$t is missing (scripts/deps.sh installs it)"
done
t_start=$SECONDS
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

if [[ ${BENCH_PREBUILT:-0} == 1 ]]; then
	for f in minivmm bench/wiring_bench bench/footprint_preload.so bench/footprint_exec bench/devbench \
		minivmm-oci libexec/minivmm-oci/init minivmm-oci-mkinitrd bench/oci_image_bench minivmm-blkd; do
		[[ -e $build/$f ]] || bench_die "BENCH_PREBUILT: $build/$f is missing"
	done
else
	bench_log "building ($build)"
	cmake -S . -B "$build" -DVMM_BUILD_TESTS=OFF >/dev/null
	cmake --build "$build" -j"$(nproc)" --target minivmm wiring_bench footprint_preload \
		footprint_exec devbench minivmm-oci minivmm-oci-init minivmm-oci-mkinitrd \
		oci_image_bench minivmm-blkd >/dev/null
fi
tests/rig/mkguest.sh --quiet
mapfile -t guest < <(tests/rig/mkguest.sh)
tools=$(tests/rig/mktools.sh)

bench_log "footprint on this host's own /dev/kvm (native, up to the first KVM_RUN)"
bench/footprint.sh "$mode" "$build" "${guest[0]}" "${guest[1]}" >"$out/native-run.log" 2>&1 ||
	bench_log "footprint.sh exited $?"
grep -v '^BENCH-JSON ' "$out/native-run.log" >&2 || true

timeout=900
[[ $mode == --full ]] && timeout=2400
bench_log "KVM benchmarks ($mode) through the rig"
set +e
tests/rig/rig-run --timeout "$timeout" --stall-retries "${RIG_STALL_RETRIES:-1}" -- \
	bench/guest_bench.sh "$mode" "$build" "${guest[0]}" "${guest[1]}" "$tools" \
	>"$out/kvm-run.log" 2>&1 &
rig_pid=$!
tail -n +1 --pid=$rig_pid -f "$out/kvm-run.log" | grep -v '^BENCH-JSON ' >&2
wait $rig_pid
kvm_rc=$?
set -e
[[ $kvm_rc -eq 0 ]] || bench_log "KVM part exited $kvm_rc (results so far are kept)"

records=$(mktemp)
trap 'rm -f "$records"' EXIT
bench_records "$out/native-run.log" "$out/kvm-run.log" | jq -c . >"$records" || true

dev_rc=0
if [[ -x bench/devbench.sh ]]; then
	bench_log "device benchmark: bench/devbench.sh $mode"
	rm -f "$out/devbench.json"
	BENCH_OUT=$out DEVBENCH_BIN=$build/bench/devbench bench/devbench.sh "$mode" >&2 || dev_rc=$?
	[[ $dev_rc -eq 0 ]] || bench_log "devbench.sh exited $dev_rc"
	if [[ -s $out/devbench.json ]]; then
		jq -c '.[] | {bench:"devbench"} + .' "$out/devbench.json" >>"$records" ||
			bench_log "devbench.json is not a JSON array; not merged"
	fi
fi

# minivmm-oci (its own rig run; oci.json, oci.md, oci_image.png).
oci_rc=0
bench_log "OCI runtime benchmark: bench/oci_bench.sh $mode"
BENCH_OUT=$out bench/oci_bench.sh "$mode" "$build" || oci_rc=$?
[[ $oci_rc -eq 0 ]] || bench_log "oci_bench.sh exited $oci_rc"
if [[ -s $out/oci.json ]]; then
	jq -c '.[] | del(.date, .run_mode, .git_commit)' "$out/oci.json" >>"$records" ||
		bench_log "oci.json is not a JSON array; not merged"
fi

# vhost-user back ends: minivmm-blkd vs qemu-storage-daemon under QEMU (its
# own rig run; vhost.json, vhost.md, vhost_iops.png).
vhost_rc=0
bench_log "vhost-user-blk back ends: bench/vhost_bench.sh $mode"
BENCH_OUT=$out BENCH_PREBUILT=1 bench/vhost_bench.sh "$mode" "$build" || vhost_rc=$?
[[ $vhost_rc -eq 0 ]] || bench_log "vhost_bench.sh exited $vhost_rc"
if [[ -s $out/vhost.json ]]; then
	jq -c '.[] | del(.date, .run_mode, .git_commit)' "$out/vhost.json" >>"$records" ||
		bench_log "vhost.json is not a JSON array; not merged"
fi

# Containers users manage: exec / pause vs runc and minivmm's API socket
# (its own rig run; oci_ops.json, oci_ops.md, oci_ops.png).
ops_rc=0
bench_log "exec / pause / API benchmark: bench/oci_ops_bench.sh $mode"
BENCH_OUT=$out bench/oci_ops_bench.sh "$mode" "$build" || ops_rc=$?
[[ $ops_rc -eq 0 ]] || bench_log "oci_ops_bench.sh exited $ops_rc"
if [[ -s $out/oci_ops.json ]]; then
	jq -c '.[] | del(.date, .run_mode, .git_commit)' "$out/oci_ops.json" >>"$records" ||
		bench_log "oci_ops.json is not a JSON array; not merged"
fi

machine=$(jq -cn --arg kernel "$(uname -r)" \
	--arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
	--argjson cpus "$(nproc)" --argjson mem_kib "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" \
	--arg commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	--arg dirty "$(git status --porcelain 2>/dev/null | grep -q . && echo yes || echo no)" \
	'{host_kernel:$kernel, host_cpu:$cpu, host_cpus:$cpus, host_mem_kib:$mem_kib,
	  git_commit:$commit, git_dirty:($dirty == "yes")}')
kvm_machine=$(jq -c 'select(.bench == "machine_kvm") | del(.bench)' "$records" | head -1)
[[ -n $kvm_machine ]] || kvm_machine=null
jq -s --arg date "$date" --arg mode "${mode#--}" --argjson m "$machine" --argjson k "$kvm_machine" \
	'map(select(.bench != "machine_kvm") + {date:$date, run_mode:$mode, machine:($m + {kvm:$k})})' \
	"$records" >"$out/results.json"
bench_log "$(jq length "$out/results.json") records in $out/results.json"

bench/plot.sh "$out/results.json" "$out"
bench_log "done in $((SECONDS - t_start)) s: $out/summary.md"
[[ $kvm_rc -eq 0 && $dev_rc -eq 0 && $oci_rc -eq 0 && $ops_rc -eq 0 ]]
