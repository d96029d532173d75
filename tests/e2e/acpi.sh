#!/bin/bash
# acpi.sh MINIVMM KERNEL INITRD
# The ACPI platform (issue 9): with the default command line the guest
# finds the FADT/MADT/DSDT, takes its PCI root bus from the DSDT's PCI0,
# sees COM1 as PNP0501 and S5 as supported; its `poweroff -f` ends the VM
# (minivmm: "guest powered off", exit 0) without the reboot path.  Then the
# same guest booted with acpi=off comes up from the MP table with all its
# CPUs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/acpi.XXXXXX")
trap 'rm -rf "$dir"' EXIT

e2e_run_vmm "$dir/acpi.log" -- "$vmm" -v --smp 4 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --append "quiet guest.run=acpi guest.poweroff=1"
grep -q "MINIVMM-GUEST-UP cpus=4\$" "$dir/acpi.log" || e2e_fail "the guest did not come up with 4 CPUs"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/acpi.log" || e2e_fail "ACPI checks failed in the guest"
grep -q "guest powered off" "$dir/acpi.log" || e2e_fail "minivmm did not see the power-off"
! grep -q "MINIVMM-GUEST-REBOOT" "$dir/acpi.log" || e2e_fail "the guest rebooted instead of powering off"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC after the power-off, expected 0"
echo "ok: ACPI tables, PCI0 from the DSDT, PNP0501, S5; poweroff -f ended the VM, exit 0"

e2e_run_vmm "$dir/mp.log" -- "$vmm" --smp 4 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --append "quiet acpi=off guest.run=smoke"
grep -q "MINIVMM-GUEST-UP cpus=4\$" "$dir/mp.log" || e2e_fail "acpi=off: the guest did not come up with 4 CPUs"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/mp.log" || e2e_fail "acpi=off: smoke payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "acpi=off: minivmm exited $E2E_RC"
echo "PASS: ACPI platform and poweroff; acpi=off still boots from the MP table"
