#!/bin/sh
# boot.sh MINIVMM IMAGE INITRD NR_CPUS (arm64, in the arm64 rig's L1)
# minivmm boots the default guest's arm64 Image with --smp NR_CPUS: every
# secondary comes up through PSCI CPU_ON (the guest sees exactly NR_CPUS
# online CPUs), the guest ends with `reboot -f` (PSCI SYSTEM_RESET:
# "guest requested a reset") and minivmm exits 0.
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
vmm=$1 kernel=$2 initrd=$3 n=$4
dir=$(e2e_tmpdir)
trap 'rm -rf "$dir"' EXIT

# One vCPU: minivmm's default command line as it is, the kernel's whole boot
# log on the console; more: "quiet", as the other tests (../lib.sh).
append="guest.run=smoke"
[ "$n" -eq 1 ] || append="quiet $append"
e2e_run_vmm "$dir/log" "$vmm" -v --smp "$n" --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --append "$append"
grep -q "MINIVMM-GUEST-UP cpus=$n\$" "$dir/log" ||
	e2e_fail "expected $n online CPUs, got: $(grep -m1 MINIVMM-GUEST-UP "$dir/log")"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "smoke payload failed"
grep -q "guest requested a reset" "$dir/log" ||
	e2e_fail "the guest's reboot -f did not end the VM as a reset (PSCI SYSTEM_RESET)"
[ "$E2E_RC" -eq 0 ] || e2e_fail "minivmm exited $E2E_RC, expected 0"
echo "PASS: arm64 --smp $n: guest up with $n CPUs, reboot -f ended the VM, exit 0"
