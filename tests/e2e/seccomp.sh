#!/bin/bash
# seccomp.sh MINIVMM KERNEL INITRD TOOLS NR_CPUS [NR_DISKS [net]]
# minivmm confines its threads by default (VMM_SECCOMP_KILL), with default
# queues (one per vCPU on every disk): with NR_CPUS vCPUs the guest runs
# fio crc32c verify from every CPU on a multi-queue data disk (the blk-mq
# payload), and with NR_DISKS > 0 also writes and reads back NR_DISKS more
# disks, each with NR_CPUS queues (blk-scale payload); minivmm exits 0 with
# nothing killed and no seccomp report in its output.  While the payload
# runs the host side reads /proc/PID/task/*/status: every vmm-vcpuN and
# vmm-ioN thread (and the console thread and the main thread, which minivmm
# confines with the control list after vmm_start) is in seccomp filter
# mode (Seccomp: 2) with no_new_privs set.  With "net": also a NIC with
# default queue pairs (one per vCPU, on the same I/O threads) on a tap in a
# network namespace this test makes (198.18.0.1/24), which the guest pings,
# then 16 MiB down (busybox httpd in L1) and 16 MiB up (busybox nc) in 4
# flows each from 4 CPUs, md5s compared both ways, and each of those CPUs'
# RX queue interrupting on that CPU (tests/guest/blk-scale).
# Run at 2 vCPUs and at 32 (issue 13: --smp 8+ was killed by SIGSYS when a
# confined I/O thread made glibc open /sys/devices/system/cpu/online).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tools=$4 n=$5 nd=${6:-0} withnet=${7:-}
net=()
if [[ $withnet == net ]]; then
	if [[ -z "${SECCOMP_NETNS:-}" ]]; then
		command -v unshare >/dev/null && command -v ip >/dev/null ||
			e2e_fail "needs unshare (util-linux) and ip (iproute2)"
		SECCOMP_NETNS=1 exec unshare --net -- "$0" "$@"
	fi
	ip link set lo up
	ip tuntap add dev vmtap0 mode tap multi_queue vnet_hdr
	ip addr add 198.18.0.1/24 dev vmtap0
	ip link set vmtap0 up
	net=(--net tap=vmtap0)
fi
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/seccomp.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
netmb=0
down=()
if ((${#net[@]})); then
	netmb=16
	mkdir "$dir/www"
	for ((i = 0; i < 4; i++)); do
		dd if=/dev/urandom of="$dir/www/down$i.bin" bs=64k count=$((netmb * 4)) 2>/dev/null
		down+=("$(md5sum <"$dir/www/down$i.bin" | cut -d' ' -f1)")
	done
	busybox httpd -f -p 198.18.0.1:8080 -h "$dir/www" &
	pids+=($!)
	# The receivers' stdin never ends (see net_mq.sh): a FIFO held open.
	mkfifo "$dir/hold"
	exec 3<>"$dir/hold"
	for ((i = 0; i < 4; i++)); do
		busybox nc -l -p $((5001 + i)) >"$dir/up$i" <&3 &
		pids+=($!)
	done
fi
img=$dir/data.img
# fio verify: one job per CPU on its own region; 16 MiB each up to 4 CPUs,
# less beyond (~32 MiB written and verified in all: every I/O is several
# exits of a nested guest), at least 1 MiB (256 random 4 KiB writes, each
# read back and checked) per CPU.  The image holds every region and the
# marker at 64 MiB.
mb=$((n <= 4 ? 16 : (32 / n > 1 ? 32 / n : 1)))
size=$((n * mb + 32 > 96 ? n * mb + 32 : 96))
truncate -s "${size}M" "$img"
token=$RANDOM$RANDOM
extra=()
for ((i = 0; i < nd; i++)); do
	truncate -s 1M "$dir/d$i.img"
	extra+=(--disk "path=$dir/d$i.img,serial=d$i")
done
# A 32-vCPU guest is slow in the rig (one TCG L1 CPU for 32 vCPUs): about
# 8 minutes for this test on a 2-core host at load 10, two thirds of it the
# guest's boot (in-rig.sh's E2E_RIG_TIMEOUT must stay above this).
# Beyond 4 vCPUs blk-mq skips its randread phase (timings only) and its
# 4 MiB request-limits phase (asserted at 2 vCPUs here and by blk_mq.sh).
timeout=$((300 + n * 35 + nd * 10))
rr=$((n <= 4 ? 1 : 0))

{
	E2E_VMM_TIMEOUT=$timeout e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 1G \
		--kernel "$kernel" --initrd "$initrd" --disk "path=$img,serial=data" \
		--disk "path=$tools,ro=on,serial=tools" "${extra[@]}" "${net[@]}" --stats \
		--append "quiet guest.net=$((${#net[@]} > 0)) guest.netmb=$netmb guest.run=blk-scale guest.queues=$n guest.token=$token guest.runtime=2 guest.randread=$rr guest.limits=$rr guest.verify_mb=$mb guest.disks=$nd"
	echo "$E2E_RC" >"$dir/rc"
} &
runner=$!

# The minivmm process of this run: the one whose command line has $img.
pid=$(e2e_find_vmm "$img")

# Sample while the payload runs (after its fio verify has started).
while ! grep -q "BLK vectors" "$dir/log" 2>/dev/null; do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.5
done
# One process reads every task's status at once: the L1's only CPU is busy
# running the guest's vCPUs, so a fork per thread would take minutes and
# find the vCPU threads gone.  Tasks that end meanwhile (io_uring's iou-wrk
# workers are tasks too) are simply missing.
snap=$dir/threads
grep -H -E '^(Name|Seccomp|NoNewPrivs):' /proc/"$pid"/task/*/status 2>/dev/null |
	awk -F':[ \t]*' '{ split($1, p, "/"); t = p[5] }
		$2 == "Name" { name[t] = $3 } $2 == "Seccomp" { sc[t] = $3 }
		$2 == "NoNewPrivs" { nnp[t] = $3 }
		END { for (t in name) print name[t] " seccomp=" sc[t] " nnp=" nnp[t] }' \
	>"$snap" || true
wait "$runner" || true
E2E_RC=$(cat "$dir/rc" 2>/dev/null || echo none)
echo "--- threads of minivmm (pid $pid) during the payload:"
sort "$snap" | uniq -c

report=$(grep -m1 "libvmm: seccomp:" "$dir/log" || true)
[[ "$E2E_RC" != 159 ]] ||
	e2e_fail "minivmm was killed by SIGSYS (a call off an allow-list): ${report:-no report line}"
[[ -z "$report" ]] || e2e_fail "seccomp report in the output: $report"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
grep -q "BLK fio verify: OK ($n jobs" "$dir/log" || e2e_fail "fio verify did not run from all $n CPUs"
if ((nd > 0)); then
	grep -q "BLK scale: data disk + $nd disks, $n queues each, written and read back" "$dir/log" ||
		e2e_fail "the $nd extra disks were not all served with $n queues"
fi
[[ "$E2E_RC" == 0 ]] || e2e_fail "minivmm exited $E2E_RC, expected 0"
got=$(dd if="$img" bs=4096 skip=$((64 * 256)) count=1 2>/dev/null | head -c 64 | tr -d '\0')
[[ "$got" == "MINIVMM-PERSIST-$token" ]] ||
	e2e_fail "minivmm did not finish cleanly (synced guest write not in the image: '$got')"
for ((i = 0; i < nd; i++)); do
	want=$(printf 'MINIVMM-DISK-%03d' "$i")
	[[ "$(head -c 16 "$dir/d$i.img")" == "$want" ]] || e2e_fail "d$i.img lacks its data"
done
nv=$(grep -c '^vmm-vcpu[0-9]* seccomp=2 nnp=1$' "$snap" || true)
ni=$(grep -c '^vmm-io[0-9]* seccomp=2 nnp=1$' "$snap" || true)
[[ $nv -eq $n ]] || e2e_fail "expected $n confined vCPU threads, found $nv"
[[ $ni -eq $n ]] || e2e_fail "expected $n confined I/O threads, found $ni"
if grep -E '^vmm-' "$snap" | grep -v 'seccomp=2 nnp=1$'; then
	e2e_fail "a VMM thread is not confined"
fi
grep -q '^minivmm seccomp=2 nnp=1$' "$snap" || e2e_fail "the main (control) thread is not confined"
nic=
if ((${#net[@]})); then
	grep -q "NET scale: eth0 with $n queue pairs, 3 ping replies" "$dir/log" ||
		e2e_fail "the NIC did not carry the guest's pings on $n queue pairs"
	for p in "${pids[@]:1}"; do
		for _ in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
	done
	for ((i = 0; i < 4; i++)); do
		grep -q "NET-DOWN$i md5=${down[i]}" "$dir/log" ||
			e2e_fail "download $i: md5 differs (want ${down[i]})"
		want=$(sed -n "s/.*NET-UP$i md5=\([0-9a-f]*\).*/\1/p" "$dir/log" | head -1)
		got=$(md5sum <"$dir/up$i" | cut -d' ' -f1)
		[[ -n "$want" && "$want" == "$got" ]] ||
			e2e_fail "upload $i: md5 $got on L1, $want in the guest"
	done
	grep -q "NET scale: $netmb MiB down" "$dir/log" || e2e_fail "no transfer report from the guest"
	grep -o 'NET scale: [0-9]* MiB down.*' "$dir/log" | head -1
	echo "NET RX interrupts:" $(grep -o 'NET-IRQ input\.[0-9]* own=[0-9]* total=[0-9]*' "$dir/log" || true)
	nic=" and a NIC with $n queue pairs (pinged, $netmb MiB each way in 4 flows with md5s, RX interrupts on the flows' CPUs)"
fi
echo "PASS: --smp $n, $((nd + 2)) disks$nic: fio verify from $n CPUs under seccomp (KILL), $nv vCPU + $ni I/O threads + control thread in filter mode, nothing killed"
