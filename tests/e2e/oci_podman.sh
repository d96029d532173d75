#!/bin/bash
# oci_podman.sh: podman 4.3 + conmon drive minivmm-oci (issue 10, item 5),
# inside the rig's L1 (run by tests/e2e/oci-rig.sh).  One L1 boot, several
# containers (each its own microVM):
#  - stdout and stderr separate and byte-exact (1 MiB of random bytes cat'ed
#    out of the container), exit status 7; --network none gives the guest
#    only lo (no NIC);
#  - stdin: a binary file through `podman run -i cat`, EOF reaches the guest,
#    with the runtime registered by name in containers.conf [engine.runtimes];
#  - cgroups: the VMM process in the container's cgroup with memory.max =
#    guest RAM + overhead, `podman stats` showing its CPU and memory,
#    `podman update --cpus` reaching cpu.max, `--memory` refused;
#  - `podman pause`/`unpause` of a running ticker: nothing runs while paused
#    (state paused), no tick lost after, the guest clock sane;
#  - `podman run -d` + `podman stop`: a trapped SIGTERM ends it with 143, an
#    untrapped one is ignored (PID 1, as with runc) and the stop timeout's
#    SIGKILL ends the VM: 137;
#  - --memory 256m --cpus 2 --read-only: 2 vCPUs, ~256 MiB, read-only root;
#  - -t: a controlling terminal of the requested size (CRLF output);
#  - podman exec (issue 32): exit status 3, 1 MiB of stdin through
#    `cat | md5sum`, the main process's file and PID namespace, a second
#    exec while one runs, 127 for a missing program, -t with a pty of the
#    terminal's size; minivmm-oci ps (table and json); `podman top -o
#    pid,comm` (ps run in the guest through exec); exec refused in a
#    stopped container;
#  - volumes (issue 30): -v DIR:/data read and written both ways (checksum),
#    a 1 GiB file read through it (md5), -v DIR:/ro:ro refuses writes, --annotation org.minivmm.vcpus=2 and
#    org.minivmm.memory=384M size the VM, a bad annotation is refused;
#  - the root over virtio-fs (issue 30): --annotation org.minivmm.rootfs=
#    virtiofs; the container's writes (owner kept) are in `podman commit`'s
#    image, podman's /etc/hostname bound in; with --read-only the root is
#    ro (reads work, a write to / fails with EROFS); a bad value refused;
#  - runtime errors (a bad annotation, a missing kernel) reach the user as
#    one line;
#  - privileges (issue 31): every thread of a running container's VMM
#    process at the default user (nobody here: no minivmm-oci user) with no
#    supplementary group, every capability set empty, NoNewPrivs 1 and its
#    seccomp filter, read from /proc while the guest runs; in the guest the
#    container's process has podman's default capability set (bounding,
#    effective, permitted; no inheritable or ambient), NoNewPrivs 1 with
#    --security-opt no-new-privileges (0 without), exactly NET_ADMIN with
#    --cap-drop all --cap-add NET_ADMIN, and its own mount namespace: the
#    guest init's namespace has no mount under /newroot after it ran.
set -uo pipefail
. "$(dirname "$0")/oci_lib.sh"
oci_setup

P=(podman --root "$W/pstore" --runroot /run/oci-prun.$$ --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file)
RT=(--runtime "$OCI_RUNTIME")
"${P[@]}" import "$OCI_IMAGE_TAR" localhost/bb >/dev/null || e2e_fail "podman import"

# 1. Streams and exit status: the blob on stdout, "err" on stderr, exit 7;
#    a writable root by default; --network none: only lo in the guest (a
#    podman bundle's pathless namespace gives the VM no NIC).
"${P[@]}" "${RT[@]}" run --rm --network none localhost/bb \
	sh -c 'cat /blob; echo err >&2; touch /rootfs-is-writable || echo RO >&2
	       echo "netdevs $(ls /sys/class/net | tr "\n" " ")" >&2; exit 7' \
	>"$W/out1" 2>"$W/err1"
rc=$?
[[ $rc -eq 7 ]] && oci_ok "exit status 7" || oci_bad "exit status $rc, expected 7"
cmp -s "$W/out1" "$W/blob" && oci_ok "stdout: 1 MiB byte-identical" ||
	oci_bad "stdout differs from /blob ($(stat -c %s "$W/out1") bytes)"
grep -qx err "$W/err1" && ! grep -q RO "$W/err1" && oci_ok "stderr separate, root writable" ||
	oci_bad "stderr: $(head -c 300 "$W/err1")"
grep -qx "netdevs lo " "$W/err1" && oci_ok "--network none: only lo in the guest" ||
	oci_bad "--network none: $(grep netdevs "$W/err1")"

# 2. stdin: 1 MiB of binary through `cat`, its EOF reaches the guest (the
#    shell goes on after cat); the runtime by name from containers.conf.
printf '[engine.runtimes]\nminivmm = ["%s"]\n' "$OCI_RUNTIME" >"$W/containers.conf"
CONTAINERS_CONF="$W/containers.conf" "${P[@]}" --runtime minivmm run --rm -i --network none \
	localhost/bb sh -c 'cat; echo EOF-SEEN >&2' <"$W/blob" >"$W/out3" 2>"$W/err3"
rc=$?
cmp -s "$W/out3" "$W/blob" && grep -q EOF-SEEN "$W/err3" && [[ $rc -eq 0 ]] &&
	oci_ok "podman run -i: 1 MiB binary stdin round trip, EOF seen (runtime by name)" ||
	oci_bad "binary stdin: rc $rc, $(stat -c %s "$W/out3") bytes, $(head -c 300 "$W/err3")"

# 3. podman stop: trapped SIGTERM (143) and untrapped (ignored: 137 after the
#    timeout), both containers up at once.  The untrapped one sleeps far
#    longer than any loaded run of this test lasts (a CI run beside the
#    benchmark smoke took 1418 s), so that nothing but a signal ends it.
"${P[@]}" "${RT[@]}" run -d --name trapped --network none localhost/bb \
	sh -c 'trap "echo got-term; exit 143" TERM; echo ready; i=0
		while :; do i=$((i + 1)); echo "tick $i $(date +%s)"; sleep 0.2; done' >/dev/null
"${P[@]}" "${RT[@]}" run -d --name untrapped --network none localhost/bb \
	sh -c 'echo main-wrote-this >/from-main; echo ready; exec sleep 100000' >/dev/null
started_untrapped=$SECONDS
oci_step "podman run -d: trapped and untrapped"
# logs_have NAME TEXT: the container's log holds TEXT.  Read whole, not
# through `| grep -q`: under pipefail grep's early exit makes a long log's
# `podman logs` die of SIGPIPE and the pipeline fail with the text there
# (the ticker's log: this wait then ran its 600 rounds, ~16 minutes of a
# CI run, before it went on).
logs_have() { [[ "$("${P[@]}" logs "$1" 2>/dev/null)" == *"$2"* ]]; }
for c in trapped untrapped; do
	for _ in $(seq 600); do
		logs_have "$c" ready && break
		sleep 0.5
	done
	logs_have "$c" ready || oci_bad "podman run -d: $c never said ready"
done
oci_step "both ready"
# The runtime's own view (podman inspect needs cgroups the L1 lacks).
id=$("${P[@]}" ps -q --no-trunc --filter name=^trapped$)
state=$("$OCI_RUNTIME" state "$id" 2>&1)
pid=$(echo "$state" | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
grep -q '"status": "running"' <<<"$state" && [[ -n "$pid" && -d /proc/$pid ]] &&
	[[ "$(readlink /proc/$pid/exe)" == "$OCI_RUNTIME" ]] &&
	oci_ok "podman run -d: runtime state running, pid $pid is the VMM" ||
	oci_bad "runtime state: $state"
# The VMM process, while its guest runs: every thread dropped to the
# default user, with nothing left to regain privileges with.
vuid=$(id -u nobody) vgid=$(id -g nobody)
snap=$(oci_vmm_threads "$pid")
echo "$snap"
want="uid=[$vuid $vuid $vuid $vuid] gid=[$vgid $vgid $vgid $vgid] groups=[] inh=$NOCAPS prm=$NOCAPS eff=$NOCAPS bnd=$NOCAPS amb=$NOCAPS nnp=1 seccomp="
bad=$(grep -v -F -- "$want" <<<"$snap" || true)
# libvmm's threads are confined (seccomp 2); the main thread, which
# serves ctl.sock, is not (no allow-list of its own yet).
unconfined=$(grep -v -e "^minivmm-oci " -e "seccomp=2$" <<<"$snap" || true)
nthr=$(grep -c . <<<"$snap")
[[ -z "$bad" && -z "$unconfined" && $nthr -ge 3 ]] && grep -q "^vmm-vcpu0 " <<<"$snap" &&
	grep -q "^vmm-io0 " <<<"$snap" && grep -q "^minivmm-oci " <<<"$snap" &&
	oci_ok "VMM process: all $nthr threads at uid/gid $vuid:$vgid, no groups, every capability set empty, NoNewPrivs 1" ||
	oci_bad "VMM process threads not dropped (want '$want'): ${bad:-$unconfined}"
# 3b. cgroups (issue 32): the VMM process -- every thread -- is in the
#     container's cgroup (linux.cgroupsPath, podman's cgroupfs manager), whose
#     memory.max is the guest's RAM (the 512M default) + the VMM's 160M;
#     podman stats reads it: CPU and memory not zero.
cgrel=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
cgdir=/sys/fs/cgroup$cgrel
memmax=$(cat "$cgdir/memory.max" 2>/dev/null)
others=$(for t in /proc/$pid/task/*; do sed -n 's/^0:://p' "$t/cgroup"; done | sort -u)
"${P[@]}" stats --no-stream --format '{{.CPUPerc}} {{.MemUsage}}' trapped >"$W/stats" 2>&1
read -r scpu smem _ <"$W/stats"
oci_step "podman stats"
[[ "$cgrel" == *"$id"* && "$others" == "$cgrel" && "$memmax" == $(((512 + 160) << 20)) ]] &&
	[[ -n "$scpu" && "$scpu" != 0.00% && -n "$smem" && "$smem" != 0B ]] &&
	oci_ok "cgroup: VMM pid $pid and its threads in $cgrel, memory.max $((memmax >> 20)) MiB; podman stats: $scpu, $smem" ||
	oci_bad "cgroup: '$cgrel' (threads: $others) memory.max '$memmax'; stats: $(head -c 200 "$W/stats")"

# 3c. podman exec (issue 32 item 2), in the running "untrapped" container:
#     conmon runs `minivmm-oci exec --detach --pid-file --process` and
#     waits on the relaying process, which mirrors the guest process's
#     status.  Each step timed.
xt() { echo "  exec step: $1 $((SECONDS - xt0)) s"; xt0=$SECONDS; }
uid=$("${P[@]}" ps -q --no-trunc --filter name=^untrapped$)
# Should the container have ended early, say how and when before the exec
# checks fail on it.
ustate=$("$OCI_RUNTIME" state "$uid" 2>&1)
grep -q '"status": "running"' <<<"$ustate" ||
	echo "untrapped not running $((SECONDS - started_untrapped)) s after its start: $ustate;" \
		"logs: $("${P[@]}" logs untrapped 2>&1 | tail -n 5 | tr '\n' '|')"
xt0=$SECONDS
"${P[@]}" exec untrapped sh -c 'exit 3'
rc=$?
xt "exit 3"
[[ $rc -eq 3 ]] && oci_ok "podman exec: exit status 3" || oci_bad "podman exec: exit status $rc, expected 3"
want=$(md5sum <"$W/blob" | cut -d' ' -f1)
got=$("${P[@]}" exec -i untrapped sh -c 'cat | md5sum' <"$W/blob" 2>"$W/xerr1" | cut -d' ' -f1)
xt "stdin 1 MiB"
[[ -n "$want" && "$got" == "$want" ]] && oci_ok "podman exec -i: 1 MiB stdin, md5 $got in the guest" ||
	oci_bad "podman exec -i: md5 '$got', want $want; $(head -c 300 "$W/xerr1")"
"${P[@]}" exec untrapped sh -c 'cat /from-main; tr "\0" " " </proc/1/cmdline; echo; id -u' >"$W/xout2" 2>&1
xt "file + namespaces"
[[ "$(sed -n 1p "$W/xout2")" == main-wrote-this && "$(sed -n 2p "$W/xout2")" == "sleep 100000 " &&
	"$(sed -n 3p "$W/xout2")" == 0 ]] &&
	oci_ok "podman exec: sees the main process's file and its PID namespace (PID 1 is sleep 100000)" ||
	oci_bad "podman exec file/namespace: $(head -c 300 "$W/xout2")"
# A second exec while the first runs: the first ends only once the second
# has run (or after 60 s).
"${P[@]}" exec untrapped sh -c 'touch /tmp/first-running; i=0
	while [ ! -e /tmp/second-ran ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e /tmp/second-ran ] && echo first-done' >"$W/xout3" 2>&1 &
bg=$!
second=
for _ in $(seq 60); do
	if "${P[@]}" exec untrapped sh -c 'test -e /tmp/first-running && touch /tmp/second-ran' 2>/dev/null; then
		second=while-first-runs
		break
	fi
	sleep 0.25
done
wait $bg
rc=$?
xt "two at once"
[[ "$second" == while-first-runs && $rc -eq 0 ]] && grep -qx first-done "$W/xout3" &&
	oci_ok "podman exec: a second exec ran while the first was running; the first ended 0" ||
	oci_bad "concurrent exec: second '$second', first rc $rc: $(head -c 300 "$W/xout3")"
"${P[@]}" exec untrapped /no/such/program >"$W/xout4" 2>&1
rc=$?
xt "not found"
[[ $rc -eq 127 ]] && oci_ok "podman exec of a missing program: 127" ||
	oci_bad "missing program: rc $rc: $(head -c 300 "$W/xout4")"
# -t: a pty in the guest, then the size of podman's terminal: podman 4.3
# puts no consoleSize in the exec's process.json and resizes through conmon
# once attached, which reaches the guest as SIGWINCH on the host pty -> a
# resize frame (waited for, at most 5 s).
script -qec "stty rows 33 cols 77; ${P[*]} exec -t untrapped sh -c 'tty; i=0
	while [ \"\$(stty size 2>/dev/null)\" != \"33 77\" ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i + 1)); done
	stty size; echo done' 2>$W/xerr5" /dev/null >"$W/xout5"
xt "-t"
tr -d '\r' <"$W/xout5" >"$W/xout5n"
grep -qE '^/dev/pts/[0-9]+$' "$W/xout5n" && grep -qx '33 77' "$W/xout5n" && grep -q $'done\r' "$W/xout5" &&
	oci_ok "podman exec -t: $(grep -m1 /dev/pts "$W/xout5n"), resized to 33x77, CRLF" ||
	oci_bad "podman exec -t: $(od -c "$W/xout5" | head -10) $(head -c 300 "$W/xerr5")"
# The runtime's ps (guest pids of the container's PID namespace).
"$OCI_RUNTIME" ps --format json "$uid" >"$W/xps" 2>&1
"$OCI_RUNTIME" ps "$uid" >"$W/xps2" 2>&1
xt "ps"
grep -qE '^\[1(,[0-9]+)*\]$' "$W/xps" && grep -q "sleep 100000" "$W/xps2" &&
	oci_ok "minivmm-oci ps: $(cat "$W/xps"); table: $(grep -c . "$W/xps2") lines" ||
	oci_bad "minivmm-oci ps: $(head -c 300 "$W/xps") / $(head -c 300 "$W/xps2")"
# podman top with its own descriptors does not ask the runtime: it joins the
# VMM process's namespaces on the host (psgo) and lists the host's processes
# there (reported, not asserted; README).  With ps(1) options podman 4.3
# runs ps in the container through the runtime's exec: the guest's view.
"${P[@]}" top untrapped >"$W/xtop" 2>&1
echo "  podman top (rc $?): $(head -c 300 "$W/xtop" | tr '\n' '|')"
"${P[@]}" top untrapped -o pid,comm >"$W/xtop2" 2>&1
trc=$?
xt "top -o"
[[ $trc -eq 0 ]] && grep -qE '^ *1 +sleep *$' "$W/xtop2" &&
	oci_ok "podman top -o pid,comm: the guest's processes ($(grep -c . "$W/xtop2") lines, PID 1 sleep)" ||
	oci_bad "podman top -o pid,comm: rc $trc $(head -c 300 "$W/xtop2" | tr '\n' '|')"

# podman update: the CPU quota reaches the cgroup; another memory size is
# refused with the reason (the VM's RAM is fixed).
"${P[@]}" update --cpus 1 trapped >"$W/upd1" 2>&1
urc=$?
cpumax=$(cat "$cgdir/cpu.max" 2>/dev/null)
"${P[@]}" update --memory 1g trapped >"$W/upd2" 2>&1
mrc=$?
[[ $urc -eq 0 && "$cpumax" == "100000 100000" && $mrc -ne 0 ]] && grep -q "no memory hotplug" "$W/upd2" &&
	oci_ok "podman update --cpus 1: cpu.max '$cpumax'; --memory 1g refused: $(grep -o 'memory cannot[^;]*' "$W/upd2")" ||
	oci_bad "podman update: rc $urc cpu.max '$cpumax' ($(head -c 200 "$W/upd1")); memory: rc $mrc $(head -c 300 "$W/upd2")"

# 3a. podman pause / unpause (issue 32): the VM's vCPUs stop (no tick is
#     written while paused, the runtime's state says paused), then go on
#     with no tick lost or repeated and the guest's clock sane: it never
#     goes back, and across the pause it moves by at most the pause (its
#     kvmclock stops while paused) plus the loop's own slack.
oci_step "podman update"
ticks() { "${P[@]}" logs trapped 2>/dev/null | grep '^tick '; }
last_tick() { ticks | tail -n 1 | cut -d' ' -f2; }
"${P[@]}" pause trapped >"$W/pause.out" 2>&1 || oci_bad "podman pause: $(head -c 300 "$W/pause.out")"
pstate=$("$OCI_RUNTIME" state "$id" 2>&1)
n1=$(last_tick); sleep 3; n2=$(last_tick)
"${P[@]}" unpause trapped >"$W/unpause.out" 2>&1 || oci_bad "podman unpause: $(head -c 300 "$W/unpause.out")"
for _ in $(seq 100); do [[ "$(last_tick)" -gt $((n2 + 5)) ]] && break; sleep 0.2; done
n3=$(last_tick)
rstate=$("$OCI_RUNTIME" state "$id" 2>&1)
seqok=$(ticks | awk '$2 != NR { bad = 1 } NR > 1 && $3 < t { back = 1 } { t = $3 }
	END { print (bad ? "gap" : "") (back ? "back" : "") }')
jump=$(ticks | awk -v n="$n2" '$2 == n { a = $3 } $2 == n + 1 { b = $3 } END { print b - a }')
[[ -n "$n1" && "$n1" == "$n2" && "$n3" -gt "$n2" && -z "$seqok" && "$jump" -le 5 ]] &&
	grep -q '"status": "paused"' <<<"$pstate" && grep -q '"status": "running"' <<<"$rstate" &&
	oci_ok "podman pause/unpause: no tick while paused ($n1 = $n2 for 3 s; state paused), ticks 1..$n3 after unpause with none lost, guest clock +$jump s across it" ||
	oci_bad "pause: ticks $n1/$n2/$n3 seq '$seqok' jump '$jump' states: $(grep -o '"status": "[a-z]*"' <<<"$pstate$rstate" | tr '\n' ' ')"
t0=$SECONDS
"${P[@]}" stop -t 60 trapped >/dev/null
rc=$("${P[@]}" inspect -f '{{.State.ExitCode}}' trapped)
[[ $rc -eq 143 ]] && logs_have trapped got-term &&
	oci_ok "podman stop (trapped SIGTERM): 143 after $((SECONDS - t0)) s" ||
	oci_bad "trapped: exit $rc, logs: $("${P[@]}" logs trapped 2>&1 | head -c 200)"
t0=$SECONDS
"${P[@]}" stop -t 3 untrapped >/dev/null
dt=$((SECONDS - t0))
rc=$("${P[@]}" inspect -f '{{.State.ExitCode}}' untrapped)
[[ $rc -eq 137 && $dt -ge 3 ]] && oci_ok "podman stop (untrapped: ignored, then SIGKILL): 137 after $dt s" ||
	oci_bad "untrapped: exit $rc after $dt s"
"$OCI_RUNTIME" exec "$uid" true >"$W/xout6" 2>&1
rc=$?
[[ $rc -ne 0 ]] && grep -qE "cannot exec in a container that is stopped|does not exist" "$W/xout6" &&
	oci_ok "exec in a stopped container: $(head -c 200 "$W/xout6")" ||
	oci_bad "exec in a stopped container: rc $rc: $(head -c 300 "$W/xout6")"
"${P[@]}" rm -f trapped untrapped >/dev/null 2>&1
ls /run/minivmm-oci 2>/dev/null | grep -q . && oci_bad "state left in /run/minivmm-oci: $(ls /run/minivmm-oci)" ||
	oci_ok "podman rm: runtime state removed"
[[ -n "$cgrel" && ! -d "$cgdir" ]] && oci_ok "podman rm: the container's cgroup removed" ||
	oci_bad "cgroup left: $cgdir"

# 4. Resources and a read-only root; capabilities other than the default.
"${P[@]}" "${RT[@]}" run --rm --network none --memory 256m --cpus 2 --read-only \
	--cap-drop all --cap-add NET_ADMIN localhost/bb \
	sh -c 'grep -c ^processor /proc/cpuinfo; sed -n "s/MemTotal: *\([0-9]*\) kB/\1/p" /proc/meminfo;
	       touch /x 2>&1 || echo touch-failed; grep " / " /proc/mounts;
	       grep -E "^(Cap|NoNewPrivs)" /proc/self/status' >"$W/out4" 2>"$W/err4"
rc=$?
cpus=$(sed -n 1p "$W/out4")
mem=$(sed -n 2p "$W/out4")
[[ $rc -eq 0 && "$cpus" == 2 ]] && oci_ok "--cpus 2: 2 CPUs" || oci_bad "--cpus 2: rc $rc: $(cat "$W/out4" "$W/err4")"
[[ -n "$mem" && $mem -ge 200000 && $mem -le 300000 ]] && oci_ok "--memory 256m: MemTotal $mem kB" ||
	oci_bad "--memory 256m: MemTotal '$mem'"
grep -q "Read-only file system" "$W/out4" && grep -q touch-failed "$W/out4" &&
	oci_ok "--read-only: root read-only in the guest" || oci_bad "--read-only: $(cat "$W/out4")"
# CAP_NET_ADMIN is 12.
caps=$(oci_caps "$W/out4")
[[ "$caps" == "inh=$NOCAPS prm=0000000000001000 eff=0000000000001000 bnd=0000000000001000 amb=$NOCAPS nnp=0" ]] &&
	oci_ok "--cap-drop all --cap-add NET_ADMIN: $caps" || oci_bad "--cap-drop all --cap-add NET_ADMIN: '$caps'"

# 5. -t: a terminal of the size podman's terminal has.
script -qec "stty rows 33 cols 77; ${P[*]} ${RT[*]} run --rm -t --network none localhost/bb \
	sh -c 'tty; stty size; echo done' 2>$W/err5" /dev/null >"$W/out5"
tr -d '\r' <"$W/out5" >"$W/out5n"
grep -q '^/dev/pts/0$' "$W/out5n" && grep -qx '33 77' "$W/out5n" && grep -q $'done\r' "$W/out5" &&
	oci_ok "-t: /dev/pts/0, 33x77, CRLF" || oci_bad "-t: $(od -c "$W/out5" | head -20) $(cat "$W/err5")"

# 6. Volumes and the VM size annotations (issue 30), in one VM: -v DIR:/data
#    reads a file the host made (checksum) and writes one the host reads;
#    -v DIR:/ro:ro refuses a write (on the host side too: virtiofsd's
#    read-only bind); --annotation org.minivmm.vcpus=2 / memory=384M size
#    the VM.  podman's config.json binds are shown (the shapes spec.c maps).
#    A 1 GiB file the L1 made in the volume is read in the guest through
#    virtio-fs, md5 compared (while the host measures virtiofsd): 1024
#    blocks of 1 MiB, each a 16-byte counter and the same fixed pattern, so
#    a block out of place changes the sum; md5sum for its speed (the rig
#    is nested under TCG); removed after.  Its cost is printed.  The
#    volume's read-ahead is the guest init's 4 MiB (readahead.h; at the
#    kernel's 128 KiB this read took 157-170 s of the test's time).
t6=$SECONDS
vol="$W/vol"
mkdir -p "$vol" && head -c 300000 /dev/urandom >"$vol/in.bin"
# Binds of single files (not the engine's own /etc/hosts etc.): each a
# virtio-fs share of that file alone; the guest's write reaches the host.
echo host-line >"$W/app.conf"
echo ro-line >"$W/ro.conf"
free=$(df -Pk "$vol" | awk 'NR == 2 {print $4}')
[[ -n "$free" && $free -ge $((1536 * 1024)) ]] ||
	e2e_fail "1 GiB volume file: only ${free:-?} kB free in $vol (df)"
tb=$(date +%s%N)
# The content is fixed, so is its md5 (computed once outside the rig with
# this same line: an md5 of 1 GiB in the emulated L1 took ~50 s).
bigsum=6a19b9104c3a71658fc2a22085e4ba88
perl -e 'my $b = join "", map { pack("N", ($_ * 2654435761) & 0xffffffff) } 0 .. 262139;
	binmode STDOUT; print pack("Q>Q>", $_, 0xffffffff - $_), $b for 0 .. 1023' >"$vol/big.bin"
[[ $(stat -c %s "$vol/big.bin") -eq $((1 << 30)) ]] || e2e_fail "1 GiB volume file: $(stat -c %s "$vol/big.bin") bytes"
echo "  1 GiB volume file made, md5 $bigsum: $((($(date +%s%N) - tb) / 1000000)) ms"
"${P[@]}" "${RT[@]}" run --name vols --network none -v "$vol:/data" -v "$vol:/ro:ro" \
	--mount "type=bind,src=$vol,dst=/m" --annotation org.minivmm.vcpus=2 \
	-v "$W/app.conf:/etc/app.conf" -v "$W/ro.conf:/opt/ro.conf:ro" \
	--annotation org.minivmm.memory=384M localhost/bb \
	sh -c 'md5sum /data/in.bin; md5sum /data/in.bin >/data/out.md5
	       echo x >/ro/nope 2>/dev/null && echo RO-WRITABLE; echo "nproc $(nproc)"
	       sed -n "s/MemTotal: *\([0-9]*\) kB/mem \1/p" /proc/meminfo
	       echo "app $(cat /etc/app.conf)"; echo guest-line >>/etc/app.conf
	       echo "roconf $(cat /opt/ro.conf)"
	       echo x >>/opt/ro.conf 2>/dev/null && echo ROFILE-WRITABLE
	       [ -e /m/in.bin ] && echo "m-has-in.bin"
	       grep -E " /(data|ro|m|etc/app.conf|opt/ro.conf) " /proc/mounts; echo from-guest >/data/out.txt
	       d=$(awk "\$5 == \"/data\" {print \$3}" /proc/self/mountinfo)
	       echo "readahead $(cat /sys/class/bdi/$d/read_ahead_kb)"
	       t=$(date +%s); md5sum /data/big.bin >/tmp/big.md5 & sleep 4; wait $!
	       echo "big $(cat /tmp/big.md5) $(($(date +%s) - t)) s"' \
	>"$W/out6" 2>"$W/err6" &
vp=$!
# The back ends' cost while the VM runs (five volumes: five virtiofsd,
# each a parent and its sandboxed child): processes, Rss, Pss.  By name:
# their exe link lies in a mount namespace detached by pivot_root.
for _ in $(seq 600); do [[ -s "$vol/out.txt" ]] && break; sleep 0.2; done
vfs=$(for p in /proc/[0-9]*; do [[ "$(cat "$p/comm" 2>/dev/null)" == virtiofsd ]] &&
	echo "$(awk '/^Rss:/ {r = $2} /^Pss:/ {p = $2} END {print r, p}' "$p/smaps_rollup")"; done)
echo "  virtiofsd processes (Rss Pss kB): $(tr '\n' ';' <<<"$vfs")"
wait $vp
rc=$?
jq -c '.mounts[] | select(.type == "bind")' \
	"$("${P[@]}" inspect -f '{{.StaticDir}}' vols)/config.json" 2>&1 | sed 's/^/  podman: /'
"${P[@]}" rm -f vols >/dev/null 2>&1
sed 's/^/  guest: /' "$W/out6"
rm -f "$vol/big.bin"
[[ $rc -eq 0 && ${#bigsum} -eq 32 ]] && grep -q "^big $bigsum  /data/big.bin " "$W/out6" &&
	oci_ok "-v DIR:/data: a 1 GiB file the L1 made read in the guest, md5 $bigsum ($(sed -n 's/^big .* \([0-9]* s\)$/\1/p' "$W/out6") in the guest)" ||
	oci_bad "-v DIR:/data 1 GiB file: rc $rc, host md5 '$bigsum', guest: $(grep '^big' "$W/out6")"
want=$(md5sum <"$vol/in.bin" | cut -d' ' -f1)
[[ $rc -eq 0 ]] && grep -q "^$want  /data/in.bin" "$W/out6" &&
	[[ "$(cat "$vol/out.txt" 2>/dev/null)" == from-guest ]] &&
	grep -q "^$want " "$vol/out.md5" &&
	oci_ok "-v DIR:/data: the host's 300 kB file read in the guest (md5 $want), the guest's file read on the host" ||
	oci_bad "-v DIR:/data: rc $rc, out: $(head -c 400 "$W/out6"), err: $(head -c 400 "$W/err6")"
[[ $rc -eq 0 && ! -e "$vol/nope" ]] && ! grep -q RO-WRITABLE "$W/out6" &&
	grep -Eq "^minivmm-vol[0-9] /ro virtiofs ro[,[:space:]]" "$W/out6" &&
	oci_ok "-v DIR:/ro:ro: write refused, mounted $(grep " /ro " "$W/out6" | cut -d' ' -f3,4)" ||
	oci_bad "-v DIR:/ro:ro: $(cat "$W/out6"); nope: $(ls "$vol")"
[[ $rc -eq 0 ]] && grep -qx "app host-line" "$W/out6" &&
	[[ "$(cat "$W/app.conf")" == "host-line"$'\n'"guest-line" ]] &&
	grep -Eq "^minivmm-vol[0-9] /etc/app.conf virtiofs rw[,[:space:]]" "$W/out6" &&
	oci_ok "-v FILE:/etc/app.conf: a single file shared with virtio-fs, read in the guest, the guest's line appended on the host" ||
	oci_bad "-v FILE:/etc/app.conf: host file '$(cat "$W/app.conf")', guest: $(grep -E '^app |app.conf' "$W/out6")"
[[ $rc -eq 0 ]] && grep -qx "roconf ro-line" "$W/out6" && ! grep -q ROFILE-WRITABLE "$W/out6" &&
	[[ "$(cat "$W/ro.conf")" == ro-line ]] &&
	grep -Eq "^minivmm-vol[0-9] /opt/ro.conf virtiofs ro[,[:space:]]" "$W/out6" &&
	oci_ok "-v FILE:/opt/ro.conf:ro: read in the guest, a write refused, the host file unchanged" ||
	oci_bad "-v FILE:/opt/ro.conf:ro: host '$(cat "$W/ro.conf")', guest: $(grep -E 'roconf|ROFILE|ro.conf' "$W/out6")"
grep -qx "m-has-in.bin" "$W/out6" && grep -Eq "^minivmm-vol[0-9] /m virtiofs " "$W/out6" &&
	oci_ok "--mount type=bind,dst=/m: the volume mounted at /m in the guest" ||
	oci_bad "--mount ...,dst=/m: $(grep -E ' /m |m-has' "$W/out6")"
grep -qx "readahead 4096" "$W/out6" &&
	oci_ok "-v DIR:/data: the guest init raised its read-ahead to 4096 KiB" ||
	oci_bad "-v DIR:/data read-ahead: $(grep '^readahead' "$W/out6")"
mem=$(sed -n 's/^mem //p' "$W/out6")
grep -qx "nproc 2" "$W/out6" && [[ -n "$mem" && $mem -ge 300000 && $mem -le 393216 ]] &&
	oci_ok "--annotation org.minivmm.vcpus=2, memory=384M: nproc 2, MemTotal $mem kB" ||
	oci_bad "annotations: $(grep -E '^(nproc|mem) ' "$W/out6" | tr '\n' ' ')"
"${P[@]}" "${RT[@]}" run --rm --network none --annotation org.minivmm.vcpus=lots \
	localhost/bb true >"$W/out6b" 2>&1
rc=$?
[[ $rc -ne 0 ]] && grep -q 'annotation org.minivmm.vcpus="lots": expected a number of vCPUs' "$W/out6b" &&
	oci_ok "a bad annotation refused at create: $(grep -m1 -o 'annotation org.minivmm.vcpus[^"]*"[^"]*"[^,]*' "$W/out6b")" ||
	oci_bad "bad annotation: rc $rc: $(cat "$W/out6b")"
# virtiofsd's own start, exec to listening socket (what each volume adds
# to create), three times.
for i in 1 2 3; do
	t0=$(date +%s%N)
	/usr/lib/qemu/virtiofsd --socket-path="$W/vfs$i.sock" -o source="$vol" -o cache=auto \
		-o sandbox=namespace --thread-pool-size=0 >/dev/null 2>&1 &
	for _ in $(seq 500); do [[ -S "$W/vfs$i.sock" ]] && break; sleep 0.005; done
	echo "  virtiofsd start $i: $((($(date +%s%N) - t0) / 1000000)) ms"
	kill $! 2>/dev/null; wait $! 2>/dev/null
done
nvfs=$(grep -c . <<<"$vfs")
[[ $nvfs -ge 5 ]] && oci_ok "volumes and annotations: $((SECONDS - t6)) s; $nvfs virtiofsd processes for 5 volumes, Rss/Pss kB: $(tr '\n' ';' <<<"$vfs")" ||
	oci_bad "virtiofsd processes while the VM ran: '$vfs'"

# 6b. The root over virtio-fs (issue 30 item 3), one VM: --annotation
#     org.minivmm.rootfs=virtiofs; the guest's / is the virtio-fs device, the
#     container writes a file (and chowns it) that lands in its root on the
#     host: `podman commit` then has it (read through `podman image mount`,
#     no second VM), with its owner; podman's /etc/hostname bind reaches the
#     guest without being written into the root; a read-only one
#     (--read-only); a bad value is refused.
t6b=$SECONDS
"${P[@]}" "${RT[@]}" run --name rfs --network none --hostname rfs-host \
	--annotation org.minivmm.rootfs=virtiofs localhost/bb \
	sh -c 'grep " / " /proc/mounts; echo "hostname $(cat /etc/hostname)"
	       d=$(awk "\$5 == \"/\" {print \$3}" /proc/self/mountinfo | head -1)
	       echo "readahead $(cat /sys/class/bdi/$d/read_ahead_kb)"
	       echo written-in-guest >/from-guest && chown 1234:5678 /from-guest
	       mkdir -p /d/e && echo deep >/d/e/f && rm /blob && echo wrote' \
	>"$W/out6r" 2>"$W/err6r"
rc=$?
sed 's/^/  guest: /' "$W/out6r"
"${P[@]}" commit -q rfs localhost/rfs-committed >/dev/null 2>"$W/err6c"
crc=$?
"${P[@]}" rm -f rfs >/dev/null 2>&1
m=$("${P[@]}" image mount localhost/rfs-committed 2>>"$W/err6c")
[[ $rc -eq 0 ]] && grep -q "^minivmm-root / virtiofs rw" "$W/out6r" && grep -qx wrote "$W/out6r" &&
	grep -qx "hostname rfs-host" "$W/out6r" && grep -qx "readahead 4096" "$W/out6r" &&
	oci_ok "rootfs=virtiofs: / is $(grep " / " "$W/out6r" | cut -d' ' -f1,3), podman's hostname bound, read-ahead 4096 KiB" ||
	oci_bad "rootfs=virtiofs: rc $rc: $(head -c 400 "$W/out6r") $(head -c 400 "$W/err6r")"
[[ $crc -eq 0 && -n "$m" && "$(cat "$m/from-guest" 2>/dev/null)" == written-in-guest &&
	"$(stat -c %u:%g "$m/from-guest" 2>/dev/null)" == 1234:5678 &&
	"$(cat "$m/d/e/f" 2>/dev/null)" == deep && ! -e "$m/blob" && -x "$m/bin/busybox" &&
	"$(cat "$m/etc/hostname" 2>/dev/null)" != rfs-host ]] &&
	oci_ok "podman commit sees the container's writes: /from-guest (1234:5678), /d/e/f, /blob removed; $((SECONDS - t6b)) s" ||
	oci_bad "podman commit: rc $crc, mount '$m': $(ls -ln "$m" 2>&1 | head -20) $(head -c 300 "$W/err6c")"
"${P[@]}" image unmount localhost/rfs-committed >/dev/null 2>&1
"${P[@]}" rmi -f localhost/rfs-committed >/dev/null 2>&1
# A read-only root over virtio-fs (--read-only: root.readonly): mounted
# ro in the guest, reads work (/blob's md5), a write to / fails with
# EROFS (virtiofsd serves it read-only too).
"${P[@]}" "${RT[@]}" run --rm --read-only --network none \
	--annotation org.minivmm.rootfs=virtiofs localhost/bb \
	sh -c 'grep " / " /proc/mounts; echo "md5 $(md5sum </blob)"; touch /x; echo "touch $?"' \
	>"$W/out6o" 2>&1
rc=$?
sed 's/^/  guest: /' "$W/out6o"
want=$(md5sum <"$W/blob" | cut -d' ' -f1)
[[ $rc -eq 0 ]] && grep -q "^minivmm-root / virtiofs ro[,[:space:]]" "$W/out6o" &&
	grep -q "^md5 $want" "$W/out6o" && grep -q "Read-only file system" "$W/out6o" &&
	grep -qx "touch 1" "$W/out6o" &&
	oci_ok "rootfs=virtiofs --read-only: / mounted ro, /blob read (md5 $want), a write to / fails with EROFS" ||
	oci_bad "rootfs=virtiofs --read-only: rc $rc: $(head -c 400 "$W/out6o")"
"${P[@]}" "${RT[@]}" run --rm --network none --annotation org.minivmm.rootfs=nfs \
	localhost/bb true >"$W/out6n" 2>&1
rc=$?
[[ $rc -ne 0 ]] && grep -q 'annotation org.minivmm.rootfs="nfs": expected ext4 or virtiofs' "$W/out6n" &&
	oci_ok "a bad org.minivmm.rootfs refused at create" ||
	oci_bad "bad rootfs annotation: rc $rc: $(cat "$W/out6n")"

# 6a. Runtime errors: one line each, no VM.
cp /etc/minivmm-oci.conf "$W/conf.saved"
sed -i 's|^kernel = .*|kernel = /nonexistent/vmlinuz|' /etc/minivmm-oci.conf
"${P[@]}" "${RT[@]}" run --rm --network none localhost/bb true >"$W/out7" 2>&1
rc=$?
cp "$W/conf.saved" /etc/minivmm-oci.conf
[[ $rc -ne 0 ]] && grep -q "kernel /nonexistent/vmlinuz: No such file or directory" "$W/out7" &&
	oci_ok "missing kernel: $(grep -m1 nonexistent "$W/out7")" || oci_bad "missing kernel: rc $rc: $(cat "$W/out7")"

# 7. podman's default capabilities, no_new_privs, the container's own mount
#    namespace (a capsh --print, from /proc/self/status).
"${P[@]}" "${RT[@]}" run --rm --network none --cidfile "$W/cid8" --security-opt no-new-privileges \
	localhost/bb sh -c 'grep -E "^(Cap|NoNewPrivs)" /proc/self/status' >"$W/out8" 2>"$W/err8"
rc=$?
caps=$(oci_caps "$W/out8")
# CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7,
# SETPCAP 8, NET_BIND_SERVICE 10, SYS_CHROOT 18, SETFCAP 31.
dflt=00000000800405fb
[[ $rc -eq 0 && "$caps" == "inh=$NOCAPS prm=$dflt eff=$dflt bnd=$dflt amb=$NOCAPS nnp=1" ]] &&
	oci_ok "podman's default capabilities in the container, no-new-privileges: $caps" ||
	oci_bad "default capabilities: rc $rc, '$caps' (want bnd=eff=prm=$dflt), $(cat "$W/err8")"
con="$W/console/$(cat "$W/cid8" 2>/dev/null).console.log"
tr -d '\r' <"$con" 2>/dev/null | grep -q "mounts under /newroot in the init's namespace: 0$" &&
	oci_ok "the container's mounts stay in its own namespace (the init's has none under /newroot)" ||
	oci_bad "mount namespace: $(grep -a "mounts under" "$con" 2>&1 | head -3)"

oci_finish
