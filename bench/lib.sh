# shellcheck shell=bash
# Shared helpers of the benchmark scripts (sourced).

bench_log() {
	echo "bench: $*" >&2
}

bench_die() {
	echo "bench: error: $*" >&2
	exit 1
}

# bench_json_str S: S as a JSON string.
bench_json_str() {
	jq -cn --arg s "$1" '$s'
}

# bench_emit JSON: one result record on stdout, tagged so that run.sh can
# pick it out of the rig's merged output.
bench_emit() {
	printf 'BENCH-JSON %s\n' "$1"
}

# bench_records FILE...: the BENCH-JSON records of rig runs' logs, without
# the prefix.  Where tests/rig/rig-run retried a stalled L1 ("rig: L1
# stalled: RETRYING", the whole command again from the start), only the
# records after the last retry count: the stalled attempt's are partial.
# A log holding several rig runs separates them with BENCH_RIG_RUN lines
# (bench_rig_run_marker): a retry then discards only its own run's records.
BENCH_RIG_RUN="BENCH-RIG-RUN"
bench_rig_run_marker() {
	printf '%s %s\n' "$BENCH_RIG_RUN" "$*"
}
bench_records() {
	local f
	for f in "$@"; do
		awk -v mark="^$BENCH_RIG_RUN" '
			$0 ~ mark { for (i = 1; i <= n; i++) keep[++k] = rec[i]; n = 0; next }
			/^rig: L1 stalled: RETRYING/ { n = 0; next }
			/^BENCH-JSON / { rec[++n] = substr($0, 12) }
			END { for (i = 1; i <= k; i++) print keep[i]
			      for (i = 1; i <= n; i++) print rec[i] }' "$f"
	done
}

# bench_kv LINE KEY: value of KEY=VALUE in a line of words.
bench_kv() {
	local w
	for w in $1; do
		[[ $w == "$2="* ]] && { echo "${w#*=}"; return 0; }
	done
	return 1
}

# Now, in nanoseconds of CLOCK_REALTIME (bash 5: EPOCHREALTIME).
bench_now_ns() {
	local t=${EPOCHREALTIME/./}
	echo $((10#$t * 1000))
}

# bench_stamp RECORDS MODE DATE OUT: RECORDS (JSON lines) as one JSON
# array into OUT, each record with DATE, the run mode (MODE without its
# dashes) and the source tree's commit added.
bench_stamp() {
	local commit
	commit=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo unknown)
	jq -s --arg date "$3" --arg mode "${2#--}" --arg commit "$commit" \
		'map(. + {date:$date, run_mode:$mode, git_commit:$commit})' "$1" >"$4"
}
# jq definitions used by the summaries.
# shellcheck disable=SC2034 # used by the sourcing scripts
BENCH_JQ_DEFS='
def median: map(select(. != null)) | sort |
	if length == 0 then null
	elif length % 2 == 1 then .[(length - 1) / 2]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r(n): if . == null then null else (. * pow(10; n) | round) / pow(10; n) end;
'

# bench_debugfs: mounts debugfs if needed (inside the rig's L1) and sets
# have_debugfs=1 when KVM's per-VM counters (/sys/kernel/debug/kvm/PID-FD/)
# can be read, else 0.
bench_debugfs() {
	[[ -d /sys/kernel/debug/kvm ]] ||
		mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
	have_debugfs=0
	[[ -d /sys/kernel/debug/kvm ]] && have_debugfs=1
	return 0
}
