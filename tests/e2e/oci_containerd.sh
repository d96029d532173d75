#!/bin/bash
# oci_containerd.sh: containerd 1.6 (its own daemon, private config) runs the
# busybox image with minivmm-oci as the runc binary of its runc v2 shim
# (`ctr run --runc-binary`), inside the rig's L1 (tests/e2e/oci-rig.sh):
# output, stderr, exit status 7, `ctr task exec` (status, stdio, stdin
# checksum) and `ctr task kill` of a running task (its NIC down, no
# address: no CNI); `ctr run --cni`, no annotation, with Debian's bridge
# plugin (the guest has CNI's address and MAC and fetches 1 MiB from the
# L1); then
# the runtime's own spec/run/list/pause/resume/events as a runc user types
# them, and a guest OOM that stays in the guest; a
# Kubernetes RuntimeClass handler for it that containerd's CRI loads.
set -uo pipefail
. "$(dirname "$0")/oci_lib.sh"
. "$(dirname "$0")/oci_netprep.sh"
oci_setup

sock=/run/oci-ctd.$$/containerd.sock
mkdir -p "$(dirname "$sock")"
cat >"$W/containerd.toml" <<EOF
version = 2
root = "$W/ctd-root"
state = "/run/oci-ctd.$$/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
EOF
containerd --config "$W/containerd.toml" >"$W/containerd.log" 2>&1 &
ctd=$!
trap 'kill $ctd 2>/dev/null; wait $ctd 2>/dev/null' EXIT
for _ in $(seq 300); do
	[[ -S "$sock" ]] && break
	sleep 0.2
done
[[ -S "$sock" ]] || e2e_fail "containerd did not start: $(tail -5 "$W/containerd.log")"
CTR=(ctr --address "$sock")

# An image for containerd: podman builds a docker archive from the tarball.
P=(podman --root "$W/pstore" --runroot /run/oci-prun.$$ --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file)
"${P[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null &&
	"${P[@]}" save --format docker-archive -o "$W/bb-docker.tar" localhost/bb:latest >/dev/null 2>&1 ||
	e2e_fail "podman import/save"
"${CTR[@]}" images import "$W/bb-docker.tar" >/dev/null || e2e_fail "ctr images import"
img=$("${CTR[@]}" images ls -q | grep -m1 bb) || e2e_fail "image not imported"

# ctr asks for a new network namespace: by default the VM gets a NIC on a
# tap there at create, connected at start (below: `ctr run --cni`); the
# tap needs tun, the redirect the tc modules.  Without --cni the NIC
# stays down, unconfigured (c3).
[[ -n "${OCI_MODROOT:-}" && -d "$OCI_MODROOT" ]] || e2e_fail "OCI_MODROOT not set (run through oci-rig.sh)"
oci_net_prepare tun bridge veth sch_ingress cls_u32 act_mirred

"${CTR[@]}" run --rm --snapshotter native --runc-binary "$OCI_RUNTIME" "$img" c1 \
	sh -c 'echo out; echo err >&2; exit 7' >"$W/out1" 2>"$W/err1"
rc=$?
[[ $rc -eq 7 ]] && oci_ok "ctr run: exit status 7" || oci_bad "ctr run: exit status $rc: $(cat "$W/err1")"
[[ "$(cat "$W/out1")" == out ]] && oci_ok "ctr run: stdout" || oci_bad "stdout: $(head -c 200 "$W/out1")"
grep -qx err "$W/err1" && oci_ok "ctr run: stderr" || oci_bad "stderr: $(head -c 300 "$W/err1")"

"${CTR[@]}" run --rm --snapshotter native --runc-binary "$OCI_RUNTIME" "$img" c2 \
	cat /blob >"$W/out2" 2>"$W/err2"
rc=$?
[[ $rc -eq 0 ]] && cmp -s "$W/out2" "$W/blob" && oci_ok "ctr run: 1 MiB byte-identical" ||
	oci_bad "ctr blob: rc $rc, $(stat -c %s "$W/out2") bytes, $(head -c 300 "$W/err2")"

# A detached task, signalled through the shim (runtime kill).
"${CTR[@]}" run -d --snapshotter native --runc-binary "$OCI_RUNTIME" "$img" c3 \
	sh -c 'trap "exit 42" TERM; while :; do sleep 0.2; done' >/dev/null 2>"$W/err3" ||
	oci_bad "ctr run -d: $(cat "$W/err3")"
for _ in $(seq 600); do
	"${CTR[@]}" task ls 2>/dev/null | grep -q 'c3.*RUNNING' && break
	sleep 0.5
done
# ctr task exec (issue 32): the runc shim runs `minivmm-oci exec --process
# --detach --pid-file` with its own pipes for stdio and waits on the pid.
"${CTR[@]}" task exec --exec-id e1 c3 sh -c 'echo ex-out; echo ex-err >&2; exit 5' \
	>"$W/xo1" 2>"$W/xe1"
rc=$?
[[ $rc -eq 5 && "$(cat "$W/xo1")" == ex-out ]] && grep -qx ex-err "$W/xe1" &&
	oci_ok "ctr task exec: exit status 5, stdout and stderr apart" ||
	oci_bad "ctr task exec: rc $rc, out '$(head -c 200 "$W/xo1")', err '$(head -c 300 "$W/xe1")'"
# Plain `ctr run` (no CNI): the guest has the NIC made at create, down,
# and no address but lo's; the host holds its link down.
"${CTR[@]}" task exec --exec-id e3 c3 sh -c 'ip -o link; ip -o addr' >"$W/xo3" 2>&1
nic=$(grep -E '^[0-9]+: eth0: <' "$W/xo3" | grep -cvE '[<,]UP[,>]')
addrs=$(grep -E ' inet6? ' "$W/xo3" | grep -vcE '^[0-9]+: lo ')
[[ "$nic" == 1 && "$addrs" == 0 ]] &&
	oci_ok "ctr run without --cni: guest eth0 down, no address but lo's" ||
	oci_bad "ctr run without --cni: $(head -c 400 "$W/xo3")"
# ... and its link held down (the VM's statistics through the shim:
# containerd's runc shim keeps its containers under /run/containerd/runc/NS).
link=$("$OCI_RUNTIME" --root /run/containerd/runc/default events --stats c3 2>"$W/ev3.err" |
	jq -r '.data.vm.nets[0].link_up' 2>/dev/null)
[[ "$link" == false ]] && oci_ok "ctr run without --cni: the NIC's link held down" ||
	oci_bad "ctr run without --cni: link_up '$link': $(head -c 300 "$W/ev3.err")"
want=$(md5sum <"$W/blob" | cut -d' ' -f1)
got=$("${CTR[@]}" task exec --exec-id e2 c3 sh -c 'cat | md5sum' <"$W/blob" 2>"$W/xe2" | cut -d' ' -f1)
[[ "$got" == "$want" ]] && oci_ok "ctr task exec: 1 MiB of stdin, md5 $got in the guest" ||
	oci_bad "ctr task exec stdin: md5 '$got', want $want: $(head -c 300 "$W/xe2")"
sleep 2 # the shell must have installed its trap
"${CTR[@]}" task kill --signal SIGTERM c3
for _ in $(seq 600); do
	"${CTR[@]}" task ls 2>/dev/null | grep -q 'c3.*STOPPED' && break
	sleep 0.5
done
st=$("${CTR[@]}" task ls 2>/dev/null | awk '$1 == "c3" {print $3}')
[[ "$st" == STOPPED ]] && oci_ok "ctr task kill SIGTERM: stopped" || oci_bad "c3 is $st"
"${CTR[@]}" task delete c3 >/dev/null 2>&1
"${CTR[@]}" container delete c3 >/dev/null 2>&1
[[ -z "$(ls /run/containerd/runc/default 2>/dev/null)" ]] || true

# `ctr run --cni` (issue 30): ctr asks for a new network namespace, runs
# CNI on the task's /proc/PID/ns/net (the VMM process's, a namespace of
# its own) after create, then starts it.  No annotation: such a new
# namespace gives the VM a NIC on a bare tap at create, redirected at
# start to the veth Debian's bridge plugin made
# (containernetworking-plugins, in /usr/lib/cni; ctr 1.6 reads only
# /etc/cni/net.d and /opt/cni/bin: a link).  The guest's eth0 has the
# address host-local gave and a default route via the bridge, and fetches
# 1 MiB from busybox httpd on the L1 side, md5 compared; its MAC is the
# veth's (the guest init gave the NIC, made with a random one, CNI's).
# Addresses: 198.19.7.0/24, on a bridge inside the L1.
mkdir -p /etc/cni/net.d /opt/cni "$W/www"
[[ -e /opt/cni/bin ]] || ln -s /usr/lib/cni /opt/cni/bin
cni=/etc/cni/net.d/10-minivmm-ctr.conflist
printf '%s\n' '{ "cniVersion": "0.4.0", "name": "minivmm-ctr",' \
	'  "plugins": [ { "type": "bridge", "bridge": "mvmctr0", "isGateway": true,' \
	'    "ipMasq": false, "ipam": { "type": "host-local",' \
	"      \"dataDir\": \"$W/cni-ipam\"," \
	'      "ranges": [ [ { "subnet": "198.19.7.0/24", "gateway": "198.19.7.1" } ] ],' \
	'      "routes": [ { "dst": "0.0.0.0/0" } ] } } ] }' >"$cni"
cp "$W/blob" "$W/www/blob"
busybox httpd -f -p 18082 -h "$W/www" &
httpd=$!
trap 'kill $ctd $httpd 2>/dev/null; wait $ctd 2>/dev/null; rm -f "$cni"' EXIT
# host-local's allocation and libcni's cached result live from CNI's ADD
# to its DEL (when ctr run ends): the allocation's file name is the
# address CNI gave the task, the result has the veth's MAC.
(for _ in $(seq 1200); do
	a=$(ls "$W/cni-ipam/minivmm-ctr" 2>/dev/null | grep -m1 '^198\.19\.7\.')
	r=$(ls /var/lib/cni/results/minivmm-ctr-* 2>/dev/null | head -1)
	if [[ -n "$a" && -n "$r" ]]; then
		echo "$a" >"$W/cni-ip"
		cp "$r" "$W/cni-result"
		break
	fi
	sleep 0.1
done) &
watch=$!
t0=$SECONDS
"${CTR[@]}" run --rm --cni --snapshotter native \
	--runc-binary "$OCI_RUNTIME" "$img" c4 sh -c '
	ip -o addr show dev eth0; ip route; cat /sys/class/net/eth0/address
	echo "md5 $(wget -q -O - http://198.19.7.1:18082/blob | md5sum)"' >"$W/out4" 2>"$W/err4"
rc=$?
kill $httpd 2>/dev/null
wait $watch
cat "$W/out4"
cip=$(cat "$W/cni-ip" 2>/dev/null)
got=$(sed -n 's/^md5 \([0-9a-f]*\).*/\1/p' "$W/out4")
[[ $rc -eq 0 && "$got" == "$want" ]] &&
	oci_ok "ctr run --cni: 1 MiB fetched from the L1 (198.19.7.1:18082), md5 $got ($((SECONDS - t0)) s)" ||
	oci_bad "ctr run --cni: rc $rc, md5 '$got' want $want: $(head -c 300 "$W/err4")"
[[ -n "$cip" ]] && grep -q "inet $cip/24 " "$W/out4" &&
	grep -q "^default via 198.19.7.1 dev eth0" "$W/out4" &&
	oci_ok "ctr run --cni: guest eth0 has CNI's address $cip/24, default route via the bridge" ||
	oci_bad "ctr run --cni: CNI gave '$cip'; guest: $(head -c 300 "$W/out4")"
mac=$(grep -Em1 '^([0-9a-f]{2}:){5}[0-9a-f]{2}$' "$W/out4")
cmac=$(jq -r '.result.interfaces[] | select(.name == "eth0") | .mac' "$W/cni-result" 2>/dev/null)
[[ -n "$mac" && "$mac" == "$cmac" ]] &&
	oci_ok "ctr run --cni: guest eth0 MAC $mac, the veth's (CNI's result)" ||
	oci_bad "ctr run --cni: guest MAC '$mac', CNI's veth '$cmac': $(head -c 300 "$W/cni-result" 2>&1)"
rm -f "$cni"
ip link del mvmctr0 2>/dev/null

# The runtime's own command line, as a runc user types it (issue 32):
# `spec` writes the starting config.json; `run` creates, starts, feeds the
# container its stdin, waits, removes it and exits with its status; `run
# -d` returns with it running, `list` shows it, `pause`/`resume` move its
# state, `delete --force` ends it.
rb="$W/rb"
R=("$OCI_RUNTIME" --root "$W/rroot")
mkdir -p "$rb/rootfs" && tar -C "$rb/rootfs" -xf "$OCI_IMAGE_TAR" &&
	(cd "$rb" && "$OCI_RUNTIME" spec) || oci_bad "spec: no config.json"
cfg() { jq "$1" "$rb/config.json" >"$rb/config.new" && mv "$rb/config.new" "$rb/config.json"; }
cfg '.process.terminal = false | .root.readonly = false |
	.process.args = ["sh", "-c", "read l; echo got-$l; exit 7"]'
out=$(echo hello | "${R[@]}" run --bundle "$rb" r1 2>"$W/run.err")
rc=$?
left=$("${R[@]}" list -q)
[[ $rc -eq 7 && "$out" == got-hello && -z "$left" ]] &&
	oci_ok "spec + run: stdin in, stdout out, exit status 7, removed after" ||
	oci_bad "run: rc $rc, out '$out', left '$left', $(head -c 300 "$W/run.err")"
# A guest that allocates past its RAM (256 MiB): busybox dd reads
# /dev/zero into one buffer of the guest's MemTotal less 4 MiB -- under the
# kernel's overcommit limit, over what is free -- so the buffer is filled
# at the kernel's speed and the guest's OOM killer ends dd ("Out of memory"
# in the guest's kernel log, the shell's status 137) without a long
# thrashing phase; the host's cgroup (RAM + the VMM's overhead) counts no
# OOM kill and the VMM process exits with the guest's status.
# (`yes | sort` grew the heap line by line: in CI, beside another rig, that
# guest thrashed for over 300 s after its OOM kill.)  OCI_E2E_OOM=0 skips it.
if [[ ${OCI_E2E_OOM:-1} == 1 ]]; then
	cfg '.process.args = ["sh", "-c", "m=$(awk \"/^MemTotal/ {print int(\\$2 / 1024) - 4}\" /proc/meminfo); echo $m; dd if=/dev/zero of=/dev/null bs=${m}M count=1"] |
		.linux.resources.memory.limit = 268435456 | .linux.cgroupsPath = "/minivmm-e2e/r3"'
	t0=$SECONDS
	out=$(timeout 300 "${R[@]}" run --keep --bundle "$rb" r3 </dev/null 2>"$W/run3.err")
	rc=$?
	hostoom=$(awk '$1 == "oom_kill" {print $2}' /sys/fs/cgroup/minivmm-e2e/r3/memory.events 2>/dev/null)
	"${R[@]}" delete --force r3
	gl=$(grep -c "Out of memory" "$W/console/r3.console.log" 2>/dev/null)
	[[ $rc -eq 137 && "$hostoom" == 0 && ${gl:-0} -ge 1 ]] &&
		oci_ok "guest OOM: dd ($out MiB) killed in the VM (exit 137, guest log 'Out of memory' x$gl, $((SECONDS - t0)) s), host cgroup oom_kill 0" ||
		oci_bad "guest OOM: rc $rc, out '$out', host oom_kill '$hostoom', guest log $gl: $(head -c 300 "$W/run3.err")"
fi
cfg '.process.args = ["sh", "-c", "while :; do sleep 1; done"] | del(.linux.resources.memory) |
	.linux.cgroupsPath = "/minivmm-e2e/r2"'
"${R[@]}" run -d --bundle "$rb" r2 </dev/null >/dev/null 2>"$W/run2.err" ||
	oci_bad "run -d: $(head -c 300 "$W/run2.err")"
st1=$("${R[@]}" list --format json | jq -r '.[] | select(.id == "r2") | .status')
# `events`: one runc-shaped sample with --stats (the cgroup's CPU, memory
# and limit, the VM's disk counters: the guest read its root), then two
# lines 300 ms apart from the streaming form.
"${R[@]}" events --stats r2 >"$W/ev1" 2>"$W/ev.err"
"${R[@]}" pause r2 && st2=$("${R[@]}" state r2 | jq -r .status)
"${R[@]}" resume r2 && st3=$("${R[@]}" state r2 | jq -r .status)
timeout 20 "${R[@]}" events --interval 300ms r2 2>>"$W/ev.err" | head -n 2 >"$W/ev2"
"${R[@]}" delete --force r2
ev=$(jq -r '[.type, .id, (.data.cpu.usage.total > 0), (.data.memory.usage.usage > 0),
	(.data.memory.usage.limit / 1048576 | floor), (.data.pids.current > 0),
	(.data.vm.disks[0].total.requests.read > 0)] | map(tostring) | join(" ")' "$W/ev1")
ev2=$(jq -r 'select(.type == "stats") | .id' "$W/ev2" | tr '\n' ' ')
[[ "$ev" == "stats r2 true true "*" true true" && "$ev2" == "r2 r2 " ]] &&
	oci_ok "events: --stats '$ev' (cpu, memory, limit MiB, pids, disk reads), streamed: $ev2" ||
	oci_bad "events: '$ev' / '$ev2': $(head -c 300 "$W/ev.err") $(head -c 300 "$W/ev1")"
"${R[@]}" events --stats r2 2>/dev/null && oci_bad "events on a deleted container: exit 0"
[[ "$st1 ${st2:-} ${st3:-}" == "running paused running" && -z "$("${R[@]}" list -q)" ]] &&
	oci_ok "run -d, list, pause, resume, delete --force: running paused running, gone" ||
	oci_bad "run -d states: '$st1 ${st2:-} ${st3:-}', left: $("${R[@]}" list -q)"

# A Kubernetes RuntimeClass handler (issue 30): minivmm-oci as the runc
# binary of containerd's runc v2 shim under the CRI plugin, as README
# "Kubernetes" configures it, beside the runc runtime (without an entry
# for default_runtime_name the CRI plugin fails to load: "no corresponding
# runtime configured").  containerd loads the file (config dump shows
# the handler with its BinaryName) and, started with it, its CRI plugin is
# up ("ok" in `ctr plugins ls`).  Debian 12 has no CRI client (crictl) to
# run a pod through it.
rsock=/run/oci-ctd-rc.$$/containerd.sock
mkdir -p "$(dirname "$rsock")"
cat >"$W/rc.toml" <<EOF
version = 2
root = "$W/rc-root"
state = "/run/oci-ctd-rc.$$/state"
[grpc]
  address = "$rsock"
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "native"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.minivmm]
  runtime_type = "io.containerd.runc.v2"
  pod_annotations = ["org.minivmm.*"]
  container_annotations = ["org.minivmm.*"]
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.minivmm.options]
  BinaryName = "$OCI_RUNTIME"
EOF
containerd --config "$W/rc.toml" config dump >"$W/rc.dump" 2>&1
handler=$(awk '/runtimes\.minivmm(\.options)?\]/ {on = 1; print; next} /^ *\[/ {on = 0} on' "$W/rc.dump")
echo "$handler" | sed 's/^/  config dump: /'
grep -q 'runtime_type = "io.containerd.runc.v2"' <<<"$handler" &&
	grep -q "BinaryName = \"$OCI_RUNTIME\"" <<<"$handler" &&
	grep -q 'pod_annotations = \["org.minivmm.\*"\]' <<<"$handler" &&
	oci_ok "RuntimeClass handler minivmm: containerd config dump shows runtime_type io.containerd.runc.v2, BinaryName $OCI_RUNTIME" ||
	oci_bad "config dump: $(head -c 600 "$W/rc.dump")"
containerd --config "$W/rc.toml" >"$W/rc.log" 2>&1 &
rctd=$!
for _ in $(seq 300); do [[ -S "$rsock" ]] && break; sleep 0.2; done
cri=$(ctr --address "$rsock" plugins ls 2>&1 | awk '$2 == "cri" {print $1, $2, $NF}')
kill $rctd 2>/dev/null
wait $rctd 2>/dev/null
[[ "$cri" == "io.containerd.grpc.v1 cri ok" ]] &&
	oci_ok "containerd with the handler: CRI plugin '$cri'" ||
	oci_bad "CRI plugin: '$cri'; log: $(grep -m3 'failed to load plugin io.containerd.grpc.v1.cri' "$W/rc.log")"

oci_finish
