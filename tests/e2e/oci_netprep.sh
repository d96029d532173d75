# shellcheck shell=bash
# oci_netprep.sh: sourced in the rig's L1 by what runs containers on a
# network there (tests/e2e/oci_network.sh, tests/e2e/oci_containerd.sh,
# bench/oci_net_rig.sh).  oci_net_prepare [MODULE...]: loads MODULEs
# (default: CNI's bridge, portmap and firewall plugins' modules and the
# runtime's tc redirect's) from the L1 kernel's module tree (OCI_MODROOT,
# set by tests/e2e/oci-rig.sh; the rig's L1 loads none of them), brings lo
# up (a fresh L1 has it down) and makes /dev/net/tun and /run/netns.  A
# module that does not load is noted on stderr, not fatal (it may be built
# in; what needs it fails later, saying so).
OCI_NET_MODULES="tun bridge veth br_netfilter nf_conntrack nf_nat nf_tables nft_compat
	nft_chain_nat nft_nat nft_masq nft_ct nft_fib_inet nft_reject_inet xt_MASQUERADE
	xt_comment xt_mark xt_conntrack xt_addrtype xt_multiport xt_nat xt_tcpudp
	sch_ingress cls_u32 act_mirred"
oci_net_prepare() {
	local m mods=("$@")
	((${#mods[@]})) || read -r -d "" -a mods <<<"$OCI_NET_MODULES" || true
	for m in "${mods[@]}"; do
		modprobe -d "$OCI_MODROOT" "$m" 2>/dev/null || echo "note: modprobe $m failed" >&2
	done
	ip link set lo up
	if [[ ! -e /dev/net/tun ]]; then
		mkdir -p /dev/net
		mknod /dev/net/tun c 10 200
	fi
	mkdir -p /run/netns
}
