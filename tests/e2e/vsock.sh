#!/bin/bash
# vsock.sh MINIVMM KERNEL INITRD VSOCKT: the hybrid vsock end to end
# (issue 29).  minivmm --vsock cid=3,socket=DIR/v.sock; at the same time
#  - host to guest: VSOCKT opens 32 connections through DIR/v.sock
#    ("CONNECT 5000"), the guest echoes (tests/guest/vsock);
#  - guest to host: the guest opens 32 connections to host port 6000, which
#    VSOCKT serves at DIR/v.sock_6000 with an echo;
# every connection carries 512 KiB each way, hashed on both ends.  Then the
# statistics (--stats-json): every connection established and closed, the
# bytes both ways, no bad packet.  Then vhost=on (the L1's vhost_vsock):
# the host side is AF_VSOCK itself (VSOCKT serve-vsock / connect-vsock to
# CID 3), 8 connections each way at once, 1 MiB each way each, hashed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3 tool=$4
n=32 bytes=$((512 * 1024))
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/vsock.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
sock=$dir/v.sock

"$tool" serve-unix "${sock}_6000" "$n" >"$dir/serve.log" 2>&1 &
spid=$!
"$tool" connect-unix "$sock" 5000 "$n" "$bytes" >"$dir/connect.log" 2>&1 &
cpid=$!
e2e_run_vmm "$dir/log" -- "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,socket=$sock" --stats-json \
	--append "quiet guest.run=vsock guest.conns=$n guest.bytes=$bytes"
src=0 crc=0
wait "$spid" || src=$?
wait "$cpid" || crc=$?
cat "$dir/serve.log" "$dir/connect.log"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "guest payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
[[ $src -eq 0 ]] || e2e_fail "host echo server (guest to host) failed"
[[ $crc -eq 0 ]] || e2e_fail "host connections (host to guest) failed"
grep -q "VSOCKT serve-unix: $n connections, $bytes bytes each way, ok" "$dir/serve.log" ||
	e2e_fail "host echo server: not every connection"
grep -q "VSOCKT connect-unix: $n connections, $bytes bytes each way, ok" "$dir/connect.log" ||
	e2e_fail "host connections: not every one"

stats=$(grep -o '"vsock":{[^}]*}' "$dir/log" | tail -n1)
[[ -n $stats ]] || e2e_fail "no vsock statistics"
echo "stats: $stats"
val() { echo "$stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
want=$((2 * n * bytes))
[[ $(val connections) -eq $((2 * n)) ]] || e2e_fail "connections: $(val connections), want $((2 * n))"
[[ $(val connections_open) -eq 0 ]] || e2e_fail "connections still open: $(val connections_open)"
[[ $(val bytes_to_guest) -eq $want ]] || e2e_fail "bytes_to_guest $(val bytes_to_guest), want $want"
[[ $(val bytes_from_guest) -eq $want ]] || e2e_fail "bytes_from_guest $(val bytes_from_guest), want $want"
[[ $(val bad_packets) -eq 0 ]] || e2e_fail "bad packets: $(val bad_packets)"
g=$(grep -o 'VSOCKT connect-vsock: .*' "$dir/log" | tail -n1)
echo "PASS: $n + $n connections at once, $bytes bytes each way each;" \
	"host side: $(sed -n 's/.*ok, //p' "$dir/connect.log") (host to guest)," \
	"$(sed -n 's/.*ok, //p' "$dir/serve.log") (guest to host); guest: ${g#*ok, }"

# ---- vhost=on ----
vn=8 vbytes=$((1024 * 1024))
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
