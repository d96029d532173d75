#!/bin/bash
# SPDX-License-Identifier: MIT
#
# devbench.sh [--smoke|--quick|--full] - device throughput without KVM.
#
# A simulated virtio-blk driver (bench/devbench_driver.c: one "vCPU" thread
# per queue, guest RAM in a memfd, kicks written to the eventfds KVM would
# signal, interrupts read from the irqfd eventfds) drives
#   libvmm  the real virtio-blk device, virtio-pci transport, I/O threads and
#           io_uring (file backend) or the null engine (null backend);
#   qsd     qemu-storage-daemon's vhost-user-blk export (one iothread
#           object; file with aio=io_uring, and null-co), through a small
#           vhost-user front end (bench/vhost_user.c);
#   fio     raw io_uring on the same file at the same QD (file backend).
# 4 KiB random reads at QD 1/16/32/128 on 1..N queues, EVENT_IDX on (and
# off at QD 32).  Points are run in rounds, each round alternating the
# targets (A/B/C, then C/B/A), and reported as medians.
#
# Output: bench/results/devbench.json (one record per run, all parameters),
#         bench/results/devbench.md (medians, ratios vs targets),
#         bench/results/devbench_*.png (gnuplot).
# Environment: DEVBENCH_DIR (image directory, default /var/tmp/devbench:
#   a page-cached file; /dev/shm for tmpfs), DEVBENCH_SECONDS, DEVBENCH_REPS.
# Timings are reported, never asserted (shared 2-core machine).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_quick_mode "$@"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-devbench
RES=${BENCH_OUT:-$ROOT/bench/results}
DIR=${DEVBENCH_DIR:-/var/tmp/devbench}
IMG=$DIR/devbench.img
IMG_MB=256
if [ $MODE = full ]; then
	SECS=${DEVBENCH_SECONDS:-2}; REPS=${DEVBENCH_REPS:-3}
	QDS="1 16 32 128"; QUEUES="1 2 4"
elif [ $MODE = smoke ]; then
	SECS=${DEVBENCH_SECONDS:-0.3}; REPS=${DEVBENCH_REPS:-1}
	QDS="16"; QUEUES="1"; IMG_MB=16
else
	SECS=${DEVBENCH_SECONDS:-1}; REPS=${DEVBENCH_REPS:-2}
	QDS="1 16 32 128"; QUEUES="1 2"
fi
MAXQ=4
WARM=0.3

need() { command -v "$1" >/dev/null || { echo "devbench: $1 not found ($2)" >&2; exit 1; }; }
need cmake cmake; need gcc gcc; need python3 python3
HAVE_QSD=1; command -v qemu-storage-daemon >/dev/null || { HAVE_QSD=0; echo "devbench: no qemu-storage-daemon (qemu-system-common): peer skipped" >&2; }
HAVE_FIO=1; command -v fio >/dev/null || { HAVE_FIO=0; echo "devbench: no fio: raw io_uring reference skipped" >&2; }

# ---- build ---------------------------------------------------------------
# DEVBENCH_BIN: a devbench built by CMake (bench/devbench.cmake) instead.
if [ -n "${DEVBENCH_BIN:-}" ] && [ -x "$DEVBENCH_BIN" ]; then
DB=$DEVBENCH_BIN
else
echo "devbench: building ($BUILD)" >&2
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DVMM_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" --target vmm_static -j"$(nproc)" >/dev/null
gcc -O2 -g -Wall -Wextra -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes \
	-Wsign-compare -Wundef -Wwrite-strings -Wshadow -Wno-unused-parameter \
	-D_GNU_SOURCE -I"$ROOT/include" -I"$ROOT/libvmm/core" -I"$ROOT/libvmm/arch" -I"$ROOT/libvmm/machine" -I"$ROOT/devices" \
	-I"$ROOT/bench" -I"$ROOT/tests/harness" "$ROOT"/bench/devbench.c \
	"$ROOT"/bench/devbench_driver.c "$ROOT"/bench/devbench_libvmm.c \
	"$ROOT"/bench/vhost_user.c "$ROOT"/tests/harness/fake_vpci.c \
	"$ROOT"/tests/harness/vu_front.c \
	"$BUILD/libvmm_static.a" -luring -lpthread -o "$BUILD/devbench"
DB=$BUILD/devbench
fi

# ---- image, peer ----------------------------------------------------------
mkdir -p "$DIR" "$RES"
if [ ! -f "$IMG" ] || [ "$(stat -c %s "$IMG")" -ne $((IMG_MB << 20)) ]; then
	dd if=/dev/urandom of="$IMG" bs=1M count=$IMG_MB status=none
fi
warm() { cat "$IMG" >/dev/null; }	# keep it in the page cache
warm

TMP=$(mktemp -d /tmp/devbench.XXXXXX)
QSD_PID=
cleanup() {
	[ -n "$QSD_PID" ] && kill "$QSD_PID" 2>/dev/null && wait "$QSD_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ $HAVE_QSD = 1 ]; then
	# One iothread object serves both exports (QEMU 7.2 runs an export in
	# one AioContext); num-queues = the most the driver uses.
	qemu-storage-daemon --object iothread,id=iot0 \
		--blockdev driver=file,node-name=f,filename="$IMG",cache.direct=off,aio=io_uring,locking=off \
		--blockdev driver=null-co,node-name=n,size=1073741824 \
		--export type=vhost-user-blk,id=ef,node-name=f,addr.type=unix,addr.path="$TMP/f.sock",num-queues=$MAXQ,writable=off,iothread=iot0 \
		--export type=vhost-user-blk,id=en,node-name=n,addr.type=unix,addr.path="$TMP/n.sock",num-queues=$MAXQ,writable=off,iothread=iot0 \
		>"$TMP/qsd.log" 2>&1 &
	QSD_PID=$!
	for _ in $(seq 50); do [ -S "$TMP/n.sock" ] && [ -S "$TMP/f.sock" ] && break; sleep 0.1; done
	if ! [ -S "$TMP/n.sock" ]; then
		echo "devbench: qemu-storage-daemon did not start:" >&2; cat "$TMP/qsd.log" >&2
		HAVE_QSD=0; QSD_PID=
	fi
fi

RAW=$TMP/records.jsonl
: >"$RAW"
emit() { # record from stdin -> $RAW (adds round number)
	python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r["round"]=int(sys.argv[1]); r["mode"]=sys.argv[2]; print(json.dumps(r))' "$1" "$MODE" >>"$RAW"
}

run_libvmm() { # backend qd queues event_idx round
	"$DB" --target libvmm --backend "$1" --file "$IMG" --qd "$2" --queues "$3" \
		--event-idx "$4" --seconds "$SECS" --warmup $WARM --rep "$5" | emit "$5" ||
		echo "devbench: libvmm $* failed" >&2
}
run_qsd() {
	[ $HAVE_QSD = 1 ] || return 0
	local sock=$TMP/n.sock; [ "$1" = file ] && sock=$TMP/f.sock
	"$DB" --target vhost --peer qsd --peer-pid "$QSD_PID" --peer-iothreads 1 \
		--sock "$sock" --backend "$1" --qd "$2" --queues "$3" --event-idx "$4" \
		--seconds "$SECS" --warmup $WARM --rep "$5" | emit "$5" ||
		echo "devbench: qsd $* failed" >&2
}
run_fio() { # qd queues(jobs) round
	[ $HAVE_FIO = 1 ] || return 0
	fio --name=devbench --ioengine=io_uring --rw=randread --bs=4k --invalidate=0 \
		--iodepth="$1" --numjobs="$2" --thread --filename="$IMG" --time_based \
		--runtime="$SECS" --ramp_time=$WARM --output-format=json 2>/dev/null |
		python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"]
qd, nj, rnd, mode = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
ios = sum(x["read"]["total_ios"] for x in j)
secs = max(x["read"]["runtime"] for x in j) / 1000.0
cpu = sum((x["usr_cpu"] + x["sys_cpu"]) / 100.0 * x["read"]["runtime"] / 1000.0 for x in j)
rps = sum(x["read"]["iops"] for x in j)
print(json.dumps({"target": "fio", "backend": "file", "qd": qd, "queues": nj,
    "iothreads": nj, "event_idx": None, "rep": rnd, "round": rnd, "mode": mode,
    "seconds": secs, "reqs": ios, "rps": rps, "rps_per_iothread": rps / nj,
    "cpu_us_per_req": cpu * 1e6 / max(ios, 1), "engine": "io_uring"}))' \
		"$1" "$2" "$3" "$MODE" >>"$RAW" || echo "devbench: fio $* failed" >&2
}

# ---- the sweep -------------------------------------------------------------
echo "devbench: $MODE: ${SECS}s per run, $REPS rounds, QD {$QDS}, queues {$QUEUES}" >&2
start=$(date +%s)
for r in $(seq 0 $((REPS - 1))); do
	for be in null file; do
		for nq in $QUEUES; do
			for qd in $QDS; do
				[ $be = file ] && warm
				if [ $((r % 2)) = 0 ]; then
					run_libvmm $be $qd $nq 1 $r; run_qsd $be $qd $nq 1 $r
					[ $be = file ] && run_fio $qd $nq $r
				else
					[ $be = file ] && run_fio $qd $nq $r
					run_qsd $be $qd $nq 1 $r; run_libvmm $be $qd $nq 1 $r
				fi
			done
		done
		# EVENT_IDX off (item 3), one queue, QD 32.
		run_libvmm $be 32 1 0 $r; run_qsd $be 32 1 0 $r
	done
	echo "devbench: round $r done ($(($(date +%s) - start)) s)" >&2
done

python3 "$ROOT/bench/devbench_report.py" "$RAW" "$RES" "$MODE" \
	"$(uname -r)" "$(nproc)" "$(qemu-storage-daemon --version 2>/dev/null | head -1 || true)" \
	"$(fio --version 2>/dev/null || true)" "$DIR"
echo "devbench: wrote $RES/devbench.json, devbench.md, devbench_*.png ($(($(date +%s) - start)) s)" >&2
