#!/bin/bash
# api_socket.sh MINIVMM KERNEL INITRD
# minivmm --api-socket with the default layout at 4 vCPUs (a disk with a
# queue per vCPU, seccomp on): the guest runs a write loop (payload
# "ticker": block N written and synced, then "MINIVMM-TICK N <uptime>").
#  - info and stats while it runs (stats as --stats-json has them);
#  - pause: "state":"paused", no tick for 4 s, stats still answered;
#    resume: ticks go on; the guest's monotonic clock did not jump by the
#    pause where it runs on kvm-clock (the pause stops kvmclock);
#  - set-rate-limit on the disk at run time: the limits in force show in
#    stats, a 2 requests/s limit throttles the write loop (the throttled
#    counter and its wait time rise; ticks go on), a bandwidth limit
#    replaces it, an empty request lifts it; a bad device or limit is
#    refused; every write acknowledged under them is in the image;
#  - malformed, unknown, oversized and slow requests get an error and the
#    VM runs on; a peer of another uid is refused (0600, and SO_PEERCRED
#    when the file mode would let it in);
#  - shutdown (the ACPI power button): the guest powers off, minivmm exits
#    0, every block the guest acknowledged (a TICK line) is in the image;
#  - stop, on a second VM (its disk limited from the command line, which
#    stats reports): minivmm exits 0;
#  - --cpu-affinity 0: every vCPU and I/O thread pinned; a CPU the L1 has
#    not is refused at start with its reason.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/api_socket.XXXXXX")
chmod 755 "$dir"
sock=$dir/api.sock img=$dir/disk.img log=$dir/vmm.log
pid=
cleanup() {
	local rc=$?
	[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null
	if ((rc)) && [[ -f "$log" ]]; then
		echo "--- minivmm's output (last 30 lines) ---"
		tr -d '\r' <"$log" | tail -30
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
api() { "$vmm" --api "$sock" "$@"; }
# say TEXT: a progress line with the seconds since the start (the test
# takes minutes in the rig: where they go).
t0=$SECONDS
say() { echo "[+$((SECONDS - t0)) s] $*"; }
ticks() { grep -c 'MINIVMM-TICK ' "$log" || true; }
wait_ticks() { # wait_ticks N: until more than N ticks (bounded)
	local end=$((SECONDS + ${E2E_VMM_TIMEOUT:-300}))
	while (($(ticks) <= $1)); do
		((SECONDS < end)) && kill -0 "$pid" 2>/dev/null || {
			tr -d '\r' <"$log" | tail -20
			e2e_fail "no tick after $1"
		}
		sleep 0.5
	done
}
raw() { # raw DATA: send DATA as is, print the answer
	printf '%s' "$1" | socat -t 5 - "UNIX-CONNECT:$sock"
}

truncate -s 8M "$img"
# --cpu-affinity: a CPU the process may not run on is refused at start.
ncpu=$(nproc)
if "$vmm" --smp 4 --mem 256M --kernel "$kernel" --initrd "$initrd" --cpu-affinity "$ncpu" \
	</dev/null >"$dir/aff.log" 2>&1; then
	e2e_fail "--cpu-affinity $ncpu (this L1 has $ncpu CPUs) was not refused"
fi
grep -q "CPU $ncpu is not one this process may run on" "$dir/aff.log" ||
	e2e_fail "--cpu-affinity $ncpu: $(head -c 300 "$dir/aff.log")"
"$vmm" --smp 4 --mem 256M --kernel "$kernel" --initrd "$initrd" --cpu-affinity 0 \
	--disk "$img" --api-socket "$sock" --append "quiet guest.run=ticker" \
	</dev/null >"$log" 2>&1 &
pid=$!
wait_ticks 2
# Each vCPU thread and each I/O thread is pinned to CPU 0 (vCPU i and I/O
# thread i on the list's i-th CPU, round robin); the console's thread is
# not pinned.  (The rig's L1 has one CPU, so this shows the call reached
# every thread; check_cpu_affinity pins to another CPU on the host.)
pinned=0
for t in /proc/$pid/task/*; do
	case $(cat "$t/comm") in
	vmm-vcpu* | vmm-io*)
		[[ "$(awk '/^Cpus_allowed_list/ {print $2}' "$t/status")" == 0 ]] ||
			e2e_fail "$(cat "$t/comm"): $(grep Cpus_allowed_list "$t/status")"
		pinned=$((pinned + 1))
		;;
	esac
done
[[ $pinned -eq 8 ]] || e2e_fail "--cpu-affinity 0: $pinned vCPU and I/O threads, expected 8"
say "cpu affinity: 4 vCPU + 4 I/O threads on CPU 0; CPU $ncpu refused at start"
[[ "$(stat -c %a "$sock")" == 600 ]] || e2e_fail "the socket's mode is $(stat -c %a "$sock"), not 600"

out=$(api info) || e2e_fail "info: $out"
say "info: $out"
jq -e '.ok and .state == "running" and .vcpus == 4 and .disks == 1' <<<"$out" >/dev/null ||
	e2e_fail "info: $out"
out=$(api stats)
jq -e '.ok and (.stats.disks[0].num_queues == 4) and (.stats.kvm.vcpus == 4) and
	(.stats.disks[0].total.requests.write > 0)' <<<"$out" >/dev/null ||
	e2e_fail "stats while running: $(head -c 600 <<<"$out")"
# The I/O threads: one per vCPU, under the default policy (batch: no
# switches), the write loop's completions counted on them.
jq -e '(.stats.iothreads | length == 4) and
	all(.stats.iothreads[]; .sched == "batch" and .sched_switches == 0 and
	    .sched_normal_ns == 0 and .loops > 0) and
	([.stats.iothreads[].completions] | add > 0)' <<<"$out" >/dev/null ||
	e2e_fail "I/O threads in stats: $(jq -c .stats.iothreads <<<"$out" | head -c 600)"

# Pause under the write loop.
api pause | jq -e .ok >/dev/null || e2e_fail "pause refused"
api pause | jq -e .ok >/dev/null || e2e_fail "a second pause refused"
jq -e '.state == "paused"' <<<"$(api info)" >/dev/null || e2e_fail "info does not say paused"
n0=$(ticks)
sleep 4
n1=$(ticks)
((n1 == n0)) || e2e_fail "the guest ran while paused: $n0 -> $n1 ticks"
api stats | jq -e '.ok and .stats.kvm.vcpus == 4' >/dev/null || e2e_fail "stats while paused"
api resume | jq -e .ok >/dev/null || e2e_fail "resume refused"
jq -e '.state == "running"' <<<"$(api info)" >/dev/null || e2e_fail "info does not say running"
wait_ticks "$n1"
wait_ticks $((n1 + 1))
# The ticks' uptimes, read now that both lines are whole: the last tick
# before the pause may have been half printed when it was counted (a
# partial "MINIVMM-TICK 14 " read as uptime 0 failed this check once).
tick_uptime() { tr -d '\r' <"$log" | grep -o "MINIVMM-TICK $1 [0-9][0-9.]*" | head -1; }
last=$(tick_uptime "$n0")
first=$(tick_uptime $((n1 + 1)))
[[ -n $last && -n $first ]] || e2e_fail "ticks $n0 and $((n1 + 1)) not found whole: '$last' '$first'"
cs=$(tr -d '\r' <"$log" | sed -n 's/.*MINIVMM-TICKER clocksource=\([a-z_-]*\).*/\1/p')
gap=$(awk -v a="${last##* }" -v b="${first##* }" 'BEGIN { printf "%.2f", b - a }')
say "paused 4 s after tick $n0; guest uptime across the pause: +$gap s (clocksource $cs)"
if [[ "$cs" == kvm-clock ]]; then
	awk -v g="$gap" 'BEGIN { exit !(g < 3.5) }' ||
		e2e_fail "the guest's kvm-clock jumped by the pause: +$gap s over a 4 s pause"
fi

# Rate limits at run time (set-rate-limit).  Asserted by their effects,
# never by timings: the limits in force as stats reports them, the
# throttled counter under a limit below the write loop's rate.
rate() { api stats | jq -c '.stats.rate_limits.disks[0]'; }
out=$(rate)
jq -e '.bw == 0 and .ops == 0 and .throttled == 0' <<<"$out" >/dev/null ||
	e2e_fail "rate limits before any was set: $out"
api set-rate-limit disk0 rate-ops=2 rate-ops-burst=1 | jq -e .ok >/dev/null ||
	e2e_fail "set-rate-limit rate-ops=2 refused"
jq -e '.ops == 2 and .ops_burst == 1 and .bw == 0' <<<"$(rate)" >/dev/null ||
	e2e_fail "stats do not show rate-ops=2: $(rate)"
n3=$(ticks)
wait_ticks $((n3 + 3)) # a tick is a write and a flush: 2 requests or more
out=$(rate)
say "rate-ops=2: $out"
jq -e '.throttled > 0 and .throttled_ns > 0' <<<"$out" >/dev/null ||
	e2e_fail "a 2 requests/s limit under the write loop throttled nothing: $out"
api set-rate-limit disk0 rate-bw=64K | jq -e .ok >/dev/null || e2e_fail "set-rate-limit rate-bw=64K refused"
jq -e '.bw == 65536 and .ops == 0' <<<"$(rate)" >/dev/null ||
	e2e_fail "stats do not show rate-bw=64K alone: $(rate)"
n3=$(ticks)
wait_ticks $((n3 + 2))
api set-rate-limit disk0 | jq -e .ok >/dev/null || e2e_fail "set-rate-limit (unlimited) refused"
jq -e '.bw == 0 and .ops == 0 and .throttled > 0' <<<"$(rate)" >/dev/null ||
	e2e_fail "stats after lifting the limits: $(rate)"
n3=$(ticks)
wait_ticks $((n3 + 2))
out=$(api set-rate-limit disk7 rate-ops=5 || true)
jq -e '.ok == false and .error == "no such device"' <<<"$out" >/dev/null ||
	e2e_fail "set-rate-limit on disk7: $out"
if api set-rate-limit disk0 rate-bw-burst=1M >/dev/null 2>&1; then
	e2e_fail "the client sent a burst without its rate"
fi

# Bad requests: an error each, the VM runs on.
for req in 'not json' '[1,2]' '{"command":"bogus"}' '{"command":"info","x":1}' \
	'{"command":"info","command":"stop"}' '{"command":7}' \
	'{"command":"set-rate-limit"}' '{"command":"set-rate-limit","device":"disk0","bw":-1}' \
	'{"command":"set-rate-limit","device":"net0"}' \
	'{"command":"set-rate-limit","device":"disk0","ops_burst":5}'; do
	out=$(raw "$req"$'\n')
	jq -e '.ok == false and (.error | length > 0)' <<<"$out" >/dev/null ||
		e2e_fail "request '$req' got: $out"
	echo "refused '$req': $(jq -r .error <<<"$out")"
done
out=$(head -c 8192 /dev/zero | tr '\0' ' ' | socat -t 5 - "UNIX-CONNECT:$sock")
jq -e '.ok == false' <<<"$out" >/dev/null || e2e_fail "oversized request got: $out"
# A client that sends half a request and waits: refused after 1 s.
out=$( (printf '{"comm'; sleep 3) | socat -t 5 - "UNIX-CONNECT:$sock")
jq -e '.ok == false' <<<"$out" >/dev/null || e2e_fail "slow request got: $out"
# Another uid: the file mode stops it; with the mode opened, SO_PEERCRED.
if setpriv --reuid=65534 --regid=65534 --clear-groups "$vmm" --api "$sock" info 2>&1; then
	e2e_fail "uid 65534 got an answer through a 0600 socket"
fi
chmod 666 "$sock"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$vmm" --api "$sock" info || true)
jq -e '.ok == false and .error == "permission denied"' <<<"$out" >/dev/null ||
	e2e_fail "uid 65534: $out"
n2=$(ticks)
wait_ticks "$n2"
jq -e '.ok and .state == "running"' <<<"$(api info)" >/dev/null || e2e_fail "VM not running after bad requests"

# Shutdown: the ACPI power button; the guest powers off, minivmm exits 0,
# every block the guest acknowledged is in the image.
finish() { # finish WHAT: minivmm has ended (60 s at most), exit 0, socket gone
	local rc=0
	timeout 60 tail --pid="$pid" -f /dev/null || e2e_fail "$1: minivmm still running 60 s later"
	wait "$pid" || rc=$?
	pid=
	tr -d '\r' <"$log" >"$log.txt"
	[[ $rc -eq 0 ]] || { tail -20 "$log.txt"; e2e_fail "$1: minivmm exited $rc, expected 0"; }
	for _ in $(seq 50); do [[ -e "$sock" ]] && sleep 0.1; done
	[[ ! -e "$sock" ]] || e2e_fail "$1: the socket was left behind"
}
api shutdown | jq -e .ok >/dev/null || e2e_fail "shutdown refused"
finish shutdown
grep -q "MINIVMM-POWER-BUTTON" "$log.txt" || e2e_fail "the guest saw no power button"
grep -q "MINIVMM-GUEST-UP cpus=4" "$log.txt" || e2e_fail "the guest did not come up with 4 CPUs"
acked=$(grep 'MINIVMM-TICK ' "$log.txt" | tail -1 | awk '{ print $2 }')
# Block i (1..acked) starts with the line "MINIVMM-BLOCK i": one pass over
# the image (tr keeps byte offsets, grep -b prints them) against the list
# expected, not three processes a block (minutes in the rig's L1).
want=$dir/blocks.want
for ((i = 1; i <= acked; i++)); do
	echo "$(((i - 1) * 512)):MINIVMM-BLOCK $i"
done >"$want"
dd if="$img" bs=512 skip=1 count="$acked" 2>/dev/null | tr '\0' '\n' |
	grep -a -b -x 'MINIVMM-BLOCK [0-9]*' >"$dir/blocks.got" || true
diff "$want" "$dir/blocks.got" >"$dir/blocks.diff" ||
	e2e_fail "acknowledged blocks missing or wrong (want < > got): $(head -5 "$dir/blocks.diff")"
say "shutdown: power button seen, the guest powered off, minivmm exited 0; $acked acknowledged writes all in the image"

# Stop: a second VM, stopped through the API while it writes: exit 0.
# Its disk is limited from the command line.
"$vmm" --smp 2 --mem 256M --kernel "$kernel" --initrd "$initrd" \
	--disk "path=$img,rate-bw=1M,rate-bw-burst=256K,rate-ops=500" \
	--api-socket "$sock" --append "quiet guest.run=ticker" \
	</dev/null >"$log" 2>&1 &
pid=$!
wait_ticks 1
jq -e '.bw == 1048576 and .bw_burst == 262144 and .ops == 500' <<<"$(rate)" >/dev/null ||
	e2e_fail "the command line's limits are not in force: $(rate)"
api stop | jq -e .ok >/dev/null || e2e_fail "stop refused"
finish stop
echo "PASS: info/stats/pause/resume/set-rate-limit/shutdown/stop over the API socket; bad requests and another uid refused"
