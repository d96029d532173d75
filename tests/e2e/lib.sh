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
# and keeping a copy in LOG; sets E2E_RC.
e2e_run_vmm() {
	local log=$1 t0 line
	shift 2
	t0=${EPOCHREALTIME/./}
	set +e
	timeout --kill-after=10 "${E2E_VMM_TIMEOUT:-300}" "$@" </dev/null 2>&1 |
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
