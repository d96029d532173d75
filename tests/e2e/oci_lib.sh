# shellcheck shell=bash
# Helpers for minivmm-oci's end-to-end tests (run inside the rig's L1 by
# tests/e2e/oci-rig.sh, which sets OCI_VMLINUX, OCI_INITRD, OCI_RUNTIME and
# OCI_IMAGE_TAR).  The containers boot OCI_VMLINUX (PVH): oci-rig.sh says
# why.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

oci_setup() {
	e2e_require_kvm
	[[ -x "$OCI_RUNTIME" && -r "$OCI_VMLINUX" && -r "$OCI_INITRD" && -r "$OCI_IMAGE_TAR" ]] ||
		e2e_fail "OCI_RUNTIME/OCI_VMLINUX/OCI_INITRD/OCI_IMAGE_TAR not set (run through tests/e2e/oci-rig.sh)"
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
	printf 'kernel = %s\ninitrd = %s\ntimings = %s\nconsole_dir = %s\n' "$OCI_VMLINUX" \
		"$OCI_INITRD" /tmp/oci-timings.json "$W/console" >/etc/minivmm-oci.conf
	tar -xOf "$OCI_IMAGE_TAR" ./blob >"$W/blob"
	OCI_FAILED=0
	OCI_PASSED=0
}

# oci_ok/oci_bad MESSAGE: count a check.  Each line says when (seconds since the script began): the rig's times are
# the only clue to which step a slow run spent its time on.
oci_ok() {
	echo "ok: $* [${SECONDS}s]"
	OCI_PASSED=$((OCI_PASSED + 1))
}
oci_step() { echo "  step: $* [${SECONDS}s]"; }
oci_bad() {
	echo "FAIL: $* [${SECONDS}s]"
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

NOCAPS=0000000000000000

# oci_vmm_threads PID: one line per thread of the VMM process, "COMM
# uid=[..] gid=[..] groups=[..] inh=.. prm=.. eff=.. bnd=.. amb=..
# nnp=N seccomp=N", shell builtins only.  Each status file is read whole
# in one read(2) (see tests/e2e/user_drop.sh); a thread that ends
# meanwhile is left out.
oci_vmm_threads() {
	local t comm line status uid gid grp inh prm eff bnd amb nnp sec
	for t in /proc/"$1"/task/*; do
		{ read -r comm <"$t/comm"; } 2>/dev/null || continue
		status=$(<"$t/status") 2>/dev/null || continue
		uid='' gid='' grp='' inh='' prm='' eff='' bnd='' amb='' nnp='' sec=''
		while IFS= read -r line; do
			# shellcheck disable=SC2086 # word splitting normalises blanks
			case "$line" in
			Uid:*) set -- ${line#Uid:}; uid=$* ;;
			Gid:*) set -- ${line#Gid:}; gid=$* ;;
			Groups:*) set -- ${line#Groups:}; grp=$* ;;
			CapInh:*) inh=${line##*[[:space:]]} ;;
			CapPrm:*) prm=${line##*[[:space:]]} ;;
			CapEff:*) eff=${line##*[[:space:]]} ;;
			CapBnd:*) bnd=${line##*[[:space:]]} ;;
			CapAmb:*) amb=${line##*[[:space:]]} ;;
			NoNewPrivs:*) nnp=${line##*[[:space:]]} ;;
			Seccomp:*) sec=${line##*[[:space:]]} ;;
			esac
		done <<<"$status"
		[[ -n "$uid" && -n "$sec" ]] || continue
		echo "$comm uid=[$uid] gid=[$gid] groups=[$grp] inh=$inh prm=$prm eff=$eff bnd=$bnd amb=$amb nnp=$nnp seccomp=$sec"
	done
}

# oci_caps FILE: the Cap* and NoNewPrivs lines of a /proc/PID/status in
# FILE as "inh=.. prm=.. eff=.. bnd=.. amb=.. nnp=N".
oci_caps() {
	awk '/^CapInh:/ { i = $2 } /^CapPrm:/ { p = $2 } /^CapEff:/ { e = $2 }
	     /^CapBnd:/ { b = $2 } /^CapAmb:/ { a = $2 } /^NoNewPrivs:/ { n = $2 }
	     END { printf "inh=%s prm=%s eff=%s bnd=%s amb=%s nnp=%s", i, p, e, b, a, n }' "$1"
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
