#!/bin/bash
# abuse.sh MINIVMM KERNEL INITRD TOOLS
# Guest resource abuse on real KVM: a hostile root process in the guest
# (tests/guest/hostile/hostile.c, run by the "abuse" payload) takes a second
# virtio-blk disk ("victim") away from Linux and drives it itself, pinned to
# vCPU 1: kick storms, MSI-X rewrite loops (masked and unmasked), a reset
# loop, chains over seg_max and a full-page indirect table, malformed
# descriptors and transport misuse.  A heartbeat on vCPU 0 prints to the
# console every 0.2 s.  minivmm runs with its default seccomp filters.
# Then the same program takes the VM's NIC (on a tap of this script's
# network namespace: 198.18.0.1/24, the guest's MAC a permanent neighbour
# of 198.18.0.2) in its net mode (tests/guest/hostile/net.c): control-
# queue garbage, malformed TX chains, RX rings with zero-length, read-only
# and too small buffers, resets under load, then an ARP round trip, while
# this script floods the tap with UDP datagrams (issue 28).
#
# Checked here:
#  - minivmm exits 0 (the guest's reboot -f), no SIGSYS, the payload and
#    every request the hostile program made got the answer README.md
#    promises (OK / IOERR / UNSUPP, or DEVICE_NEEDS_RESET: the program
#    checks each, "ABUSE RESULT ok"), every phase reported done;
#  - responsiveness: heartbeats kept arriving DURING every phase (see
#    HB_MAX_GAP, HB_MIN_RATE below), as seen by this script on minivmm's
#    output, so the other vCPU's console path was never wedged;
#  - memory: minivmm's peak RSS (VmHWM, guest RAM included) stays under
#    guest RAM + RSS_SLACK_MIB, its own memory (everything resident but
#    guest RAM) under OWN_MAX_MIB and flat while the attacks run, its
#    thread count does not change;
#  - statistics (--stats-json): the victim's counters equal what Linux's
#    driver did before the unbind plus what the hostile program saw
#    completed (requests by type, bytes, IOERR, UNSUPP, NEEDS_RESET, resets),
#    every NEEDS_RESET in the log, either as a "device needs reset" line
#    or counted in a rate-limited "N more 'device needs reset' events"
#    summary, doorbells (guest notifications) never more than could have
#    happened and never fewer than the I/O thread's wake-ups (kicks),
#    interrupts never more than requests;
#  - log: bounded, whatever the guest repeats (every guest-triggerable
#    message is rate-limited per device): at most LOG_MAX lines;
#  - data: the victim image has the hostile program's one good write and
#    none of its refused ones, the data disk (Linux's driver all along)
#    still reads back what the guest wrote after the attacks;
#  - the NIC: every net case got the answer README.md "virtio-net"
#    promises (dropped and counted / VIRTIO_NET_ERR / DEVICE_NEEDS_RESET,
#    never a hang: "ABUSE net RESULT ok"), every net phase done, the ARP
#    reply from 198.18.0.1 received after the attacks, heartbeats during
#    the net phases as during the others; the NIC's counters in
#    --stats-json equal what the hostile program saw (TX chains returned =
#    packets + drops, drops within the certain ones and those plus the
#    frames the tap may take or refuse, RX frames and bytes, no RX drop)
#    plus Linux's before the unbind, and each of its NEEDS_RESET events is
#    in the log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

# The NIC's tap lives in a network namespace of our own (see net_mq.sh).
if [[ -z "${ABUSE_NETNS:-}" ]]; then
	if ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
		e2e_fail "needs unshare (util-linux) and ip (iproute2)"
	fi
	ABUSE_NETNS=1 exec unshare --net -- "$0" "$@"
fi

vmm=$1 kernel=$2 initrd=$3 tools=$4
mem_mib=512
phase_s=${ABUSE_PHASE_S:-2.5}
net_s=${ABUSE_NET_S:-1}
attacks="kick-idle kick-busy kick-slow kick-broken msix-masked msix-unmasked reset bigchain malformed"
net_attacks="net-ctrl net-tx net-rx net-reset"
vsock_attacks="vsock-bad vsock-credit vsock-flood"
phases="$attacks sanity $net_attacks net-sanity $vsock_attacks vsock-sanity"
guest_mac=52:54:00:ab:00:02
# Responsiveness bounds, see the comment at the heartbeat check.
HB_MAX_GAP=${ABUSE_HB_MAX_GAP:-2}
HB_MIN_RATE=${ABUSE_HB_MIN_RATE:-1}
# Memory bound, see the comment at the memory check.
RSS_SLACK_MIB=${ABUSE_RSS_SLACK_MIB:-64}
OWN_MAX_MIB=${ABUSE_OWN_MAX_MIB:-32}
OWN_GROWTH_MIB=${ABUSE_OWN_GROWTH_MIB:-4}
# Log bound: a rate limiter logs a burst's first line and a summary (plus
# one every 10 s while it lasts); about four of them are busy per attack
# phase.  Unlimited, the reset and malformed phases alone log thousands.
LOG_MAX=${ABUSE_LOG_MAX:-120}

# A normal run has minivmm up for ~70 s in the rig; a wedged VMM (only
# SIGKILL ends it then) should not hold the rig for the default 300 s.
export E2E_VMM_TIMEOUT=${E2E_VMM_TIMEOUT:-200}

dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/abuse.XXXXXX")
helper_pid=
# The helper may have ended already: a failed kill must not fail the test
# (set -e holds in the trap too).
cleanup() {
	[[ -z "$helper_pid" ]] || kill "$helper_pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

ip link set lo up
ip tuntap add dev abtap0 mode tap multi_queue vnet_hdr
ip addr add 198.18.0.1/24 dev abtap0
ip link set abtap0 up
ip neigh replace 198.18.0.2 lladdr "$guest_mac" dev abtap0 nud permanent

# One helper process (one python start: seconds in the L1, its modules
# read over 9p), started before the VM:
#  - the vsock device's host side (hybrid): guest connections to port P go
#    to $dir/vs_P.  Port 5000 accepts and keeps what it reads in
#    $dir/vs.got; port 5001 listens (backlog 2048) and never accepts: the
#    hostile program's REQUEST flood fills the device's 1024 connections
#    there (each connect() completes into the backlog); port 5002 has
#    nobody.  minivmm then holds 1024 sockets: more files than a default
#    soft limit of 1024;
#  - UDP datagrams at the guest's NIC while the net phases run
#    (198.18.0.2 is a permanent neighbour: no ARP needed), 10 every 20 ms
#    from one socket, at most 500 frames/s: a load the rig's one L1 CPU
#    carries beside the VM (bash's /dev/udp, a socket per datagram, took
#    that CPU from the guest: heartbeat silences of 2.8 s), from
#    $dir/flood.go (the sampler below makes it at "ABUSE net start") to
#    $dir/flood.stop ("ABUSE net exit").
ulimit -n 4096
python3 - "$dir" <<'PY' &
import os, socket, sys, threading, time
d = sys.argv[1]
hold = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
hold.bind(d + "/vs_5001")
hold.listen(2048)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(d + "/vs_5000")
srv.listen(16)
out = open(d + "/vs.got", "ab", buffering=0)
def drain(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        out.write(b)
def accept():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=drain, args=(c,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
go, stop = d + "/flood.go", d + "/flood.stop"
while not os.path.exists(go) and not os.path.exists(stop):
    time.sleep(0.25)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
while not os.path.exists(stop):
    for _ in range(10):
        try:
            s.sendto(b"hostile-abuse-flood" * 3, ("198.18.0.2", 9))
        except OSError:
            pass
    time.sleep(0.02)
while True: # the vsock listener stays until this script ends
    time.sleep(60)
PY
helper_pid=$!
log=$dir/log
truncate -s 64M "$dir/data.img"
truncate -s 16M "$dir/victim.img"
token=$RANDOM$RANDOM
printf 'VICTIM-%s' "$token" | dd of="$dir/victim.img" conv=notrunc 2>/dev/null

# minivmm's stderr (its log and the --stats-json object) goes to a file of
# its own: in one stream its lines would cut into the guest's console lines.
# "quiet": no kernel messages in the middle of the payload's lines either
# (warnings and errors, an RCU stall say, still print).
{
	# shellcheck disable=SC2016 # for the inner bash
	e2e_run_vmm "$log" -- bash -c 'exec "$@" 2>"$0"' "$dir/stderr" \
		"$vmm" --smp 2 --mem "${mem_mib}M" --kernel "$kernel" \
		--initrd "$initrd" --disk "path=$dir/data.img,serial=data" \
		--disk "path=$tools,ro=on,serial=tools" \
		--disk "path=$dir/victim.img,serial=victim" --stats-json \
		--net "tap=abtap0,mac=$guest_mac" --vsock "cid=3,socket=$dir/vs" \
		--append "quiet guest.run=abuse guest.token=$token guest.abuse_s=$phase_s guest.abuse_net_s=$net_s"
	echo "$E2E_RC" >"$dir/rc"
} &
runner=$!

# The minivmm process of this run: the one whose command line has our dir.
pid=$(e2e_find_vmm "$dir/victim.img")

# Sample minivmm every 0.5 s until it exits: VmHWM and Threads from
# /proc/PID/status, and from /proc/PID/smaps the resident memory of guest
# RAM (the one mapping exactly as large as guest RAM) and of everything
# else (minivmm's own: heap, rings, request pools, stacks, binaries).  A
# sample is "in" the attack window between the payload's "ABUSE hostile
# start" and "ABUSE hostile exit" lines (the blk attacks), "dev" between
# "ABUSE net start" and "ABUSE vsock exit" (the NIC's and the vsock
# device's attacks).  The UDP flood runs from "ABUSE net start" to "ABUSE
# net exit".  Also the count of threads not named iou-wrk-* (io_uring's
# workers: the kernel's, transient; the blk sanity phase's flush is always
# punted to one, which lives on idle into the dev window for a few s).
samples=$dir/samples
: >"$samples"
window=pre
while kill -0 "$pid" 2>/dev/null; do
	hwm='' thr=''
	# One read(2) of the whole file: bash's `read` seeks back after each
	# line of a seekable file and /proc regenerates status at every read,
	# so lines could shift (see user_drop.sh).  cat, not $(<...): bash 5.2
	# exits a `set -e` script when $(<FILE) cannot open FILE, whatever
	# follows (`|| break` included): minivmm ending between kill -0 and
	# this read failed a CI run.
	st=$(cat "/proc/$pid/status" 2>/dev/null) || break
	while read -r k v _; do
		case $k in
		VmHWM:) hwm=$v ;;
		Threads:) thr=$v ;;
		esac
	done <<<"$st"
	mem=$(awk -v g=$((mem_mib * 1024)) '
		$1 == "Size:" { sz = $2 }
		$1 == "Rss:" { if (sz == g) gr += $2; else own += $2 }
		END { print own + 0, gr + 0 }' "/proc/$pid/smaps" 2>/dev/null) || break
	# Through every window whose end line is out (two may pass in 0.5 s).
	for next in "pre ABUSE hostile start in" "in ABUSE hostile exit mid" \
		"mid ABUSE net start dev" "dev ABUSE vsock exit post"; do
		read -r w line_end <<<"${next% *}"
		if [[ $window == "$w" ]] && grep -q "$line_end" "$log" 2>/dev/null; then
			window=${next##* }
		fi
	done
	if [[ $window == dev && ! -e "$dir/flood.go" ]]; then
		: >"$dir/flood.go"
	elif [[ -e "$dir/flood.go" && ! -e "$dir/flood.stop" ]] &&
		grep -q "ABUSE net exit" "$log" 2>/dev/null; then
		: >"$dir/flood.stop"
	fi
	# The threads by name (no fork: the sampler shares L1's one CPU).
	own_thr=0 names=
	for t in /proc/"$pid"/task/*/comm; do
		read -r n 2>/dev/null <"$t" || continue
		names+=" $n"
		[[ $n == iou-wrk-* ]] || own_thr=$((own_thr + 1))
	done
	[[ -n "$thr" ]] && echo "$window $hwm $mem $thr $own_thr" >>"$samples"
	[[ -z "$thr" ]] || echo "$window$names" >>"$dir/threads"
	sleep 0.5
done
wait "$runner" || true
E2E_RC=$(cat "$dir/rc" 2>/dev/null || echo none)

echo "--- minivmm's log (stderr), by message:"
grep -v '^{"kvm"' "$dir/stderr" | sort | uniq -c | sort -rn | head -n 20 || true
echo "--- hostile program:"
grep -E "ABUSE (device|linux|phase=[a-z-]+ done|get_id|FAIL|FATAL|totals|RESULT|(net|vsock) (device|totals|RESULT))" "$log" |
	sed 's/^\[[ 0-9.]*\] //' || true

# Where it stopped, if it did: the last phase begun and the last heartbeat.
if [[ "$E2E_RC" != 0 ]] || ! grep -q "ABUSE RESULT ok" "$log" ||
	! grep -q "ABUSE net RESULT ok" "$log" || ! grep -q "ABUSE vsock RESULT ok" "$log"; then
	echo "--- last phase begun: $(grep "ABUSE phase=.* begin" "$log" | tail -n1)"
	echo "--- last heartbeat: $(grep " HEARTBEAT " "$log" | tail -n1)"
fi
[[ "$E2E_RC" != 159 ]] || e2e_fail "minivmm was killed by SIGSYS (a call off an allow-list)"
[[ "$E2E_RC" == 0 ]] || e2e_fail "minivmm exited $E2E_RC, expected 0"
grep -q "ABUSE RESULT ok" "$log" || e2e_fail "the hostile program saw wrong answers (ABUSE FAIL above)"
grep -q "ABUSE net RESULT ok" "$log" || e2e_fail "the hostile program saw wrong answers from the NIC (ABUSE FAIL above)"
grep -q "ABUSE vsock RESULT ok" "$log" || e2e_fail "the hostile program saw wrong answers from the vsock device (ABUSE FAIL above)"
for p in $phases; do
	grep -q "ABUSE phase=$p done" "$log" || e2e_fail "phase $p did not finish"
done
grep -q "ABUSE data disk OK" "$log" || e2e_fail "the data disk failed after the attacks"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$log" || e2e_fail "guest payload failed"

# Failures from here on are collected, so that one run shows every number.
fails=()
fail_later() {
	fails+=("$1")
}

# ---- responsiveness ---------------------------------------------------------
# Heartbeats (vCPU 0) as this script received them from minivmm, per attack
# phase of the hostile program (vCPU 1): the count and the longest silence,
# counting from the phase's begin line to its done line.  The rig measured
# 4-5 beats/s and silences of at most 0.32 s in every phase (0.2 s sleep +
# a fork under nested TCG); a wedged console path, a vCPU stuck behind a
# device lock or a VMM too busy with the attacker to run the other vCPU
# shows as a silence as long as the stall.  Every phase lasts at least
# $phase_s s, so a stall for a whole phase is caught by either bound.
echo "--- heartbeats per phase (beats, longest silence s, phase length s):"
hb=$(awk -v phases="$attacks $net_attacks $vsock_attacks" '
	function t(s) { sub(/^\[ */, "", s); sub(/\].*/, "", s); return s + 0 }
	BEGIN { n = split(phases, P, " ") }
	/ HEARTBEAT [0-9]+/ { H[++nh] = t($0) }
	/ ABUSE phase=[a-z-]+ (begin|done)/ {
		match($0, /phase=[a-z-]+/); p = substr($0, RSTART + 6, RLENGTH - 6)
		if ($0 ~ / begin/) B[p] = t($0); else E[p] = t($0)
	}
	END {
		for (i = 1; i <= n; i++) {
			p = P[i]; b = B[p]; e = E[p]; last = b; gap = 0; c = 0
			for (j = 1; j <= nh; j++) {
				if (H[j] < b || H[j] > e) continue
				if (H[j] - last > gap) gap = H[j] - last
				last = H[j]; c++
			}
			if (e - last > gap) gap = e - last
			printf "%s %d %.3f %.3f\n", p, c, gap, e - b
		}
	}' "$log")
echo "$hb"
while read -r p c gap len; do
	awk -v g="$gap" -v m="$HB_MAX_GAP" 'BEGIN { exit !(g <= m) }' ||
		fail_later "phase $p: no heartbeat for $gap s (bound $HB_MAX_GAP s)"
	awk -v c="$c" -v l="$len" -v r="$HB_MIN_RATE" 'BEGIN { exit !(c >= int(r * l)) }' ||
		fail_later "phase $p: $c heartbeats in $len s (bound $HB_MIN_RATE/s)"
done <<<"$hb"

# ---- memory and threads -----------------------------------------------------
# Peak RSS: the kernel's own record (VmHWM), guest RAM included, so nothing
# between two samples escapes it.  minivmm's own memory, sampled: its peak,
# and no growth while the attacks run (a leak per kick, reset, rewrite or
# bad request would show within tens of thousands of them).  The rig
# measured ~5 MiB of own memory, +44 kB during the attacks, and a peak RSS
# of ~116 MiB for the 512 MiB guest (it touches ~112 MiB): the bounds allow
# 6x the own memory, 4 MiB of growth, and all of guest RAM + 64 MiB at the
# peak.
# The growth bound covers both attack windows (blk, then NIC and vsock).
read -r hwm_max own_max guest_max own_in0 own_in_max thr_in_min thr_in_max n_in <<<"$(awk '
	{ if ($2 > h) h = $2; if ($3 > om) om = $3; if ($4 > gm) gm = $4 }
	$1 == "in" || $1 == "dev" { if ($3 > oim) oim = $3 }
	$1 == "in" { n++; if (n == 1) { o0 = $3; tmin = $5; tmax = $5 }
		if ($5 < tmin) tmin = $5; if ($5 > tmax) tmax = $5 }
	END { print h + 0, om + 0, gm + 0, o0 + 0, oim + 0, tmin + 0, tmax + 0, n + 0 }' "$samples")"
read -r dthr_min dthr_max n_dev <<<"$(awk '
	$1 == "dev" { n++; if (n == 1) { tmin = $6; tmax = $6 }
		if ($6 < tmin) tmin = $6; if ($6 > tmax) tmax = $6 }
	END { print tmin + 0, tmax + 0, n + 0 }' "$samples")"
echo "--- memory: peak RSS $hwm_max kB (guest RAM $((mem_mib * 1024)) kB, of it resident" \
	"at most $guest_max kB); own memory peak $own_max kB, during the attacks" \
	"$own_in0 -> max $own_in_max kB; threads $thr_in_min..$thr_in_max" \
	"($n_in samples during the attacks, $(wc -l <"$samples") in all);" \
	"during the NIC and vsock attacks $dthr_min..$dthr_max threads besides io_uring's" \
	"($n_dev samples)"
[[ $n_in -ge 4 && $guest_max -gt 0 ]] ||
	fail_later "no usable memory samples ($n_in during the attacks; guest RAM mapping not found?)"
[[ $hwm_max -le $(((mem_mib + RSS_SLACK_MIB) * 1024)) ]] ||
	fail_later "peak RSS $hwm_max kB above guest RAM + $RSS_SLACK_MIB MiB"
[[ $own_max -le $((OWN_MAX_MIB * 1024)) ]] ||
	fail_later "minivmm's own memory reached $own_max kB (bound $OWN_MAX_MIB MiB)"
[[ $own_in_max -le $((own_in0 + OWN_GROWTH_MIB * 1024)) ]] ||
	fail_later "minivmm's own memory grew from $own_in0 to $own_in_max kB during the attacks"
if [[ $thr_in_min -ne $thr_in_max ]]; then
	echo "--- threads by name, each change (window, names):"
	uniq "$dir/threads" | sed 's/^/  /'
	fail_later "thread count changed during the attacks ($thr_in_min..$thr_in_max)"
fi
if [[ $n_dev -lt 1 || $dthr_min -ne $thr_in_min || $dthr_max -ne $thr_in_min ]]; then
	echo "--- threads by name, each change (window, names):"
	uniq "$dir/threads" | sed 's/^/  /'
	fail_later "minivmm's threads during the NIC and vsock attacks: $dthr_min..$dthr_max ($n_dev samples), $thr_in_min before"
fi

# ---- statistics ----------------------------------------------------------
json=$(grep '^{"kvm"' "$dir/stderr" | tail -n1)
[[ -n "$json" ]] || e2e_fail "no --stats-json output"
v=$(jq -c '.disks[2]' <<<"$json")
echo "--- victim stats: $(jq -c 'del(.queues)' <<<"$v")"
# The key=value words of the first log line matching $2 into array $1.
declare -A L H
kv() {
	local -n arr=$1
	local line w words
	line=$(grep -m1 -- "$2" "$log" | sed 's/^\[[ 0-9.]*\] //')
	read -ra words <<<"$line"
	for w in "${words[@]}"; do
		# shellcheck disable=SC2034 # arr is a name reference
		[[ "$w" == *=* ]] && arr[${w%%=*}]=${w#*=}
	done
	return 0
}
kv L "ABUSE linux "
kv H "ABUSE totals "
j() { jq -r "$1" <<<"$v"; }
expect_eq() {
	[[ "$2" == "$3" ]] ||
		fail_later "victim $1: VMM counted $2, expected $3"
}
expect_eq "read requests" "$(j .total.requests.read)" $((L[reads] + H[read]))
expect_eq "write requests" "$(j .total.requests.write)" $((L[writes] + H[write]))
expect_eq "flush requests" "$(j .total.requests.flush)" $((L[flushes] + H[flush]))
expect_eq "discard requests" "$(j .total.requests.discard)" $((L[discards] + H[discard]))
expect_eq "write-zeroes requests" "$(j .total.requests.write_zeroes)" "${H[write_zeroes]}"
expect_eq "other requests" "$(j .total.requests.other)" "${H[other]}"
expect_eq "bytes read" "$(j .total.bytes_read)" $((L[read_sectors] * 512 + H[read_bytes]))
expect_eq "bytes written" "$(j .total.bytes_written)" $((L[write_sectors] * 512 + H[write_bytes]))
expect_eq "IOERR completions" "$(j .total.io_errors)" "${H[ioerr]}"
expect_eq "UNSUPP completions" "$(j .total.unsupported)" "${H[unsupp]}"
expect_eq "NEEDS_RESET" "$(j .needs_reset)" "${H[needs_reset]}"
# GET_ID: Linux asks whenever /sys/block/vdX/serial is read.
[[ $(j .total.requests.get_id) -ge ${H[get_id]} ]] ||
	fail_later "victim get_id requests below the hostile program's ${H[get_id]}"
# Resets: the hostile program's, plus Linux's on the victim: at probe (the
# data disk, never unbound, shows how many) and possibly one at the unbind.
resets=$(j .resets)
data_resets=$(jq -r '.disks[0].resets' <<<"$json")
linux_resets=$((resets - H[resets]))
echo "resets: $resets = hostile ${H[resets]} + Linux $linux_resets (data disk: $data_resets)"
[[ $linux_resets -ge 1 && $linux_resets -le $((data_resets + 1)) ]] ||
	fail_later "victim resets $resets: hostile ${H[resets]} + $linux_resets, not 1..$((data_resets + 1))"
# Doorbells: every notification that reached the device (the hostile
# program's, Linux's before the unbind: at most one per request); kicks
# are the I/O thread's wake-ups, each serving one or more doorbells.
reqs=$(j '[.total.requests[]] | add')
kicks=$(j .total.kicks)
doorbells=$(j .doorbells)
irqs=$(j .total.interrupts)
echo "victim: $doorbells doorbells served in $kicks wake-ups (hostile rang ${H[kicks]})"
[[ $kicks -ge 1 && $kicks -le $doorbells ]] ||
	fail_later "victim wake-ups $kicks vs doorbells $doorbells"
[[ $doorbells -le $((H[kicks] + reqs)) ]] ||
	fail_later "victim doorbells $doorbells (hostile rang ${H[kicks]}, $reqs requests in all)"
[[ $irqs -le $reqs ]] ||
	fail_later "victim interrupts $irqs for $reqs requests"
# Each NEEDS_RESET is logged, in full (the first of a burst) or counted in
# a summary "virtio-pci SLOT: N more 'device needs reset' events ...".
slot=$(sed -n 's/.*ABUSE linux .* pci=[0-9a-f]*:\([0-9a-f]*:[0-9a-f]*\.[0-9]\).*/\1/p' "$log" | head -n1)
nfull=$(grep -c "virtio-pci $slot: device needs reset" "$dir/stderr" || true)
nsum=$(grep -o "virtio-pci $slot: [0-9]* more 'device needs reset' events" "$dir/stderr" |
	awk '{ s += $3 } END { print s + 0 }')
echo "'device needs reset': $nfull lines in full + $nsum in summaries, for ${H[needs_reset]}"
expect_eq "'device needs reset' events in the log" "$((nfull + nsum))" "${H[needs_reset]}"

# ---- the NIC --------------------------------------------------------------
# Its pairs' counters (all queue pairs summed: the hostile program uses pair
# 0, Linux's driver may have used any) against the hostile program's totals
# plus what Linux's driver counted before the unbind (its interface was
# never up: 0 in the rig).  Every TX chain the device returned is a packet
# or a drop; the drops are the chains the device or the tap refuses (short,
# runt, bad GSO: certain) and perhaps the frame over 64 KiB (the tap takes
# or refuses it, by kernel); every frame the hostile program took off its
# RX ring is counted with its bytes, and no runt came from the tap.
declare -A LN N
kv LN "ABUSE linuxnet "
kv N "ABUSE net totals "
nv=$(jq -c '.nets[0].pairs' <<<"$json")
[[ -n "$nv" && "$nv" != null ]] || e2e_fail "no NIC in --stats-json"
echo "--- NIC stats (per pair): $nv"
# One jq for all (each start costs ~0.5 s of the L1's one CPU).
read -r tx_p tx_d rx_p rx_b rx_d <<<"$(jq -r '[([.[].tx_packets] | add), ([.[].tx_drops] | add),
	([.[].rx_packets] | add), ([.[].rx_bytes] | add), ([.[].rx_drops] | add)] | @tsv' <<<"$nv")"
echo "NIC: tx $tx_p packets + $tx_d drops for ${N[tx_chains]} hostile chains" \
	"(drops ${N[tx_drop_min]}..${N[tx_drop_max]}) + ${LN[tx_packets]} Linux frames;" \
	"rx $rx_p frames $rx_b bytes for ${N[rx_frames]} / ${N[rx_bytes]} + ${LN[rx_packets]} Linux frames"
net_expect() {
	[[ "$2" == "$3" ]] || fail_later "NIC $1: VMM counted $2, expected $3"
}
net_expect "TX packets + drops" $((tx_p + tx_d)) $((N[tx_chains] + LN[tx_packets]))
[[ $tx_d -ge ${N[tx_drop_min]} && $tx_d -le ${N[tx_drop_max]} ]] ||
	fail_later "NIC TX drops $tx_d, expected ${N[tx_drop_min]}..${N[tx_drop_max]}"
net_expect "RX packets" "$rx_p" $((N[rx_frames] + LN[rx_packets]))
net_expect "RX bytes" "$rx_b" $((N[rx_bytes] + LN[rx_bytes]))
net_expect "RX drops (runts)" "$rx_d" 0
[[ ${N[flood]} -gt 0 ]] || fail_later "the hostile program received no datagram of the flood"
grep -q "ABUSE phase=net-sanity done ok=1 " "$log" ||
	fail_later "no ARP reply from 198.18.0.1 after the net attacks"
nslot=$(sed -n 's/.*ABUSE linuxnet .* pci=[0-9a-f]*:\([0-9a-f]*:[0-9a-f]*\.[0-9]\).*/\1/p' "$log" | head -n1)
nfull=$(grep -c "virtio-pci $nslot: device needs reset" "$dir/stderr" || true)
nsum=$({ grep -o "virtio-pci $nslot: [0-9]* more 'device needs reset' events" "$dir/stderr" || true; } |
	awk '{ s += $3 } END { print s + 0 }')
echo "NIC 'device needs reset': $nfull lines in full + $nsum in summaries, for ${N[needs_reset]}"
net_expect "'device needs reset' events in the log" "$((nfull + nsum))" "${N[needs_reset]}"

# ---- the vsock device ------------------------------------------------------
# Its counters against the hostile program's totals (the guest's own
# driver never had it): every packet it sent, the bad ones, every packet
# and RST it received, the connections made and refused, the data bytes
# (what the host side got: both RW payloads, in order).
declare -A VS
kv VS "ABUSE vsock totals "
vj=$(jq -c '.vsock' <<<"$json")
[[ -n "$vj" && "$vj" != null ]] || e2e_fail "no vsock in --stats-json"
echo "--- vsock stats: $vj"
declare -A VJ
while read -r k val; do
	VJ[$k]=$val
done <<<"$(jq -r 'to_entries[] | "\(.key) \(.value)"' <<<"$vj")" # no /dev/fd in the rig
vs_expect() {
	[[ "${VJ[$1]:-}" == "$2" ]] || fail_later "vsock $1: VMM counted ${VJ[$1]:-none}, expected $2"
}
vs_expect packets_from_guest "${VS[tx_packets]}"
vs_expect bad_packets "${VS[bad]}"
vs_expect packets_to_guest "${VS[rx_packets]}"
vs_expect resets "${VS[rsts]}"
vs_expect connections "${VS[connections]}"
vs_expect refused "${VS[refused]}"
vs_expect bytes_from_guest "${VS[rw_bytes]}"
vs_expect connections_open 0
vslot=$(sed -n 's/.*ABUSE vsock device [0-9a-f]*:\([0-9a-f]*:[0-9a-f]*\.[0-9]\).*/\1/p' "$log" | head -n1)
nfull=$(grep -c "virtio-pci $vslot: device needs reset" "$dir/stderr" || true)
nsum=$({ grep -o "virtio-pci $vslot: [0-9]* more 'device needs reset' events" "$dir/stderr" || true; } |
	awk '{ s += $3 } END { print s + 0 }')
echo "vsock 'device needs reset': $nfull lines in full + $nsum in summaries, for ${VS[needs_reset]}"
[[ $((nfull + nsum)) -eq ${VS[needs_reset]} ]] ||
	fail_later "vsock 'device needs reset' events in the log: $((nfull + nsum)), expected ${VS[needs_reset]}"
got=$(cat "$dir/vs.got" 2>/dev/null || true)
[[ "$got" == $'ABUSE-VSOCK-CREDIT\nABUSE-VSOCK-SANITY' ]] ||
	fail_later "the vsock host side read '$got'"

# ---- log volume ----------------------------------------------------------
nlines=$(grep -vc '^{"kvm"' "$dir/stderr" || true)
echo "--- log: $nlines lines from minivmm for ${H[needs_reset]} NEEDS_RESET, ${H[resets]} resets, ${H[rewrites]} MSI-X rewrites"
[[ $nlines -le $LOG_MAX ]] ||
	fail_later "minivmm logged $nlines lines (bound $LOG_MAX): a guest-triggerable message is not rate-limited"

# ---- data ---------------------------------------------------------------
got=$(dd if="$dir/victim.img" bs=512 count=1 2>/dev/null | head -c 64 | tr -d '\0')
[[ "$got" == "VICTIM-$token" ]] ||
	fail_later "victim sector 0 changed: '$got'"
grep -q "ABUSE get_id=victim$" "$log" ||
	fail_later "GET_ID did not answer the victim's serial"
grep -q "ABUSE phase=sanity done ok=1 sector0=VICTIM-$token" "$log" ||
	fail_later "the hostile program's sanity read did not return the victim's sector 0"
got=$(dd if="$dir/victim.img" bs=512 skip=2048 count=1 2>/dev/null | head -c 12)
[[ "$got" == "ABUSE-SANITY" ]] ||
	fail_later "the sanity write is not in the victim image"
nz=$(dd if="$dir/victim.img" bs=512 skip=8192 count=256 2>/dev/null | tr -d '\0' | wc -c)
[[ $nz -eq 0 ]] ||
	fail_later "a refused write reached the victim image ($nz bytes at sector 8192)"
got=$(dd if="$dir/data.img" bs=4096 skip=16 count=1 2>/dev/null | head -c 64 | tr -d '\0')
[[ "$got" == "MINIVMM-ABUSE-$token" ]] ||
	fail_later "data disk marker not in the image: '$got'"

if [[ ${#fails[@]} -gt 0 ]]; then
	printf 'FAIL: %s\n' "${fails[@]}"
	exit 1
fi

echo "PASS: hostile driver on vCPU 1 (kicks ${H[kicks]}, MSI-X rewrites ${H[rewrites]}," \
	"resets ${H[resets]}, IOERR ${H[ioerr]}, UNSUPP ${H[unsupp]}, NEEDS_RESET ${H[needs_reset]});" \
	"heartbeats on vCPU 0 throughout, peak RSS $((hwm_max / 1024)) MiB, stats exact"
