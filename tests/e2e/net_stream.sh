#!/bin/bash
# net_stream.sh MINIVMM KERNEL INITRD
# virtio-net on the stream back end: Debian's passt, started by an
# unprivileged user (uid 65534) in a network namespace of L1 whose only
# interface is a tap with 198.18.0.1/24 (and a default route through it
# that leads nowhere: passt takes its addresses from the route's
# interface), listens on a Unix socket; minivmm --net stream=SOCKET
# (--user 65534:65534: /dev/kvm and the files are opened as root, the VM
# runs as that uid) boots a 2-vCPU guest that gets 198.18.0.2/24.  The
# guest sends 4 MiB to busybox nc on 198.18.0.1, then fetches 4 MiB over
# HTTP from L1's busybox httpd there, through passt's sockets; md5s
# compared both ways (that order: tests/e2e/CMakeLists.txt).  Then passt is killed: the guest sees its link go down
# (carrier 0, a configuration interrupt) and ends normally, minivmm exits
# 0.  --stats-json: one queue pair that carried the frames, no TX drop
# before the peer went.  Prints the throughput measured in the guest (rig
# numbers: noisy, nested TCG).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm
command -v passt >/dev/null || { echo "SKIP: no passt (apt-get install passt)"; exit 77; }
command -v setpriv >/dev/null || e2e_fail "needs setpriv (util-linux)"

if [[ -z "${NET_STREAM_NETNS:-}" ]]; then
	command -v unshare >/dev/null && command -v ip >/dev/null ||
		e2e_fail "needs unshare (util-linux) and ip (iproute2)"
	NET_STREAM_NETNS=1 exec unshare --net -- "$0" "$@"
fi
vmm=$1 kernel=$2 initrd=$3
mb=4
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/net_stream.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
chmod 755 "$dir"

ip link set lo up
ip tuntap add dev l1side mode tap
ip addr add 198.18.0.1/24 dev l1side
ip link set l1side up
ip route add default via 198.18.0.254 dev l1side
mkdir "$dir/www"
dd if=/dev/urandom of="$dir/www/down.bin" bs=1M count=$mb 2>/dev/null
down=$(md5sum <"$dir/www/down.bin" | cut -d' ' -f1)
busybox httpd -f -p 198.18.0.1:8080 -h "$dir/www" &
pids+=($!)
mkfifo "$dir/hold"
exec 3<>"$dir/hold"
busybox nc -l -p 5001 >"$dir/up0" <&3 &
pids+=($!)

# passt as uid 65534 in this namespace, its socket in a directory of its
# own; -4: IPv4 only; the guest's address and the gateway given (no DHCP
# needed: the guest sets them itself), the gateway not mapped to the host.
# passt isolates itself in a user namespace of its own, which the kernel
# refuses to a chrooted process, and the rig's L1 runs tests in a chroot
# (tests/rig/l1-init): there passt starts with the chroot undone
# (unchroot.py, in a mount namespace of its own), the same files at the
# same paths.
mkdir "$dir/passt"
chown 65534:65534 "$dir/passt"
sock=$dir/passt/passt.socket
passt_cmd=(setpriv --reuid=65534 --regid=65534 --clear-groups
	passt -f -e -4 -s "$sock" -a 198.18.0.2 -n 24 -g 198.18.0.254 --no-map-gw)
if [[ $(stat -c %d:%i /) == $(stat -L -c %d:%i /proc/1/root 2>/dev/null) ]]; then
	"${passt_cmd[@]}" >"$dir/passt.log" 2>&1 &
else
	unshare --mount -- "$(dirname "$0")/unchroot.py" "${passt_cmd[@]}" \
		>"$dir/passt.log" 2>&1 &
fi
passt=$!
pids+=($passt)
"$(dirname "$0")/wait-listening.sh" "$sock" ||
	{ cat "$dir/passt.log"; e2e_fail "passt did not listen on $sock"; }
[[ $(stat -c %u "/proc/$passt") == 65534 ]] || e2e_fail "passt does not run as 65534"

# Once the guest says the transfers are done, end passt: its end of the
# socket closes and the guest must see the link go down.
(
	for _ in $(seq 6000); do
		grep -q "NET-XFER-DONE" "$dir/log" 2>/dev/null && break
		sleep 0.1
	done
	kill "$passt" 2>/dev/null || true
) &
pids+=($!)

# Diagnostics only (issue 28's upload stall): if the upload has not ended
# 30 s after it began, print once, and again 60 s later, both ends' socket
# queues (TCP to nc; the Unix socket between minivmm and passt), where
# passt and minivmm's threads wait, and passt's log tail.  Two prints
# (30 s and 75 s in) show whether anything moved meanwhile.
diag() {
	local p
	echo "NET-DIAG $1: ss TCP (port 5001)"
	ss -tnioe state all '( sport = :5001 or dport = :5001 )' 2>&1 | sed 's/^/  /'
	# (L1 has no unix_diag module: ss shows these queues as 0 whatever
	# they hold; the processes below are what tells.)
	echo "NET-DIAG $1: ss Unix (the passt socket)"
	ss -xnpe 2>&1 | grep -E "passt|minivmm|Recv-Q" | sed 's/^/  /'
	# Debian's passt runs as passt.avx2 on a CPU with AVX2.
	for p in $(pgrep -x 'passt|passt\.avx2') $(pgrep -x minivmm); do
		echo "NET-DIAG $1: $(cat /proc/$p/comm) $p: $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-60)"
		for t in /proc/$p/task/*; do
			echo "  $(cat $t/comm 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null) syscall=$(cut -d' ' -f1-3 $t/syscall 2>/dev/null) state=$(sed -n 's/^State:\t//p' $t/status 2>/dev/null) utime+stime=$(cut -d' ' -f14,15 $t/stat 2>/dev/null)"
			sed 's/^/    /' $t/stack 2>/dev/null | head -8
		done
	done
	echo "NET-DIAG $1: passt.log tail"
	grep -v syslog "$dir/passt.log" | tail -5 | sed 's/^/  /'
}
(
	# Few processes: L1 has one CPU, which the guest's vCPUs share.
	for _ in $(seq 600); do
		grep -q "NET-UP0" "$dir/log" 2>/dev/null && break
		sleep 1
	done
	for n in 1 2; do
		sleep $((n == 1 ? 30 : 45))
		grep -q "NET-UP \|NET-XFER-DONE" "$dir/log" 2>/dev/null && exit 0
		diag "$n" || true
	done
) &
pids+=($!)

e2e_run_vmm "$dir/log" -- "$vmm" -v --smp 2 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --net "stream=$sock" --user 65534:65534 --stats-json \
	--append "quiet guest.run=net-stream guest.mb=$mb"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$dir/log" || {
	sed 's/^/passt: /' "$dir/passt.log" | grep -v syslog | tail -20
	e2e_fail "guest payload failed"
}
for _ in $(seq 100); do
	kill -0 "${pids[1]}" 2>/dev/null || break
	sleep 0.1
done
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
grep -q "NET-DOWN md5=$down " "$dir/log" || e2e_fail "download md5 differs (want $down)"
want=$(sed -n "s/.*NET-UP0 md5=\([0-9a-f]*\).*/\1/p" "$dir/log" | head -1)
got=$(md5sum <"$dir/up0" | cut -d' ' -f1)
[[ -n "$want" && "$want" == "$got" ]] || e2e_fail "upload: md5 $got on L1, $want in the guest"
grep -q "NET-LINK-DOWN" "$dir/log" || e2e_fail "the guest never saw the link go down"
grep -q "stream of pair 0: the peer went away; link down" "$dir/log" ||
	e2e_fail "minivmm did not log the peer going away"
pairs=$(grep -o '"nets":\[{"pairs":\[[^]]*\]' "$dir/log" | head -1)
[[ -n "$pairs" ]] || e2e_fail "no NIC in --stats-json"
npairs=$(grep -o '"rx_packets"' <<<"$pairs" | wc -l)
[[ $npairs -eq 1 ]] || e2e_fail "$npairs queue pairs, expected 1"
rxp=$(grep -o '"rx_packets":[0-9]*' <<<"$pairs" | cut -d: -f2)
txp=$(grep -o '"tx_packets":[0-9]*' <<<"$pairs" | cut -d: -f2)
[[ $rxp -gt 1000 && $txp -gt 1000 ]] || e2e_fail "rx_packets $rxp, tx_packets $txp: too few"
dcs=$(sed -n 's/.*NET-DOWN md5=[0-9a-f]* cs=\([0-9]*\).*/\1/p' "$dir/log")
ucs=$(sed -n 's/.*NET-UP cs=\([0-9]*\).*/\1/p' "$dir/log")
echo "NET-STREAM throughput (guest clock): down $mb MiB in ${dcs}0 ms, up $mb MiB in ${ucs}0 ms"
echo "NET-STREAM pair 0: $pairs"
echo "PASS: passt as uid 65534, $mb MiB each way through it with md5s equal, link down when passt ended"
