#!/bin/bash
# seccomp.sh MINIVMM KERNEL INITRD TOOLS NR_CPUS
# minivmm confines its threads by default (VMM_SECCOMP_KILL): the blk-mq
# payload (fio verify + randread on a multi-queue disk, as blk_mq.sh) runs
# to the end with nothing killed, and while it runs the host side reads
# /proc/PID/task/*/status: every vmm-vcpuN and vmm-ioN thread (and the
# console thread and the main thread, which minivmm confines with the
# control list after vmm_start) is in seccomp filter mode (Seccomp: 2)
# with no_new_privs set.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tools=$4 n=$5
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/seccomp.XXXXXX")
trap 'rm -rf "$dir"' EXIT
img=$dir/data.img
truncate -s 96M "$img"
token=$RANDOM$RANDOM

{
	e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 1G --kernel "$kernel" \
		--initrd "$initrd" --disk "path=$img,serial=data" \
		--disk "path=$tools,ro=on,serial=tools" --stats \
		--append "guest.run=blk-mq guest.queues=$n guest.token=$token guest.runtime=5"
	echo "$E2E_RC" >"$dir/rc"
} &
runner=$!

# The minivmm process of this run: the one whose command line has $img.
pid=$(e2e_find_vmm "$img")

# Sample while the payload runs (after its fio verify has started).
for _ in $(seq 3000); do
	grep -q "BLK vectors" "$dir/log" 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
snap=$dir/threads
: >"$snap"
for t in /proc/"$pid"/task/*; do
	comm=$(cat "$t/comm" 2>/dev/null) || continue
	sc=$(awk '/^Seccomp:/ { print $2 }' "$t/status" 2>/dev/null)
	nnp=$(awk '/^NoNewPrivs:/ { print $2 }' "$t/status" 2>/dev/null)
	echo "$comm seccomp=$sc nnp=$nnp" >>"$snap"
done
wait "$runner" || true
E2E_RC=$(cat "$dir/rc" 2>/dev/null || echo none)
echo "--- threads of minivmm (pid $pid) during the payload:"
cat "$snap"

[[ "$E2E_RC" != 159 ]] || e2e_fail "minivmm was killed by SIGSYS (a call off an allow-list)"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ "$E2E_RC" == 0 ]] || e2e_fail "minivmm exited $E2E_RC, expected 0"
got=$(dd if="$img" bs=4096 skip=$((64 * 256)) count=1 2>/dev/null | head -c 64 | tr -d '\0')
[[ "$got" == "MINIVMM-PERSIST-$token" ]] ||
	e2e_fail "minivmm did not finish cleanly (synced guest write not in the image: '$got')"
nv=$(grep -c '^vmm-vcpu[0-9]* seccomp=2 nnp=1$' "$snap" || true)
ni=$(grep -c '^vmm-io[0-9]* seccomp=2 nnp=1$' "$snap" || true)
[[ $nv -eq $n ]] || e2e_fail "expected $n confined vCPU threads, found $nv"
[[ $ni -eq $n ]] || e2e_fail "expected $n confined I/O threads, found $ni"
if grep -E '^vmm-' "$snap" | grep -v 'seccomp=2 nnp=1$'; then
	e2e_fail "a VMM thread is not confined"
fi
grep -q '^minivmm seccomp=2 nnp=1$' "$snap" || e2e_fail "the main (control) thread is not confined"
echo "PASS: --smp $n: fio verify under seccomp (KILL), $nv vCPU + $ni I/O threads + control thread in filter mode, nothing killed"
