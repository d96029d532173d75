# shellcheck shell=sh
# Helpers of the arm64 end-to-end tests.  They run inside the arm64 rig's
# L1 (tests/rig: rig-run --arch arm64), whose userland is a static aarch64
# busybox: POSIX sh and busybox applets only, no bash.  Like the x86 tests,
# each exits 77 (skip) where it finds no /dev/kvm, so it can never pass
# without having run.

e2e_require_kvm() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		echo "SKIP: no usable /dev/kvm (run this through tests/rig/rig-run --arch arm64)"
		exit 77
	fi
}

e2e_fail() {
	echo "FAIL: $*"
	exit 1
}

# e2e_run_vmm LOG MINIVMM ARGS...: runs minivmm with stdin closed,
# streaming its output and keeping a copy in LOG; sets E2E_RC.  Killed
# after E2E_VMM_TIMEOUT seconds (300): only a hang gets there.  A test
# that reads how the guest ended passes minivmm -v (libvmm logs it at
# level info).
e2e_run_vmm() {
	_log=$1
	shift
	# The status of minivmm, not of tee: through a file, as POSIX sh
	# has no PIPESTATUS.
	{
		timeout "${E2E_VMM_TIMEOUT:-300}" "$@" </dev/null 2>&1
		echo "$?" >"$_log.rc"
	} | tr -d '\r' | tee "$_log" # the UART's CRLF line ends
	read -r E2E_RC <"$_log.rc"
	rm -f "$_log.rc"
}

# e2e_disk PATH MIB: a sparse file of MIB MiB.
e2e_disk() {
	rm -f "$1"
	dd if=/dev/zero of="$1" bs=1048576 count=0 seek="$2" 2>/dev/null ||
		e2e_fail "cannot create $1"
}

# A scratch directory for disk images: the rig's RIG_SCRATCH when set.
e2e_tmpdir() {
	mktemp -d "${RIG_SCRATCH:-/tmp}/e2e-arm64.XXXXXX"
}
