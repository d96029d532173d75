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
	jq -s --arg date "$3" --arg mode "${2#--}" --arg commit "$(bench_commit)" \
		'map(. + {date:$date, run_mode:$mode, git_commit:$commit})' "$1" >"$4"
}

# bench_commit: the source tree's commit (short), or "unknown".
bench_commit() {
	git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo unknown
}

# bench_help: a bench script's --help, its head comment (from line 2 to
# the line before `set -e...`).
bench_help() {
	sed -n '2,/^set -e/p' "$0" | sed '$d'
}

# The two halves of a rig benchmark: bench/X_bench.sh, on the host, runs
# bench/X_rig.sh inside the rig's L1 (bench_in_rig), which prints
# BENCH-JSON records (bench_emit, bench_emit_machine); X_bench.sh then
# stamps them (bench_rig_results), writes its summary and plot
# (bench_plot) and ends with bench_rig_end.

# bench_in_rig LOG TIMEOUT RIG_SCRIPT ARGS...: RIG_SCRIPT ARGS... in the
# rig's L1 (tests/e2e/in-rig.sh, E2E_RIG_TIMEOUT=TIMEOUT seconds), its
# output into LOG; returns its exit status.
bench_in_rig() {
	local log=$1 timeout=$2
	shift 2
	E2E_RIG_TIMEOUT=$timeout "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/in-rig.sh" \
		"$@" >"$log" 2>&1
}

# bench_rig_results LOG MODE JSON: after a rig run: LOG's progress lines
# (bench: and rig:) to stderr, its records (bench_records) stamped
# (bench_stamp) into JSON.  Sets date (the stamp's), dat (an empty
# scratch file for the plot's data) and records (the records' scratch
# file); the two files are removed at exit.
bench_rig_results() {
	grep -v '^BENCH-JSON ' "$1" | grep -E '^bench:|rig:' >&2 || true
	records=$(mktemp)
	dat=$(mktemp)
	trap 'rm -f "$records" "$dat"' EXIT
	bench_records "$1" >"$records"
	date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	bench_stamp "$records" "$2" "$date" "$3"
}

# bench_plot SIZE PNG: the plot PNG (pngcairo, SIZE "W,H") of the gnuplot
# script on stdin, if gnuplot is there and the plot has data ($dat not
# empty), else nothing.
bench_plot() {
	command -v gnuplot >/dev/null && [[ -s $dat ]] || return 0
	{
		printf 'set terminal pngcairo size %s noenhanced\nset output "%s"\n' "$1" "$2"
		cat
	} | gnuplot
}

# The style of the benches' clustered bar charts, for bench_plot's script.
# shellcheck disable=SC2034 # used by the sourcing scripts
BENCH_GP_BARS='set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1'

# bench_rig_end SUMMARY RC: SUMMARY (the .md) to stderr, then exit RC (the
# rig run's status, logged when not 0).
bench_rig_end() {
	cat "$1" >&2
	[[ $2 -eq 0 ]] || bench_log "the rig run exited $2"
	exit "$2"
}

# bench_iperf3_files: Debian's iperf3, the libraries ldd lists for it and
# the loader, one path a line, relative to / (what a guest's tools disk or
# a container image needs to run it).
bench_iperf3_files() {
	echo usr/bin/iperf3
	echo lib64/ld-linux-x86-64.so.2
	ldd /usr/bin/iperf3 | sed -n 's/.*=> \/\([^ ]*\).*/\1/p'
}

# In the L1 (X_rig.sh):

# bench_need_kvm: exits 77 (skip) where there is no /dev/kvm to use.
bench_need_kvm() {
	[[ -w /dev/kvm ]] || { echo "no /dev/kvm"; exit 77; }
}

# bench_scratch NAME: a new scratch directory NAME.XXXXXX on $RIG_SCRATCH
# (default /var/tmp).
bench_scratch() {
	mktemp -d "${RIG_SCRATCH:-/var/tmp}/$1.XXXXXX"
}

# bench_oci_setup W [KEY=VALUE...]: what the minivmm-oci rig benches
# (oci_rig_bench, oci_ops_rig, oci_rootfs_rig, oci_net_rig) share, with W
# their work directory (bench_scratch) and OCI_KERNEL / OCI_INITRD from
# tests/e2e/oci-rig.sh:
#  * /etc/minivmm-oci.conf: kernel and initrd, then "KEY = VALUE" for each
#    argument;
#  * a cgroup2 file system on /sys/fs/cgroup where the L1 has none: runc
#    needs one, and with it podman keeps resource limits for both runtimes
#    alike;
#  * P: podman with its store in W (vfs, cgroupfs, events to a file);
#  * RUNC_FLAGS: the ulimits runc needs in the L1 (its defaults are over
#    the L1's hard limits).
bench_oci_setup() {
	local w=$1 kv
	shift
	{
		printf 'kernel = %s\ninitrd = %s\n' "$OCI_KERNEL" "$OCI_INITRD"
		for kv in "$@"; do
			printf '%s = %s\n' "${kv%%=*}" "${kv#*=}"
		done
	} >/etc/minivmm-oci.conf
	if [[ ! -e /sys/fs/cgroup/cgroup.controllers ]]; then
		mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || bench_log "cannot mount cgroup2"
	fi
	P=(podman --root "$w/pstore" --runroot "/run/${w##*/}-prun" --storage-driver vfs
		--cgroup-manager cgroupfs --events-backend file)
	RUNC_FLAGS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768)
}

# bench_kill_all [-SIG] PID...: sends each PID SIG (default TERM), ignoring
# those gone, and waits for the shell's children.
bench_kill_all() {
	local sig=-TERM p
	[[ ${1:-} == -* ]] && { sig=$1; shift; }
	for p in "$@"; do kill "$sig" "$p" 2>/dev/null; done
	wait 2>/dev/null
}

# bench_emit_machine BENCH [JQ_ARGS...] FIELDS: the record of the L1
# (bench BENCH): l1_cpu (its CPU model), l1_cpus, l1_kernel, then FIELDS
# (a jq object; JQ_ARGS, --arg/--argjson NAME VALUE, bind its variables;
# $bench, $cpu, $cpus and $kernel are taken).
bench_emit_machine() {
	local bench=$1
	shift
	bench_emit "$(jq -cn --arg bench "$bench" \
		--arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" \
		--argjson cpus "$(nproc)" --arg kernel "$(uname -r)" "${@:1:$#-1}" \
		'{bench:$bench, l1_cpu:$cpu, l1_cpus:$cpus, l1_kernel:$kernel} + '"${!#}")"
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

# The KVM-free device benchmarks' mode (devbench.sh and the rate-limit
# ones): bench_quick_mode [ARG]: MODE from ARG: --smoke, --quick (the
# default) or --full; anything else: usage, exit 2.
bench_quick_mode() {
	MODE=quick
	case "${1:-}" in
	--quick | "") MODE=quick ;;
	--smoke) MODE=smoke ;;
	--full) MODE=full ;;
	*) echo "usage: $0 [--smoke|--quick|--full]" >&2; exit 2 ;;
	esac
}

# The KVM-free rate-limit benchmarks (ratelimit_bench.sh: disks through
# devbench, net_ratelimit_bench.sh: NICs through netbench).
# bench_rate_setup NAME BIN_VAR TARGET [MODE_ARG]: MODE from MODE_ARG
# (bench_quick_mode); SECS and REPS for it (RATE_SECONDS, RATE_REPS
# override); ROOT (the checkout), RES ($BENCH_OUT, default bench/results;
# made), BIN ($BIN_VAR, default build/bench/TARGET), tmp (a scratch
# directory removed at exit), rec (its records file) and MIB.  Exits 1,
# with NAME's message, where BIN or jq is missing.
# shellcheck disable=SC2034 # SECS, REPS, rec, MIB: for the sourcing script
bench_rate_setup() {
	local name=$1 bin_var=$2 target=$3
	bench_quick_mode "${4:-}"
	ROOT=$(cd "$(dirname "$0")/.." && pwd)
	RES=${BENCH_OUT:-$ROOT/bench/results}
	BIN=${!bin_var:-$ROOT/build/bench/$target}
	case $MODE in
	smoke) SECS=${RATE_SECONDS:-0.5}; REPS=${RATE_REPS:-1} ;;
	quick) SECS=${RATE_SECONDS:-3}; REPS=${RATE_REPS:-3} ;;
	full) SECS=${RATE_SECONDS:-10}; REPS=${RATE_REPS:-5} ;;
	esac
	[[ -x $BIN ]] || { echo "$name: no $BIN (cmake --build build --target $target)" >&2; exit 1; }
	command -v jq >/dev/null || { echo "$name: jq not found" >&2; exit 1; }
	mkdir -p "$RES"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	rec=$tmp/records.jsonl
	MIB=$((1 << 20))
}
