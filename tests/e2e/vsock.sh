#!/bin/bash
# vsock.sh MINIVMM KERNEL INITRD VSOCKT: the hybrid vsock end to end
# (issue 29).  minivmm --vsock cid=3,socket=DIR/v.sock; at the same time
#  - host to guest: VSOCKT opens 32 connections through DIR/v.sock
#    ("CONNECT 5000"), the guest echoes (tests/guest/vsock);
#  - guest to host: the guest opens 32 connections to host port 6000, which
#    VSOCKT serves at DIR/v.sock_6000 with an echo;
#    every connection carries 1 MiB each way, hashed on both ends: 64 MiB
#    each way through the device in all;
#  - beside them, 1000 short host connections to guest port 5001 (100 at
#    once) and 300 guest connections to host port 6001 (100 at once), 64
#    bytes each way each, echoed and compared;
# then a peer that stops reading, each way in turn:
#  - the guest accepts a host connection (port 5002) and reads nothing: the
#    host writes non-blocking until nothing goes in for 2 s; what got in is
#    at most STALL_MAX (the guest's credit, 256 KiB, plus socket buffers:
#    towards the guest the VMM keeps nothing) and minivmm's VmRSS grew
#    less than RSS_MAX over the stall; then the guest reads it all (same
#    count and hash);
#  - the guest writes to a host connection (port 6002) that the host does
#    not read: the guest's writes stop (again at most STALL_MAX: the
#    device's 256 KiB buffer for the connection plus socket buffers), VMM
#    VmRSS grows less than RSS_MAX; then the host reads it all;
# and the guest finishes and powers off as usual.  Then the statistics
# (--stats-json): every connection established (32 + 32 + 1000 + 300 + the
# four of the stall) and closed, the bytes both ways exactly, no bad
# packet.  Then vhost=on (the L1's vhost_vsock): the host side is AF_VSOCK
# itself (VSOCKT serve-vsock / connect-vsock to CID 3), 8 connections each
# way at once, 4 MiB each way each (64 MiB each way in all), hashed; in the
# same boot, as above: the 1000 + 300 short connections (the host's to CID
# 3 port 5001, the guest's to host port 6001), and the reader that stops
# each way (ports 5002/5003 and 6002/6003): what got in at most
# VSTALL_MAX (the receiver's credit: the kernel holds the data), all of
# it read after, minivmm's VmRSS grew less than RSS_MAX over each stall.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tool=$4
n=32 bytes=$((1024 * 1024))
churn=1000 gchurn=300 churn_bytes=64 # CHURN_BYTES in vsockt.c
# Context: STALL_MAX: the receiver's credit (256 KiB: the guest's
# buffer_size, or the device's buffer towards the host) plus the Unix
# socket between the VMM and the host program (wmem_default, 208 KiB in
# the L1): ~464 KiB, 1 MiB with room.  A VMM that queued what the reader
# does not take would keep taking writes for the 2 s.  RSS_MAX: the device
# holds at most its 256 KiB buffer for the host-bound connection and
# nothing for the guest-bound one; the rest is guest RAM the guest may
# touch for the first time (its socket buffer, <= 256 KiB) and allocator
# slack: 2 MiB, several times that, far below what a growing buffer would
# take.  VSTALL_MAX (vhost=on): the credit alone (256 KiB, the
# receiving socket's buffer_size; AF_VSOCK has no send buffer and
# vhost-vsock queues only what the credit allows), twice that with room.
stall_max=$((1024 * 1024)) rss_max=2048 vstall_max=$((512 * 1024))
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/vsock.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
sock=$dir/v.sock
more="guest.churn=$churn guest.gchurn=$gchurn guest.stall=1"

# host_start P KIND N BYTES: a phase's host side in the background, each
# tool's output in $dir/P*.log (pids in spid cpid hspid hcpid rpid wpid):
# the echo for the guest's N connections (port 6000) and N connections to
# the guest's echo (port 5000), BYTES each way each; the echo for the
# guest's short connections (6001) and the host's (to 5001); the stalled
# reader (6002, "go" on 6003) and writer (to 5002, "go" to 5003).  KIND
# unix: through the hybrid socket (listening at ${sock}_PORT, connecting
# through $sock); vsock: AF_VSOCK (listening on PORT, connecting to CID
# $VSOCKT_CID).
host_start() {
	local l='' c=()
	[[ $2 == vsock ]] || { l=${sock}_ c=("$sock"); }
	"$tool" "serve-$2" "${l}6000" "$3" >"$dir/${1}serve.log" 2>&1 &
	spid=$!
	"$tool" "connect-$2" "${c[@]}" 5000 "$3" "$4" >"$dir/${1}connect.log" 2>&1 &
	cpid=$!
	"$tool" "serve-$2" "${l}6001" "$gchurn" >"$dir/${1}churn-serve.log" 2>&1 &
	hspid=$!
	"$tool" "churn-$2" "${c[@]}" 5001 "$churn" 100 >"$dir/${1}churn.log" 2>&1 &
	hcpid=$!
	"$tool" "stall-read-$2" "${l}6002" "${l}6003" >"$dir/${1}stall-read.log" 2>&1 &
	rpid=$!
	"$tool" "stall-write-$2" "${c[@]}" 5002 5003 2 >"$dir/${1}stall-write.log" 2>&1 &
	wpid=$!
}

# host_done P WHAT KIND N BYTES: host_start's tools all ended 0 (their
# output printed), and the N + N connections moved BYTES each way each.
# Context: call it only once the guest payload and minivmm ended 0: one
# that failed leaves host tools waiting for connections that never come
# (the EXIT trap ends them).
host_done() {
	local names=("host echo server (guest to host)" "host connections (host to guest)"
		"host echo server (guest's short connections)" "host short connections"
		"host stalled reader" "host writer to the stalled guest") rcs=() p rc i
	for p in "$spid" "$cpid" "$hspid" "$hcpid" "$rpid" "$wpid"; do
		rc=0
		wait "$p" || rc=$?
		rcs+=("$rc")
	done
	for p in serve connect churn-serve churn stall-write stall-read; do
		cat "$dir/$1$p.log"
	done
	for i in "${!names[@]}"; do
		[[ ${rcs[i]} -eq 0 ]] || e2e_fail "$2${names[i]} failed"
	done
	grep -q "VSOCKT serve-$3: $4 connections, $5 bytes each way, ok" "$dir/${1}serve.log" ||
		e2e_fail "$2host echo server: not every connection"
	grep -q "VSOCKT connect-$3: $4 connections, $5 bytes each way, ok" "$dir/${1}connect.log" ||
		e2e_fail "$2host connections: not every one"
}

# churn_check WHAT KIND P GUEST-LOG: 1000 + 300 connections opened and
# closed, every echo compared: the host's (churn-KIND and serve-KIND,
# host_start P) and the guest's.
churn_check() {
	local ok="connections, $churn_bytes bytes each way, ok"
	grep -q "VSOCKT churn-$2: $churn $ok" "$dir/${3}churn.log" ||
		e2e_fail "$1host short connections: not every one"
	grep -q "VSOCKT serve-$2: $gchurn $ok" "$dir/${3}churn-serve.log" ||
		e2e_fail "$1host echo of the guest's short connections"
	grep -q "VSOCKT serve-vsock: $churn $ok" "$4" ||
		e2e_fail "$1guest echo of the host's short connections: not every one"
	grep -q "VSOCKT churn-vsock: $gchurn $ok" "$4" || e2e_fail "$1guest short connections: not every one"
}

# stall_check WHAT WRITER-LINE READER-LINE RSS-LINE MAX: the bytes that
# got in (0 < B <= MAX), the reader got them all (count and hash), the
# VMM's VmRSS over the stall (from RSS-LINE) grew less than RSS_MAX kB.
stall_check() {
	local w=$2 r=$3 wb rb wh rh pid comm r0 r1
	[[ -n $w && -n $r ]] || e2e_fail "$1: no result (writer '$w', reader '$r')"
	wb=$(sed -n 's/.*: \([0-9]*\) bytes in,.*/\1/p' <<<"$w")
	wh=$(sed -n 's/.*, hash \([0-9a-f]*\).*/\1/p' <<<"$w")
	rb=$(sed -n 's/.*: \([0-9]*\) bytes after the stall,.*/\1/p' <<<"$r")
	rh=$(sed -n 's/.*, hash \([0-9a-f]*\).*/\1/p' <<<"$r")
	# Context: no < <(...): the rig's L1 has no /dev/fd.
	read -r pid comm r0 r1 <<<"$(sed -n \
		's/.*, vmm \([0-9]*\) (\([^)]*\)) VmRSS \([0-9]*\) -> \([0-9]*\) kB.*/\1 \2 \3 \4/p' <<<"$4")"
	[[ -n $wb && -n $rb && -n $wh && -n $r1 ]] || e2e_fail "$1: unparsed: '$w' '$r' '$4'"
	[[ $comm == minivmm ]] || e2e_fail "$1: the VMM found is $pid ($comm), not minivmm"
	((wb > 0 && wb <= $5)) || e2e_fail "$1: $wb bytes got in (bound $5)"
	[[ $rb -eq $wb && $rh == "$wh" ]] || e2e_fail "$1: $wb bytes written (hash $wh), $rb read ($rh)"
	((r1 - r0 < rss_max)) || e2e_fail "$1: minivmm VmRSS $r0 -> $r1 kB (bound +$rss_max)"
	echo "$1: $wb bytes got in before the writes stopped (bound $5), all" \
		"read after it; minivmm VmRSS $r0 -> $r1 kB ($((r1 - r0)) kB)"
	stall_bytes=$wb
}

# stalls WHAT KIND P GUEST-LOG MAX: both stalls, the host's side
# stall-write-KIND and stall-read-KIND (host_start P), each reporting the
# VMM's VmRSS; sets to_stall and from_stall (bytes).
stalls() {
	local w r
	w=$(grep -o "VSOCKT stall-write-$2: .*" "$dir/${3}stall-write.log" || true)
	r=$(grep -o 'VSOCKT stall-read-vsock: .*' "$4" | tail -n1 || true)
	stall_check "${1}host to a guest that stops reading" "$w" "$r" "$w" "$5"
	to_stall=$stall_bytes
	w=$(grep -o 'VSOCKT stall-write-vsock: .*' "$4" | tail -n1 || true)
	r=$(grep -o "VSOCKT stall-read-$2: .*" "$dir/${3}stall-read.log" || true)
	stall_check "${1}guest to a host that stops reading" "$w" "$r" "$r" "$5"
	from_stall=$stall_bytes
}

# pass WHAT P N BYTES GUEST-LOG: the phase's summary (times and rates).
pass() {
	local g
	g=$(grep -o 'VSOCKT connect-vsock: .*' "$5" | tail -n1)
	echo "PASS$1: $3 + $3 connections at once, $4 bytes each way each;" \
		"host: $(sed -n 's/.*ok, //p' "$dir/${2}connect.log") (host to guest)," \
		"$(sed -n 's/.*ok, //p' "$dir/${2}serve.log") (guest to host); guest: ${g#*ok, };" \
		"$churn + $gchurn short connections: host $(sed -n 's/.*ok, //p' "$dir/${2}churn.log")," \
		"guest $(grep -o 'VSOCKT churn-vsock: .*' "$5" | sed -n 's/.*ok, //p')"
}

host_start "" unix "$n" "$bytes"
e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,socket=$sock" --stats-json \
	--append "quiet guest.run=vsock guest.conns=$n guest.bytes=$bytes $more"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
host_done "" "" unix "$n" "$bytes"
churn_check "" unix "" "$dir/log"
stalls "" unix "" "$dir/log" "$stall_max"

stats=$(grep -o '"vsock":{[^}]*}' "$dir/log" | tail -n1)
[[ -n $stats ]] || e2e_fail "no vsock statistics"
echo "stats: $stats"
val() { echo "$stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
conns=$((2 * n + churn + gchurn + 4)) # + the stall's two and their two "go"
want=$((2 * n * bytes + (churn + gchurn) * churn_bytes))
[[ $(val connections) -eq $conns ]] || e2e_fail "connections: $(val connections), want $conns"
[[ $(val connections_open) -eq 0 ]] || e2e_fail "connections still open: $(val connections_open)"
[[ $(val bytes_to_guest) -eq $((want + to_stall)) ]] ||
	e2e_fail "bytes_to_guest $(val bytes_to_guest), want $((want + to_stall))"
[[ $(val bytes_from_guest) -eq $((want + from_stall)) ]] ||
	e2e_fail "bytes_from_guest $(val bytes_from_guest), want $((want + from_stall))"
[[ $(val bad_packets) -eq 0 ]] || e2e_fail "bad packets: $(val bad_packets)"
pass "" "" "$n" "$bytes" "$dir/log"

# ---- vhost=on ----
# Context: the host's tools on AF_VSOCK reach the guest as CID 3
# (VSOCKT_CID: retried until the guest listens).  No socket links them to
# minivmm here, so the stall modes read its pid from VSOCKT_VMM_PIDFILE,
# written as soon as it runs; they read it when their stall begins, after
# the guest's boot and transfers.  "cid=3,vhost=on" names one process:
# the kernel gives CID 3 to one VM at a time.
vn=8 vbytes=$((4 * 1024 * 1024))
[[ -c /dev/vhost-vsock ]] || e2e_fail "no /dev/vhost-vsock in the L1 (tests/rig/mkl1.sh)"
export VSOCKT_CID=3 VSOCKT_VMM_PIDFILE=$dir/vmm.pid
(pid=$(e2e_find_vmm "cid=3,vhost=on") && echo "$pid" >"$dir/vmm.pid.new" &&
	mv "$dir/vmm.pid.new" "$VSOCKT_VMM_PIDFILE") &
host_start v vsock "$vn" "$vbytes"
e2e_run_vmm "$dir/vlog" -- "$vmm" -v --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,vhost=on" --stats-json \
	--append "quiet guest.run=vsock guest.conns=$vn guest.bytes=$vbytes $more"
grep -q "vsock: guest CID 3, host side /dev/vhost-vsock" "$dir/vlog" ||
	e2e_fail "vhost=on: no vhost-vsock device"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/vlog" || e2e_fail "vhost=on: guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "vhost=on: minivmm exited $E2E_RC"
host_done v "vhost=on: " vsock "$vn" "$vbytes"
churn_check "vhost=on: " vsock v "$dir/vlog"
stalls "vhost=on: " vsock v "$dir/vlog" "$vstall_max"
vstats=$(grep -o '"vsock":{[^}]*}' "$dir/vlog" | tail -n1)
echo "vhost=on stats (the kernel's work: 0): $vstats"
[[ $vstats == *'"bad_packets":0'* ]] || e2e_fail "vhost=on: statistics $vstats"
pass " vhost=on" v "$vn" "$vbytes" "$dir/vlog"
