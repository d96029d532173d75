#!/bin/bash
# check_fs_smoke.sh OUT_DIR
#
# Checks what `bench/fs_bench.sh --smoke` wrote to OUT_DIR (CTest's
# bench/fs_smoke), so that the virtio-fs benchmark cannot rot: each of the
# three sides (minivmm virtio-fs, QEMU vhost-user-fs-pci, minivmm ext4 on
# virtio-blk) booted and ran every workload (fio's four phases with I/O
# done, the metadata run over all its files, the untar and its removal),
# minivmm's statistics came back for both of its guests, no run failed, and
# the summary (and the plot, where gnuplot is) was written.  It never looks
# at a timing beyond "was measured" (> 0).
set -euo pipefail
out=${1:?OUT_DIR}
# shellcheck source=bench/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
check_results "$out/fs.json"
check_smoke_records
check "the machine record gives the file count and the tree" \
	'[.[] | select(.bench == "fs_machine")][0] | .meta_files > 0 and .tree_files > 0'
for side in mvfs qemu mvblk; do
	check "$side: booted" "any(.[]; .bench == \"fs_boot\" and .side == \"$side\" and .ready_ms > 0)"
	for w in randread randwrite seqread seqwrite; do
		check "$side: fio $w did I/O" \
			"any(.[]; .bench == \"fs\" and .side == \"$side\" and .workload == \"$w\" and .iops > 0 and .kibs > 0)"
	done
	check "$side: create, stat and unlink of every file measured" \
		"([.[] | select(.bench == \"fs_machine\")][0].meta_files) as \$n |
		 any(.[]; .bench == \"fs\" and .side == \"$side\" and .workload == \"meta\" and .files == \$n and
		     .create_ms > 0 and .stat_ms > 0 and .unlink_ms > 0)"
	check "$side: untar and rm -rf measured" \
		"any(.[]; .bench == \"fs\" and .side == \"$side\" and .workload == \"untar\" and .untar_ms > 0 and .rm_ms > 0)"
done
for side in mvfs mvblk; do
	check "$side: minivmm's statistics at exit" \
		"any(.[]; .bench == \"fs_vmm_stats\" and .side == \"$side\" and .stats.kvm.exits > 0)"
done
check "no failed run" '[.[] | select(.bench == "fs_error")] | length == 0'
check_line "fs.md has the target line" 'Target \(issue 29\): virtio-fs minivmm >= 1\.0x QEMU' "$out/fs.md"
command -v gnuplot >/dev/null && check_file "fs.png rendered" "$out/fs.png"
check_end check_fs_smoke
