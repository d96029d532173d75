#!/bin/bash
# oci_network.sh: minivmm-oci on podman's default network (issue 30, item
# 1), inside the rig's L1 (run by tests/e2e/oci-rig.sh).  Debian's podman
# 4.3 uses CNI (87-podman-bridge.conflist: bridge cni-podman0 with
# 10.88.0.0/16, portmap, firewall, tuning), which needs the bridge, veth
# and netfilter modules the rig's L1 does not load: loaded here from the
# L1 kernel's module tree (OCI_MODROOT), with sch_ingress, cls_u32 and
# act_mirred for the runtime's tc redirect.  One container (one VM):
#  - `podman run -d -p 18080:80` with the default network, 2 vCPUs: the
#    guest's eth0 has one queue pair per vCPU, the veth's MAC (the one the
#    bridge learned) and address (10.88.x.y/16), a default route via
#    10.88.0.1 and MTU 1500; it fetches
#    1 MiB from busybox httpd on the L1 side of the bridge, md5 compared;
#    then it serves a page with busybox httpd, which the L1 fetches through
#    the published port (portmap's DNAT); a second container (VM), a
#    pod's (its infra container a VM of this runtime too, without a NIC),
#    fetches that page by the first's IP and resolves l1host.test through
#    the resolv.conf podman wrote (--dns: tests/e2e/dns_answer.py on the
#    bridge's L1 address); a third in the first's namespace (--network
#    container:web, as a pod's second container) is refused at create and
#    the first still serves; `podman stop` ends the first;
#  - `--network host` refused with the runtime's one-line reason, no VM;
#  - rootless podman (an unprivileged user, slirp4netns): a container
#    fetches the 1 MiB from 198.18.0.1 (the L1's lo), md5 compared, and
#    serves a page the L1 fetches through -p (podman's default port
#    handler, rootlessport), with a rw volume it reads and writes (the file on the host
#    the user's); `podman stop` and `podman rm`; `--network none` with a
#    read-only volume and a root over virtio-fs (section 3).
# Addresses: podman's 10.88.0.0/16 and 198.18.0.1, inside the L1 only
# (slirp4netns's 10.0.2.0/24 is inside the container's namespace).
set -uo pipefail
. "$(dirname "$0")/oci_lib.sh"
. "$(dirname "$0")/oci_netprep.sh"
oci_setup

[[ -n "${OCI_MODROOT:-}" && -d "$OCI_MODROOT" ]] || e2e_fail "OCI_MODROOT not set (run through oci-rig.sh)"
oci_net_prepare

P=(podman --root "$W/pstore" --runroot /run/oci-prun.$$ --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file)
RT=(--runtime "$OCI_RUNTIME")
"${P[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null || e2e_fail "podman import"

mkdir -p "$W/www"
cp "$W/blob" "$W/www/blob"
sum=$(md5sum <"$W/blob" | cut -d' ' -f1)
busybox httpd -f -p 18081 -h "$W/www" &
srv=$!
trap 'kill $srv 2>/dev/null' EXIT

echo "modules, image, server ready after $SECONDS s"
t0=$SECONDS
# 1. One container (one VM) proves both directions: with the default
#    network it prints its eth0 (address, routes, MAC, MTU), fetches 1 MiB
#    from busybox httpd on the L1 side of the bridge (md5), then serves a
#    page on port 80, published as 18080.
"${P[@]}" "${RT[@]}" run -d --name web -p 18080:80 --annotation org.minivmm.vcpus=2 \
	localhost/bb sh -c '
	ip -o addr show dev eth0; ip route; cat /sys/class/net/eth0/address
	echo "pairs $(ls -d /sys/class/net/eth0/queues/rx-* | wc -l) $(ls -d /sys/class/net/eth0/queues/tx-* | wc -l) cpus $(nproc)"
	echo "mtu $(cat /sys/class/net/eth0/mtu)"
	echo "md5 $(wget -q -O - http://10.88.0.1:18081/blob | md5sum)"
	mkdir -p /www; echo hello-from-the-vm >/www/index.html; echo serving
	trap "exit 0" TERM; httpd -f -p 80 -h /www & wait' >/dev/null 2>"$W/err1" ||
	oci_bad "podman run -d -p: $(cat "$W/err1")"
echo "podman run -d returned after $((SECONDS - t0)) s"
t0=$SECONDS
for _ in $(seq 300); do
	"${P[@]}" logs web 2>/dev/null | grep -q serving && break
	sleep 0.5
done
"${P[@]}" logs web >"$W/out1" 2>&1
cat "$W/out1"
echo "container up and served after $((SECONDS - t0)) s"
got=$(sed -n 's/^md5 \([0-9a-f]*\).*/\1/p' "$W/out1")
[[ "$got" == "$sum" ]] &&
	oci_ok "default network: 1 MiB fetched from the L1 (10.88.0.1:18081), md5 $got" ||
	oci_bad "default network fetch: md5 '$got' want $sum"
grep -Eq "inet 10\.88\.[0-9]+\.[0-9]+/16" "$W/out1" &&
	grep -q "^default via 10.88.0.1 dev eth0" "$W/out1" && grep -q "^mtu 1500$" "$W/out1" &&
	oci_ok "guest eth0: the veth's address, default route via 10.88.0.1, MTU 1500" ||
	oci_bad "guest eth0 configuration: $(cat "$W/out1")"
# One queue pair per vCPU (the tap's queues, the NIC's pairs): 2 vCPUs.
grep -qx "pairs 2 2 cpus 2" "$W/out1" &&
	oci_ok "org.minivmm.vcpus=2: eth0 has 2 rx and 2 tx queues, one pair per vCPU" ||
	oci_bad "queue pairs: $(grep '^pairs' "$W/out1")"
# The guest's MAC is the veth's (CNI's, not libvmm's derived one), and
# the bridge learned it from the guest's frames.
mac=$(grep -Em1 '^([0-9a-f]{2}:){5}[0-9a-f]{2}$' "$W/out1")
vmac=$("${P[@]}" inspect -f '{{.NetworkSettings.MacAddress}}' web 2>/dev/null)
[[ -n "$mac" && "$mac" == "$vmac" ]] && bridge fdb show br cni-podman0 2>/dev/null | grep -qi "^$mac " &&
	oci_ok "guest eth0 MAC $mac: the veth's (podman inspect), learned by the bridge" ||
	oci_bad "MAC '$mac', podman's '$vmac'; bridge: $(bridge fdb show br cni-podman0 2>&1 | head -5)"
page=
for _ in $(seq 30); do
	page=$(wget -q -T 5 -O - http://10.88.0.1:18080/ 2>/dev/null) && [[ -n "$page" ]] && break
	page=$(wget -q -T 5 -O - http://127.0.0.1:18080/ 2>/dev/null) && [[ -n "$page" ]] && break
	sleep 1
done
[[ "$page" == hello-from-the-vm ]] && oci_ok "-p 18080:80: the L1 fetched the VM's page through podman's port forwarding" ||
	oci_bad "-p 18080:80: page '$page'; iptables: $(iptables -t nat -S 2>&1 | head -20)"
# A second container (a second VM) on the same podman network reaches the
# first by its IP, and resolves a name through the resolv.conf podman
# wrote for it (--dns: a one-name server on the bridge's L1 side).
python3 "$(dirname "$0")/dns_answer.py" 10.88.0.1 53 l1host.test 10.88.0.1 &
dns=$!
trap 'kill $srv $dns 2>/dev/null' EXIT
webip=$("${P[@]}" inspect -f '{{.NetworkSettings.IPAddress}}' web 2>/dev/null)
# The second container is a pod's (podman pod create through this
# runtime: its infra container, /catatonit -P, is a VM too): the infra's
# VM must leave the pod's namespace to it, or it would be refused.
t0=$SECONDS
"${P[@]}" "${RT[@]}" pod create --name pod1 --dns 10.88.0.1 >/dev/null 2>"$W/errp" ||
	oci_bad "podman pod create: $(cat "$W/errp")"
"${P[@]}" "${RT[@]}" run --rm --pod pod1 localhost/bb sh -c "
	grep nameserver /etc/resolv.conf
	echo \"page \$(wget -q -O - http://$webip/)\"
	nslookup l1host.test 2>&1" >"$W/out2" 2>&1
rc=$?
cat "$W/out2"
infra=$("${P[@]}" pod inspect -f '{{.InfraContainerID}}' pod1 2>/dev/null)
irt=$("${P[@]}" inspect -f '{{.OCIRuntime}} {{.State.Status}}' "$infra" 2>&1)
echo "pod1's infra container: $irt"
grep -q "^page hello-from-the-vm$" "$W/out2" &&
	oci_ok "two containers on one network: the second VM fetched the first's page from $webip ($((SECONDS - t0)) s)" ||
	oci_bad "container to container ($webip): rc $rc $(head -c 300 "$W/out2")"
[[ "$irt" == *minivmm-oci*" running" ]] && grep -q "^page hello-from-the-vm$" "$W/out2" &&
	oci_ok "a pod: its infra container a VM of this runtime without a NIC, its application container's VM on the pod's network" ||
	oci_bad "pod1: infra '$irt' (want $OCI_RUNTIME running), application rc $rc"
"${P[@]}" pod rm -f -t 0 pod1 >/dev/null 2>&1
# busybox nslookup: "Name: l1host.test" then "Address: 10.88.0.1" (the
# server's own lines come before, its address with :53).
grep -qx "nameserver 10.88.0.1" "$W/out2" &&
	sed -n '/^Name:[[:space:]]*l1host.test/,$p' "$W/out2" | grep -Eq "^Address:[[:space:]]*10\.88\.0\.1$" &&
	oci_ok "DNS: l1host.test resolved to 10.88.0.1 through podman's resolv.conf (--dns 10.88.0.1)" ||
	oci_bad "DNS through podman's resolv.conf: $(head -c 300 "$W/out2")"
kill $dns 2>/dev/null
# A second VM in web's namespace (--network container:web: what a pod's
# second container does) is refused at create, before any VM, and web's
# tap (its queues, its redirect) is left as it was: the L1 still gets the
# page through the published port.
t0=$SECONDS
"${P[@]}" "${RT[@]}" run --rm --network container:web localhost/bb true >"$W/out4" 2>&1
rc=$?
page=$(wget -q -T 10 -O - http://10.88.0.1:18080/ 2>/dev/null)
[[ $rc -ne 0 ]] && grep -q "already served by another container's VM" "$W/out4" &&
	[[ "$page" == hello-from-the-vm ]] &&
	oci_ok "--network container:web refused after $((SECONDS - t0)) s ($(grep -m1 -o "the container's network namespace is already served[^:]*" "$W/out4")); web still serves through -p" ||
	oci_bad "--network container:web: rc $rc, web's page '$page': $(head -c 400 "$W/out4")"
t0=$SECONDS
"${P[@]}" stop -t 10 web >/dev/null 2>&1
state=$("${P[@]}" inspect -f '{{.State.Status}} {{.State.ExitCode}}' web 2>&1)
[[ "$state" == exited* ]] && oci_ok "podman stop: the web container exited (status ${state#* }) after $((SECONDS - t0)) s" ||
	oci_bad "podman stop: state '$state'"
"${P[@]}" rm -f web >/dev/null 2>&1

# 2. --network host: one line, no VM.
t0=$SECONDS
"${P[@]}" "${RT[@]}" run --rm --network host localhost/bb true >"$W/out3" 2>&1
rc=$?
[[ $rc -ne 0 ]] && grep -q "the host's network .* is not supported by minivmm-oci" "$W/out3" &&
	oci_ok "--network host refused after $((SECONDS - t0)) s: $(grep -m1 "host's network" "$W/out3")" ||
	oci_bad "--network host: rc $rc: $(cat "$W/out3")"

# 3. Rootless podman: an unprivileged user (uid 1500, subordinate ids
#    from /etc/subuid and /etc/subgid, newuidmap/newgidmap: Debian's uidmap)
#    runs a container under minivmm-oci with rootless podman's default
#    network, slirp4netns (podman 4.3 has no pasta): its tap0 in the
#    container's namespace takes the tc redirect a veth takes.  The
#    container fetches the 1 MiB blob from busybox httpd above through
#    198.18.0.1, an address of the L1's lo (slirp4netns connects from the
#    L1's own stack: nothing routed out of the L1), md5 compared; `podman
#    stop` ends it and `podman rm` removes it (and the runtime's state
#    directory, $XDG_RUNTIME_DIR/minivmm-oci/ID).  The user is added to
#    the L1's throw-away root only (RIG_IN_L1), never to a real host.
#    /dev/kvm 0666 is what Debian's udev rule gives it; the kernel refuses
#    a user namespace to a chrooted process, and the L1 runs tests in a
#    chroot: every podman call starts with it undone (unchroot.py).
if [[ "${RIG_IN_L1:-}" != 1 ]]; then
	echo "note: rootless section skipped: it adds a user, only in the rig's throw-away L1"
else
	t_rl=$SECONDS
	for b in newuidmap newgidmap slirp4netns; do
		command -v "$b" >/dev/null || oci_bad "rootless: $b not installed (uidmap, slirp4netns: scripts/deps.sh)"
	done
	RU=1500 RH=$W/rlhome
	useradd -M -d "$RH" -u $RU -s /bin/sh mvmrl
	grep -q '^mvmrl:' /etc/subuid || echo "mvmrl:200000:65536" >>/etc/subuid
	grep -q '^mvmrl:' /etc/subgid || echo "mvmrl:200000:65536" >>/etc/subgid
	mkdir -p "$RH" /run/user/$RU
	chown $RU:$RU "$RH" /run/user/$RU
	chmod 0700 /run/user/$RU
	chmod 0666 /dev/kvm /dev/net/tun
	# The runtime (in the user's namespace, as its "root") reads the
	# kernel, the initrd and the image from wherever the build put them:
	# their directories traversable in this throw-away root; it writes
	# its console logs and timings there too.
	for f in "$OCI_RUNTIME" "$OCI_VMLINUX" "$OCI_INITRD" "$OCI_IMAGE_TAR"; do
		d=$(dirname "$(readlink -f "$f")")
		while [[ "$d" != / ]]; do
			chmod o+x "$d"
			d=$(dirname "$d")
		done
	done
	chmod 1777 "$W/console"
	chmod 0666 /tmp/oci-timings.json 2>/dev/null
	ip addr add 198.18.0.1/32 dev lo
	asrl() {
		unshare --mount -- "$(dirname "$0")/unchroot.py" \
			setpriv --reuid=$RU --regid=$RU --init-groups \
			env -i HOME="$RH" USER=mvmrl LOGNAME=mvmrl XDG_RUNTIME_DIR=/run/user/$RU \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
	}
	RP=(podman --root "$RH/store" --runroot "/run/user/$RU/prun" --storage-driver vfs
		--cgroup-manager cgroupfs --events-backend file)
	asrl "${RP[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null 2>"$W/rlerr" ||
		oci_bad "rootless podman import: $(cat "$W/rlerr")"
	oci_step "rootless: user, image ready"
	# Few podman calls (each costs seconds in the L1): the container's
	# output is read from conmon's log file, not through podman logs.
	t0=$SECONDS
	# -p with podman's default port handler (rootlessport): a child in
	# the container's namespace dials the container's address, which the
	# runtime took off slirp4netns's tap0 there and routes to the VM
	# (netns_local_path()).
	# A volume too (-v, virtio-fs): virtiofsd runs in the user's
	# namespace as its root, so the container's root writes as the user,
	# as under runc rootless.
	RV=$RH/vol
	mkdir -p "$RV"
	echo host-file >"$RV/h.txt"
	chown -R $RU:$RU "$RV"
	asrl "${RP[@]}" "${RT[@]}" run -d --name rl1 -v "$RV:/data" \
		--network slirp4netns -p 18087:8080 localhost/bb sh -c '
		ip -o addr show; ip route; echo "mtu $(cat /sys/class/net/tap0/mtu)"
		echo "vol $(cat /data/h.txt) $(grep " /data " /proc/mounts | cut -d" " -f3)"
		echo guest-file >/data/g.txt && echo "vol-written"
		echo "md5 $(wget -q -O - http://198.18.0.1:18081/blob | md5sum)"
		mkdir /tmp/w && echo rootless-page >/tmp/w/index.html && httpd -p 8080 -h /tmp/w
		echo fetched
		trap "echo got-TERM; exit 0" TERM; sleep 600 & wait' >"$W/rlid" 2>"$W/rlerr" ||
		oci_bad "rootless podman run -d: $(cat "$W/rlerr")"
	rid=$(cat "$W/rlid")
	rlog=$RH/store/vfs-containers/$rid/userdata/ctr.log
	for _ in $(seq 600); do
		grep -q fetched "$rlog" 2>/dev/null && break
		sleep 0.2
	done
	sed 's/^[^ ]* [^ ]* [^ ]* //' "$rlog" >"$W/rlout" 2>&1
	cat "$W/rlout"
	got=$(sed -n 's/^md5 \([0-9a-f]*\).*/\1/p' "$W/rlout")
	[[ "$got" == "$sum" ]] && grep -q "tap0 *inet 10\.0\.2\.100/24" "$W/rlout" &&
		oci_ok "rootless podman (uid $RU, slirp4netns): the VM's tap0 10.0.2.100 ($(grep -m1 '^mtu ' "$W/rlout")) fetched 1 MiB from 198.18.0.1, md5 $got ($((SECONDS - t0)) s from run -d)" ||
		oci_bad "rootless fetch: md5 '$got' want $sum: $(head -c 600 "$W/rlout") $(cat "$W/rlerr")"
	[[ $(cat "$RV/g.txt" 2>/dev/null) == guest-file && $(stat -c %u "$RV/g.txt") == "$RU" ]] &&
		grep -q '^vol host-file virtiofs$' "$W/rlout" &&
		oci_ok "rootless -v DIR:/data (virtio-fs): the guest read the host's file, its file is on the host, owned by uid $RU (the container's root)" ||
		oci_bad "rootless volume: $(grep '^vol' "$W/rlout") host sees '$(cat "$RV/g.txt" 2>&1)' owner $(stat -c %u "$RV/g.txt" 2>&1) $(cat "$W/rlerr")"
	for _ in 1 2 3 4 5; do
		# timeout: a forwarder that cannot reach the VM accepts and
		# never answers (seen before netns_local_path()) past wget's -T.
		page=$(timeout 15 wget -q -T 10 -O - http://127.0.0.1:18087/ 2>&1) && break
		sleep 1
	done
	[[ "$page" == rootless-page ]] &&
		oci_ok "rootless -p 18087:8080 (podman's default port handler, rootlessport): the L1 fetched the VM's page" ||
		oci_bad "rootless -p 18087:8080: got '$page'"
	# What podman put in config.json for the cgroup (rootless cgroupfs).
	echo "rootless config.json: $(grep -o '"cgroupsPath":"[^"]*"' "$RH/store/vfs-containers/$rid/userdata/config.json" 2>/dev/null || echo no cgroupsPath)"
	t0=$SECONDS
	asrl "${RP[@]}" stop -t 30 rl1 >/dev/null 2>"$W/rlerr"
	rc=$?
	[[ $rc -eq 0 ]] && grep -q got-TERM "$rlog" &&
		oci_ok "rootless podman stop: the container took TERM and exited, $((SECONDS - t0)) s" ||
		oci_bad "rootless podman stop: rc $rc $(cat "$W/rlerr") $(tail -n 3 "$rlog")"
	t0=$SECONDS
	asrl "${RP[@]}" rm rl1 >/dev/null 2>"$W/rlerr"
	rc=$?
	[[ $rc -eq 0 && ! -e "$RH/store/vfs-containers/$rid" && ! -e /run/user/$RU/minivmm-oci/$rid ]] &&
		oci_ok "rootless podman rm: the container's storage and the runtime's state in /run/user/$RU/minivmm-oci gone, $((SECONDS - t0)) s" ||
		oci_bad "rootless podman rm: rc $rc $(ls /run/user/$RU/minivmm-oci 2>&1) $(cat "$W/rlerr")"
	# --network none: the VM gets no NIC (the namespace podman made has
	# only lo).
	# And a read-only volume: writes refused; and the root over virtio-fs
	# (virtiofsd on podman's vfs tree, in the user's namespace): the
	# container writes into it and owns its files as root.
	out=$(asrl "${RP[@]}" "${RT[@]}" run --rm --network none -v "$RV:/ro:ro" \
		--annotation org.minivmm.rootfs=virtiofs localhost/bb sh -c '
		ls /sys/class/net | tr "\n" " "; cat /ro/h.txt; touch /ro/x 2>/dev/null || echo ro-refused
		echo "root $(grep " / " /proc/mounts | cut -d" " -f3 | tail -n 1)"
		echo in-root >/w.txt && chown 1234:5678 /w.txt && echo "wrote $(cat /w.txt) $(stat -c %u:%g /w.txt) $(stat -c %u /bin/busybox)"' 2>"$W/rlerr")
	rc=$?
	[[ $rc -eq 0 && "$out" == "lo host-file"*ro-refused*"root virtiofs"*"wrote in-root 1234:5678 0" && ! -e $RV/x ]] &&
		oci_ok "rootless --network none: only lo in the guest; -v DIR:/ro:ro read, a write refused; the root over virtio-fs (org.minivmm.rootfs=virtiofs): a file written and chowned in it, the image's files root's" ||
		oci_bad "rootless --network none / ro volume / virtio-fs root: rc $rc, '$out' $(cat "$W/rlerr")"
	echo "rootless section took $((SECONDS - t_rl)) s"
fi

oci_finish
