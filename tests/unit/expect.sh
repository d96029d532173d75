# tests/unit/expect.sh: sourced by the unit scripts that check a guest tool
# by its exit status and output (blkverify.sh, netcount.sh).  The script
# sets prog (the command: [EMULATOR] TOOL), dir (a scratch directory) and
# fail=0 first.
# expect RC PATTERN ARGS...: "${prog[@]}" ARGS exits RC and its output
# (stdout and stderr) matches the extended regex PATTERN; prints ok: or
# FAIL: with the output, and sets fail=1 on a mismatch.
expect() {
	local rc=$1 pat=$2 got name
	shift 2
	name=$(basename "${prog[-1]}")
	"${prog[@]}" "$@" >"$dir/out" 2>&1
	got=$?
	if ((got != rc)) || ! grep -Eq -- "$pat" "$dir/out"; then
		echo "FAIL: $name $* exited $got (want $rc), output (want /$pat/):"
		cat "$dir/out"
		fail=1
	else
		echo "ok: $name $* -> $rc: $(grep -E -m1 -- "$pat" "$dir/out")"
	fi
}
