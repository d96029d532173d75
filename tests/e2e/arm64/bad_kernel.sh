#!/bin/sh
# bad_kernel.sh MINIVMM INITRD (arm64, in the arm64 rig's L1)
# What is not an arm64 Image (here: the initrd, a cpio archive; a zero-
# length file) is refused at start with a message naming the file and the
# reason, exit 1, and no guest runs.
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
vmm=$1 initrd=$2
dir=$(e2e_tmpdir)
trap 'rm -rf "$dir"' EXIT

e2e_run_vmm "$dir/log" "$vmm" --smp 2 --mem 256M --kernel "$initrd"
[ "$E2E_RC" -eq 1 ] || e2e_fail "minivmm exited $E2E_RC for a non-Image kernel, expected 1"
grep -q "is not an arm64 Image" "$dir/log" || e2e_fail "no clear message for a non-Image kernel"
: >"$dir/empty"
e2e_run_vmm "$dir/log2" "$vmm" --smp 1 --mem 256M --kernel "$dir/empty"
[ "$E2E_RC" -eq 1 ] || e2e_fail "minivmm exited $E2E_RC for an empty kernel, expected 1"
grep -q "kernel $dir/empty" "$dir/log2" || e2e_fail "the message does not name the empty kernel"
! grep -q "MINIVMM-GUEST-UP" "$dir/log" "$dir/log2" || e2e_fail "a guest ran"
echo "PASS: arm64: a cpio archive and an empty file are refused as kernels, exit 1"
