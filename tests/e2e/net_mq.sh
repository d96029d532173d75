#!/bin/bash
# net_mq.sh MINIVMM KERNEL INITRD NR_CPUS
# virtio-net on a multi-queue tap in a network namespace of L1 (198.18.0.1/24;
# the guest 198.18.0.2): the default NIC has one queue pair per vCPU, the
# guest pings L1, fetches 4 MiB over HTTP (busybox httpd) and sends 4 MiB in
# 4 parallel flows (busybox nc), md5s compared both ways, and --stats-json
# shows more than one queue pair carried frames.  Prints the throughput
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
mb=4 flows=4
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/net_mq.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT

ip link set lo up
ip tuntap add dev vmtap0 mode tap multi_queue vnet_hdr
ip addr add 198.18.0.1/24 dev vmtap0
ip link set vmtap0 up
mkdir "$dir/www"
dd if=/dev/urandom of="$dir/www/down.bin" bs=1M count=$mb 2>/dev/null
down=$(md5sum <"$dir/www/down.bin" | cut -d' ' -f1)
busybox httpd -f -p 198.18.0.1:8080 -h "$dir/www" &
pids+=($!)
# The receivers' stdin never ends (a FIFO this script holds open both
# ways): busybox nc half-closes at stdin EOF, and a client that sees the
# FIN first stops sending.
mkfifo "$dir/hold"
exec 3<>"$dir/hold"
for ((i = 0; i < flows; i++)); do
	busybox nc -l -p $((5001 + i)) >"$dir/up$i" <&3 &
	pids+=($!)
done

e2e_run_vmm "$dir/log" -- "$vmm" --smp "$n" --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --net tap=vmtap0 --stats-json \
	--append "quiet guest.run=net-mq guest.mb=$mb guest.flows=$flows"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
# The receivers end at the flows' FIN; give them a moment to write out.
for p in "${pids[@]:1}"; do
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
done
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
grep -q "NET-DOWN md5=$down " "$dir/log" || e2e_fail "download md5 differs (want $down)"
for ((i = 0; i < flows; i++)); do
	want=$(sed -n "s/.*NET-UP$i md5=\([0-9a-f]*\).*/\1/p" "$dir/log" | head -1)
	got=$(md5sum <"$dir/up$i" | cut -d' ' -f1)
	[[ -n "$want" && "$want" == "$got" ]] ||
		e2e_fail "upload $i: md5 $got on L1, $want in the guest"
done
# The NIC's pairs in --stats-json: how many carried frames each way.
pairs=$(grep -o '"nets":\[{"pairs":\[[^]]*\]' "$dir/log" | head -1)
[[ -n "$pairs" ]] || e2e_fail "no NIC in --stats-json"
npairs=$(grep -o '"rx_packets"' <<<"$pairs" | wc -l)
rx_used=$(grep -o '"rx_packets":[1-9][0-9]*' <<<"$pairs" | wc -l)
tx_used=$(grep -o '"tx_packets":[1-9][0-9]*' <<<"$pairs" | wc -l)
[[ $npairs -eq $n ]] || e2e_fail "$npairs queue pairs, expected $n"
[[ $tx_used -gt 1 || $rx_used -gt 1 ]] ||
	e2e_fail "one queue pair carried everything (rx on $rx_used, tx on $tx_used)"
dcs=$(sed -n 's/.*NET-DOWN md5=[0-9a-f]* cs=\([0-9]*\).*/\1/p' "$dir/log")
ucs=$(sed -n 's/.*NET-UP cs=\([0-9]*\).*/\1/p' "$dir/log")
echo "NET throughput (guest clock): down $mb MiB in ${dcs}0 ms, up $mb MiB in ${ucs}0 ms"
echo "NET pairs: $npairs, rx used on $rx_used, tx used on $tx_used"
echo "PASS: --smp $n: $n queue pairs, ping, $mb MiB each way with md5s equal, traffic on several pairs"
