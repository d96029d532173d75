#!/bin/sh
# net_vsock.sh MINIVMM KERNEL INITRD VSOCKT VFSROOT (arm64, in the arm64
# rig's L1)
# virtio-net, virtio-vsock (hybrid and vhost=on) and virtio-fs on arm64 as
# on x86 (issues 28 and 29), three L2 boots, seccomp on (the default):
#  - --net tap=mvt0 at 4 vCPUs: minivmm makes the multi-queue tap (the
#    L1's busybox has no `ip tuntap`), L1 gives it 198.18.0.1/24 once it
#    appears; the guest (payload net-mq, as in tests/e2e/net_mq.sh) checks
#    one queue pair per vCPU, pings L1, fetches MB MiB from busybox httpd
#    and sends MB MiB in FLOWS parallel flows to busybox nc, md5s compared
#    on both sides; --stats-json shows 4 pairs, more than one carrying
#    frames; the guest's RX queue i interrupted mostly on CPU i (flow i
#    runs there: guest.irq=1), and every queue's vector (4 input, 4
#    output) is its own LPI through the ITS (ITS-MSI, 8 distinct hwirqs);
#  - --vsock cid=3,socket=PATH: CONNS connections each way at once (the
#    host's through PATH with "CONNECT 5000", the guest's to host port 6000
#    served at PATH_6000), BYTES each way each, hashed on both ends
#    (tests/guest/vsockt.c), and the device's statistics;
#  - --vsock cid=3,vhost=on: the same device on the L1 kernel's vhost-vsock
#    (module vhost_vsock, tests/rig/mkl1.sh), the host side vsockt on the
#    L1's AF_VSOCK itself (VSOCKT_CID=3), VCONNS connections each way at
#    once, VBYTES each way each, hashed; in the same boot, virtio-fs:
#    --fs tag=share,path=DIR, minivmm starting Debian's arm64 virtiofsd
#    itself (VFSROOT: its library closure, tests/rig/fetch-virtiofsd.sh,
#    run by virtiofsd-rig.sh), the guest (payload vsock-fs) reads a file
#    made here (sha256 compared) and writes one read back here (sha256);
#    virtiofsd is gone once minivmm exited.
# Both vsock guests report their device's interrupts (tests/guest/vsock):
# the rx and tx vectors must be LPIs (ITS-MSI) that fired.
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
vmm=$1 kernel=$2 initrd=$3 tool=$4 vfsroot=$5
n=4 mb=2 flows=4 conns=8 bytes=262144 vconns=4 vbytes=1048576 fskib=1024
dir=$(e2e_tmpdir)
pids=
trap 'kill $pids 2>/dev/null; rm -rf "$dir"' EXIT
# host_done LOG: once the VM has ended, the host side's status (src, crc).
# A guest whose payload did not succeed (or never ran) can leave a host
# server waiting for connections for good: the host side is stopped then,
# so the test fails at once instead of at the rig's timeout.
host_done() {
	grep -q "MINIVMM-PAYLOAD-EXIT=0" "$1" || kill $spid $cpid 2>/dev/null
	src=0 crc=0
	wait $spid || src=$?
	wait $cpid || crc=$?
}

# ---- virtio-net
mkdir "$dir/www"
dd if=/dev/urandom of="$dir/www/down.bin" bs=1048576 count=$mb 2>/dev/null
down=$(md5sum <"$dir/www/down.bin" | cut -d' ' -f1)
busybox httpd -f -p 8080 -h "$dir/www" &
pids="$pids $!"
# The receivers' stdin never ends (a FIFO held open both ways): busybox nc
# half-closes at stdin EOF, and a client that sees the FIN stops sending.
mkfifo "$dir/hold"
exec 3<>"$dir/hold"
i=0
while [ $i -lt $flows ]; do
	busybox nc -l -p $((5001 + i)) >"$dir/up$i" <&3 &
	pids="$pids $!"
	i=$((i + 1))
done
(
	i=0
	while ! ip link show mvt0 >/dev/null 2>&1 && [ $i -lt 3000 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	ip addr add 198.18.0.1/24 dev mvt0 && ip link set mvt0 up
) &
e2e_run_vmm "$dir/log" "$vmm" --smp $n --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --net tap=mvt0 --stats-json \
	--append "quiet guest.run=net-mq guest.mb=$mb guest.flows=$flows guest.irq=1"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || e2e_fail "net: the guest payload failed"
[ "$E2E_RC" -eq 0 ] || e2e_fail "net: minivmm exited $E2E_RC"
grep -q "NET-DOWN md5=$down " "$dir/log" || e2e_fail "net: download md5 differs (want $down)"
sleep 1 # the receivers write out what the FIN ended
i=0
while [ $i -lt $flows ]; do
	want=$(sed -n "s/.*NET-UP$i md5=\([0-9a-f]*\).*/\1/p" "$dir/log" | head -n1)
	got=$(md5sum <"$dir/up$i" | cut -d' ' -f1)
	[ -n "$want" ] && [ "$want" = "$got" ] ||
		e2e_fail "net: upload $i: md5 $got on L1, $want in the guest"
	i=$((i + 1))
done
pairs=$(grep -o '"nets":\[{"pairs":\[[^]]*\]' "$dir/log" | head -n1)
[ -n "$pairs" ] || e2e_fail "net: no NIC in --stats-json"
npairs=$(echo "$pairs" | grep -o '"rx_packets"' | wc -l)
rx_used=$(echo "$pairs" | grep -o '"rx_packets":[1-9][0-9]*' | wc -l)
tx_used=$(echo "$pairs" | grep -o '"tx_packets":[1-9][0-9]*' | wc -l)
[ "$npairs" -eq $n ] || e2e_fail "net: $npairs queue pairs, expected $n"
[ "$tx_used" -gt 1 ] || [ "$rx_used" -gt 1 ] ||
	e2e_fail "net: one queue pair carried everything (rx on $rx_used, tx on $tx_used)"
[ "$(grep -c 'NET-IRQ input\.[0-9]* own=[1-9]' "$dir/log")" -eq $n ] ||
	e2e_fail "net: not every RX queue's interrupts on its own CPU: $(grep NET-IRQ "$dir/log" | tr '\n' ' ')"
lpis=$(grep -o 'NET-VECTOR virtio[0-9]*-[a-z]*put\.[0-9]* count=[0-9]* chip=ITS-MSI hwirq=[0-9]*' "$dir/log" |
	sed 's/.*hwirq=//' | sort -u | wc -l)
[ "$lpis" -eq $((2 * n)) ] ||
	e2e_fail "net: $lpis distinct ITS LPIs for the queues, expected $((2 * n)): $(grep NET-VECTOR "$dir/log" | tr '\n' ' ')"
echo "NET: $npairs pairs, rx used on $rx_used, tx on $tx_used; $mb MiB each way, md5s equal; $lpis queue LPIs through the ITS; $(grep -o 'NET-IRQ input\.[0-9]* own=[0-9]* total=[0-9]*' "$dir/log" | tr '\n' ' ')"

# ---- virtio-vsock (hybrid host side)
sock=$dir/v.sock
"$tool" serve-unix "${sock}_6000" $conns >"$dir/serve.log" 2>&1 &
spid=$!
"$tool" connect-unix "$sock" 5000 $conns $bytes >"$dir/connect.log" 2>&1 &
cpid=$!
e2e_run_vmm "$dir/vlog" "$vmm" --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,socket=$sock" --stats-json \
	--append "quiet guest.run=vsock guest.conns=$conns guest.bytes=$bytes"
host_done "$dir/vlog"
cat "$dir/serve.log" "$dir/connect.log"
# vsock_ok WHAT LOG KIND CONNS BYTES SERVE-LOG CONNECT-LOG: the guest's
# payload and minivmm ended 0, and the host side (vsockt serve-KIND and
# connect-KIND, statuses $src and $crc) moved every connection's bytes.
vsock_ok() {
	grep -q "MINIVMM-PAYLOAD-EXIT=0" "$2" || e2e_fail "$1: the guest payload failed"
	[ "$E2E_RC" -eq 0 ] || e2e_fail "$1: minivmm exited $E2E_RC"
	[ $src -eq 0 ] && [ $crc -eq 0 ] || e2e_fail "$1: host side failed (serve $src, connect $crc)"
	grep -q "VSOCKT serve-$3: $4 connections, $5 bytes each way, ok" "$6" ||
		e2e_fail "$1: host echo server: not every connection"
	grep -q "VSOCKT connect-$3: $4 connections, $5 bytes each way, ok" "$7" ||
		e2e_fail "$1: host connections: not every one"
}
vsock_ok vsock "$dir/vlog" unix $conns $bytes "$dir/serve.log" "$dir/connect.log"
stats=$(grep -o '"vsock":{[^}]*}' "$dir/vlog" | tail -n1)
val() { echo "$stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
want=$((2 * conns * bytes))
[ "$(val connections)" = $((2 * conns)) ] || e2e_fail "vsock: connections $(val connections), want $((2 * conns))"
[ "$(val connections_open)" = 0 ] || e2e_fail "vsock: still open: $(val connections_open)"
[ "$(val bytes_to_guest)" = $want ] || e2e_fail "vsock: bytes_to_guest $(val bytes_to_guest), want $want"
[ "$(val bytes_from_guest)" = $want ] || e2e_fail "vsock: bytes_from_guest $(val bytes_from_guest), want $want"
[ "$(val bad_packets)" = 0 ] || e2e_fail "vsock: bad packets $(val bad_packets)"
# its_irqs WHAT LOG: the guest's rx and tx vectors are LPIs that fired.
its_irqs() {
	for q in rx tx; do
		grep -q "VSOCK-IRQ virtio[0-9]*-$q count=[1-9][0-9]* chip=ITS-MSI" "$2" ||
			e2e_fail "$1: no $q interrupt through the ITS: $(grep VSOCK-IRQ "$2" | tr '\n' ' ')"
	done
	echo "$1 interrupts: $(grep VSOCK-IRQ "$2" | tr '\n' ' ')"
}
its_irqs vsock "$dir/vlog"

# ---- virtio-vsock, vhost=on (the L1 kernel's vhost-vsock), and virtio-fs
[ -c /dev/vhost-vsock ] || e2e_fail "vhost=on: no /dev/vhost-vsock in the L1 (tests/rig/mkl1.sh)"
share=$dir/share
mkdir "$share"
dd if=/dev/urandom of="$share/host.bin" bs=1024 count=$fskib 2>/dev/null
sha256sum <"$share/host.bin" | cut -d' ' -f1 >"$share/host.sha256"
# minivmm starts virtiofsd itself (--fs path=): Debian's arm64 one through
# virtiofsd-rig.sh (its libraries; sandbox=chroot in this L1).
export MINIVMM_VIRTIOFSD="$(cd "$(dirname "$0")" && pwd)/virtiofsd-rig.sh" VFSD_ROOT="$vfsroot"
"$tool" serve-vsock 6000 $vconns >"$dir/vserve.log" 2>&1 &
spid=$!
VSOCKT_CID=3 "$tool" connect-vsock 5000 $vconns $vbytes >"$dir/vconnect.log" 2>&1 &
cpid=$!
e2e_run_vmm "$dir/hlog" "$vmm" -v --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --vsock "cid=3,vhost=on" --fs "tag=share,path=$share" \
	--stats-json --append "quiet guest.run=vsock-fs guest.conns=$vconns guest.bytes=$vbytes guest.fs_kib=$fskib"
host_done "$dir/hlog"
cat "$dir/vserve.log" "$dir/vconnect.log"
grep -q "VIRTIOFS host.bin: $((fskib * 1024)) bytes, sha256 equal" "$dir/hlog" ||
	e2e_fail "fs: the guest did not read host.bin intact"
want=$(sed -n 's/.*VIRTIOFS guest.bin sha256=\([0-9a-f]*\).*/\1/p' "$dir/hlog" | head -n1)
got=$(sha256sum <"$share/guest.bin" | cut -d' ' -f1)
[ -n "$want" ] && [ "$got" = "$want" ] || e2e_fail "fs: guest.bin: sha256 $got here, $want in the guest"
# Reaped by minivmm at its exit (no pgrep in this busybox: /proc).
for c in /proc/[0-9]*/cmdline; do
	tr '\0' ' ' <"$c" 2>/dev/null | grep -q "source=$share" &&
		e2e_fail "fs: virtiofsd still running after minivmm: $(tr '\0' ' ' <"$c")"
done
echo "fs: $fskib KiB each way through the virtiofsd minivmm started (--fs path=), sha256 equal"
grep -q "vsock: guest CID 3, host side /dev/vhost-vsock" "$dir/hlog" ||
	e2e_fail "vhost=on: no vhost-vsock device"
vsock_ok vhost=on "$dir/hlog" vsock $vconns $vbytes "$dir/vserve.log" "$dir/vconnect.log"
stats=$(grep -o '"vsock":{[^}]*}' "$dir/hlog" | tail -n1)
echo "vhost=on stats (the kernel's work: 0): $stats"
[ "$(val bad_packets)" = 0 ] || e2e_fail "vhost=on: statistics $stats"
its_irqs "vhost=on" "$dir/hlog"
echo "PASS: arm64 virtio-net: $n pairs, ping, $mb MiB each way md5-equal, traffic on several pairs;" \
	"vsock: $conns + $conns connections, $bytes bytes each way each, hashed;" \
	"vhost=on: $vconns + $vconns connections, $vbytes bytes each way each, hashed;" \
	"rx and tx LPIs through the ITS; virtio-fs: $fskib KiB each way, sha256 equal; exit 0 three times"
