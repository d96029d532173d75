#!/bin/bash
# tests/unit/fsio.sh [EMULATOR] FSIO: the guest's file I/O helper of
# e2e/fs (tests/guest/fsio.c) checks itself on a temp directory in the
# build tree, KVM-free: mmap + msync, write + fsync and O_DIRECT each
# leave SRC's bytes in DST (exit 0) while a child holds DST open (its pid
# printed; killed here); O_DIRECT either works or, where this file system
# refuses it, says "O_DIRECT refused" and exits 3; a SRC size that is not a
# multiple of 4096 for O_DIRECT, an unknown operation and a missing
# argument exit 2; a missing SRC exits 1.
set -uo pipefail
(($# == 1 || $# == 2)) || { echo "usage: $0 [EMULATOR] FSIO"; exit 2; }
f=("$@")
# Not /tmp: often a tmpfs, which refuses O_DIRECT before Linux 6.6.
dir=$(mktemp -d "$PWD/fsio.XXXXXX")
holders=()
cleanup() {
	local p
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
fail=0
head -c $((256 * 4099)) /dev/urandom >"$dir/src"
head -c $((64 * 4096)) /dev/urandom >"$dir/src4k"

# run OP SRC DST: fsio's exit status in $rc, its output in $dir/out, the
# holder's pid (if any) remembered.
run() {
	"${f[@]}" "$@" >"$dir/out" 2>&1
	rc=$?
	local p
	p=$(sed -n 's/.*held open by pid \([0-9]*\)$/\1/p' "$dir/out")
	[[ -n $p ]] && holders+=("$p")
	return 0
}
check() { # WHAT COND...
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else
		echo "FAIL: $what (exit $rc):"
		cat "$dir/out"
		fail=1
	fi
}

run mmap "$dir/src" "$dir/mm"
check "mmap + msync" eval '((rc == 0)) && cmp -s "$dir/src" "$dir/mm" && grep -q "held open by pid" "$dir/out"'
run fsync "$dir/src" "$dir/fs"
check "write + fsync" eval '((rc == 0)) && cmp -s "$dir/src" "$dir/fs"'
run direct "$dir/src4k" "$dir/dio"
if ((rc == 3)); then
	check "O_DIRECT refused here, said so" grep -q "O_DIRECT refused" "$dir/out"
else
	check "O_DIRECT" eval '((rc == 0)) && cmp -s "$dir/src4k" "$dir/dio"'
fi
# Every holder is alive: DST stays open until it is killed.
for p in "${holders[@]}"; do
	check "holder $p alive" kill -0 "$p"
done
run direct "$dir/src" "$dir/dio2"
check "O_DIRECT with an unaligned size: exit 2, DST not created" \
	eval '((rc == 2)) && [[ ! -e $dir/dio2 ]]'
run bogus "$dir/src" "$dir/x"
check "unknown operation: exit 2" eval '((rc == 2))'
run mmap "$dir/src"
check "missing argument: exit 2" eval '((rc == 2))'
run fsync "$dir/nosuch" "$dir/y"
check "missing SRC: exit 1" eval '((rc == 1))'
exit $fail
