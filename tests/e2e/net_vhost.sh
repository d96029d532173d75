#!/bin/bash
# net_vhost.sh MINIVMM KERNEL INITRD NR_CPUS [compare]
# virtio-net with vhost=on: the kernel's vhost-net moves the frames.  In a
# network namespace of L1 (the tap at 198.18.0.1/24, the guest 198.18.0.2)
# a guest with NR_CPUS vCPUs and `--net tap=vmtap0,vhost=on` sees one queue
# pair per vCPU (tests/guest/net-mq), pings L1, fetches 16 MiB over HTTP in
# 2 flows per vCPU and sends 16 MiB in 4 flows per vCPU, each flow on its
# own CPU, md5s compared both ways; each RX queue's interrupts (signalled by
# the kernel through the irqfds) counted mostly on its own CPU in the
# guest's /proc/interrupts; then MTU 1280, 9000 refused, 1500 and link
# down/up in the guest, then the host's operator holds the link down and
# lets it up on the API socket (set-link: the kernel's vhost-net parked,
# the guest's carrier 0, no ping either way, the tap's TX drops count;
# then carrier 1), each followed by 1 MiB each way with md5s (as
# net_mq.sh); the userspace
# device carried none of it (every pair's packet counters in --stats-json
# are 0) while the tap's own counters saw the megabytes.  With "compare"
# (not in CI: a second L2 boot doubles the time), then the same guest with
# vhost=off in the same L1 run, and the guest-clock transfer times of both
# printed side by side (rig numbers: nested TCG, not asserted).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_lib.sh"
e2e_require_kvm

if [[ -z "${NET_VHOST_NETNS:-}" ]]; then
	command -v unshare >/dev/null && command -v ip >/dev/null ||
		e2e_fail "needs unshare (util-linux) and ip (iproute2)"
	[[ -c /dev/vhost-net ]] ||
		e2e_fail "no /dev/vhost-net in L1 (vhost_net in tests/rig/mkl1.sh?)"
	[[ -d /sys/module/vhost_net ]] || e2e_fail "vhost_net is not loaded"
	NET_VHOST_NETNS=1 exec unshare --net -- "$0" "$@"
fi
vmm=$1 kernel=$2 initrd=$3 n=$4 compare=${5:-}
# Context: 16 MiB, not net_mq.sh's 64: in the rig vhost-net's uploads are
# several times slower (64 MiB: 127 s down, 327 s up by the guest's clock at
# load 14, past minivmm's 600 s limit with the boot).
mb=16 flows=$((4 * $4)) dflows=$((2 * $4))
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/net_vhost.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

ip link set lo up
ip tuntap add dev vmtap0 mode tap multi_queue vnet_hdr
ip addr add 198.18.0.1/24 dev vmtap0
ip link set vmtap0 up
mkdir "$dir/www"
# Every download flow fetches down.bin, every upload flow sends one file.
dd if=/dev/urandom of="$dir/www/down.bin" bs=64k count=$((mb * 16 / dflows)) 2>/dev/null
down=$(md5sum <"$dir/www/down.bin" | cut -d' ' -f1)
dd if=/dev/urandom of="$dir/www/small.bin" bs=64k count=16 2>/dev/null
small=$(md5sum <"$dir/www/small.bin" | cut -d' ' -f1)
busybox httpd -f -p 198.18.0.1:8080 -h "$dir/www" &
pids+=($!)
# The receivers' stdin never ends (see net_mq.sh): a FIFO held open.
mkfifo "$dir/hold"
exec 3<>"$dir/hold"

# The tap's own byte counters, both ways (/proc/net/dev follows our
# namespace; /sys is L1's).
tap_bytes() {
	awk '/vmtap0:/ { sub(/^ *vmtap0: */, ""); split($0, f, / +/); print f[1] + f[9] }' /proc/net/dev
}

# run MODE: one guest with vhost=MODE; checks the md5s both ways and the
# pair count; leaves its log in $dir/MODE.log.
run() {
	local mode=$1 log=$dir/$1.log rx=() p
	for p in $(seq 5001 $((5000 + flows))) 4101 4102 4103 4104; do
		rm -f "$dir/up$p"
		busybox nc -l -p "$p" >"$dir/up$p" <&3 &
		rx+=($!)
	done
	pids+=("${rx[@]}")
	rm -f "$dir/api" "$dir/$mode.hostlink"
	net_hostlink "$vmm" "$dir/api" "$log" "$dir/$mode.hostlink" vmtap0 &
	pids+=($!)
	e2e_run_vmm "$log" -- "$vmm" -v --smp "$n" --mem 512M --kernel "$kernel" \
		--initrd "$initrd" --net "tap=vmtap0,vhost=$mode" --stats-json \
		--api-socket "$dir/api" \
		--append "quiet guest.run=net-mq guest.mb=$mb guest.flows=$flows guest.dflows=$dflows guest.irq=1 guest.phases=1 guest.hostlink=1"
	hl=$(tr '\n' ' ' <"$dir/$mode.hostlink" 2>/dev/null || true)
	grep -q "MINIVMM-PAYLOAD-EXIT=0" "$log" ||
		e2e_fail "vhost=$mode: guest payload failed${hl:+ (L1 side of the link phase: $hl)}"
	net_wait_gone "${rx[@]}" "${pids[-1]}"
	[[ $E2E_RC -eq 0 ]] || e2e_fail "vhost=$mode: minivmm exited $E2E_RC"
	grep -q "NET eth0: $n rx and $n tx queues" "$log" ||
		e2e_fail "vhost=$mode: the guest does not see $n queue pairs"
	hl=$(tr '\n' ' ' <"$dir/$mode.hostlink" 2>/dev/null || true) # it has ended now
	grep -q 'hostlink ok' <<<"$hl" || e2e_fail "vhost=$mode: the host's link down/up: $hl"
	echo "NET vhost=$mode L1 side of the link phase: $hl"
	# Downloads, uploads, RX interrupts (the guest asserts each queue's
	# mostly on its CPU), MTU and link changes, the guest's and the
	# host's (as net_mq.sh).
	NET_HOSTLINK=1 net_check_flows "$log" "vhost=$mode"
	echo "NET vhost=$mode RX interrupts on the queue's own CPU (own/all): $NET_IRQ_SHARE"
}

# Sum of "KEY":N over the NIC's pairs in a log's --stats-json.
pairs_sum() {
	grep -o '"nets":\[{"pairs":\[[^]]*\]' "$1" | head -1 |
		grep -o "\"$2\":[0-9]*" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'
}

b0=$(tap_bytes)
run on
b1=$(tap_bytes)
grep -q "queue pairs of [0-9]* on vhost-net" "$dir/on.log" ||
	e2e_fail "minivmm did not say the NIC is on vhost-net"
npairs=$(grep -o '"nets":\[{"pairs":\[[^]]*\]' "$dir/on.log" | head -1 |
	grep -o '"rx_packets"' | wc -l)
[[ $npairs -eq $n ]] || e2e_fail "$npairs queue pairs in --stats-json, expected $n"
user=$(($(pairs_sum "$dir/on.log" rx_packets) + $(pairs_sum "$dir/on.log" tx_packets)))
[[ $user -eq 0 ]] || e2e_fail "vhost=on: the userspace device moved $user packets"
[[ $((b1 - b0)) -gt $((2 * mb * 1024 * 1024)) ]] ||
	e2e_fail "vhost=on: the tap counted $((b1 - b0)) bytes, less than the transfers"

modes=(on)
if [[ $compare == compare ]]; then
	run off
	user=$(($(pairs_sum "$dir/off.log" rx_packets) + $(pairs_sum "$dir/off.log" tx_packets)))
	[[ $user -gt 0 ]] || e2e_fail "vhost=off: the userspace device counted no packet"
	echo "NET vhost=off: userspace pairs $user packets"
	modes+=(off)
fi
for m in "${modes[@]}"; do
	dcs=$(sed -n 's/.*NET-DOWN cs=\([0-9]*\).*/\1/p' "$dir/$m.log")
	ucs=$(sed -n 's/.*NET-UP cs=\([0-9]*\).*/\1/p' "$dir/$m.log")
	echo "NET vhost=$m (guest clock): down $mb MiB ($dflows flows) in ${dcs}0 ms, up $mb MiB ($flows flows) in ${ucs}0 ms"
done
echo "NET vhost=on: tap moved $((b1 - b0)) bytes, userspace pairs 0 packets"
echo "PASS: --smp $n vhost=on: $n queue pairs, ping, $mb MiB each way ($dflows and $flows flows) with md5s" \
	"equal, each RX queue's interrupts on its CPU, MTU 1280/1500 (9000 refused), link down/up by the guest and by the host's" \
	"operator (set-link) with 1 MiB each way," \
	"no frame through the userspace device${compare:+; vhost=off the same}"
