#!/bin/bash
# vhost_user_reconnect.sh BLKD KERNEL INITRD TOOLS
# The back end dies, the guest does not notice: QEMU (-chardev ...,
# reconnect=1) runs a 4-vCPU guest whose data disk (num-queues=4) is served
# by minivmm-blkd; while the guest's fio writes with crc32c verify on every
# CPU (tests/guest/vhost-reconnect), the back end is SIGKILLed with requests
# in flight and a new one is started on the same socket.  In flight for
# sure: the image is a device-mapper "delay" device (writes held 200 ms,
# direct=on), so at the kill the back end holds dozens of popped writes.  QEMU reconnects,
# gives it the in-flight buffer it kept (INFLIGHT_SHMFD: GET_INFLIGHT_FD
# from the first back end, SET_INFLIGHT_FD to the second), and the second
# resubmits what the first left in flight: fio's verify must pass (no lost
# or torn acknowledged write) and QEMU exit 0.  Needs root, dmsetup,
# losetup, dm-mod/dm-delay/loop (loaded from the rig's module tree when
# missing); exits 77 where that is not possible.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/crash_lib.sh"
e2e_require_kvm

blkd=$1 kernel=$2 initrd=$3 tools=$4
qemu=$(command -v qemu-system-x86_64) || e2e_fail "qemu-system-x86_64 missing (scripts/deps.sh)"
e2e_dm_modules md/dm-delay
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/vhost_user_reconnect.XXXXXX")
name=minivmm-delay-$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	e2e_dm_remove "$name"
	rm -rf "$dir"
}
trap cleanup EXIT
truncate -s 96M "$dir/back.img"
# Reads pass straight through, writes wait 200 ms.
e2e_dm_create "$name" "$dir/back.img" "0 $((96 * 2048)) delay @LOOP@ 0 0 @LOOP@ 0 200"
dev=$E2E_DM_DEV

# backend N: start minivmm-blkd number N on data.sock (log data.N.log).
backend() {
	"$blkd" --socket "$dir/data.sock" --disk "path=$dev,serial=data,num-queues=4,direct=on" \
		-v </dev/null >"$dir/data.$1.stats" 2>"$dir/data.$1.log" &
	pids+=($!)
	bpid=$!
	for _ in $(seq 300); do
		grep -q "ready" "$dir/data.$1.log" && return 0
		sleep 0.1
	done
	cat "$dir/data.$1.log"
	e2e_fail "minivmm-blkd $1 did not start"
}
backend 1

"$qemu" -enable-kvm -cpu host -M pc -smp 4 -m 512M \
	-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
	-nographic -nodefaults -no-user-config -serial stdio -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-chardev "socket,id=c0,path=$dir/data.sock,reconnect=1" \
	-device vhost-user-blk-pci,chardev=c0,num-queues=4 \
	-drive "file=$tools,if=none,id=tools,format=raw,readonly=on" \
	-device virtio-blk-pci,drive=tools,serial=tools,num-queues=1 \
	-append "console=ttyS0 reboot=k panic=-1 pci=conf1,noearly i8042.noaux i8042.nopnp i8042.dumbkbd quiet guest.run=vhost-reconnect guest.queues=4 guest.size=4M" \
	</dev/null >"$dir/qemu.log" 2>&1 &
qpid=$!
pids+=("$qpid")
crash_wait_for "$dir/qemu.log" "RECONNECT-START" 600 "$qpid"
# Kill only once the back end has writes in flight: the delay target holds
# each for 200 ms, and its own status line counts what it holds ("delay
# READS WRITES" from dmsetup status), i.e. what the back end submitted and
# has not completed.  (A fixed 3 s after RECONNECT-START raced fio's
# start-up on a loaded host: in CI, 2026-12-01, nothing was in flight yet.)
# Up to 300 s (an emulated 4-vCPU guest on a loaded host starts fio
# slowly); the guest's log is shown if its fio never writes.
w=0
for _ in $(seq 3000); do
	w=$(dmsetup status "$name" 2>/dev/null | awk '$3 == "delay" { print $5 + 0 }')
	[[ ${w:-0} -gt 0 ]] && break
	kill -0 "$qpid" 2>/dev/null && ! grep -qE "^FAIL|RECONNECT fio verify" "$dir/qemu.log" || break
	sleep 0.1
done
if [[ ${w:-0} -eq 0 ]]; then
	tail -40 "$dir/qemu.log"
	echo "dmsetup status: $(dmsetup status "$name" 2>&1); inflight: $(cat "/sys/block/${dev##*/}/inflight" 2>&1)"
	e2e_fail "no write of the guest's fio was in flight at the back end's disk"
fi
kill -9 "$bpid"
wait "$bpid" 2>/dev/null || true
grep -q "RECONNECT fio verify" "$dir/qemu.log" &&
	e2e_fail "fio ended before the back end was killed: nothing was in flight"
echo "back end 1 SIGKILLed with fio running"
sleep 1
backend 2

# QEMU's guest finishes its fio and powers off (reboot=k: exit 0).
t=6000
while kill -0 "$qpid" 2>/dev/null; do
	((t-- > 0)) || { cat "$dir/qemu.log"; e2e_fail "QEMU did not finish in 600 s after the restart"; }
	sleep 0.1
done
rc=0
wait "$qpid" || rc=$?
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/qemu.log" || { cat "$dir/qemu.log"; e2e_fail "guest payload failed"; }
[[ $rc -eq 0 ]] || { cat "$dir/qemu.log"; e2e_fail "QEMU exited $rc"; }
# Both back ends got QEMU's in-flight buffer; the second may have found
# requests in flight (how many depends on the moment of the kill: the back
# end is fast, the emulated guest slow).
for n in 1 2; do
	grep -q "in-flight buffer mapped" "$dir/data.$n.log" ||
		{ cat "$dir/data.$n.log"; e2e_fail "back end $n got no in-flight buffer (INFLIGHT_SHMFD not used)"; }
done
grep "left in flight by the previous back end" "$dir/data.2.log" ||
	{ cat "$dir/data.2.log"; e2e_fail "back end 2 resubmitted nothing: no request was in flight at the kill"; }
kill -TERM "$bpid"
rc=0
wait "$bpid" || rc=$?
[[ $rc -eq 0 ]] || { cat "$dir/data.2.log"; e2e_fail "minivmm-blkd 2 exited $rc"; }
echo "PASS: back end SIGKILLed under fio and replaced; QEMU reconnected, fio crc32c verify passed on 4 queues"
