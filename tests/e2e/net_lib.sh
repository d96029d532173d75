# shellcheck shell=bash
# Host-side checks shared by net_mq.sh and net_vhost.sh (sourced after
# lib.sh): both run tests/guest/net-mq against receivers on L1.

# net_wait_gone PID...: each receiver ends at its flow's FIN; up to 10 s
# each to write out.
net_wait_gone() {
	local p
	for p; do
		for _ in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
	done
}

# net_check_flows LOG [WHAT]: the guest's log against L1's side, with the
# caller's $dir, $n, $dflows, $flows, $down and $small: every download's
# md5, every upload's md5 as L1 received it ($dir/up5001...), the RX
# interrupt lines of all $n queues (the guest asserts each mostly on its
# own CPU), and the MTU 1280 / 9000 refused / 1500 / link down-up phases,
# 1 MiB each way after each ($dir/up4101..4103), and with NET_HOSTLINK=1
# the host's link down/up phase (net_hostlink) the same ($dir/up4104).
# Sets NET_IRQ_SHARE (each queue's own-CPU share, printable).  WHAT
# prefixes the failure messages.
net_check_flows() {
	local log=$1 w=${2:+$2: } i k v want got irq t mtu smallup p=4101
	local -A md5=()
	# The log read once, not once per flow (192 flows at 32 vCPUs, each
	# scan a second of the rig's L1): md5[DOWNi], md5[UPi], the first
	# line of each flow.  (A here-string: the L1 has no /dev/fd for <(...).)
	while read -r k v; do
		[[ -z $k || -v "md5[$k]" ]] || md5[$k]=$v
	done <<<"$(sed -nE 's/.*NET-((DOWN|UP)[0-9]+) md5=([0-9a-f]*).*/\1 \3/p' "$log")"
	for ((i = 0; i < dflows; i++)); do
		[[ ${md5[DOWN$i]:-} == "$down" ]] ||
			e2e_fail "${w}download $i: md5 differs (want $down)"
	done
	for ((i = 0; i < flows; i++)); do
		want=${md5[UP$i]:-}
		got=$(md5sum <"$dir/up$((5001 + i))" | cut -d' ' -f1)
		[[ -n "$want" && "$want" == "$got" ]] ||
			e2e_fail "${w}upload $i: md5 $got on L1, $want in the guest"
	done
	irq=$(grep -o 'NET-IRQ input\.[0-9]* own=[0-9]* total=[0-9]*' "$log" || true)
	[[ $(grep -c . <<<"$irq") -eq $n ]] || e2e_fail "${w}RX interrupts of $n queues not reported"
	NET_IRQ_SHARE=$(awk '{ split($3, o, "="); split($4, t, "="); q = $2; sub(/input\./, "", q)
		printf "%s%s %d/%d (%.1f%%)", s, q, o[2], t[2], t[2] ? 100 * o[2] / t[2] : 0; s = ", " }' <<<"$irq")
	grep -q "NET-MTU 9000 refused" "$log" ||
		e2e_fail "${w}the guest set MTU 9000 above the device's MTU (1500, its maximum)"
	grep -q "NET phases done" "$log" || e2e_fail "${w}the MTU and link phases did not finish"
	smallup=$(sed -n 's/.*NET-SMALL md5=\([0-9a-f]*\).*/\1/p' "$log" | head -1)
	[[ $smallup ]] || e2e_fail "${w}no NET-SMALL line"
	for t in mtu1280 mtu1500 link ${NET_HOSTLINK:+hostlink}; do
		mtu=${t#mtu}
		[[ $t == *link ]] && mtu=1500
		grep -q "NET-X-$t down=$small up=$smallup mtu=$mtu[[:space:]]*\$" "$log" ||
			e2e_fail "${w}$t: the 1 MiB download md5 differs (want $small) or MTU not $mtu"
		got=$(md5sum <"$dir/up$p" | cut -d' ' -f1)
		[[ $got == "$smallup" ]] || e2e_fail "${w}$t: upload md5 $got on L1, $smallup in the guest"
		p=$((p + 1))
	done
}

# net_tx_dropped IF: IF's TX drops in this network namespace (/proc/net/dev:
# /sys/class/net is the namespace's that mounted /sys).
net_tx_dropped() {
	awk -v i="$1:" '$1 == i { print $13 }' /proc/net/dev
}

# net_hostlink VMM API LOG OUT TAP: the host's side of the guest's hostlink
# phase (guest.hostlink=1), run in the background while the VM runs: once
# the guest asks (NET-HOSTLINK ready in LOG), L1's ping of the guest must
# answer, the operator takes NIC 0's link down on minivmm's API socket
# API, L1's ping of the guest must then fail with TAP's tx_dropped counting
# (its queues are detached: the kernel drops the frames), and once
# the guest saw its carrier go (NET-HOSTLINK carrier=0) the link comes up
# again.  Writes what it did to OUT, "hostlink ok" last on success.
net_hostlink() {
	local vmm=$1 api=$2 log=$3 out=$4 tap=$5 t d0 d1
	for ((t = 0; t < 3000; t++)); do # as long as the VM may run (800 s)
		grep -q 'NET-HOSTLINK ready' "$log" 2>/dev/null && break
		sleep 0.3
	done
	{
		busybox ping -c 1 -W 5 198.18.0.2 >/dev/null 2>&1 || {
			echo "L1's ping not answered with the link up"
			return 1
		}
		"$vmm" --api "$api" set-link net0 down || return 1
		"$vmm" --api "$api" stats | grep -o '"link_up":false' || return 1
		d0=$(net_tx_dropped "$tap")
		! busybox ping -c 1 -W 2 198.18.0.2 >/dev/null 2>&1 || {
			echo "L1's ping answered with the link held down"
			return 1
		}
		d1=$(net_tx_dropped "$tap")
		[[ -n $d0 && -n $d1 ]] && ((d1 > d0)) || {
			echo "the tap dropped nothing while the link was down (tx_dropped $d0 -> $d1): its queues not detached"
			return 1
		}
		for ((t = 0; t < 400; t++)); do
			grep -q 'NET-HOSTLINK carrier=0' "$log" && break
			sleep 0.3
		done
		"$vmm" --api "$api" set-link net0 up || return 1
		"$vmm" --api "$api" stats | grep -o '"link_up":true' || return 1
		echo "hostlink ok (the tap's TX drops while down: $d0 -> $d1)"
	} >"$out" 2>&1
}
