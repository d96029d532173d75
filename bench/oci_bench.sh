#!/bin/bash
# bench/oci_bench.sh [--smoke|--quick|--full] BUILD_DIR
#
# minivmm-oci's benchmark (issue 10, item 7); writes to $BENCH_OUT
# (default bench/results): oci.json (records), oci.md (summary) and
# oci_image.png.
#  - image build time vs root file system size, natively here (no KVM
#    needed): bench/oci_image_bench on generated trees of 2 (busybox), 10,
#    50 and 100 MB (files of 4 KiB .. 128 KiB, like a distribution's
#    /usr), read-only and writable (+256 MiB free);
#  - in ONE rig run (tests/e2e/oci-rig.sh -> bench/oci_rig_bench.sh):
#    `podman run --rm bb true` with minivmm-oci vs runc (with the ulimit
#    flags runc needs there), alternated, and minivmm-oci's own phases
#    (create, image, VM start, delete: the shim's work outside the guest)
#    from its timing records.
# Rounds: --smoke 1 (and only the 2 and 10 MB trees), --quick 2, --full 5.
# Timings are reported, never asserted.  OCI_BENCH_REUSE_IMAGES=oci.json
# and OCI_BENCH_REUSE_RIG_LOG=oci-run.log re-summarise earlier measurements
# instead of taking them again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* ]] && { mode=$1; shift; }
build=$(cd "${1:?BUILD_DIR}" && pwd)
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
case $mode in
--smoke) rounds=1 sizes="2 10" ;;
--quick) rounds=2 sizes="2 10 50 100" ;;
*) rounds=5 sizes="2 10 50 100" ;;
esac
for b in minivmm-oci libexec/minivmm-oci/init minivmm-oci-mkinitrd bench/oci_image_bench; do
	[[ -x $build/$b ]] || bench_die "$build/$b is missing (build the minivmm-oci targets)"
done
records=$(mktemp)
tmp=$(mktemp -d)
imgdir=$(mktemp -d /dev/shm/oci-bench.XXXXXX)
trap 'rm -rf "$records" "$tmp" "$imgdir"' EXIT

# ---- image build vs size (native) ----
gen_tree() { # DIR MB: busybox plus MB of files of 4..128 KiB (deterministic)
	local dir=$1 mb=$2 i=0 left size
	mkdir -p "$dir/bin" "$dir/usr/share"
	cp "$(command -v busybox)" "$dir/bin/busybox"
	left=$(((mb - 2) * 1024 * 1024))
	while ((left > 0)); do
		size=$(((i * 7919 % 31 + 1) * 4096))
		((size > left)) && size=$left
		mkdir -p "$dir/usr/share/d$((i / 64))"
		head -c "$size" /dev/urandom >"$dir/usr/share/d$((i / 64))/f$i"
		left=$((left - size))
		i=$((i + 1))
	done
}
if [[ -n ${OCI_BENCH_REUSE_IMAGES:-} ]]; then
	jq -c '.[] | select(.bench == "oci_image") | del(.date, .run_mode, .git_commit)' \
		"$OCI_BENCH_REUSE_IMAGES" >>"$records"
else
	for mb in $sizes; do
		for ro in true false; do
			b=$tmp/b$mb-$ro
			mkdir -p "$b"
			[[ -d $tmp/t$mb ]] || gen_tree "$tmp/t$mb" "$mb"
			printf '{"ociVersion":"1.0.2","process":{"args":["true"]},"root":{"path":"%s","readonly":%s},"linux":{"namespaces":[{"type":"network"}]}}\n' \
				"$tmp/t$mb" "$ro" >"$b/config.json"
			# The image goes where the runtime puts it: /run, a tmpfs.
			"$build/bench/oci_image_bench" "$b" "$imgdir/img" "$rounds" |
				jq -c --argjson mb "$mb" '{bench:"oci_image", tree_mb:$mb} + .' >>"$records"
		done
		bench_log "image build, $mb MB tree: $(jq -r "select(.bench == \"oci_image\" and .tree_mb == $mb) | .total_ms" "$records" | tr '\n' ' ')ms"
	done

fi

# ---- podman run: minivmm-oci vs runc, and the shim's phases (rig) ----
rc=0
if [[ -n ${OCI_BENCH_REUSE_RIG_LOG:-} ]]; then
	[[ $OCI_BENCH_REUSE_RIG_LOG -ef $out/oci-run.log ]] || cp "$OCI_BENCH_REUSE_RIG_LOG" "$out/oci-run.log"
else
	set +e
	E2E_RIG_TIMEOUT=$((600 + rounds * 240)) "$here/../tests/e2e/oci-rig.sh" "$build" \
		"$here/oci_rig_bench.sh" "$rounds" >"$out/oci-run.log" 2>&1
	rc=$?
	set -e
fi
grep -v '^BENCH-JSON ' "$out/oci-run.log" | tail -20 >&2
bench_records "$out/oci-run.log" >>"$records"
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
bench_stamp "$records" "$mode" "$date" "$out/oci.json"

# ---- summary and plot ----
J() { jq -r "$BENCH_JQ_DEFS $1" "$out/oci.json"; }
J '[.[] | select(.bench == "oci_image")] | group_by(.tree_mb)[] |
	[.[0].tree_mb, (map(select(.readonly)) | map(.total_ms) | median),
	 (map(select(.readonly | not)) | map(.total_ms) | median),
	 (map(.rootfs_inodes) | median)] | @tsv' >"$tmp/image.dat"
if [[ -s $tmp/image.dat ]] && command -v gnuplot >/dev/null; then
	gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output "$out/oci_image.png"
set title "minivmm-oci root image build (mkfs.ext4 -d + debugfs), median"
set xlabel "root file system (MB)"; set ylabel "ms"; set grid; set key left top
plot "$tmp/image.dat" u 1:2 w lp lw 2 t "read-only root", \
     "$tmp/image.dat" u 1:3 w lp lw 2 t "writable root (+256 MiB free)", \
     1000 w l dt 2 t "target: 1 s for 100 MB"
GP
fi
{
	echo "# minivmm-oci benchmark ($mode, $date, $(git -C "$here" rev-parse --short HEAD 2>/dev/null))"
	echo
	echo "Image build (native, this host; median ms over $rounds rounds):"
	echo
	echo "| tree MB | inodes | read-only | writable (+256 MiB) |"
	echo "|---|---|---|---|"
	awk -F'\t' '{printf "| %s | %s | %.1f | %.1f |\n", $1, $4, $2, $3}' "$tmp/image.dat"
	echo
	echo "podman run --rm bb true in the rig's L1 (nested KVM under TCG; median ms):"
	echo
	J '[.[] | select(.bench == "oci_run")] as $r |
		($r | map(select(.runtime == "minivmm-oci") | .wall_ms) | median) as $m |
		($r | map(select(.runtime == "runc") | .wall_ms) | median) as $c |
		"| runtime | wall ms | rounds |\n|---|---|---|\n| minivmm-oci | \($m) | \($r | map(select(.runtime == "minivmm-oci")) | length) |\n| runc | \($c) | \($r | map(select(.runtime == "runc")) | length) |\n\nratio minivmm-oci / runc: \(if $m and $c then ($m / $c | r(2)) else null end)"'
	echo
	echo "minivmm-oci phases per container (rig; median ms): the shim's own work is"
	echo "create (image build + VM set-up) + delete + its part of start."
	echo
	J '[.[] | select(.bench == "oci_shim")] as $s |
		"| phase | ms |\n|---|---|\n" +
		([["image build", "image_ms"], ["create total (until the VM runs)", "create_ms"],
		  ["guest boot (VM start -> init ready)", "guest_boot_ms"],
		  ["start -> process executed", "start_to_exec_ms"], ["delete", "delete_ms"],
		  ["shim total (create + start + delete)", "shim_ms"]] |
		 map(. as $p | "| \($p[0]) | \($s | map(.[$p[1]]) | median | r(1)) |") | join("\n"))'
} >"$out/oci.md"
cat "$out/oci.md" >&2
[[ $rc -eq 0 ]] || bench_log "rig part exited $rc"
exit $rc
