# shellcheck shell=bash
# Helpers for end-to-end tests.  Each test runs where /dev/kvm exists (inside
# the nested-KVM rig in CI) and exits 77 (skip) if it finds none, so a test
# that is not run through tests/rig/rig-run can never silently pass.
#
# The guests boot with "quiet" on their command line (--append "quiet
# guest.run=..."): every character the kernel prints through the emulated
# UART costs port exits, which the nested rig makes ~7 s of a ~22 s boot.
# Two kinds of test keep the kernel's whole boot log: boot.sh at 1 vCPU
# (minivmm's default command line as it is) and the console/stderr stall
# tests (the log is part of what fills the stalled pipe).  The arm64 tests
# likewise, where the console costs more still (~60 s of an 83-s test).

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

# Device-mapper test disks (fault_dm_error.sh, vhost_user_reconnect.sh).
# Each helper prints "SKIP: ..." and exits 77 where the host cannot give
# one (no dmsetup/losetup, a module that does not load): a missing tool is
# not a test result.  Needs root.
#
# e2e_dm_modules [DM-TARGET-MODULE...]: dm-mod, loop and the named targets
# (e.g. md/dm-delay), each loaded from the rig's module tree (or with
# modprobe) unless /sys/module already has it.
e2e_dm_modules() {
	local t m n mods=${VMM_RIG_CACHE:-$HOME/.cache/minivmm-rig}/modules
	for t in dmsetup losetup; do
		command -v "$t" >/dev/null || { echo "SKIP: no $t"; exit 77; }
	done
	for m in md/dm-mod block/loop "$@"; do
		n=${m#*/}
		[[ -e /sys/module/${n//-/_} ]] && continue
		insmod "$mods/kernel/drivers/$m.ko" 2>/dev/null || modprobe "$n" 2>/dev/null ||
			{ echo "SKIP: cannot load $n"; exit 77; }
	done
}

# e2e_dm_create NAME IMG TABLE: a loop device over the file IMG
# (E2E_DM_LOOP) and a device-mapper device NAME with TABLE, where every
# @LOOP@ stands for the loop device; sets E2E_DM_DEV (/dev/dm-N, waited
# for).  e2e_dm_remove NAME undoes it (call it from the EXIT trap).
E2E_DM_LOOP=
e2e_dm_create() {
	local name=$1 img=$2 table=$3 minor
	E2E_DM_LOOP=$(losetup -f --show "$img") || { echo "SKIP: losetup failed"; exit 77; }
	printf '%s\n' "${table//@LOOP@/$E2E_DM_LOOP}" | dmsetup create --noudevsync "$name" ||
		{ echo "SKIP: dmsetup create failed"; exit 77; }
	minor=$(dmsetup info -c --noheadings -o minor "$name" | tr -d ' ')
	E2E_DM_DEV=/dev/dm-$minor
	for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -b $E2E_DM_DEV ]] && break; sleep 0.2; done
	[[ -b $E2E_DM_DEV ]] || { echo "SKIP: no $E2E_DM_DEV node"; exit 77; }
}

e2e_dm_remove() {
	dmsetup remove "$1" 2>/dev/null || true
	[[ -z $E2E_DM_LOOP ]] || losetup -d "$E2E_DM_LOOP" 2>/dev/null || true
}
