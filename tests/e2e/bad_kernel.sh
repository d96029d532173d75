#!/bin/bash
# bad_kernel.sh MINIVMM: a kernel file that is not a bzImage (garbage,
# truncated bzImage, missing file) makes minivmm exit 1 with a clear
# one-line reason, never a crash; a usage error exits 2.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

head -c 100000 /dev/urandom >"$dir/garbage"
head -c 4096 "$kernel" >"$dir/truncated"
: >"$dir/empty"

check() { # check FILE EXPECTED_STATUS PATTERN
	local rc=0 out
	out=$("$vmm" --kernel "$1" </dev/null 2>&1) || rc=$?
	echo "$1 -> exit $rc: $out"
	[[ $rc -eq $2 ]] || e2e_fail "$1: exit $rc, expected $2"
	grep -q -- "$3" <<<"$out" || e2e_fail "$1: no '$3' in the message"
	# 128+ would be a signal (crash); sanitizer reports also fail here.
	! grep -q -i "sanitizer\|segmentation\|core dumped" <<<"$out" ||
		e2e_fail "$1: crashed"
}
check "$dir/garbage" 1 "not a bzImage"
check "$dir/truncated" 1 "truncated"
check "$dir/empty" 1 "too small"
check "$dir/missing" 1 "No such file"
rc=0
"$vmm" --smp 0 --kernel "$kernel" </dev/null >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || e2e_fail "usage error exited $rc, expected 2"
echo "PASS: bad kernels rejected with exit 1 and a reason; usage error exit 2"
