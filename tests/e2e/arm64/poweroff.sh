#!/bin/sh
# poweroff.sh MINIVMM IMAGE INITRD (arm64, in the arm64 rig's L1)
# The guest's `poweroff -f` is PSCI SYSTEM_OFF: the VM ends as powered off
# ("guest powered off", not a reset) and minivmm exits 0.
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
vmm=$1 kernel=$2 initrd=$3
dir=$(e2e_tmpdir)
trap 'rm -rf "$dir"' EXIT

e2e_run_vmm "$dir/log" "$vmm" -v --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --append "guest.run=poweroff"
grep -q "POWEROFF: poweroff -f" "$dir/log" || e2e_fail "the payload did not run"
grep -q "guest powered off" "$dir/log" ||
	e2e_fail "minivmm did not see the power-off (PSCI SYSTEM_OFF)"
! grep -q "MINIVMM-GUEST-REBOOT\|guest requested a reset" "$dir/log" ||
	e2e_fail "the guest rebooted instead of powering off"
[ "$E2E_RC" -eq 0 ] || e2e_fail "minivmm exited $E2E_RC, expected 0"
echo "PASS: arm64 poweroff -f ended the VM as powered off, exit 0"
