#!/bin/bash
# oci_net_rig.sh ROUNDS SECS NET_IMAGE_TAR [APPEND]: inside the rig's L1
# (bench/oci_net_bench.sh runs it through tests/e2e/oci-rig.sh): podman's
# default network (Debian's CNI bridge cni-podman0, 10.88.0.0/16, as
# tests/e2e/oci_network.sh sets it up) with minivmm-oci and with runc,
# ROUNDS rounds alternating the two runtimes (issue 30's benchmark):
#  - `podman run -d -p HPORT:80 bb sh -c '... exec httpd -f -p 80'`: wall
#    ms from the command's start until the L1 first gets the page (HTTP
#    200, the expected body) through the published port
#    (http://10.88.0.1:HPORT/, podman's portmap DNAT), polled with curl
#    every ~50 ms (connect timeout 0.3 s); then `podman rm -f -t 0`, timed;
#  - TCP throughput container <-> L1 host: one `podman run --rm` of
#    NET_IMAGE_TAR (busybox + Debian's iperf3 and its libraries) running
#    iperf3's client twice against one-off servers on the L1's bridge
#    address 10.88.0.1: -t SECS (container -> host) and -R (host ->
#    container), Mbit/s from the client's JSON.  While they run, a sampler
#    (shell builtins only, every 0.2 s) reads the L1's /proc/stat, the
#    servers' CPU and, for minivmm-oci, the VMM process's user, system and
#    guest time and its VM's KVM exits (debugfs): each test's window is
#    where the bridge moves its bytes, and the record carries where the
#    L1's one CPU went in it.
#  - minivmm-oci's timing records per container: create's wall time and
#    CPU (the runtime itself + mkfs.ext4/debugfs, getrusage), delete.
# Prints BENCH-JSON records.  Addresses: podman's 10.88.0.0/16, inside the
# L1 only.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
# shellcheck source=tests/e2e/oci_netprep.sh
. "$here/../tests/e2e/oci_netprep.sh"
rounds=${1:-3} secs=${2:-5} netimg=${3:?NET_IMAGE_TAR} append=${4:-}
bench_need_kvm
[[ -n ${OCI_MODROOT:-} && -d $OCI_MODROOT ]] || bench_die "OCI_MODROOT not set (run through tests/e2e/oci-rig.sh)"
[[ -r $netimg ]] || bench_die "no image $netimg"
command -v iperf3 >/dev/null || bench_die "iperf3 missing (scripts/deps.sh)"
command -v curl >/dev/null || bench_die "curl missing"
timings=/tmp/oci-net-timings.json
: >"$timings"
W=$(bench_scratch ocin)
mkdir -p "$W/console"
# APPEND: more for minivmm-oci's guest kernel command line (a diagnosis,
# e.g. virtio_net.napi_tx=0), the configuration file's append key.
bench_oci_setup "$W" "timings=$timings" "console_dir=$W/console" ${append:+"append=$append"}
# CNI's bridge, portmap and firewall plugins, and the runtime's tc
# redirect, as tests/e2e/oci_network.sh.
oci_net_prepare
bench_debugfs
# shellcheck disable=SC2154 # set by bench_debugfs
[[ $have_debugfs == 1 ]] || bench_log "no KVM debugfs: no exit counts"
"${P[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null || bench_die "podman import bb"
"${P[@]}" import "$netimg" localhost/bbnet >/dev/null || bench_die "podman import $netimg"
hz=$(getconf CLK_TCK)
# A sleep without a fork (a fork costs tens of ms in the TCG L1): read
# with a timeout from a FIFO nobody writes.
mkfifo "$W/tick"
exec 7<>"$W/tick"
nap() { read -r -t "$1" -u 7 _; }
GW=10.88.0.1 HPORT=18090
# RG, RF: podman's global and `run` flags for runtime $1 (runc needs the
# ulimits in the L1: RUNC_FLAGS, bench_oci_setup).
rtflags() {
	if [[ $1 == runc ]]; then
		RG=(--runtime runc) RF=("${RUNC_FLAGS[@]}")
	else
		RG=(--runtime "$OCI_RUNTIME") RF=()
	fi
}
# find_vmm: VP = the pid of the VMM process (comm minivmm-oci, more than
# one thread), or empty.  One container at a time runs here.
find_vmm() {
	local p c
	local -a t
	VP=
	for p in /proc/[0-9]*; do
		{ read -r c <"$p/comm"; } 2>/dev/null || continue
		[[ $c == minivmm-oci ]] || continue
		t=("$p"/task/*)
		((${#t[@]} > 1)) && { VP=${p#/proc/}; return 0; }
	done
	return 1
}
# kvm_stats PID: KX, KI, KH = KVM's exits, interrupt injections and halt
# exits of the VM of process PID so far (debugfs, summed over its vCPUs;
# no fork), 0 0 0 if unknown.
kvm_stats() {
	local d
	KX=0 KI=0 KH=0
	for d in /sys/kernel/debug/kvm/"$1"-*; do
		{ read -r KX <"$d/exits" && read -r KI <"$d/irq_injections" &&
			read -r KH <"$d/halt_exits"; } 2>/dev/null
		return 0
	done
}
# pstat PID: PU, PS, PG = utime (guest time included), stime and
# guest_time of PID in ticks; 0 0 0 (and status 1) if it is gone.
pstat() {
	local -a f
	PU=0 PS=0 PG=0
	{ read -r -a f <"/proc/$1/stat"; } 2>/dev/null || return 1
	PU=${f[13]} PS=${f[14]} PG=${f[42]}
}
# Every 0.2 s until killed: "t_us user nice system idle iowait irq softirq
# steal guest guest_nice s1_ticks s2_ticks br_rx br_tx vmm_utime vmm_stime
# vmm_guest kvm_exits kvm_irq_injections kvm_halt_exits": the L1's
# /proc/stat, the CPU of servers S1 and S2, the bridge's byte counters,
# the VMM's times and its VM's KVM counters (0 for runc or before it
# runs).
sampler() {
	local s1=$1 s2=$2 want=$3 cpu a b rx tx br=/sys/class/net/cni-podman0/statistics
	VP=
	while :; do
		[[ $want == 1 && (-z $VP || ! -e /proc/$VP) ]] && find_vmm
		read -r cpu </proc/stat
		{ read -r rx <"$br/rx_bytes" && read -r tx <"$br/tx_bytes"; } 2>/dev/null || rx=0 tx=0
		pstat "$s1"
		a=$((PU + PS))
		pstat "$s2"
		b=$((PU + PS))
		PU=0 PS=0 PG=0 KX=0 KI=0 KH=0
		[[ -n $VP ]] && pstat "$VP" && kvm_stats "$VP"
		echo "${EPOCHREALTIME/./} ${cpu#cpu } $a $b $rx $tx $PU $PS $PG $KX $KI $KH"
		nap 0.2
	done
}
# window SAMPLES DIR: one JSON object, where the L1's CPU went during the
# test of DIR (up: container -> host, the bridge's rx bytes; down: its tx
# bytes): from the sample before the first 0.2 s in which the bridge moved
# over 100 KB that way to the last such sample; percentages of one CPU.
# Columns: 1 t_us, 2-11 /proc/stat's cpu fields, 12-13 the servers' ticks,
# 14-15 the bridge's rx and tx bytes, 16-18 the VMM's utime stime guest,
# 19-21 its VM's exits, interrupt injections, halt exits.
window() {
	awk -v dir="$2" -v hz="$hz" '
		{ n++; for (i = 1; i <= 21; i++) v[n, i] = $i }
		END {
			bc = dir == "up" ? 14 : 15; sc = dir == "up" ? 12 : 13
			first = 0; last = 0
			for (k = 2; k <= n; k++)
				if (v[k, bc] - v[k - 1, bc] > 100000) { if (!first) first = k; last = k }
			if (!first || last - first < 2) { print "{}"; exit }
			a = first - 1; b = last
			dt = (v[b, 1] - v[a, 1]) / 1e6
			T = dt * hz / 100
			for (i = 2; i <= 21; i++) d[i] = v[b, i] - v[a, i]
			# A one-off server may be gone (0) by the end of the window.
			for (k = a; k <= b; k++) if (v[k, sc] - v[a, sc] > d[sc]) d[sc] = v[k, sc] - v[a, sc]
			# /proc/stat: user nice system idle iowait irq softirq steal guest
			# (user includes guest); the VMM: utime includes guest_time.
			printf "{\"window_s\":%.2f,\"window_mbps\":%.1f,\"l1_busy_pct\":%.1f,\"l1_guest_pct\":%.1f,\"l1_user_pct\":%.1f,\"l1_sys_pct\":%.1f,\"l1_softirq_pct\":%.1f,\"server_cpu_pct\":%.1f", \
				dt, d[bc] * 8 / dt / 1e6, (d[2] + d[3] + d[4] + d[7] + d[8] + d[9]) / T, d[10] / T,
				(d[2] + d[3] - d[10]) / T, d[4] / T, (d[7] + d[8]) / T, d[sc] / T
			# utime and stime are scaled to the task runtime, guest_time is
			# not: their difference may come out a little below 0.
			u = d[16] - d[18]
			if (u < 0) u = 0
			if (v[b, 16] > 0 && v[a, 16] > 0)
				printf ",\"vmm_user_pct\":%.1f,\"vmm_sys_pct\":%.1f,\"vmm_guest_pct\":%.1f", \
					u / T, d[17] / T, d[18] / T
			if (v[b, 19] > 0 && v[a, 19] > 0 && d[bc] > 0)
				printf ",\"kvm_exits_per_s\":%.0f,\"kvm_exits_per_mb\":%.1f,\"kvm_irqs_per_mb\":%.1f,\"kvm_halts_per_s\":%.0f", \
					d[19] / dt, d[19] / (d[bc] / 1e6), d[20] / (d[bc] / 1e6), d[21] / dt
			print "}"
		}' "$1"
}
# shim_rec ID: minivmm-oci's create record of container ID (jq object) or {}.
shim_rec() {
	jq -cs --arg id "$1" '(map(select(.id == $id and .event == "create"))[0]) as $c |
		(map(select(.id == $id and .event == "delete"))[0]) as $d |
		if $c then {create_ms:$c.create_ms, create_cpu_ms:$c.cpu_ms, image_ms:$c.image_ms,
			delete_ms:($d.delete_ms // null)} else {} end' "$timings" 2>/dev/null || echo '{}'
}

# http RUNTIME ROUND: podman run -d -p until the first page, then rm -f.
http() {
	local rt=$1 r=$2 name=web-$1-$2 page=hello-$1-$2 t0 t1 t2 t3 ok=0 id vmm='{}' body
	rtflags "$rt"
	rm -f "$W/cid"
	t0=$(bench_now_ns)
	"${P[@]}" "${RG[@]}" run "${RF[@]}" -d --name "$name" --cidfile "$W/cid" -p "$HPORT:80" localhost/bb \
		sh -c "mkdir -p /www && echo $page >/www/index.html && exec httpd -f -p 80 -h /www" \
		>/dev/null 2>"$W/err"
	local rc=$?
	t1=$(bench_now_ns)
	if [[ $rc -ne 0 ]]; then
		bench_log "round $r $rt: podman run -d failed ($rc): $(tail -3 "$W/err")"
		"${P[@]}" rm -f -t 0 "$name" >/dev/null 2>&1
		return 1
	fi
	while (($(bench_now_ns) - t0 < 300000000000)); do
		body=$(curl -sf --connect-timeout 0.3 -m 2 "http://$GW:$HPORT/" 2>/dev/null) &&
			[[ $body == "$page" ]] && { ok=1; break; }
		nap 0.05
	done
	t2=$(bench_now_ns)
	id=$(cat "$W/cid" 2>/dev/null)
	# The VMM's CPU so far (boot included), outside and inside the guest.
	if [[ $rt == minivmm-oci ]] && find_vmm && pstat "$VP"; then
		vmm=$(jq -cn --argjson u "$PU" --argjson s "$PS" --argjson g "$PG" --argjson hz "$hz" \
			'{vmm_user_ms:(($u - $g) * 1000 / $hz), vmm_sys_ms:($s * 1000 / $hz),
			  vmm_guest_ms:($g * 1000 / $hz)}')
	fi
	"${P[@]}" rm -f -t 0 "$name" >/dev/null 2>"$W/err" || bench_log "round $r $rt: rm -f: $(tail -2 "$W/err")"
	t3=$(bench_now_ns)
	if [[ $ok != 1 ]]; then
		bench_log "round $r $rt: no page through :$HPORT after 300 s; last: $(curl -s -m 2 "http://$GW:$HPORT/" 2>&1 | head -c 200)"
		tail -c 1500 "$W/console/$id.console.log" 2>/dev/null | tr -d '\r' | tail -n 15 >&2
		return 1
	fi
	local rec
	rec=$(jq -cn --arg rt "$rt" --argjson r "$r" --argjson a $(((t1 - t0) / 1000000)) \
		--argjson b $(((t2 - t0) / 1000000)) --argjson c $(((t3 - t2) / 1000000)) \
		--argjson shim "$([[ $rt == minivmm-oci ]] && shim_rec "$id" || echo '{}')" --argjson vmm "$vmm" \
		'{bench:"oci_net_http", runtime:$rt, round:$r, run_d_ms:$a, first_http_ms:$b, rm_ms:$c} + $shim + $vmm')
	bench_log "round $r $rt http: $rec"
	bench_emit "$rec"
}

# tcp RUNTIME ROUND: one container, iperf3 -c to the L1 then -R.
tcp() {
	local rt=$1 r=$2 name=net-$1-$2 s1 s2 smp rc id t0 t1 dir js rec win cpus
	rtflags "$rt"
	rm -f "$W/cid"
	iperf3 -s -1 -B "$GW" -p 15201 -J >"$W/s1.json" 2>&1 &
	s1=$!
	iperf3 -s -1 -B "$GW" -p 15202 -J >"$W/s2.json" 2>&1 &
	s2=$!
	sampler "$s1" "$s2" "$([[ $rt == minivmm-oci ]] && echo 1 || echo 0)" >"$W/samples" &
	smp=$!
	t0=$(bench_now_ns)
	timeout $((4 * secs + 400)) "${P[@]}" "${RG[@]}" run "${RF[@]}" --rm --name "$name" --cidfile "$W/cid" \
		localhost/bbnet sh -c "echo GUEST-CPUS \$(nproc)
			echo IPERF-BEGIN up; iperf3 -c $GW -p 15201 -t $secs -i 0 -J; echo IPERF-END up
			echo IPERF-BEGIN down; iperf3 -c $GW -p 15202 -t $secs -i 0 -J -R; echo IPERF-END down" \
		>"$W/iout" 2>"$W/err"
	rc=$?
	t1=$(bench_now_ns)
	kill "$smp" 2>/dev/null
	wait "$smp" 2>/dev/null
	kill "$s1" "$s2" 2>/dev/null
	wait "$s1" "$s2" 2>/dev/null
	id=$(cat "$W/cid" 2>/dev/null)
	[[ $rc -eq 0 ]] || {
		bench_log "round $r $rt tcp: podman run exited $rc: $(tail -3 "$W/err") $(head -c 300 "$W/iout")"
		"${P[@]}" rm -f -t 0 "$name" >/dev/null 2>&1
	}
	cpus=$(sed -n 's/^GUEST-CPUS //p' "$W/iout" | head -1)
	for dir in up down; do
		js=$(sed -n "/^IPERF-BEGIN $dir\$/,/^IPERF-END $dir\$/p" "$W/iout" | sed '1d;$d')
		win=$(window "$W/samples" "$dir")
		[[ -n $win ]] || win='{}'
		rec=$(jq -c --arg rt "$rt" --argjson r "$r" --arg d "$dir" --argjson w "$win" \
			--arg cpus "$cpus" --argjson wall $(((t1 - t0) / 1000000)) '
			select(.end.sum_received) |
			{bench:"oci_net_tcp", runtime:$rt, round:$r,
			 direction:(if $d == "up" then "container_to_host" else "host_to_container" end),
			 seconds:.end.sum_received.seconds, bytes:.end.sum_received.bytes,
			 mbps:(.end.sum_received.bits_per_second / 1e6),
			 retransmits:(.end.sum_sent.retransmits // null),
			 client_cpu_pct:.end.cpu_utilization_percent.host_total,
			 server_cpu_pct_iperf:.end.cpu_utilization_percent.remote_total,
			 container_cpus:($cpus | tonumber? // null), container_wall_ms:$wall} + $w' \
			<<<"$js" 2>/dev/null)
		if [[ -z $rec ]]; then
			bench_log "round $r $rt tcp $dir: no result: $(head -c 400 <<<"$js") $(tail -3 "$W/err")"
			tail -c 1500 "$W/console/$id.console.log" 2>/dev/null | tr -d '\r' | tail -n 10 >&2
			continue
		fi
		bench_log "round $r $rt tcp $dir: $rec"
		bench_emit "$rec"
	done
	if [[ $rt == minivmm-oci && -n $id ]]; then
		rec=$(shim_rec "$id")
		[[ $rec != '{}' ]] && bench_emit "$(jq -c --argjson r "$r" '{bench:"oci_net_shim", container:"iperf3", round:$r} + .' <<<"$rec")"
	fi
}

bench_emit_machine oci_net_machine --arg iperf3 "$(iperf3 --version | head -1)" \
	--arg podman "$(podman --version)" --argjson rounds "$rounds" --argjson secs "$secs" \
	--arg append "$append" \
	'{iperf3_version:$iperf3, podman_version:$podman, rounds:$rounds, secs:$secs,
	  guest_append:$append}'
# A first container on the default network makes the bridge and its
# firewall chains: out of the rounds (runc, the cheaper one).
rtflags runc
"${P[@]}" "${RG[@]}" run "${RF[@]}" --rm localhost/bb true >/dev/null 2>"$W/err" ||
	bench_log "warm-up container failed: $(tail -3 "$W/err")"
ip -4 -o addr show dev cni-podman0 2>/dev/null | grep -q " $GW/" ||
	bench_die "no $GW on cni-podman0 after the warm-up: $(ip -o addr 2>&1 | head -c 600)"
bench_log "set-up done after $SECONDS s"
for r in $(seq "$rounds"); do
	for rt in minivmm-oci runc; do
		http "$rt" "$r"
		tcp "$rt" "$r"
	done
	bench_log "round $r done after $SECONDS s"
done
# Every minivmm-oci container's create/delete (the httpd ones too).
jq -cs 'map(select(.event == "create")) | .[] | {bench:"oci_net_create", create_ms, create_cpu_ms:.cpu_ms, image_ms, rootfs_bytes}' \
	"$timings" 2>/dev/null | while read -r rec; do bench_emit "$rec"; done
exit 0
