#!/bin/bash
# net_mq.sh MINIVMM KERNEL INITRD NR_CPUS
# virtio-net on a multi-queue tap in a network namespace of L1 (198.18.0.1/24;
# the guest 198.18.0.2): the default NIC has one queue pair per vCPU, the
# guest (tests/guest/net-mq) pings L1, fetches 64 MiB over HTTP (busybox
# httpd) in 2 flows per vCPU and sends 64 MiB in 4 flows per vCPU (busybox
# nc), each flow on its own CPU, md5s compared both ways; every RX queue's
# interrupts (virtioN-input.i in the guest's /proc/interrupts, before and
# after the transfers) counted, more than half of it on CPU i (the share is
# printed: 100% or one interrupt short in the rig); --stats-json shows every queue pair carried frames both ways.
# Then, each followed by 1 MiB down and 1 MiB up with md5s: guest MTU 1280;
# MTU 9000 refused (the device's MTU, 1500, is the driver's maximum); MTU
# 1500; eth0 down (ping fails) and up again; the host's operator holds the
# link down on the API socket (set-link net0 down: the guest's carrier goes,
# pings fail both ways) and lets it up.  Prints the throughput measured in
# the guest (rig numbers: noisy, nested TCG).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_lib.sh"
e2e_require_kvm

if [[ -z "${NET_MQ_NETNS:-}" ]]; then
	command -v unshare >/dev/null && command -v ip >/dev/null ||
		e2e_fail "needs unshare (util-linux) and ip (iproute2)"
	NET_MQ_NETNS=1 exec unshare --net -- "$0" "$@"
fi
vmm=$1 kernel=$2 initrd=$3 n=$4
mb=64 flows=$((4 * $4)) dflows=$((2 * $4))
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/net_mq.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

ip link set lo up
ip tuntap add dev vmtap0 mode tap multi_queue vnet_hdr
ip addr add 198.18.0.1/24 dev vmtap0
ip link set vmtap0 up
mkdir "$dir/www"
# Every download flow fetches down.bin (mb / dflows MiB), every upload
# flow sends one file: each flow's md5 compared on its own.
dd if=/dev/urandom of="$dir/www/down.bin" bs=64k count=$((mb * 16 / dflows)) 2>/dev/null
down=$(md5sum <"$dir/www/down.bin" | cut -d' ' -f1)
dd if=/dev/urandom of="$dir/www/small.bin" bs=64k count=16 2>/dev/null
small=$(md5sum <"$dir/www/small.bin" | cut -d' ' -f1)
busybox httpd -f -p 198.18.0.1:8080 -h "$dir/www" &
pids+=($!)
# The receivers' stdin never ends (a FIFO this script holds open both
# ways): busybox nc half-closes at stdin EOF, and a client that sees the
# FIN first stops sending.
mkfifo "$dir/hold"
exec 3<>"$dir/hold"
ports=()
for ((i = 0; i < flows; i++)); do
	ports+=($((5001 + i)))
done
ports+=(4101 4102 4103 4104) # the MTU and link phases: below every flow's port
for p in "${ports[@]}"; do
	busybox nc -l -p "$p" >"$dir/up$p" <&3 &
	pids+=($!)
done

# 64 MiB each way: 2.5 minutes of the guest's time on a quiet rig host,
# 7 at load 13 (the guest done at 420 s of minivmm's run): a longer limit
# than lib.sh's 600 s, below in-rig.sh's 900 s for the whole L1 run.
net_hostlink "$vmm" "$dir/api" "$dir/log" "$dir/hostlink" vmtap0 &
pids+=($!)
E2E_VMM_TIMEOUT=800 e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --net tap=vmtap0 --stats-json --api-socket "$dir/api" \
	--append "quiet guest.run=net-mq guest.mb=$mb guest.flows=$flows guest.dflows=$dflows guest.irq=1 guest.phases=1 guest.hostlink=1"
# What the host's side of the link phase said (it may be why the guest
# failed: the guest waits for the carrier it changes).
hl=$(tr '\n' ' ' <"$dir/hostlink" 2>/dev/null || true)
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" ||
	e2e_fail "guest payload failed${hl:+ (L1 side of the link phase: $hl)}"
net_wait_gone "${pids[@]:1}"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
# Downloads, uploads, each RX queue's interrupts (the guest asserts them
# mostly on its own CPU; the share printed below), MTU and link changes.
hl=$(tr '\n' ' ' <"$dir/hostlink" 2>/dev/null || true) # it has ended now
grep -q 'hostlink ok' <<<"$hl" || e2e_fail "the host's link down/up: $hl"
NET_HOSTLINK=1 net_check_flows "$dir/log"
# The NIC's pairs in --stats-json: how many carried frames each way.
pairs=$(grep -o '"nets":\[{"pairs":\[[^]]*\]' "$dir/log" | head -1)
[[ -n "$pairs" ]] || e2e_fail "no NIC in --stats-json"
npairs=$(grep -o '"rx_packets"' <<<"$pairs" | wc -l)
rx_used=$(grep -o '"rx_packets":[1-9][0-9]*' <<<"$pairs" | wc -l)
tx_used=$(grep -o '"tx_packets":[1-9][0-9]*' <<<"$pairs" | wc -l)
[[ $npairs -eq $n ]] || e2e_fail "$npairs queue pairs, expected $n"
[[ $tx_used -eq $n && $rx_used -eq $n ]] ||
	e2e_fail "not every queue pair carried frames both ways (rx on $rx_used, tx on $tx_used of $n)"
dcs=$(sed -n 's/.*NET-DOWN cs=\([0-9]*\).*/\1/p' "$dir/log")
ucs=$(sed -n 's/.*NET-UP cs=\([0-9]*\).*/\1/p' "$dir/log")
echo "NET throughput (guest clock): down $mb MiB ($dflows flows) in ${dcs}0 ms, up $mb MiB ($flows flows) in ${ucs}0 ms"
echo "NET pairs: $npairs, rx used on $rx_used, tx used on $tx_used"
echo "NET RX interrupts on the queue's own CPU (own/all): $NET_IRQ_SHARE"
echo "NET L1 side of the link phase: $hl"
echo "PASS: --smp $n: $n queue pairs, ping, $mb MiB each way ($dflows and $flows flows) with md5s equal, every pair used both ways, each RX queue's interrupts on its CPU, MTU 1280/1500 (9000 refused) and link down/up (the guest's, then the host's set-link) each with 1 MiB each way"
