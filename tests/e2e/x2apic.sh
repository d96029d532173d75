#!/bin/bash
# x2apic.sh MINIVMM KERNEL INITRD TOOLS NR_CPUS [ONLINE]
# More than 255 vCPUs (issue 9): the CPUs ONLINE online (x2APIC, MADT type
# 9 entries, KVM_FEATURE_MSI_EXT_DEST_ID), one data-disk queue per vCPU,
# and fio verify jobs pinned to CPUs >= 256 complete with their queue's
# interrupt on that CPU (tests/guest/x2apic).  Default seccomp, default
# queue count.
#
# The guest boots with one CPU online (maxcpus=1) and its payload brings
# up the CPUs ONLINE names ("all", the default, or a list such as
# 253-299), then has the data disk probed again with them online
# (guest.online, tests/guest/x2apic).  For the VMM, ONLINE=all is the same
# work as a boot with every CPU up -- NR_CPUS vCPUs in x2APIC mode, each
# started by INIT/SIPI, NR_CPUS queues whose vectors aim at every APIC ID,
# wired at DRIVER_OK -- plus a reset of all the queues.  What it saves is
# rig time: a guest booting with N CPUs online ticks every idle one at HZ
# until its clocksource switch, and in the rig each tick is a few nested
# exits (tests/rig/README, "Big guests"): 300 CPUs took 14-38 minutes to
# reach init in CI.  CI's e2e/x2apic_smp300 brings up 253-299 only (the
# CPUs around the xAPIC limit: 1.5 minutes instead of 9 for all 299);
# ONLINE=all runs by hand (tests/e2e/in-rig.sh tests/e2e/x2apic.sh
# build/minivmm @KERNEL@ @INITRD@ @TOOLS@ 300 all), and whole boots at
# 255-384 vCPUs are measured by bench/boot_curve.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tools=$4 n=$5 online=${6:-all}
# A hang guard, not a timing test (the rig is slow on a loaded day).
[[ $n -le 8 ]] || export E2E_VMM_TIMEOUT=${E2E_VMM_TIMEOUT:-1500}
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/x2apic.XXXXXX")
trap 'rm -rf "$dir"' EXIT
truncate -s $((n + 8))M "$dir/data.img"

e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 2G --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dir/data.img,serial=data" \
	--disk "path=$tools,ro=on,serial=tools" --stats \
	--append "quiet maxcpus=1 guest.online=$online guest.run=x2apic"
up=$(e2e_time_of "$dir/log" "MINIVMM-GUEST-UP")
if [[ $online == all ]]; then
	want="X2APIC: $n CPUs online"
else
	want="X2APIC: CPUs $online online"
fi
grep -q "$want" "$dir/log" ||
	e2e_fail "expected \"$want\", got: $(grep -m1 'X2APIC: .* online' "$dir/log" || echo none)"
on=$(e2e_time_of "$dir/log" "$want")
grep -q "probed again with" "$dir/log" ||
	e2e_fail "the data disk was not probed again with the CPUs online"
grep -q "X2APIC: $n CPUs, .* has $n queues" "$dir/log" ||
	e2e_fail "the data disk has not one queue per vCPU ($n)"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
echo "PASS: --smp $n: init after ${up}s, CPUs $online online after ${on}s, $n queues, completions on CPUs >= 256"
