#!/bin/sh
# wait-listening.sh PATH [TENTHS]: wait until a Unix socket at PATH
# listens, TENTHS of a second at most (default 100); exit 1 if it never
# did.  A back end that binds PATH itself (virtiofsd --socket-path, passt
# -s) makes the file a moment before its listen(), and a connect() in
# between is refused (ECONNREFUSED: seen in the arm64 rig), so the file's
# existence is not enough.  In /proc/net/unix (this network namespace's
# sockets) flags 00010000, __SO_ACCEPTCON, mark a listening socket.
# POSIX sh and awk (busybox's too).
p=$1 n=${2:-100} i=0
while [ "$i" -lt "$n" ]; do
	awk -v p="$p" '$4 == "00010000" && $8 == p { f = 1 } END { exit !f }' \
		/proc/net/unix && exit 0
	sleep 0.1
	i=$((i + 1))
done
exit 1
