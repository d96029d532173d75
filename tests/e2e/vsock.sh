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
# way at once, 4 MiB each way each (64 MiB each way in all), hashed.
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
# take.
stall_max=$((1024 * 1024)) rss_max=2048
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/vsock.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
sock=$dir/v.sock

"$tool" serve-unix "${sock}_6000" "$n" >"$dir/serve.log" 2>&1 &
spid=$!
"$tool" connect-unix "$sock" 5000 "$n" "$bytes" >"$dir/connect.log" 2>&1 &
cpid=$!
"$tool" serve-unix "${sock}_6001" "$gchurn" >"$dir/churn-serve.log" 2>&1 &
hspid=$!
"$tool" churn-unix "$sock" 5001 "$churn" 100 >"$dir/churn.log" 2>&1 &
hcpid=$!
"$tool" stall-read-unix "${sock}_6002" "${sock}_6003" >"$dir/stall-read.log" 2>&1 &
rpid=$!
"$tool" stall-write-unix "$sock" 5002 5003 2 >"$dir/stall-write.log" 2>&1 &
wpid=$!
more="guest.churn=$churn guest.gchurn=$gchurn guest.stall=1"
e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,socket=$sock" --stats-json \
	--append "quiet guest.run=vsock guest.conns=$n guest.bytes=$bytes $more"
# Context: a VMM or payload that failed leaves host tools waiting for
# connections that never come: fail now (the EXIT trap ends them).
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
src=0 crc=0 hsrc=0 hcrc=0 rrc=0 wrc=0
wait "$spid" || src=$?
wait "$cpid" || crc=$?
wait "$hspid" || hsrc=$?
wait "$hcpid" || hcrc=$?
wait "$rpid" || rrc=$?
wait "$wpid" || wrc=$?
cat "$dir/serve.log" "$dir/connect.log" "$dir/churn-serve.log" "$dir/churn.log" \
	"$dir/stall-write.log" "$dir/stall-read.log"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
[[ $src -eq 0 ]] || e2e_fail "host echo server (guest to host) failed"
[[ $crc -eq 0 ]] || e2e_fail "host connections (host to guest) failed"
[[ $hsrc -eq 0 ]] || e2e_fail "host echo server (guest's short connections) failed"
[[ $hcrc -eq 0 ]] || e2e_fail "host short connections failed"
[[ $wrc -eq 0 ]] || e2e_fail "host writer to the stalled guest failed"
[[ $rrc -eq 0 ]] || e2e_fail "host stalled reader failed"
grep -q "VSOCKT serve-unix: $n connections, $bytes bytes each way, ok" "$dir/serve.log" ||
	e2e_fail "host echo server: not every connection"
grep -q "VSOCKT connect-unix: $n connections, $bytes bytes each way, ok" "$dir/connect.log" ||
	e2e_fail "host connections: not every one"

# 1000 + 300 connections opened and closed, every echo compared.
grep -q "VSOCKT churn-unix: $churn connections, $churn_bytes bytes each way, ok" \
	"$dir/churn.log" || e2e_fail "host short connections: not every one"
grep -q "VSOCKT serve-unix: $gchurn connections, $churn_bytes bytes each way, ok" \
	"$dir/churn-serve.log" || e2e_fail "host echo of the guest's short connections"
grep -q "VSOCKT serve-vsock: $churn connections, $churn_bytes bytes each way, ok" "$dir/log" ||
	e2e_fail "guest echo of the host's short connections: not every one"
grep -q "VSOCKT churn-vsock: $gchurn connections, $churn_bytes bytes each way, ok" "$dir/log" ||
	e2e_fail "guest short connections: not every one"

# stall_check WHAT WRITER-LINE READER-LINE RSS-LINE: the bytes that got in
# (0 < B <= STALL_MAX), the reader got them all (count and hash), the
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
	[[ $comm == minivmm ]] || e2e_fail "$1: the socket's peer is $pid ($comm), not minivmm"
	((wb > 0 && wb <= stall_max)) || e2e_fail "$1: $wb bytes got in (bound $stall_max)"
	[[ $rb -eq $wb && $rh == "$wh" ]] || e2e_fail "$1: $wb bytes written (hash $wh), $rb read ($rh)"
	((r1 - r0 < rss_max)) || e2e_fail "$1: minivmm VmRSS $r0 -> $r1 kB (bound +$rss_max)"
	echo "$1: $wb bytes got in before the writes stopped (bound $stall_max), all" \
		"read after it; minivmm VmRSS $r0 -> $r1 kB ($((r1 - r0)) kB)"
	stall_bytes=$wb
}
w=$(grep -o 'VSOCKT stall-write-unix: .*' "$dir/stall-write.log" || true)
r=$(grep -o 'VSOCKT stall-read-vsock: .*' "$dir/log" | tail -n1 || true)
stall_check "host to a guest that stops reading" "$w" "$r" "$w"
to_stall=$stall_bytes
w=$(grep -o 'VSOCKT stall-write-vsock: .*' "$dir/log" | tail -n1 || true)
r=$(grep -o 'VSOCKT stall-read-unix: .*' "$dir/stall-read.log" || true)
stall_check "guest to a host that stops reading" "$w" "$r" "$r"
from_stall=$stall_bytes

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
g=$(grep -o 'VSOCKT connect-vsock: .*' "$dir/log" | tail -n1)
echo "PASS: $n + $n connections at once, $bytes bytes each way each;" \
	"host side: $(sed -n 's/.*ok, //p' "$dir/connect.log") (host to guest)," \
	"$(sed -n 's/.*ok, //p' "$dir/serve.log") (guest to host); guest: ${g#*ok, };" \
	"$churn + $gchurn short connections: host $(sed -n 's/.*ok, //p' "$dir/churn.log")," \
	"guest $(grep -o 'VSOCKT churn-vsock: .*' "$dir/log" | sed -n 's/.*ok, //p')"

# ---- vhost=on ----
vn=8 vbytes=$((4 * 1024 * 1024))
[[ -c /dev/vhost-vsock ]] || e2e_fail "no /dev/vhost-vsock in the L1 (tests/rig/mkl1.sh)"
"$tool" serve-vsock 6000 "$vn" >"$dir/vserve.log" 2>&1 &
spid=$!
VSOCKT_CID=3 "$tool" connect-vsock 5000 "$vn" "$vbytes" >"$dir/vconnect.log" 2>&1 &
cpid=$!
e2e_run_vmm "$dir/vlog" -- "$vmm" -v --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,vhost=on" --stats-json \
	--append "quiet guest.run=vsock guest.conns=$vn guest.bytes=$vbytes"
src=0 crc=0
wait "$spid" || src=$?
wait "$cpid" || crc=$?
cat "$dir/vserve.log" "$dir/vconnect.log"
grep -q "vsock: guest CID 3, host side /dev/vhost-vsock" "$dir/vlog" ||
	e2e_fail "vhost=on: no vhost-vsock device"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/vlog" || e2e_fail "vhost=on: guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "vhost=on: minivmm exited $E2E_RC"
[[ $src -eq 0 ]] || e2e_fail "vhost=on: host echo server (guest to host) failed"
[[ $crc -eq 0 ]] || e2e_fail "vhost=on: host connections (host to guest) failed"
grep -q "VSOCKT serve-vsock: $vn connections, $vbytes bytes each way, ok" "$dir/vserve.log" ||
	e2e_fail "vhost=on host echo server: not every connection"
grep -q "VSOCKT connect-vsock: $vn connections, $vbytes bytes each way, ok" "$dir/vconnect.log" ||
	e2e_fail "vhost=on host connections: not every one"
vstats=$(grep -o '"vsock":{[^}]*}' "$dir/vlog" | tail -n1)
echo "vhost=on stats (the kernel's work: 0): $vstats"
[[ $vstats == *'"bad_packets":0'* ]] || e2e_fail "vhost=on: statistics $vstats"
g=$(grep -o 'VSOCKT connect-vsock: .*' "$dir/vlog" | tail -n1)
echo "PASS vhost=on: $vn + $vn connections at once, $vbytes bytes each way each;" \
	"host: $(sed -n 's/.*ok, //p' "$dir/vconnect.log") (host to guest)," \
	"$(sed -n 's/.*ok, //p' "$dir/vserve.log") (guest to host); guest: ${g#*ok, }"
