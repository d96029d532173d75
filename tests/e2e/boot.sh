#!/bin/bash
# boot.sh MINIVMM KERNEL INITRD NR_CPUS
# minivmm boots the default guest with --smp NR_CPUS: the guest must see
# exactly NR_CPUS online CPUs, shut down by itself, and minivmm exit 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 n=$4
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# One vCPU: minivmm's default command line as it is, the kernel's whole boot
# log on the console; more: "quiet", as the other tests (lib.sh).
append="guest.run=smoke"
[[ $n -eq 1 ]] || append="quiet $append"
e2e_run_vmm "$log" -- "$vmm" --smp "$n" --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --append "$append"
up=$(e2e_time_of "$log" "MINIVMM-GUEST-UP")
[[ -n "$up" ]] || e2e_fail "the guest never printed its init marker"
grep -q "MINIVMM-GUEST-UP cpus=$n\$" "$log" ||
	e2e_fail "expected $n online CPUs, got: $(grep -m1 MINIVMM-GUEST-UP "$log")"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$log" || e2e_fail "smoke payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC, expected 0"
echo "PASS: --smp $n: guest up with $n CPUs after ${up}s (VMM start to init marker), exit 0"
