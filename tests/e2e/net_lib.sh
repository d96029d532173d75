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
# 1 MiB each way after each ($dir/up4101..4103).  Sets NET_IRQ_SHARE (each
# queue's own-CPU share, printable).  WHAT prefixes the failure messages.
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
	for t in mtu1280 mtu1500 link; do
		mtu=${t#mtu}
		[[ $t == link ]] && mtu=1500
		grep -q "NET-X-$t down=$small up=$smallup mtu=$mtu[[:space:]]*\$" "$log" ||
			e2e_fail "${w}$t: the 1 MiB download md5 differs (want $small) or MTU not $mtu"
		got=$(md5sum <"$dir/up$p" | cut -d' ' -f1)
		[[ $got == "$smallup" ]] || e2e_fail "${w}$t: upload md5 $got on L1, $smallup in the guest"
		p=$((p + 1))
	done
}
