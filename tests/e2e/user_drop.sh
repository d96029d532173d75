#!/bin/bash
# user_drop.sh MINIVMM KERNEL INITRD
# minivmm --user 65534:65534 drops to that uid/gid once the VM's files are
# open and before the guest runs.  Every file of the VM (kernel, initrd,
# disk image) is a root-only copy (0600) in a root-only directory (0700),
# so uid 65534 cannot open any of them: the guest boots, writes 64 blocks
# to the disk and reboots (the crash-write payload, guest.mode=reboot), and
# the blocks reach the image, through descriptors opened before the drop,
# with no host I/O error (--stats-json).
# While the guest runs, the host reads /proc/PID/task/*/status of every
# thread of minivmm: Uid and Gid 65534 (real, effective, saved, fs), no
# supplementary group, every capability set empty (permitted, effective,
# inheritable, ambient, bounding) and NoNewPrivs 1.  minivmm exits 0.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/crash_lib.sh"
e2e_require_kvm
if [[ $(id -u) -ne 0 ]]; then
	echo "SKIP: --user needs root"
	exit 77
fi

vmm=$1 kernel=$2 initrd=$3
ids="65534 65534 65534 65534"
nocaps=0000000000000000
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/user_drop.XXXXXX")
trap 'rm -rf "$dir"' EXIT
chmod 700 "$dir"
cp "$kernel" "$dir/bzImage"
cp "$initrd" "$dir/initrd"
img=$dir/data.img
truncate -s 16M "$img"
chmod 600 "$dir/bzImage" "$dir/initrd" "$img"
# Control: uid 65534 really cannot read them (setpriv is util-linux).
if command -v setpriv >/dev/null; then
	for f in "$dir/bzImage" "$dir/initrd" "$img"; do
		if setpriv --reuid=65534 --regid=65534 --clear-groups \
			head -c1 "$f" >/dev/null 2>&1; then
			e2e_fail "uid 65534 can read $f: the test proves nothing"
		fi
	done
fi

log=$dir/log
"$vmm" -v --smp 2 --mem 512M --kernel "$dir/bzImage" --initrd "$dir/initrd" \
	--disk "path=$img,serial=crash" --user 65534:65534 --stats-json \
	--append "quiet guest.run=crash-write guest.mode=reboot" </dev/null >"$log" 2>&1 &
pid=$!

# snap PID: one line per thread, "COMM uid=[..] gid=[..] groups=[..]
# capprm=.. capeff=.. capinh=.. capamb=.. capbnd=.. nnp=N", with shell
# builtins only (no program run per
# thread: the rig has one slow CPU).  A thread that ends meanwhile is left
# out.
snap() {
	local t comm line uid gid grp cp ce ci ca cb nnp status
	for t in /proc/"$1"/task/*; do
		{ read -r comm <"$t/comm"; } 2>/dev/null || continue
		uid='' gid='' grp='' cp='' ce='' ci='' ca='' cb='' nnp=''
		# The whole file in one read(2): bash's `read` on a seekable
		# file reads 128 bytes and seeks back after each line, and
		# /proc regenerates status at every read, so a field changing
		# width meanwhile (Threads, SigQ) shifted the text and a line
		# went missing (CI: CapPrm empty, CapEff read).
		status=$(<"$t/status") 2>/dev/null || continue
		while IFS= read -r line; do
			# shellcheck disable=SC2086 # word splitting normalises blanks
			case "$line" in
			Uid:*) set -- ${line#Uid:}; uid=$* ;;
			Gid:*) set -- ${line#Gid:}; gid=$* ;;
			Groups:*) set -- ${line#Groups:}; grp=$* ;;
			CapPrm:*) set -- ${line#CapPrm:}; cp=$* ;;
			CapEff:*) set -- ${line#CapEff:}; ce=$* ;;
			CapInh:*) set -- ${line#CapInh:}; ci=$* ;;
			CapAmb:*) set -- ${line#CapAmb:}; ca=$* ;;
			CapBnd:*) set -- ${line#CapBnd:}; cb=$* ;;
			NoNewPrivs:*) set -- ${line#NoNewPrivs:}; nnp=$* ;;
			esac
		done <<<"$status"
		# A thread that ended before its status was read leaves an
		# empty or partial file: without NoNewPrivs (the last field
		# used) it is left out.
		[[ -n "$uid" && -n "$nnp" ]] || continue
		echo "$comm uid=[$uid] gid=[$gid] groups=[$grp] capprm=$cp capeff=$ce capinh=$ci capamb=$ca capbnd=$cb nnp=$nnp"
	done
}

# Sample twice a second for as long as minivmm runs.  A sample counts once
# it lists a vCPU thread: libvmm starts those after the drop, so the whole
# sample was read after it, while the guest ran.
: >"$dir/samples"
n=0 n_up=0
deadline=$((SECONDS + ${E2E_VMM_TIMEOUT:-300}))
while kill -0 "$pid" 2>/dev/null; do
	if ((SECONDS > deadline)); then
		kill -KILL "$pid" 2>/dev/null || true
		cat "$log"
		e2e_fail "minivmm still running after ${E2E_VMM_TIMEOUT:-300} s"
	fi
	up=0
	grep -q "MINIVMM-GUEST-UP" "$log" && up=1
	s=$(snap "$pid")
	if [[ "$s" == *vmm-vcpu* ]]; then
		printf '%s\n--\n' "$s" >>"$dir/samples"
		n=$((n + 1))
		n_up=$((n_up + up))
	fi
	sleep 0.5
done
rc=0
wait "$pid" || rc=$?
cat "$log"
# A complete sample: both vCPU and both I/O threads, and the main thread.
full=$(awk '/^--$/ { if (v == 2 && i == 2 && m >= 1) { printf "%s", s; exit }
		      s = ""; v = i = m = 0; next }
	    { s = s $0 "\n" }
	    /^vmm-vcpu[0-9]+ / { v++ } /^vmm-io[0-9]+ / { i++ } /^minivmm / { m++ }' \
	"$dir/samples")
echo "--- threads of minivmm (pid $pid) in one of $n samples ($n_up after the guest's init was up):"
echo "${full:-none complete}"

[[ $rc -eq 0 ]] || e2e_fail "minivmm exited $rc, expected 0"
grep -q "minivmm: running as uid 65534 gid 65534" "$log" ||
	e2e_fail "minivmm did not report the drop"
grep -q "CRASH-WRITTEN n=64" "$log" || e2e_fail "the guest did not write its blocks"
crash_check "$img" 64
# The guest's dd may see EIO from writes that its reboot -f cuts; the host
# side must have none (an EACCES/EPERM after the drop would count here).
errs=$(grep -o '"io_errors":[0-9]*' "$log" | cut -d: -f2 | sort -n | tail -1)
[[ "${errs:-none}" == 0 ]] || e2e_fail "host I/O errors after the drop: io_errors=${errs:-none}"
[[ $n -gt 0 ]] || e2e_fail "no sample of minivmm's threads while the guest ran"
bad=$(grep -v -e '^--$' -e "uid=\[$ids\] gid=\[$ids\] groups=\[\] capprm=$nocaps capeff=$nocaps capinh=$nocaps capamb=$nocaps capbnd=$nocaps nnp=1\$" \
	"$dir/samples" || true)
[[ -z "$bad" ]] || e2e_fail "threads not dropped to 65534:65534 (or with groups/capabilities): $bad"
[[ -n "$full" ]] ||
	e2e_fail "no sample shows the 2 vCPU threads, the 2 I/O threads and the main thread"
echo "PASS: --user 65534:65534: guest wrote its root-only (0600) image after the drop; all threads (2 vCPU, 2 I/O, main) at uid/gid 65534, no groups, every capability set empty, NoNewPrivs 1 in $n samples; exit 0"
