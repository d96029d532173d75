#!/bin/bash
# bench/oci_rootfs_bench.sh [--quick|--full] BUILD_DIR
#
# minivmm-oci's root file system, ext4 image vs virtio-fs (issue 30 item
# 3), side by side in ONE rig run (tests/e2e/oci-rig.sh ->
# bench/oci_rootfs_rig.sh): create's wall time and CPU, and in the guest a
# cold 64 MiB read, a 64 MiB write + fsync, and a metadata job (untar,
# stat, rm of 2000 files).  Rounds: --quick 2, --full 3 (alternated).
# Writes $BENCH_OUT (default bench/results): oci_rootfs.json (records),
# oci_rootfs.md (medians) and oci_rootfs.png.  Timings are reported,
# never asserted.  OCI_BENCH_REUSE_RIG_LOG=oci_rootfs-run.log re-summarises
# an earlier run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* ]] && { mode=$1; shift; }
build=$(cd "${1:?BUILD_DIR}" && pwd)
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
case $mode in
--quick) rounds=2 ;;
*) rounds=3 ;;
esac
log=$out/oci_rootfs-run.log
rc=0
if [[ -n ${OCI_BENCH_REUSE_RIG_LOG:-} ]]; then
	[[ $OCI_BENCH_REUSE_RIG_LOG -ef $log ]] || cp "$OCI_BENCH_REUSE_RIG_LOG" "$log"
else
	set +e
	E2E_RIG_TIMEOUT=$((600 + rounds * 300)) "$here/../tests/e2e/oci-rig.sh" "$build" \
		"$here/oci_rootfs_rig.sh" "$rounds" >"$log" 2>&1
	rc=$?
	set -e
fi
grep -v '^BENCH-JSON ' "$log" | tail -20 >&2
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
bench_records "$log" | jq -s --arg date "$date" --arg mode "${mode#--}" \
	--arg commit "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	'map(. + {date:$date, run_mode:$mode, git_commit:$commit})' >"$out/oci_rootfs.json"
J() { jq -r "$BENCH_JQ_DEFS $1" "$out/oci_rootfs.json"; }
cols='[["create (ms)", "create_ms"], ["create CPU (ms)", "create_cpu_ms"],
	["read 64 MiB, cold (ms)", "read_64m_ms"], ["write 64 MiB + fsync (ms)", "write_64m_ms"],
	["untar 2000 files (ms)", "untar_ms"], ["find + ls -lR (ms)", "stat_ms"],
	["rm -rf (ms)", "rm_ms"], ["podman run, whole (ms)", "run_wall_ms"]]'
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# One row per measure: label, ext4 median, virtiofs median.
J "$cols as \$c | [.[] | select(.bench == \"oci_rootfs\")] as \$r |
	\$c[] | . as \$p | [\$p[0],
	 (\$r | map(select(.rootfs == \"ext4\") | .[\$p[1]]) | median),
	 (\$r | map(select(.rootfs == \"virtiofs\") | .[\$p[1]]) | median)] | @tsv" >"$tmp"
if [[ -s $tmp ]] && command -v gnuplot >/dev/null; then
	gnuplot <<GP
set terminal pngcairo size 900,500 noenhanced
set output "$out/oci_rootfs.png"
set title "minivmm-oci root file system: ext4 image vs virtio-fs (rig, median ms)"
set style data histograms; set style histogram clustered; set style fill solid 0.8
set ylabel "ms"; set grid ytics; set xtics rotate by -25; set key left top
set datafile separator "\t"
plot "$tmp" u 2:xtic(1) t "ext4 image", "" u 3 t "virtio-fs"
GP
fi
{
	echo "# minivmm-oci root file system: ext4 image vs virtio-fs ($mode, $date, $(git -C "$here" rev-parse --short HEAD 2>/dev/null))"
	echo
	echo "In the rig's L1 (nested KVM under TCG), \`podman run --rm\` with"
	echo "\`--annotation org.minivmm.rootfs=MODE\`, $rounds rounds alternated; the image is"
	echo "busybox + a 64 MiB file + a tarball of 2000 files of 1 KiB (~74 MiB)."
	echo "Guest times from /proc/uptime (10 ms steps); create's CPU is the runtime's"
	echo "own plus mkfs.ext4/debugfs (getrusage), not the VMM's.  Median ms:"
	echo
	echo "| measure | ext4 image | virtio-fs | virtio-fs / ext4 |"
	echo "|---|---|---|---|"
	awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3,
		($2 > 0 && $3 != "") ? sprintf("%.2f", $3 / $2) : "-"}' "$tmp"
	echo
	echo "rounds: ext4 $(J '[.[] | select(.rootfs == "ext4")] | length'), virtio-fs $(J '[.[] | select(.rootfs == "virtiofs")] | length')"
} >"$out/oci_rootfs.md"
cat "$out/oci_rootfs.md" >&2
[[ $rc -eq 0 ]] || bench_log "rig part exited $rc"
exit $rc
