#!/bin/bash
# vhost_user_qemu.sh BLKD KERNEL INITRD TOOLS
# QEMU (Debian's qemu-system-x86_64, an independently written vhost-user
# front end) runs a 4-vCPU guest whose disks are served by minivmm-blkd
# (seccomp on, defaults otherwise), guest RAM a shared memfd:
#   data   both sides' defaults: no num-queues on either (issue 31: QEMU
#          asks for one queue per vCPU, 4, of a back end on the rig's
#          one-CPU L1, which must offer them and serve them with one I/O
#          thread; tests/guest/vhost-blk: 4 queues with distinct
#          vectors, fio crc32c verify on every CPU, discard, write-zeroes,
#          a synced marker found in the image afterwards; the back end's
#          counters show requests on each of the 4 queues)
#   ro     ro=on: writes refused
#   crash  boot 1 (crash-write, guest.mode=kill) flushes 64 blocks and keeps
#          writing; QEMU is SIGKILLed; boot 2, a new QEMU against the same
#          back end, reads every flushed block back intact (and the host
#          checks the image: nothing torn)
#   tools  QEMU's own virtio-blk: fio, blkdiscard
# The back ends serve both QEMUs without a restart; at the end SIGTERM
# stops them (exit 0), and the data disk's counters (--stats-json) show
# that discard and write-zeroes requests reached the device.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/crash_lib.sh"
e2e_require_kvm

blkd=$1 kernel=$2 initrd=$3 tools=$4
qemu=$(command -v qemu-system-x86_64) || e2e_fail "qemu-system-x86_64 missing (scripts/deps.sh)"
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/vhost_user_qemu.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT
token=$RANDOM$RANDOM
truncate -s 96M "$dir/data.img"
truncate -s 16M "$dir/crash.img"
{ printf 'MINIVMM-RO-PATTERN'; head -c 4078 /dev/zero; } >"$dir/ro.img"
truncate -s 8M "$dir/ro.img"

# backend NAME [DISK-OPTIONS]: start minivmm-blkd on $dir/NAME.sock.
backend() {
	"$blkd" --socket "$dir/$1.sock" --disk "path=$dir/$1.img,serial=$1${2:+,$2}" \
		--stats-json -v </dev/null >"$dir/$1.stats" 2>"$dir/$1.log" &
	pids+=($!)
	eval "pid_$1=$!"
	for _ in $(seq 300); do
		grep -q "ready" "$dir/$1.log" && return 0
		sleep 0.1
	done
	cat "$dir/$1.log"
	e2e_fail "minivmm-blkd for $1 did not start"
}
backend data
backend ro ro=on,num-queues=1
backend crash num-queues=2

# qemu_cmd APPEND: the QEMU command line (QEMU's guest keeps ACPI: without
# it the guest finds one CPU).
qemu_cmd() {
	Q=("$qemu" -enable-kvm -cpu host -M pc -smp 4 -m 512M
		-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem
		-nographic -nodefaults -no-user-config -serial stdio -no-reboot
		-kernel "$kernel" -initrd "$initrd"
		-chardev "socket,id=c0,path=$dir/data.sock"
		-device vhost-user-blk-pci,chardev=c0
		-chardev "socket,id=c1,path=$dir/ro.sock"
		-device vhost-user-blk-pci,chardev=c1,num-queues=1
		-chardev "socket,id=c2,path=$dir/crash.sock"
		-device vhost-user-blk-pci,chardev=c2,num-queues=2
		-drive "file=$tools,if=none,id=tools,format=raw,readonly=on"
		-device virtio-blk-pci,drive=tools,serial=tools,num-queues=1
		-append "console=ttyS0 reboot=k panic=-1 pci=conf1,noearly i8042.noaux i8042.nopnp i8042.dumbkbd quiet $1")
}

# Boot 1: flushed writes, then SIGKILL with writes in flight.
qemu_cmd "guest.run=crash-write guest.mode=kill"
"${Q[@]}" </dev/null >"$dir/boot1.log" 2>&1 &
qpid=$!
pids+=("$qpid")
# The old default back end offered one queue per CPU of its host: QEMU
# 7.2 then exits with "The maximum number of queues supported by the
# backend is 1".
( crash_wait_for "$dir/boot1.log" "CRASH-FLUSHED n=" 600 "$qpid" ) || {
	grep -q "maximum number of queues" "$dir/boot1.log" &&
		e2e_fail "QEMU's default queue count (4, one per vCPU) refused by the default back end"
	exit 1
}
sleep 1 # writes after the flush are in flight now
kill -9 "$qpid"
rc=0
{ wait "$qpid"; } 2>/dev/null || rc=$?
[[ $rc -eq 137 ]] || { cat "$dir/boot1.log"; e2e_fail "QEMU exited $rc, not by SIGKILL"; }
n=$(sed -n 's/.*CRASH-FLUSHED n=\([0-9]*\).*/\1/p' "$dir/boot1.log" | head -1)
echo "boot 1: the guest flushed $n blocks, QEMU SIGKILLed"
for b in data ro crash; do
	kill -0 "$(eval echo "\$pid_$b")" || { cat "$dir/$b.log"; e2e_fail "minivmm-blkd ($b) died with QEMU"; }
done

# Boot 2: a new QEMU against the same back ends.
qemu_cmd "guest.run=vhost-blk guest.queues=4 guest.token=$token guest.flushed=$n"
E2E_VMM_TIMEOUT=600 e2e_run_vmm "$dir/boot2.log" -- "${Q[@]}"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/boot2.log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "QEMU exited $E2E_RC"

# What the default back end offered and how many threads served it: all
# the queues virtio-pci allows, one I/O thread per CPU it may run on.
cpus=$(nproc)
grep "I/O threads" "$dir/data.log"
grep -q "up to 1024 queues of up to 256 entries, $cpus I/O threads" "$dir/data.log" ||
	e2e_fail "the default back end did not offer 1024 queues on $cpus I/O threads"
nio=$(grep -l '^vmm-io' /proc/"$pid_data"/task/*/comm | wc -l)
echo "data back end: $nio I/O threads on $cpus CPUs"
[[ $nio -eq $cpus ]] || e2e_fail "$nio I/O threads, not $cpus"

for b in data ro crash; do
	p=$(eval echo "\$pid_$b")
	kill -TERM "$p"
	rc=0
	wait "$p" || rc=$?
	[[ $rc -eq 0 ]] || { cat "$dir/$b.log"; e2e_fail "minivmm-blkd ($b) exited $rc"; }
	# One counters line per front end that came and went.
	c=$(grep -c '"blkd"' "$dir/$b.stats" || true)
	[[ $c -eq 2 ]] || { cat "$dir/$b.log"; e2e_fail "minivmm-blkd ($b) served $c front ends, not 2"; }
done
got=$(dd if="$dir/data.img" bs=4096 skip=$((64 * 256)) count=1 2>/dev/null | head -c 64 | tr -d '\0')
[[ "$got" == "MINIVMM-PERSIST-$token" ]] ||
	e2e_fail "synced guest write not in the image (found '$got')"
stats=$(tail -n 1 "$dir/data.stats")
echo "data disk counters: $stats"
jq -e '.blkd.discards > 0 and .blkd.write_zeroes > 0 and .blkd.io_errors == 0' \
	<<<"$stats" >/dev/null || e2e_fail "discard/write-zeroes not seen by the device, or I/O errors"
# The queues QEMU started (of the 1024 offered), each with requests: fio's
# job pinned to each vCPU went down that vCPU's queue.
jq -r '.blkd.queues[] | "data queue \(.q): \(.requests) requests"' <<<"$stats"
jq -e '(.blkd.queues | length) == 4 and all(.blkd.queues[]; .requests > 0)' \
	<<<"$stats" >/dev/null ||
	e2e_fail "the data disk's back end did not serve requests on exactly 4 queues"
crash_check "$dir/crash.img" "$n"
echo "PASS: QEMU + minivmm-blkd with both sides' defaults: 4 queues on $nio I/O thread(s), fio verify, discard, write-zeroes, ro, data in the image, SIGKILLed front end lost no flushed block"
