#!/bin/sh
# poweroff.sh MINIVMM IMAGE INITRD (arm64, in the arm64 rig's L1)
# The guest's `poweroff -f` is PSCI SYSTEM_OFF: the VM ends as powered off
# ("guest powered off", not a reset) and minivmm exits 0.  Then the power
# key: `minivmm --api SOCK shutdown` presses the device tree's gpio-keys
# key (a PL061 line); the guest's /init sees KEY_POWER and powers off,
# minivmm exits 0.
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
vmm=$1 kernel=$2 initrd=$3
dir=$(e2e_tmpdir)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

e2e_run_vmm "$dir/log" "$vmm" -v --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --append "quiet guest.run=poweroff"
grep -q "POWEROFF: poweroff -f" "$dir/log" || e2e_fail "the payload did not run"
grep -q "guest powered off" "$dir/log" ||
	e2e_fail "minivmm did not see the power-off (PSCI SYSTEM_OFF)"
! grep -q "MINIVMM-GUEST-REBOOT\|guest requested a reset" "$dir/log" ||
	e2e_fail "the guest rebooted instead of powering off"
[ "$E2E_RC" -eq 0 ] || e2e_fail "minivmm exited $E2E_RC, expected 0"
echo "PASS: arm64 poweroff -f ended the VM as powered off, exit 0"

# The power key over the API socket.
sock=$dir/api.sock
(e2e_run_vmm "$dir/log2" "$vmm" -v --mem 256M --kernel "$kernel" \
	--initrd "$initrd" --append "quiet guest.run=power-key" --api-socket "$sock"
 echo "$E2E_RC" >"$dir/rc2.tmp" && mv "$dir/rc2.tmp" "$dir/rc2") &
pid=$!
i=0
until grep -q "MINIVMM-WAIT-POWER-KEY" "$dir/log2" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -le 600 ] || e2e_fail "the power-key guest did not come up in 120 s"
	sleep 0.2
done
"$vmm" --api "$sock" shutdown | grep -q '"ok": *true' ||
	e2e_fail "shutdown refused"
# rc2 appears whole (renamed into place): a file tested for while the
# shell was still writing it read empty ("bad number" in a CI run).
i=0
while [ ! -e "$dir/rc2" ]; do
	i=$((i + 1))
	[ "$i" -le 300 ] || e2e_fail "minivmm still running 60 s after shutdown"
	sleep 0.2
done
pid=
read -r rc2 <"$dir/rc2"
grep -q "MINIVMM-POWER-BUTTON" "$dir/log2" || e2e_fail "the guest saw no power key"
grep -q "guest powered off" "$dir/log2" ||
	e2e_fail "minivmm did not see the power-off after the power key"
[ "$rc2" -eq 0 ] || e2e_fail "minivmm exited $rc2 after the power key, expected 0"
echo "PASS: arm64 power key (API shutdown): the guest powered off, exit 0"
