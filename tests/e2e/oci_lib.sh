# shellcheck shell=bash
# Helpers for minivmm-oci's end-to-end tests (run inside the rig's L1 by
# tests/e2e/oci-rig.sh, which sets OCI_KERNEL, OCI_INITRD, OCI_RUNTIME and
# OCI_IMAGE_TAR).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

oci_setup() {
	e2e_require_kvm
	[[ -x "$OCI_RUNTIME" && -r "$OCI_KERNEL" && -r "$OCI_INITRD" && -r "$OCI_IMAGE_TAR" ]] ||
		e2e_fail "OCI_RUNTIME/OCI_KERNEL/OCI_INITRD/OCI_IMAGE_TAR not set (run through tests/e2e/oci-rig.sh)"
	# The L1's root is a throw-away overlay: the runtime's config file is
	# where an administrator would put it.  conmon and containerd's shim
	# do not pass the environment on, so no MINIVMM_OCI_* variables.
	# The rig's L1 mounts no cgroup file system: podman then drops every
	# resource limit from config.json ("Limitation discarded").  A cgroup2
	# hierarchy lets --memory/--cpus reach the runtime.
	if [[ ! -e /sys/fs/cgroup/cgroup.controllers ]]; then
		mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null ||
			echo "note: cannot mount cgroup2 on /sys/fs/cgroup"
	fi
	W=${RIG_SCRATCH:-/var/tmp}/oci.$$
	mkdir -p "$W/console"
	printf 'kernel = %s\ninitrd = %s\ntimings = %s\nconsole_dir = %s\n' "$OCI_KERNEL" \
		"$OCI_INITRD" /tmp/oci-timings.json "$W/console" >/etc/minivmm-oci.conf
	tar -xOf "$OCI_IMAGE_TAR" ./blob >"$W/blob"
	OCI_FAILED=0
	OCI_PASSED=0
}

# oci_check NAME CONDITION-STATUS MESSAGE: count a check.
oci_ok() {
	echo "ok: $*"
	OCI_PASSED=$((OCI_PASSED + 1))
}
oci_bad() {
	echo "FAIL: $*"
	OCI_FAILED=$((OCI_FAILED + 1))
}

# Show what the runtime left behind for a failed check.
oci_dump_logs() {
	local f
	for f in "$W"/console/*.console.log; do
		[[ -f "$f" ]] || continue
		echo "---- $f (tail)"
		tail -n 30 "$f"
	done
}

oci_finish() {
	echo "---- timings (minivmm-oci)"
	cat /tmp/oci-timings.json 2>/dev/null | tail -n 40
	if [[ $OCI_FAILED -ne 0 ]]; then
		oci_dump_logs
		echo "$OCI_PASSED passed, $OCI_FAILED failed"
		exit 1
	fi
	echo "PASS: $OCI_PASSED checks"
}
