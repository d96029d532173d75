#!/bin/bash
# oci_rootfs_rig.sh ROUNDS: inside the rig's L1 (bench/oci_rootfs_bench.sh
# runs it through tests/e2e/oci-rig.sh): the container's root as an ext4
# image vs over virtio-fs (issue 30 item 3), ROUNDS rounds alternating the
# two (--annotation org.minivmm.rootfs=MODE), each one `podman run --rm` of
# an image of busybox + /big.bin (64 MiB) + /tree.tar (FILES files of 1 KiB
# in 50 directories) running, timed in the guest (/proc/uptime, 10 ms):
# a cold read of /big.bin, a 64 MiB write with fsync, the untar, a find +
# ls -lR of the tree (stat), its rm -rf; and from minivmm-oci's timing
# records: create's wall time and its CPU (itself + mkfs/debugfs).
# Prints BENCH-JSON records.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rounds=${1:-3}
files=${OCI_ROOTFS_FILES:-2000}
[[ -w /dev/kvm ]] || { echo "no /dev/kvm"; exit 77; }
timings=/tmp/oci-rootfs-timings.json
: >"$timings"
W=$(bench_scratch ocirb)
mkdir -p "$W/img/x" "$W/console"
bench_oci_setup "$W" "timings=$timings" "console_dir=$W/console"
# The image: the rig's busybox image, the big file, the tree's tarball.
tar -C "$W/img" -xf "$OCI_IMAGE_TAR"
head -c $((64 << 20)) /dev/urandom >"$W/img/big.bin"
# Without a process per file (a fork costs tens of ms in the TCG L1).
mkdir -p "$W"/img/x/d{0..49}
printf -v kib '%1024s' ''
for i in $(seq "$files"); do
	printf '%s' "$kib" >"$W/img/x/d$((i % 50))/f$i"
done
tar -C "$W/img/x" -cf "$W/img/tree.tar" .
rm -rf "$W/img/x"
tar -C "$W/img" -cf "$W/img.tar" .
rm -rf "$W/img"
"${P[@]}" import "$W/img.tar" localhost/rfsb >/dev/null || bench_die "podman import"
rm -f "$W/img.tar"
job='u() { read a b </proc/uptime; echo $a; }
t0=$(u); cat /big.bin >/dev/null; t1=$(u)
dd if=/dev/zero of=/w.bin bs=1M count=64 conv=fsync 2>/dev/null; t2=$(u)
mkdir /x && tar -xf /tree.tar -C /x; t3=$(u)
n=$(find /x -type f | wc -l); ls -lR /x >/dev/null; t4=$(u)
rm -rf /x /w.bin; sync; t5=$(u)
echo "TIMES $n $t0 $t1 $t2 $t3 $t4 $t5"'
# A run that does not end in time: what its cgroup, virtiofsd and guest
# say, then it is killed (the next rounds go on).  A virtio-fs round
# took about 130 s in a quiet rig.
stuck() { # MODE ID
	local cg p
	bench_log "round $i $1: still running after ${OCI_ROOTFS_RUN_TIMEOUT:-240} s"
	cg=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "*$2*" 2>/dev/null | head -1)
	for f in memory.max memory.current memory.events pids.max pids.current pids.events; do
		[[ -n $cg && -r $cg/$f ]] && bench_log "  $f: $(tr '\n' ' ' <"$cg/$f")"
	done
	for p in /proc/[0-9]*; do
		[[ "$(cat "$p/comm" 2>/dev/null)" == virtiofsd ]] &&
			bench_log "  virtiofsd ${p#/proc/}: $(awk '/^(State|VmRSS|Threads)/' "$p/status" | tr '\n' ' ') fds $(ls "$p/fd" 2>/dev/null | wc -l)"
	done
	dmesg 2>/dev/null | grep -iE 'oom|killed|virtio|fuse' | tail -5 | while read -r l; do bench_log "  dmesg: $l"; done
	tail -c 1500 "$W/console/$2.console.log" 2>/dev/null | tr -d '\r' | while read -r l; do bench_log "  guest: $l"; done
	"${P[@]}" rm -f "$2" >/dev/null 2>&1
}
for i in $(seq "$rounds"); do
	for mode in ext4 virtiofs; do
		rm -f "$W/cid"
		t0=$(bench_now_ns)
		"${P[@]}" --runtime "$OCI_RUNTIME" run --rm --network none --cidfile "$W/cid" \
			--annotation org.minivmm.rootfs=$mode localhost/rfsb sh -c "$job" \
			>"$W/out" 2>"$W/err" &
		pid=$!
		for _ in $(seq "${OCI_ROOTFS_RUN_TIMEOUT:-240}"); do
			kill -0 $pid 2>/dev/null || break
			sleep 1
		done
		kill -0 $pid 2>/dev/null && stuck "$mode" "$(cat "$W/cid" 2>/dev/null)"
		wait $pid
		rc=$?
		t1=$(bench_now_ns)
		# No process substitution: the L1 has no /dev/fd.
		# shellcheck disable=SC2046
		set -- $(grep '^TIMES ' "$W/out")
		n=${2:-} a=${3:-} b=${4:-} c=${5:-} d=${6:-} e=${7:-} f=${8:-}
		id=$(cat "$W/cid" 2>/dev/null)
		cr=$(jq -c --arg id "$id" 'select(.id == $id and .event == "create")' "$timings")
		if [[ $rc -ne 0 || -z ${f:-} || -z $cr ]]; then
			bench_log "round $i $mode failed ($rc): $(tail -3 "$W/err") $(cat "$W/out")"
			continue
		fi
		rec=$(jq -cn --arg mode "$mode" --argjson r "$i" --argjson n "$n" \
			--argjson cr "$cr" --argjson wall $(((t1 - t0) / 1000000)) \
			--argjson a "$a" --argjson b "$b" --argjson c "$c" --argjson d "$d" \
			--argjson e "$e" --argjson f "$f" \
			'{bench:"oci_rootfs", rootfs:$mode, round:$r, files:$n, run_wall_ms:$wall,
			  create_ms:$cr.create_ms, create_cpu_ms:$cr.cpu_ms, image_ms:$cr.image_ms,
			  read_64m_ms:(($b - $a) * 1000 | round), write_64m_ms:(($c - $b) * 1000 | round),
			  untar_ms:(($d - $c) * 1000 | round), stat_ms:(($e - $d) * 1000 | round),
			  rm_ms:(($f - $e) * 1000 | round)}')
		bench_log "round $i $mode: $rec"
		bench_emit "$rec"
	done
done
