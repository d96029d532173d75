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
# 1500; eth0 down (ping fails) and up again.  Prints the throughput
# measured in the guest (rig numbers: noisy, nested TCG).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
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
ports+=(5101 5102 5103)
for p in "${ports[@]}"; do
	busybox nc -l -p "$p" >"$dir/up$p" <&3 &
	pids+=($!)
done

# 64 MiB each way: 2.5 minutes of the guest's time on a quiet rig host,
# 7 at load 13 (the guest done at 420 s of minivmm's run): a longer limit
# than lib.sh's 600 s, below in-rig.sh's 900 s for the whole L1 run.
E2E_VMM_TIMEOUT=800 e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --net tap=vmtap0 --stats-json \
	--append "quiet guest.run=net-mq guest.mb=$mb guest.flows=$flows guest.dflows=$dflows guest.irq=1 guest.phases=1"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
# The receivers end at the flows' FIN; give them a moment to write out.
for p in "${pids[@]:1}"; do
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
done
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
for ((i = 0; i < dflows; i++)); do
	grep -q "NET-DOWN$i md5=$down" "$dir/log" ||
		e2e_fail "download $i: md5 differs (want $down)"
done
for ((i = 0; i < flows; i++)); do
	want=$(sed -n "s/.*NET-UP$i md5=\([0-9a-f]*\).*/\1/p" "$dir/log" | head -1)
	got=$(md5sum <"$dir/up$((5001 + i))" | cut -d' ' -f1)
	[[ -n "$want" && "$want" == "$got" ]] ||
		e2e_fail "upload $i: md5 $got on L1, $want in the guest"
done
# RX interrupts: every queue counted, mostly on its own CPU (the guest
# asserts it; here the count of lines, and the share on CPU i printed).
irq=$(grep -o 'NET-IRQ input\.[0-9]* own=[0-9]* total=[0-9]*' "$dir/log" || true)
[[ $(grep -c . <<<"$irq") -eq $n ]] || e2e_fail "RX interrupts of $n queues not reported"
irqshare=$(awk '{ split($3, o, "="); split($4, t, "="); q = $2; sub(/input\./, "", q)
	printf "%s%s %d/%d (%.1f%%)", s, q, o[2], t[2], t[2] ? 100 * o[2] / t[2] : 0; s = ", " }' <<<"$irq")
# MTU and link changes: 1 MiB each way after each.
grep -q "NET-MTU 9000 refused" "$dir/log" ||
	e2e_fail "the guest set MTU 9000 above the device's MTU (1500, its maximum)"
grep -q "NET phases done" "$dir/log" || e2e_fail "the MTU and link phases did not finish"
smallup=$(sed -n 's/.*NET-SMALL md5=\([0-9a-f]*\).*/\1/p' "$dir/log" | head -1)
[[ $smallup ]] || e2e_fail "no NET-SMALL line"
phase=0
for t in mtu1280 mtu1500 link; do
	mtu=${t#mtu}
	[[ $t == link ]] && mtu=1500
	grep -q "NET-X-$t down=$small up=$smallup mtu=$mtu[[:space:]]*\$" "$dir/log" ||
		e2e_fail "$t: the 1 MiB download md5 differs (want $small) or MTU not $mtu"
	got=$(md5sum <"$dir/up$((5101 + phase))" | cut -d' ' -f1)
	[[ $got == "$smallup" ]] || e2e_fail "$t: upload md5 $got on L1, $smallup in the guest"
	phase=$((phase + 1))
done
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
echo "NET RX interrupts on the queue's own CPU (own/all): $irqshare"
echo "PASS: --smp $n: $n queue pairs, ping, $mb MiB each way ($dflows and $flows flows) with md5s equal, every pair used both ways, each RX queue's interrupts on its CPU, MTU 1280/1500 (9000 refused) and link down/up each with 1 MiB each way"
