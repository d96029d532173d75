#!/bin/bash
# x2apic.sh MINIVMM KERNEL INITRD TOOLS NR_CPUS
# More than 255 vCPUs (issue 9): every CPU online (x2APIC, MADT type 9
# entries, KVM_FEATURE_MSI_EXT_DEST_ID), one data-disk queue per vCPU, and
# fio verify jobs pinned to CPUs >= 256 complete with their queue's
# interrupt on that CPU (tests/guest/x2apic).  Default seccomp, default
# queue count.
#
# The guest boots with one CPU online (maxcpus=1) and its payload brings
# the other NR_CPUS - 1 up, then has the data disk probed again with all of
# them online (guest.online=all, tests/guest/x2apic).  For the VMM it is the
# same work as a boot with every CPU up -- NR_CPUS vCPUs in x2APIC mode,
# each started by INIT/SIPI, NR_CPUS queues whose vectors aim at every
# APIC ID, wired at DRIVER_OK -- plus a reset of all the queues.  What it
# saves is rig time: a guest booting with N CPUs online ticks every idle one
# at HZ until its clocksource switch, and in the rig each tick is a few
# nested exits (tests/rig/README, "Big guests"): 300 CPUs took 14-38
# minutes to reach init in CI.  Whole boots at 255-384 vCPUs are measured
# by bench/boot_curve.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tools=$4 n=$5
# A hang guard, not a timing test (the rig is slow on a loaded day).
[[ $n -le 8 ]] || export E2E_VMM_TIMEOUT=${E2E_VMM_TIMEOUT:-1500}
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/x2apic.XXXXXX")
trap 'rm -rf "$dir"' EXIT
truncate -s $((n + 8))M "$dir/data.img"

e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 2G --kernel "$kernel" \
	--initrd "$initrd" --disk "path=$dir/data.img,serial=data" \
	--disk "path=$tools,ro=on,serial=tools" --stats \
	--append "quiet maxcpus=1 guest.online=all guest.run=x2apic"
up=$(e2e_time_of "$dir/log" "MINIVMM-GUEST-UP")
all=$(e2e_time_of "$dir/log" "X2APIC: $n CPUs online")
grep -q "X2APIC: $n CPUs online" "$dir/log" ||
	e2e_fail "expected $n online CPUs, got: $(grep -m1 'X2APIC: .* CPUs online' "$dir/log" || echo none)"
grep -q "probed again with every CPU online" "$dir/log" ||
	e2e_fail "the data disk was not probed again with every CPU online"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
echo "PASS: --smp $n: init after ${up}s, all $n CPUs online after ${all}s, $n queues, completions on CPUs >= 256"
