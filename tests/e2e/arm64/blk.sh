#!/bin/sh
# blk.sh MINIVMM IMAGE INITRD NR_CPUS [MIB_PER_CPU] (arm64, in the arm64
# rig's L1)
# virtio-blk on arm64 as on x86: a data disk with the default queue count
# (one per vCPU), each queue's MSI-X vector a distinct LPI through the ITS,
# crc32c-verified I/O from every CPU completing on that CPU (the guest's
# payload tests/guest/blk-percpu with the static blkverify), and a
# read-only disk that reads and refuses writes.  Seccomp on (the default).
# MIB_PER_CPU (default 4) is what blkverify writes and reads back per CPU.
# E2E_APPEND: more guest command line (CTest's 32-vCPU run: see
# tests/e2e/arm64/CMakeLists.txt).
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
vmm=$1 kernel=$2 initrd=$3 n=$4 mb=${5:-4}
dir=$(e2e_tmpdir)
trap 'rm -rf "$dir"' EXIT
e2e_disk "$dir/data.img" $((n * mb + 16))
e2e_disk "$dir/ro.img" 16

e2e_run_vmm "$dir/log" "$vmm" --smp "$n" --mem 1G --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dir/data.img,serial=data" \
	--disk "path=$dir/ro.img,serial=ro,ro=on" \
	--append "quiet guest.run=blk-percpu guest.queues=$n guest.verify_mb=$mb ${E2E_APPEND:-}"
grep -q "BLKVERIFY OK" "$dir/log" || e2e_fail "blkverify did not pass"
grep -q "BLK completions: every CPU" "$dir/log" || e2e_fail "completions not on the submitting CPUs"
grep -q "BLK ro:" "$dir/log" || e2e_fail "the read-only disk was not checked"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "the payload failed"
[ "$E2E_RC" -eq 0 ] || e2e_fail "minivmm exited $E2E_RC, expected 0"
echo "PASS: arm64 --smp $n: $n queues, $n distinct LPIs, blkverify from every CPU with completions there, ro disk; exit 0"
