#!/bin/sh
# units.sh CHECK_PROGRAM... (arm64, in the arm64 rig's L1)
# Runs each Check unit-test program on a real aarch64 kernel: the ones
# user-mode QEMU cannot run (io_uring, seccomp filters, KVM, exec of
# another aarch64 program).  Every program runs even when one fails;
# exit 1 if any did.  KVM is only needed by some, but the L1 has it.
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
[ $# -gt 0 ] || e2e_fail "no test programs"
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120}
failed=
for t in "$@"; do
	if "$t" >"/tmp/unit.$$" 2>&1; then
		echo "PASS: ${t##*/}: $(grep -m1 -E '^[0-9]+%' "/tmp/unit.$$")"
	else
		cat "/tmp/unit.$$"
		echo "FAIL: ${t##*/}"
		failed="$failed ${t##*/}"
	fi
done
rm -f "/tmp/unit.$$"
[ -z "$failed" ] || e2e_fail "unit tests failed on the arm64 kernel:$failed"
echo "PASS: $# unit-test programs on the arm64 kernel"
