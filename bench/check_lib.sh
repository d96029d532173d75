# bench/check_lib.sh: sourced by the smoke checkers (check_smoke.sh,
# check_vsock_smoke.sh, check_net_smoke.sh, check_fs_smoke.sh).  They read
# a results file with jq and count the checks that fail; none of them looks
# at a timing beyond "was measured".
#   check_results FILE    the JSON array the checks read (r); stops at once
#                    when it is missing or empty
#   check_smoke_records   every record is a smoke record with a date
#   check DESC JQ    "ok: DESC" when JQ is true on $r, else "FAIL: DESC"
#   check_file DESC PATH   a file that must exist and not be empty
#   check_line DESC ERE PATH  a line of PATH that must match ERE
#   check_end NAME   exit 1 with the count when any check failed
fails=0
check_results() {
	r=$1
	[[ -s $r ]] || { echo "FAIL: no $r" >&2; exit 1; }
}
check_smoke_records() {
	check "records are smoke records with a date" \
		'type == "array" and length > 0 and all(.[]; .date and .run_mode == "smoke")'
}
check() {
	if jq -e "$2" "$r" >/dev/null; then
		echo "ok: $1"
	else
		echo "FAIL: $1" >&2
		fails=$((fails + 1))
	fi
}
check_file() {
	if [[ -s $2 ]]; then echo "ok: $1"; else
		echo "FAIL: $1 ($2 missing or empty)" >&2
		fails=$((fails + 1))
	fi
}
check_line() {
	if grep -Eq "$2" "$3"; then echo "ok: $1"; else
		echo "FAIL: $1 (no line matching '$2' in $3)" >&2
		fails=$((fails + 1))
	fi
}
check_end() {
	((fails == 0)) || { echo "$1: $fails check(s) failed" >&2; exit 1; }
	echo "$1: all checks passed"
}
