#!/bin/bash
# tests/unit/netcount.sh [EMULATOR] NETCOUNT: the guest's virtio-net
# notification counter of bench/net_rig.sh (tests/guest/netcount.c) checks
# itself, KVM-free, on files in the forms its sources have:
# - `ethtool -S` statistics as Linux 6.1 names them (rx_queue_N_kicks,
#   ..._packets; the XDP counters beside them left out) and a
#   /proc/interrupts of two CPUs with two queue pairs (the other virtio
#   devices' lines, virtio10 among them, and the config vector left out):
#   the exact sums;
# - the names of Linux 6.9 on (rxN_kicks, no packets per queue): the kicks,
#   and the packets from the interface's sysfs statistics (lo's here);
# - refused with exit 1 and why: queues sharing one vector, statistics
#   without kicks, a missing file, an interface whose driver offers no
#   statistics (lo); bad arguments exit 2;
# - where this machine has a virtio-net NIC with a vector per queue (and
#   no EMULATOR runs the program), the real sources: one line of six
#   counts, exit 0; said, not checked, where it has none.
set -uo pipefail
(($# == 1 || $# == 2)) || { echo "usage: $0 [EMULATOR] NETCOUNT"; exit 2; }
prog=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

# shellcheck source=tests/unit/expect.sh
. "$(dirname "$0")/expect.sh"

cat >"$dir/stats61" <<'EOF'
NIC statistics:
     rx_queue_0_packets: 1000
     rx_queue_0_bytes: 9000000
     rx_queue_0_drops: 0
     rx_queue_0_xdp_packets: 77
     rx_queue_0_kicks: 3
     rx_queue_1_packets: 500
     rx_queue_1_kicks: 4
     tx_queue_0_packets: 200
     tx_queue_0_xdp_tx: 55
     tx_queue_0_kicks: 20
     tx_queue_1_packets: 100
     tx_queue_1_kicks: 10
     tx_queue_1_tx_timeouts: 0
EOF
cat >"$dir/irqs" <<'EOF'
           CPU0       CPU1
  0:         45          0   IO-APIC   2-edge      timer
 24:          1          2  PCI-MSIX-0000:00:02.0   0-edge      virtio0-req.0
 25:          0          0  PCI-MSIX-0000:00:03.0   0-edge      virtio1-config
 26:         40          2  PCI-MSIX-0000:00:03.0   1-edge      virtio1-input.0
 27:          1          3  PCI-MSIX-0000:00:03.0   2-edge      virtio1-output.0
 28:          5         60  PCI-MSIX-0000:00:03.0   3-edge      virtio1-input.1
 29:          0          7  PCI-MSIX-0000:00:03.0   4-edge      virtio1-output.1
 30:        900        900  PCI-MSIX-0000:00:04.0   1-edge      virtio10-input.0
NMI:          0          0   Non-maskable interrupts
ERR:          0
EOF
expect 0 '^rx_kicks=7 tx_kicks=30 rx_interrupts=107 tx_interrupts=11 rx_packets=1500 tx_packets=300$' \
	--stats "$dir/stats61" --interrupts "$dir/irqs" --device virtio1 eth9

cat >"$dir/stats69" <<'EOF'
NIC statistics:
     rx_drops: 0
     rx_kicks: 99
     tx_kicks: 98
     rx0_drops: 0
     rx0_xdp_packets: 5
     rx0_kicks: 2
     rx1_kicks: 3
     tx0_kicks: 11
     tx1_kicks: 12
     tx1_tx_timeouts: 0
EOF
expect 0 '^rx_kicks=5 tx_kicks=23 rx_interrupts=107 tx_interrupts=11 rx_packets=[0-9]+ tx_packets=[0-9]+$' \
	--stats "$dir/stats69" --interrupts "$dir/irqs" --device virtio1 lo

sed 's/virtio1-input.0/virtio1-virtqueues/; /virtio1-input.1\|virtio1-output/d' "$dir/irqs" >"$dir/irqs-shared"
expect 1 'no virtio1-input.N / -output.N lines \(its queues share one vector\)' \
	--stats "$dir/stats61" --interrupts "$dir/irqs-shared" --device virtio1 eth9
expect 1 'no virtio2-input.N' --stats "$dir/stats61" --interrupts "$dir/irqs" --device virtio2 eth9
grep -v kicks "$dir/stats61" >"$dir/nokicks"
expect 1 'no rx_queue_N_kicks' --stats "$dir/nokicks" --interrupts "$dir/irqs" --device virtio1 eth9
expect 1 "$dir/none: No such file" --stats "$dir/none" --interrupts "$dir/irqs" --device virtio1 eth9
expect 1 "$dir/none: No such file" --stats "$dir/stats61" --interrupts "$dir/none" --device virtio1 eth9
expect 1 '/sys/class/net/lo/device: No such file' lo
expect 1 'lo: (no driver statistics|reading statistics)' --interrupts "$dir/irqs" --device virtio1 lo
expect 2 '^usage: netcount' --stats "$dir/stats61"
expect 2 '^usage: netcount' eth0 eth1
expect 2 '^usage: netcount' --bogus eth0
expect 2 '^usage: netcount' 0123456789abcdefXYZ

# The real sources, where this machine has them.
real=
if (($# == 1)); then
	for d in /sys/class/net/*/device; do
		[[ -e $d ]] || continue
		dev=$(basename "$(readlink "$d")")
		[[ $(basename "$(readlink "$d/driver" 2>/dev/null)") == virtio_net ]] &&
			grep -q " $dev-input\.0$" /proc/interrupts && real=$(basename "$(dirname "$d")") && break
	done
fi
if [[ -n $real ]]; then
	expect 0 '^rx_kicks=[0-9]+ tx_kicks=[0-9]+ rx_interrupts=[0-9]+ tx_interrupts=[0-9]+ rx_packets=[0-9]+ tx_packets=[0-9]+$' "$real"
elif (($# == 2)); then
	echo "not checked here: the real sources, through an emulator"
else
	echo "not checked here: the real sources, no virtio-net NIC with a vector per queue"
fi
exit $fail
