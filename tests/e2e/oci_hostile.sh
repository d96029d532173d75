#!/bin/bash
# oci_hostile.sh: containers that run as root attack minivmm-oci's host
# side (issue 31, item 3), inside the rig's L1 (run by tests/e2e/oci-rig.sh
# with OCI_HOSTILE_TAR: busybox plus tests/guest/hostile/hostile.c built
# static).  One L1 boot, two containers:
#  1. `podman run` of a container that writes 128 KiB to COM1 itself
#     (ioperm + rep outsb: about 3.5 KB/s in the nested rig, one exit a
#     byte; twice console_max, 256 KiB took 83 of the test's 150 s), takes the virtio-console over and sends 40,960
#     ERROR frames (20 MiB) on minivmm.ctl, queues 512 KiB more there
#     without a kick and ends the VM through the exit port (status 42).
#     The runtime and podman return (the VMM process used to hang for good
#     in its device stop, writing the unkicked output to the ctl socket it
#     alone reads); the runtime log (podman's oci-log) stays small (the
#     ERROR lines are rate-limited: it grew by ~23 MB); the console log is
#     capped at console_max (64K here) plus one line.
#  2. The runtime alone (create/start), its VMM's stdout and stderr on one
#     pipe that nobody reads while a subshell of the container writes to
#     stdout: SIGTERM (forwarded; the container's sh traps it and exits,
#     the PID namespace takes the writer with it) ends the VMM process within 2 s (its
#     stdout port thread, stuck on the full pipe, used to keep the device
#     stop waiting for good).
set -uo pipefail
. "$(dirname "$0")/oci_lib.sh"
oci_setup
[[ -r "${OCI_HOSTILE_TAR:-}" ]] || e2e_fail "OCI_HOSTILE_TAR not set (run through tests/e2e/oci-rig.sh)"
echo "console_max = 64K" >>/etc/minivmm-oci.conf

# podman gives a runtime --log (its oci-log) only when containers.conf
# says the runtime writes JSON logs.
printf '[engine]\nruntime_supports_json = ["minivmm-oci"]\n' >"$W/containers.conf"
export CONTAINERS_CONF="$W/containers.conf"
P=(podman --root "$W/pstore" --runroot /run/oci-prun.$$ --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file)
RT=(--runtime "$OCI_RUNTIME")
"${P[@]}" import "$OCI_HOSTILE_TAR" localhost/hostile >/dev/null || e2e_fail "podman import"

# 1. The flood.  --cap-add all: every capability, whatever the runtime's
#    default set (a root container's worst case).
t0=$SECONDS
timeout 600 "${P[@]}" "${RT[@]}" run --name flood --network none --cap-add all \
	--security-opt seccomp=unconfined localhost/hostile sh -c \
	'mount -o remount,rw /sys 2>/dev/null || mount -t sysfs sysfs /sys; exec /hostile -S 131072 -c 40000 -u 128 -x 42 console' \
	>"$W/out1" 2>"$W/err1"
rc=$?
dt=$((SECONDS - t0))
echo "flood container: podman run rc $rc after $dt s"
[[ $rc -eq 42 ]] && oci_ok "flood: podman run returned 42 (the exit port) after $dt s" ||
	oci_bad "flood: podman run rc $rc after $dt s: $(tail -c 600 "$W/err1") $(tail -c 300 "$W/out1")"
log=$(find /run/oci-prun.$$ "$W/pstore" -name oci-log 2>/dev/null | head -1)
if [[ -n "$log" ]]; then
	sz=$(stat -c %s "$log")
	lines=$(wc -l <"$log")
	echo "---- runtime log $log: $sz bytes, $lines lines (tail)"
	tail -n 5 "$log" | cut -c1-300
	[[ $sz -le 262144 ]] && grep -q "more messages caused by the guest" "$log" &&
		oci_ok "flood: runtime log $sz bytes, $lines lines (ERROR frames rate-limited)" ||
		oci_bad "flood: runtime log $sz bytes, $lines lines"
else
	oci_bad "flood: no oci-log under /run/oci-prun.$$"
fi
con=$(ls "$W"/console/*.console.log 2>/dev/null | head -1)
if [[ -n "$con" ]]; then
	sz=$(stat -c %s "$con")
	[[ $sz -le $((65536 + 200)) ]] && grep -q "console_max (65536 bytes) reached" "$con" &&
		oci_ok "flood: console log $sz bytes (console_max 64K + one line)" ||
		oci_bad "flood: console log $sz bytes"
else
	oci_bad "flood: no console log in $W/console"
fi
grep -h "ABUSE" "$W/out1" "$W/err1" 2>/dev/null | head -5
"${P[@]}" rm -f flood >/dev/null 2>&1

# 2. A stalled stdout+stderr pipe, then SIGTERM.
B=$W/bundle
mkdir -p "$B/rootfs"
tar -C "$B/rootfs" -xf "$OCI_IMAGE_TAR"
cat >"$B/config.json" <<'JSON'
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":["sh","-c","trap 'exit 143' TERM; (while :; do echo 0123456789abcdef0123456789abcdef; done) & while :; do wait; done"],
  "env":["PATH=/bin"],"cwd":"/","user":{"uid":0,"gid":0}},
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"}],
 "linux":{"namespaces":[{"type":"pid"},{"type":"mount"},{"type":"network"}]}}
JSON
R=(--root /run/oci-hostile.$$)
# A pipe whose reader never reads: sleep holds its read end (a FIFO: the
# L1 has no /dev/fd for a process substitution).
mkfifo "$W/stall.fifo"
sleep 100000 <"$W/stall.fifo" &
sleeper=$!
exec {stall}>"$W/stall.fifo"
"$OCI_RUNTIME" "${R[@]}" create --bundle "$B" stall >&$stall 2>&$stall ||
	e2e_fail "create of the stalled container"
pid=$("$OCI_RUNTIME" "${R[@]}" state stall | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
"$OCI_RUNTIME" "${R[@]}" start stall || oci_bad "start of the stalled container"
exec {stall}>&-
# The container fills the pipe (64 KiB) and the port's guest buffers.
sleep 20
state=$("$OCI_RUNTIME" "${R[@]}" state stall)
grep -q '"status": "running"' <<<"$state" || oci_bad "stalled container not running: $state"
t0=$(date +%s%N)
kill -TERM "$pid"
# Gone, or a zombie for its parent to reap.
for _ in $(seq 600); do
	st=$(sed -n 's/^[0-9]* (.*) \(.\).*/\1/p' /proc/"$pid"/stat 2>/dev/null)
	[[ -z "$st" || "$st" == Z ]] && break
	sleep 0.05
done
dt=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
echo "stalled pipe: SIGTERM -> VMM process gone after $dt s"
"$OCI_RUNTIME" "${R[@]}" state stall | grep -q '"status": "stopped"' &&
	awk -v d="$dt" 'BEGIN { exit !(d <= 2) }' &&
	oci_ok "stalled stdout+stderr pipe: SIGTERM ended the VMM process in $dt s" ||
	oci_bad "stalled stdout+stderr pipe: VMM still there $dt s after SIGTERM"
kill -KILL "$pid" 2>/dev/null
"$OCI_RUNTIME" "${R[@]}" delete --force stall
kill "$sleeper" 2>/dev/null

oci_finish
