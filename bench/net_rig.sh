#!/bin/bash
# bench/net_rig.sh MINIVMM KERNEL INITRD TOOLS ROUNDS SECS VCPUS [SIDES
# [BASE_VMM [ALT_VMM [TESTS [APPEND [BASE_ARGS]]]]]]: inside the rig's L1
# (bench/net_bench.sh runs it through tests/e2e/in-rig.sh).
# Boots four guests side by side, VCPUS vCPUs and 512 MiB each, one NIC
# each on its own multi-queue tap (one queue pair per vCPU) and subnet
# (198.18.K.0/24: the L1 is .1, the guest .2), running iperf3's server
# (tests/guest/net-bench, iperf3 from the TOOLS disk):
#   minivmm-off  minivmm --net tap=nbtK,vhost=off (the I/O threads)
#   minivmm-on   minivmm --net tap=nbtK,vhost=on  (the kernel's vhost-net)
#   qemu-off     QEMU 7.2 -netdev tap,vhost=off,queues=VCPUS
#                -device virtio-net-pci,mq=on
#   qemu-on      the same with vhost=on
#   minivmm-base BASE_VMM (another minivmm build) as minivmm-off: a before /
#                after comparison in the same L1, alternated
#   minivmm-alt  ALT_VMM, the same (a third build)
#   minivmm-normal, minivmm-adaptive  minivmm-off with --io-sched normal
#                or adaptive (the I/O-thread policy; minivmm-off runs the
#                default, batch)
#   minivmm-1pair  minivmm-off with queue-pairs=1 (one pair against one per
#                vCPU: run it with tcp_rxM / tcp_txM in an L1 of several
#                CPUs, RIG_L1_CPUS)
# SIDES: the sides to run, space-separated (default the first four);
# TESTS: the tests (default tcp_rx tcp_tx tcp_rxN udp_tx rr; tcp_rxM and
# tcp_txM too);
# APPEND: more for every guest's kernel command line (a diagnosis, e.g.
# virtio_net.napi_tx=0); BASE_ARGS: more minivmm options for the
# minivmm-base and minivmm-alt sides (e.g. --io-sched adaptive: an earlier
# build's policy against this one's).
# then ROUNDS rounds alternating them; each round and guest, from the L1:
#   tcp_rx  iperf3 TCP, 1 stream, L1 -> guest, SECS s (Gbit/s)
#   tcp_tx  the same reversed (-R), guest -> L1
#   tcp_rxN VCPUS streams (-P), L1 -> guest
#   tcp_rxM VCPUS iperf3 clients at once, one stream each, L1 -> the
#           guest's VCPUS servers, server i pinned to vCPU i and client i
#           to L1 CPU i (mod the L1's CPUs): the sum (one iperf3 moves all
#           its streams on one thread, in the guest too)
#   tcp_txM the same reversed, guest -> L1
#   udp_tx  UDP 64-byte payloads as fast as the guest sends them (-R,
#           -b 0): packets/s the L1 received
#   rr      200 ICMP echoes, each sent when the last came back (busybox
#           ping -A): p50/p99 us
# and the VMM's host CPU (its process, plus its vhost-<pid> kernel
# threads) per GB moved in the TCP runs; for minivmm with vhost=off the
# NIC's kicks + interrupts per packet (API socket stats around each run),
# and the parts: kicks and interrupts of the RX and TX queues, packets
# each way; for every side the same counted by the guest's driver
# (tests/guest/netcount.c, served on the guest's port 5300: its ethtool
# kicks and packets, /proc/interrupts of the NIC's queue vectors), record
# field "guest", and once per side what one such count costs itself
# (bench "net_count_cost").
# In an L1 of several CPUs (RIG_L1_CPUS) each minivmm pins its vCPUs and
# I/O threads round robin to them (--cpu-affinity): unpinned L2 guests
# triple-faulted there more often (tests/rig/README: the emulator's
# multi-CPU TCG corrupts state now and then, pinned or not), so QEMU's
# sides, which cannot be pinned before their vCPUs run, are refused.  A
# guest that dies ends its side's records (net_error); the others go on.
# The three idle guests wait in accept() while one is measured.  Prints
# BENCH-JSON records (bench "net", one per guest, round and test; "net_
# machine" once); a failed test is a record of bench "net_error".
# Timings are reported, never asserted.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
vmm=$1 kernel=$2 initrd=$3 tools_src=$4 rounds=${5:-3} secs=${6:-5} n=${7:-2}
base_vmm=${9:-} alt_vmm=${10:-} tests=${11:-tcp_rx tcp_tx tcp_rxN udp_tx rr}
extra=${12:-}
read -r -a base_args <<<"${13:-}"
bench_need_kvm
[[ -c /dev/vhost-net ]] || bench_die "no /dev/vhost-net in the L1"
qemu=$(command -v qemu-system-x86_64) || bench_die "qemu-system-x86_64 missing"
command -v iperf3 >/dev/null || bench_die "iperf3 missing (scripts/deps.sh)"
dir=$(bench_scratch netb)
l1_cpus=$(nproc)
pin=()
[[ $l1_cpus -gt 1 ]] && pin=(--cpu-affinity "0-$((l1_cpus - 1))")
read -r -a sides <<<"${8:-minivmm-off minivmm-on qemu-off qemu-on}"
for s in "${sides[@]}"; do
	case $s in
	minivmm-off | minivmm-on | minivmm-normal | minivmm-adaptive | minivmm-1pair) ;;
	qemu-off | qemu-on) [[ $l1_cpus -eq 1 ]] || bench_die "$s needs a one-CPU L1 (this one has $l1_cpus: QEMU's vCPU threads cannot be pinned before they run)" ;;
	minivmm-base) [[ -x $base_vmm ]] || bench_die "minivmm-base needs BASE_VMM" ;;
	minivmm-alt) [[ -x $alt_vmm ]] || bench_die "minivmm-alt needs ALT_VMM" ;;
	*) bench_die "unknown side $s" ;;
	esac
done
# The tests too, before the guests boot for them.
for t in $tests; do
	case $t in
	tcp_rx | tcp_tx | tcp_rxN | tcp_rxM | tcp_txM | udp_tx | rr) ;;
	*) bench_die "unknown test $t" ;;
	esac
done
declare -A pid k
cleanup() {
	bench_kill_all "${pid[@]}"
	for s in "${sides[@]}"; do ip link del "nbt${k[$s]}" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
ip link set lo up
i=0
for s in "${sides[@]}"; do
	i=$((i + 1))
	k[$s]=$i
	ip tuntap add dev "nbt$i" mode tap multi_queue vnet_hdr || bench_die "ip tuntap nbt$i"
	ip addr add "198.18.$i.1/24" dev "nbt$i"
	ip link set "nbt$i" up
done
append() { echo "console=ttyS0 reboot=k panic=-1 quiet guest.run=net-bench guest.ip=198.18.$1.2${extra:+ $extra}"; }
boot() { # SIDE
	local s=$1 t=nbt${k[$1]} mac tools=$dir/$1.tools
	mac=$(printf '52:54:00:12:34:%02x' "${k[$1]}")
	# A copy each: QEMU will not share a file minivmm holds locked.
	cp "$tools_src" "$tools"
	case $s in
	minivmm-*)
		local v=$vmm vh=${s#minivmm-} sched=() qp=
		[[ $s == minivmm-base ]] && v=$base_vmm vh=off sched=("${base_args[@]}")
		[[ $s == minivmm-alt ]] && v=$alt_vmm vh=off sched=("${base_args[@]}")
		[[ $s == minivmm-normal || $s == minivmm-adaptive ]] && sched=(--io-sched "$vh") vh=off
		[[ $s == minivmm-1pair ]] && vh=off qp=,queue-pairs=1
		"$v" --smp "$n" --mem 512M --kernel "$kernel" --initrd "$initrd" "${sched[@]}" "${pin[@]}" \
			--net "tap=$t,mac=$mac,vhost=$vh$qp" \
			--disk "path=$tools,ro=on,serial=tools" --api-socket "$dir/$s.api" \
			--append "$(append "${k[$s]}")" </dev/null >"$dir/$s.log" 2>&1 &
		;;
	qemu-*)
		"$qemu" -enable-kvm -cpu host -M pc -smp "$n" -m 512M \
			-nographic -nodefaults -no-user-config -serial stdio -no-reboot \
			-kernel "$kernel" -initrd "$initrd" \
			-netdev "tap,id=n0,ifname=$t,script=no,downscript=no,vhost=${s#qemu-},queues=$n" \
			-device "virtio-net-pci,netdev=n0,mac=$mac,mq=on,vectors=$((2 * n + 2))" \
			-drive "file=$tools,if=none,id=tools,format=raw,readonly=on" \
			-device virtio-blk-pci,drive=tools,serial=tools,num-queues=1 \
			-append "$(append "${k[$s]}") pci=conf1 i8042.noaux i8042.nopnp i8042.dumbkbd" \
			</dev/null >"$dir/$s.log" 2>&1 &
		;;
	esac
	pid[$s]=$!
}
t0=$(bench_now_ns)
for s in "${sides[@]}"; do boot "$s"; done
for s in "${sides[@]}"; do
	for _ in $(seq 900); do
		grep -q NETBENCH-READY "$dir/$s.log" 2>/dev/null && break
		kill -0 "${pid[$s]}" 2>/dev/null || break
		sleep 1
	done
	grep -q NETBENCH-READY "$dir/$s.log" || {
		tr -d '\r' <"$dir/$s.log" | tail -n 30 >&2
		bench_die "$s: the guest did not come up"
	}
	bench_log "$s up after $((($(bench_now_ns) - t0) / 1000000)) ms: $(tr -d '\r' <"$dir/$s.log" | grep -o 'NETBENCH-READY.*')"
done
# shellcheck disable=SC2016 # the last argument is a jq filter
bench_emit_machine net_machine --argjson rounds "$rounds" \
	--argjson secs "$secs" --argjson vcpus "$n" --arg qemu "$("$qemu" --version | head -1)" \
	--arg iperf3 "$(iperf3 --version | head -1)" --arg pin "${pin[*]}" \
	'{qemu_version:$qemu, iperf3_version:$iperf3, guest_vcpus:$vcpus, queue_pairs:$vcpus,
	  rounds:$rounds, secs:$secs, minivmm_pinning:$pin}'

# cpu_ticks SIDE: CPU clock ticks of the VMM process (all its threads) and
# of its vhost-<pid> kernel threads.
cpu_ticks() {
	local p=${pid[$1]} t sum=0
	read -r -a f <"/proc/$p/stat" || { echo 0; return; }
	sum=$((f[13] + f[14]))
	# (pgrep: one process, where a `cat` of every /proc/N/comm took
	# seconds of the emulated L1 around each test.)
	for t in $(pgrep -x "vhost-$p"); do
		read -r -a f <"/proc/$t/stat" 2>/dev/null && sum=$((sum + f[13] + f[14]))
	done
	echo "$sum"
}
# notes SIDE: minivmm's NIC so far, summed over its pairs: RX kicks, TX
# kicks, RX interrupts, TX interrupts, RX packets, TX packets; then its
# I/O threads' policy switches and ms run SCHED_OTHER (adaptive; 0 from
# a build without "iothreads" in its stats); zeros without an API
# socket (QEMU).
notes() {
	local z="0 0 0 0 0 0 0 0"
	[[ $1 == minivmm-* ]] || { echo "$z"; return; }
	"$vmm" --api "$dir/$1.api" stats 2>/dev/null | jq -r '.stats as $st | [$st.nets[0].pairs[]] |
		["rx_kicks", "tx_kicks", "rx_interrupts", "tx_interrupts", "rx_packets",
		 "tx_packets"] as $f | [$f[] as $k | map(.[$k]) | add] +
		[($st.iothreads // []) | (map(.sched_switches) | add // 0),
		 ((map(.sched_normal_ns) | add // 0) / 1e6 | floor)] |
		map(tostring) | join(" ")' \
		2>/dev/null | grep . || echo "$z"
}
# gnotes SIDE: the NIC's RX kicks, TX kicks, RX interrupts, TX interrupts,
# RX packets and TX packets as the guest driver counts them (its netcount
# server on port 5300, tests/guest/net-bench), for every side alike;
# nothing where the guest did not answer.  One such count moves a few
# packets itself (a TCP connection): its cost is logged once per side.
gnotes() {
	# shellcheck disable=SC2016 # $1 is the inner bash's
	timeout 20 bash -c 'exec 3<>"/dev/tcp/$1/5300" && cat <&3' _ "198.18.${k[$1]}.2" 2>/dev/null |
		sed -n 's/^rx_kicks=\([0-9]*\) tx_kicks=\([0-9]*\) rx_interrupts=\([0-9]*\) tx_interrupts=\([0-9]*\) rx_packets=\([0-9]*\) tx_packets=\([0-9]*\)$/\1 \2 \3 \4 \5 \6/p'
}
# delta OLD NEW: two readings of the same counters (space-separated, as
# notes and gnotes print them) -> a JSON array of NEW - OLD; null where
# either reading is missing or they differ in length.
delta() {
	jq -cn --arg a "$1" --arg b "$2" '
		[$a, $b | [splits(" +") | select(. != "") | tonumber]] as [$x, $y] |
		if ($x | length) == 0 or ($x | length) != ($y | length) then null
		else [range($x | length) as $i | $y[$i] - $x[$i]] end'
}
hz=$(getconf CLK_TCK)
# many SIDE ARGS...: VCPUS iperf3 clients at once, client i to the guest's
# server i (port 5202 + i, pinned to vCPU i), itself on L1 CPU i mod the
# L1's; prints one iperf3-like JSON: the bytes and rates summed, the
# longest time; the first failure's output instead if one failed.
many() {
	local s=$1 i f
	shift
	for i in $(seq 0 $((n - 1))); do
		timeout $((secs + 60)) iperf3 -c "198.18.${k[$s]}.2" -p $((5202 + i)) \
			-A $((i % l1_cpus)) -t "$secs" -J "$@" >"$dir/many.$i" 2>&1 &
	done
	wait
	for i in $(seq 0 $((n - 1))); do
		f=$dir/many.$i
		jq -e '.end.sum_received' "$f" >/dev/null 2>&1 || { cat "$f"; return; }
	done
	jq -s '{end:{sum_received:{seconds:(map(.end.sum_received.seconds) | max),
		bytes:(map(.end.sum_received.bytes) | add),
		bits_per_second:(map(.end.sum_received.bits_per_second) | add)}}}' \
		"$dir"/many.*
}
# What one guest count costs, per side: two back to back.
for s in "${sides[@]}"; do
	a=$(gnotes "$s")
	b=$(gnotes "$s")
	cost=$(delta "$a" "$b")
	if [[ $cost == null ]]; then
		bench_log "$s: no count from the guest's netcount (port 5300)"
		continue
	fi
	cost=$(jq -c --arg s "$s" '{bench:"net_count_cost", side:$s,
		notifications:(.[0] + .[1] + .[2] + .[3]), packets:(.[4] + .[5])}' <<<"$cost")
	bench_emit "$cost"
	bench_log "$s: one guest count costs $(jq -r '"\(.notifications) notifications, \(.packets) packets"' <<<"$cost")"
done
rc=0
# one SIDE ROUND TEST ARGS...: one iperf3 run, one record.
one() {
	local s=$1 r=$2 test=$3 out c0 c1 n0 n1 g0 g1 d gd rec
	shift 3
	g0=$(gnotes "$s")
	c0=$(cpu_ticks "$s")
	n0=$(notes "$s")
	if [[ $test == tcp_?xM ]]; then
		out=$(many "$s" "$@")
	else
		out=$(timeout $((secs + 60)) iperf3 -c "198.18.${k[$s]}.2" -t "$secs" -J "$@" 2>&1)
	fi
	c1=$(cpu_ticks "$s")
	n1=$(notes "$s")
	g1=$(gnotes "$s")
	# The counters' deltas over the run: minivmm's eight (zeros without an
	# API socket), the guest's six (null unless both counts came).
	d=$(delta "$n0" "$n1")
	gd=$(delta "$g0" "$g1")
	rec=$(jq -c --arg s "$s" --argjson r "$r" --arg t "$test" \
		--argjson cpu "$(((c1 - c0) * 1000 / hz))" --argjson d "$d" --argjson g "$gd" '
		select(.end.sum_received or .end.sum) |
		(.end.sum_received // .end.sum) as $e |
		($d[0] + $d[1] + $d[2] + $d[3]) as $nk | ($d[4] + $d[5]) as $np |
		{bench:"net", side:$s, round:$r, test:$t, seconds:$e.seconds,
		 bytes:$e.bytes, gbps:($e.bits_per_second / 1e9), vmm_cpu_ms:$cpu,
		 cpu_s_per_gb:(if $e.bytes > 0 then ($cpu / 1000) / ($e.bytes / 1e9) else null end)} +
		(if $t == "udp_tx" then
			{packets:(.end.sum.packets - .end.sum.lost_packets),
			 pps:((.end.sum.packets - .end.sum.lost_packets) / .end.sum.seconds),
			 lost:.end.sum.lost_packets}
		 else {} end) +
		(if $np > 0 then {notifications_per_packet:($nk / $np), packets_seen:$np,
			rx_kicks:$d[0], tx_kicks:$d[1], rx_interrupts:$d[2],
			tx_interrupts:$d[3], rx_packets:$d[4], tx_packets:$d[5],
			sched_switches:$d[6], sched_normal_ms:$d[7]} else {} end) +
		(if $g != null and $g[4] + $g[5] > 0 then {guest:{
			notifications_per_packet:(($g[0] + $g[1] + $g[2] + $g[3]) / ($g[4] + $g[5])),
			rx_kicks:$g[0], tx_kicks:$g[1], rx_interrupts:$g[2], tx_interrupts:$g[3],
			rx_packets:$g[4], tx_packets:$g[5]}} else {} end)' \
		<<<"$out" 2>/dev/null)
	if [[ -z $rec ]]; then
		bench_log "$s round $r $test: $(head -c 400 <<<"$out")"
		bench_emit "$(jq -cn --arg s "$s" --argjson r "$r" --arg t "$test" --arg o "$(head -c 2000 <<<"$out")" \
			'{bench:"net_error", side:$s, round:$r, test:$t, output:$o}')"
		rc=1
		return
	fi
	bench_emit "$rec"
	bench_log "$s round $r $test: $(jq -r '"\(.gbps * 1000 | floor) Mbit/s\(if .pps then ", \(.pps | floor) packets/s" else "" end), CPU \(.vmm_cpu_ms) ms\(if .notifications_per_packet then ", \(.notifications_per_packet * 1000 | floor / 1000) notifications/packet" else "" end)\(if .guest then ", guest-counted \(.guest.notifications_per_packet * 1000 | floor / 1000)" else "" end)\(if (.sched_switches // 0) > 0 then ", \(.sched_switches) policy switches, \(.sched_normal_ms) ms SCHED_OTHER" else "" end)"' <<<"$rec")"
}
# rr SIDE ROUND: 200 echoes back to back, p50/p99 of their times.
rr() {
	local s=$1 r=$2 times
	times=$(busybox ping -A -c 200 -W 5 "198.18.${k[$s]}.2" 2>&1 | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | sort -n)
	if [[ $(wc -l <<<"$times") -lt 100 ]]; then
		bench_emit "$(jq -cn --arg s "$s" --argjson r "$r" '{bench:"net_error", side:$s, round:$r, test:"rr", output:"fewer than 100 echo replies"}')"
		rc=1
		return
	fi
	bench_emit "$(jq -cn --arg s "$s" --argjson r "$r" --arg t "$times" '
		($t | split("\n") | map(select(length > 0) | tonumber)) as $v |
		{bench:"net", side:$s, round:$r, test:"rr", replies:($v | length),
		 rtt_p50_us:($v[(($v | length) * 0.5 | floor)] * 1000),
		 rtt_p99_us:($v[(($v | length) * 0.99 | floor)] * 1000)}')"
}
for r in $(seq "$rounds"); do
	for s in "${sides[@]}"; do
		for t in $tests; do
			case $t in
			tcp_rx) one "$s" "$r" tcp_rx ;;
			tcp_tx) one "$s" "$r" tcp_tx -R ;;
			tcp_rxN) one "$s" "$r" tcp_rxN -P "$n" ;;
			tcp_rxM) one "$s" "$r" tcp_rxM ;;
			tcp_txM) one "$s" "$r" tcp_txM -R ;;
			udp_tx) one "$s" "$r" udp_tx -R -u -l 64 -b 0 ;;
			rr) rr "$s" "$r" ;;
			esac
		done
	done
done
for s in "${sides[@]}"; do
	kill -0 "${pid[$s]}" 2>/dev/null || { bench_log "$s: the VMM exited early"; tr -d '\r' <"$dir/$s.log" | tail -n 20 >&2; rc=1; }
done
exit $rc
