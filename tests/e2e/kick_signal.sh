#!/bin/bash
# kick_signal.sh MINIVMM KERNEL INITRD
# Kicks reach the vCPUs whatever VMM_KICK_SIGNAL's state in the process
# that starts the VM: minivmm inherits SIGUSR1 (1) ignored (SIG_IGN, as
# nohup-style wrappers and some supervisors leave it) and (2) blocked (the
# "block every signal, read a signalfd" daemon pattern).  Each time a
# 2-vCPU guest runs `reboot -f`: the vCPU that resets the machine must kick
# the other one out of KVM_RUN (it is halted there), and minivmm must exit
# 0.  Hang detector: minivmm still running 60 s after the guest printed
# MINIVMM-GUEST-REBOOT (boot time, which varies with the rig's load, is not
# part of it: the boot may take up to E2E_VMM_TIMEOUT, 300 s).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/kick_signal.XXXXXX")
pid=
cleanup() {
	[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
# SIGUSR1 is signal 10: bit 9 of the SigIgn/SigBlk masks in /proc.
usr1=$((1 << 9))

for state in ignore block; do
	log=$dir/$state.log
	# env(1) sets the state and execs minivmm: same pid.
	env --"$state"-signal=USR1 "$vmm" --smp 2 --mem 256M \
		--kernel "$kernel" --initrd "$initrd" --append "quiet guest.run=smoke" \
		</dev/null >"$log" 2>&1 &
	pid=$!
	# What minivmm was started with (its main thread: the embedder's).
	field=SigIgn
	[[ $state == block ]] && field=SigBlk
	end=$((SECONDS + 30))
	mask=
	while ((SECONDS < end)); do
		if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == minivmm ]]; then
			mask=$(awk -v f="$field:" '$1 == f { print $2 }' "/proc/$pid/status")
			break
		fi
		sleep 0.2
	done
	if [[ -n "$mask" ]] && (((16#$mask & usr1) == 0)); then
		e2e_fail "$state: minivmm's $field is $mask, without SIGUSR1: the test did not set up what it tests"
	fi
	# Deadlines in wall-clock seconds (a loop iteration is slow in the rig).
	end=$((SECONDS + ${E2E_VMM_TIMEOUT:-300}))
	while kill -0 "$pid" 2>/dev/null && ! grep -q MINIVMM-GUEST-REBOOT "$log"; do
		((SECONDS < end)) || { cat "$log"; e2e_fail "$state: the guest did not reach reboot -f in ${E2E_VMM_TIMEOUT:-300} s"; }
		sleep 1
	done
	end=$((SECONDS + 60))
	while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		for t in /proc/"$pid"/task/*; do
			printf 'thread: %s %s\n' "$(cat "$t/comm")" "$(cat "$t/wchan")"
		done 2>/dev/null || true
		tr -d '\r' <"$log"
		e2e_fail "SIGUSR1 $state: minivmm still running 60 s after the guest's reboot -f (a vCPU was never kicked out of KVM_RUN)"
	fi
	rc=0
	wait "$pid" || rc=$?
	pid=
	tr -d '\r' <"$log" >"$log.txt"
	cat "$log.txt"
	grep -q "MINIVMM-GUEST-UP cpus=2\$" "$log.txt" || e2e_fail "$state: the guest did not come up with 2 CPUs"
	[[ $rc -eq 0 ]] || e2e_fail "SIGUSR1 $state: minivmm exited $rc, expected 0"
	echo "SIGUSR1 $state: guest rebooted, minivmm exited 0"
done
echo "PASS: reboot -f with SIGUSR1 ignored and with it blocked: minivmm exited 0 both times"
