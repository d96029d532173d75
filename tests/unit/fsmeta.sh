#!/bin/bash
# tests/unit/fsmeta.sh [EMULATOR] FSMETA: the guest's metadata timer of
# bench/fs_bench.sh (tests/guest/fsmeta.c) checks itself on a temp
# directory in the build tree, KVM-free: `meta DIR N` creates, stats and
# unlinks N files and removes DIR (exit 0, one line with the three phase
# times and files=N; the cache drop may be refused when not root), an
# existing DIR exits 1; `time CMD` prints ms= and passes CMD's status on
# (0, 3, 127 for a missing CMD); bad arguments exit 2.
set -uo pipefail
(($# == 1 || $# == 2)) || { echo "usage: $0 [EMULATOR] FSMETA"; exit 2; }
f=("$@")
dir=$(mktemp -d "$PWD/fsmeta.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # WHAT COND...
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else
		echo "FAIL: $what (exit $rc): $(cat "$dir/out")"
		fail=1
	fi
}
run() { "${f[@]}" "$@" >"$dir/out" 2>"$dir/err"; rc=$?; }

run meta "$dir/m" 50
check "meta: exit 0" test "$rc" -eq 0
check "meta: the three phases timed, files=50" \
	grep -Eq '^create_ms=[0-9.]+ stat_ms=[0-9.]+ unlink_ms=[0-9.]+ files=50 sync_drop_ms=[0-9.]+$' "$dir/out"
check "meta: DIR removed" test ! -e "$dir/m"
mkdir "$dir/m"
run meta "$dir/m" 5
check "meta on an existing DIR: exit 1" test "$rc" -eq 1
run time true
check "time true: exit 0, ms=" bash -c '[[ $0 -eq 0 ]] && grep -Eq "^ms=[0-9.]+$" "$1"' "$rc" "$dir/out"
run time sh -c 'exit 3'
check "time: CMD's status (3)" test "$rc" -eq 3
run time "$dir/no-such-program"
check "time: a missing CMD exits 127" test "$rc" -eq 127
for a in "meta $dir/x 0" "meta $dir/x 1z" "meta $dir/x" "nope" "time"; do
	# shellcheck disable=SC2086 # word lists
	run $a
	check "bad arguments ($a): exit 2" test "$rc" -eq 2
done
exit $fail
