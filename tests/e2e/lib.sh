# shellcheck shell=bash
# Helpers for end-to-end tests.  Each test runs where /dev/kvm exists (inside
# the nested-KVM rig in CI) and exits 77 (skip) if it finds none, so a test
# that is not run through tests/rig/rig-run can never silently pass.

e2e_require_kvm() {
	if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
		echo "SKIP: no usable /dev/kvm (run this through tests/rig/rig-run)"
		exit 77
	fi
}

e2e_fail() {
	echo "FAIL: $*"
	exit 1
}

# e2e_run_vmm LOG -- MINIVMM ARGS...: runs minivmm with stdin closed,
# prefixing each output line with seconds since the start, streaming it
# and keeping a copy in LOG; sets E2E_RC.  minivmm is killed after
# E2E_VMM_TIMEOUT seconds (600: a 4-vCPU guest's boot alone took 165 s in
# the rig at load 9, and blk_mq's fio verify then ran past the old 300 s;
# the rig's own limit, in-rig.sh, is 900 s).  Only a hang ever gets there.
e2e_run_vmm() {
	local log=$1 t0 line
	shift 2
	t0=${EPOCHREALTIME/./}
	set +e
	timeout --kill-after=10 "${E2E_VMM_TIMEOUT:-600}" "$@" </dev/null 2>&1 |
		while IFS= read -r line; do
			local now=${EPOCHREALTIME/./}
			printf '[%4d.%03d] %s\n' $(((now - t0) / 1000000)) \
				$(((now - t0) / 1000 % 1000)) "${line%$'\r'}"
		done | tee "$log"
	E2E_RC=${PIPESTATUS[0]}
	set -e
}

# Seconds (as printed in the log) at which PATTERN first appeared.
e2e_time_of() {
	grep -m1 -- "$2" "$1" | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'
}

# e2e_find_vmm WORD: prints the pid of the minivmm process whose command
# line contains WORD (a path unique to this test run: tests run two at a
# time), waiting up to 60 s for it to appear; returns 1 if it never does
# (with set -e, `pid=$(e2e_find_vmm W)` then fails the test).
e2e_find_vmm() {
	local p pid=
	for _ in $(seq 600); do
		for p in $(pgrep -x minivmm || true); do
			if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$1"; then
				pid=$p
			fi
		done
		[[ -n "$pid" ]] && break
		sleep 0.1
	done
	if [[ -z "$pid" ]]; then
		echo "FAIL: minivmm did not start" >&2 # stdout is the caller's $(...)
		return 1
	fi
	echo "$pid"
}
