#!/bin/bash
# bench/oci_net_bench.sh [--quick|--full|--report] BUILD_DIR
#
# minivmm-oci on podman's default network vs runc's veth (issue 30's
# benchmark), side by side in ONE rig L1 (bench/oci_net_rig.sh through
# tests/e2e/oci-rig.sh; Debian's podman 4.3 with its CNI bridge, as
# tests/e2e/oci_network.sh uses it), the runtimes alternated round by
# round:
#  - `podman run -d -p HPORT:80` of busybox httpd: wall ms from the
#    command's start until the L1 gets the page through the published
#    port (HTTP 200), then `podman rm -f -t 0`;
#  - TCP throughput container <-> L1 host with Debian's iperf3 (the client
#    in the container, in an image of busybox + iperf3 + its libraries made
#    here, BUILD_DIR/bench/oci-net-image.tar; the server on the L1's
#    bridge address), both directions, Mbit/s; the target: minivmm-oci
#    >= 0.5x runc; during each test, where the L1's one CPU went (its
#    /proc/stat, the VMM process's user/system/guest time);
#  - minivmm-oci's create per container (wall, CPU of the runtime +
#    mkfs.ext4/debugfs from its timing records; target <= 100 ms of CPU).
# Writes to $BENCH_OUT (default bench/results):
#   oci_net.json     the records (+ date, run_mode, git commit)
#   oci_net.md       medians, ratios, targets
#   oci_net.png      throughput and time to the first HTTP answer
#   oci_net-run.log  the rig's raw output
#   --quick  2 rounds, iperf3 5 s a test
#   --full   3 rounds, iperf3 10 s a test (default)
#   --report remakes oci_net.json/.md/.png from oci_net-run.log, no run
# OCI_NET_SECS overrides the iperf3 test length; OCI_NET_APPEND="..." adds
# to minivmm-oci's guest kernel command line (a diagnosis, e.g.
# virtio_net.napi_tx=0: the guest init passes a module its parameters
# from there).  A --full run holds the rig about 10 minutes.  Timings are
# reported, never asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
mode=--full
[[ ${1:-} == --* || ${1:-} == -h ]] && { mode=$1; shift; }
case $mode in
-h | --help) bench_help; exit 0 ;;
--quick) rounds=2 secs=5 ;;
--full) rounds=3 secs=10 ;;
--report) ;;
*) bench_die "unknown mode $mode" ;;
esac
secs=${OCI_NET_SECS:-${secs:-}}
out=${BENCH_OUT:-$here/results}
mkdir -p "$out"
log=$out/oci_net-run.log
rc=0
if [[ $mode == --report ]]; then
	[[ -s $log ]] || bench_die "no $log to report on"
	# The mode from the rounds the run had (2: --quick).
	mode=--full
	grep -q '^BENCH-JSON {"bench":"oci_net_machine".*"rounds":2,' "$log" && mode=--quick
else
	[[ $secs =~ ^[1-9][0-9]*$ ]] || bench_die "OCI_NET_SECS wants a positive number"
	build=$(cd "${1:?BUILD_DIR}" && pwd)
	for b in minivmm-oci libexec/minivmm-oci/init minivmm-oci-mkinitrd; do
		[[ -x $build/$b ]] || bench_die "$build/$b is missing (build the minivmm-oci targets)"
	done
	command -v iperf3 >/dev/null || bench_die "iperf3 is missing (scripts/deps.sh installs it)"
	# The iperf3 image: busybox with its applets (as tests/e2e/oci-rig.sh
	# makes the rig's), iperf3, the libraries ldd lists and the loader at
	# their own paths.
	img=$build/bench/oci-net-image.tar
	mkdir -p "$build/bench"
	stage=$(mktemp -d)
	mkdir -p "$stage"/{bin,etc,tmp,root}
	cp "$(command -v busybox)" "$stage/bin/busybox"
	for a in $("$stage/bin/busybox" --list); do
		[[ $a == busybox ]] || ln -s busybox "$stage/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
	printf 'root:x:0:\n' >"$stage/etc/group"
	mapfile -t files < <(bench_iperf3_files)
	for f in "${files[@]}"; do
		mkdir -p "$stage/$(dirname "$f")"
		cp -L "/$f" "$stage/$f"
	done
	tar -C "$stage" -cf "$img.tmp" .
	rm -rf "$stage"
	mv "$img.tmp" "$img"
	bench_log "oci_net: minivmm-oci vs runc under podman ($mode: $rounds rounds, iperf3 $secs s a test) through the rig"
	# Set-up about 2 minutes; a round 2-4 minutes.
	{
		E2E_RIG_TIMEOUT=$((600 + rounds * (300 + 4 * secs))) "$here/../tests/e2e/oci-rig.sh" \
			"$build" "$here/oci_net_rig.sh" "$rounds" "$secs" "$img" "${OCI_NET_APPEND:-}" >"$log" 2>&1
	} || rc=$?
fi
bench_rig_results "$log" "$mode" "$out/oci_net.json"
J() { jq -r "$BENCH_JQ_DEFS $1" "$out/oci_net.json"; }
# Medians per measure and runtime, as TSV: label, minivmm-oci, runc.
med() { # LABEL BENCH FIELD [SELECT]
	J "[.[] | select(.bench == \"$2\") ${4:-}] as \$r |
		[\"$1\", (\$r | map(select(.runtime == \"minivmm-oci\") | .$3) | median),
		 (\$r | map(select(.runtime == \"runc\") | .$3) | median),
		 (\$r | map(select(.runtime == \"minivmm-oci\") | .$3) | length),
		 (\$r | map(select(.runtime == \"runc\") | .$3) | length)] | @tsv"
}
up='| select(.direction == "container_to_host")'
down='| select(.direction == "host_to_container")'
{
	med "TCP container -> host (Mbit/s)" oci_net_tcp mbps "$up"
	med "TCP host -> container (Mbit/s)" oci_net_tcp mbps "$down"
} >"$dat"
http=$(mktemp)
trap 'rm -f "$records" "$dat" "$http"' EXIT
{
	med "podman run -d -> first HTTP 200 (ms)" oci_net_http first_http_ms
	med "podman run -d returns (ms)" oci_net_http run_d_ms
	med "podman rm -f -t 0 (ms)" oci_net_http rm_ms
} >"$http"
# The plot's short labels.
pl=$(mktemp)
{
	awk -F'\t' -v OFS='\t' 'NR == 1 { $1 = "ctr -> host" } NR == 2 { $1 = "host -> ctr" } 1' "$dat"
	awk -F'\t' -v OFS='\t' 'NR == 1 { $1 = "first HTTP 200" } NR == 2 { $1 = "run -d returns" } NR <= 2' "$http"
} >"$pl"
bench_plot 1000,450 "$out/oci_net.png" <<GP
$BENCH_GP_BARS
set datafile separator "\t"
set multiplot layout 1,2 title "minivmm-oci vs runc under podman 4.3, default CNI network (rig, medians)"
set title "TCP, iperf3 container <-> L1 host"; set ylabel "Mbit/s"; set grid ytics
set yrange [0:*]; set key below
plot "$pl" every ::0::1 u 2:xtic(1) t "minivmm-oci", "" every ::0::1 u 3 t "runc"
set title "podman run -d -p HOST:80 httpd"; set ylabel "ms"
plot "$pl" every ::2::3 u 2:xtic(1) t "minivmm-oci", "" every ::2::3 u 3 t "runc"
unset multiplot
GP
rm -f "$pl"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else printf "-" }'; }
row() { # TSV line -> | label | m | r | ratio | n |
	IFS=$'\t' read -r l m c nm nc <<<"$1"
	printf '| %s | %s | %s | %s | %s / %s |\n' "$l" "$(awk -v x="$m" 'BEGIN { printf (x == "" ? "-" : "%.0f"), x }')" \
		"$(awk -v x="$c" 'BEGIN { printf (x == "" ? "-" : "%.0f"), x }')" "$(ratio "$m" "$c")" "$nm" "$nc"
}
{
	echo "# minivmm-oci vs runc on podman's default network ($mode, $date, $(bench_commit))"
	echo
	J '.[] | select(.bench == "oci_net_machine") |
		"One rig L1 (nested KVM under TCG, \(.l1_cpus) L1 CPU: \(.l1_cpu), kernel \(.l1_kernel)); \(.podman_version), CNI bridge cni-podman0 (10.88.0.0/16, portmap); \(.iperf3_version); \(.rounds) rounds alternating minivmm-oci and runc, iperf3 \(.secs) s a test\(if (.guest_append // "") != "" then "; minivmm-oci guests booted with `\(.guest_append)` (OCI_NET_APPEND)" else "" end).  Absolute figures are the emulation'"'"'s (the L1, its guests and every process share one emulated CPU): compare side by side."'
	echo
	echo "| measure | minivmm-oci | runc | minivmm-oci / runc | rounds |"
	echo "|---|---|---|---|---|"
	cat "$http" "$dat" | while IFS= read -r l; do row "$l"; done
	echo
	echo "\`podman run -d -p 18090:80 bb sh -c '... exec httpd -f -p 80'\` until curl on the"
	echo "L1 gets the page from http://10.88.0.1:18090/ (podman's portmap DNAT), polled every"
	echo "~50 ms with a 0.3 s connect timeout; iperf3's client in the container (one"
	echo "\`podman run --rm\` per round: -t, then -R) against one-off servers on 10.88.0.1."
	echo
	echo "Targets (issue 30):"
	echo
	mu=$(awk -F'\t' 'NR == 1 { print $2 }' "$dat") cu=$(awk -F'\t' 'NR == 1 { print $3 }' "$dat")
	md=$(awk -F'\t' 'NR == 2 { print $2 }' "$dat") cd=$(awk -F'\t' 'NR == 2 { print $3 }' "$dat")
	for p in "container -> host:$mu:$cu" "host -> container:$md:$cd"; do
		IFS=: read -r l a b <<<"$p"
		x=$(ratio "$a" "$b")
		v=MISSED
		[[ $x != - ]] && awk -v x="$x" 'BEGIN { exit !(x >= 0.5) }' && v=met
		[[ $x == - ]] && v="not measured"
		echo "- network throughput >= 0.5x runc's veth, $l: ${x}x: **$v**"
	done
	cpu=$(J '[.[] | select(.bench == "oci_net_create") | .create_cpu_ms] | median | r(1) // empty')
	cms=$(J '[.[] | select(.bench == "oci_net_create") | .create_ms] | median | r(1) // empty')
	n=$(J '[.[] | select(.bench == "oci_net_create")] | length')
	v=MISSED
	[[ -n $cpu ]] && awk -v x="$cpu" 'BEGIN { exit !(x <= 100) }' && v=met
	[[ -z $cpu ]] && v="not measured"
	echo "- the shim's work <= 100 ms per container: create's CPU (the runtime + mkfs.ext4/debugfs, getrusage) ${cpu:--} ms, its wall time ${cms:--} ms (median of $n creates): **$v**"
	echo
	echo "Where the L1's one CPU went during the TCP tests (medians, % of one CPU,"
	echo "from its /proc/stat sampled every 0.2 s; \"guest\" is time in the L2 guest,"
	echo "user excludes it; VMM: the minivmm-oci process outside / inside the guest):"
	echo
	echo "| runtime | direction | Mbit/s | L1 CPU s per Gbit | L1 busy | L1 user | L1 sys | L1 irq+softirq | L1 guest | VMM user | VMM sys | VMM guest | iperf3 server | iperf3 client (its own) |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	J '[.[] | select(.bench == "oci_net_tcp")] | group_by(.runtime, .direction)[] |
		def m(f; n): (map(f) | median | r(n)) as $v | if $v == null then "-" else ($v | tostring) end;
		def m(f): m(f; 0);
		"| \(.[0].runtime) | \(.[0].direction | sub("_"; " "; "g")) | \(m(.mbps)) | \(m(if .l1_busy_pct and .window_mbps > 0 then .l1_busy_pct * 10 / .window_mbps else null end; 1)) | \(m(.l1_busy_pct)) | \(m(.l1_user_pct)) | \(m(.l1_sys_pct)) | \(m(.l1_softirq_pct)) | \(m(.l1_guest_pct)) | \(m(if .vmm_user_pct then [.vmm_user_pct, 0] | max else null end)) | \(m(.vmm_sys_pct)) | \(m(.vmm_guest_pct)) | \(m(.server_cpu_pct)) | \(m(.client_cpu_pct)) |"'
	echo
	echo "L1 CPU s per Gbit: the L1's busy share over the bridge's bytes in the"
	echo "same window (what one Gbit of TCP cost the one emulated CPU).  VMM user is"
	echo "utime - guest_time, floored at 0 (the kernel scales utime, not guest_time)."
	echo
	J '[.[] | select(.bench == "oci_net_tcp" and .kvm_exits_per_mb)] | group_by(.direction)[] |
		"minivmm-oci'"'"'s VM, \(.[0].direction | sub("_"; " "; "g")) (KVM debugfs, summed over its vCPUs; medians): \(map(.kvm_exits_per_s) | median | r(0)) exits/s, \(map(.kvm_exits_per_mb) | median | r(0)) exits and \(map(.kvm_irqs_per_mb) | median | r(0)) interrupt injections per MB moved, \(map(.kvm_halts_per_s) | median | r(0)) halt exits/s.\n"'
	echo "minivmm-oci's VMM process at the first HTTP answer (boot included; medians):"
	J '[.[] | select(.bench == "oci_net_http" and .runtime == "minivmm-oci")] |
		"user \(map(.vmm_user_ms | if . and . < 0 then 0 else . end) | median | r(0)) ms (utime - guest_time, floored at 0), system \(map(.vmm_sys_ms) | median | r(0)) ms, in the guest \(map(.vmm_guest_ms) | median | r(0)) ms; delete \(map(.delete_ms) | median | r(1)) ms."'
	echo
	echo "Every round:"
	echo
	echo "| round | runtime | first HTTP ms | run -d ms | rm ms | up Mbit/s | down Mbit/s |"
	echo "|---|---|---|---|---|---|---|"
	J '. as $all | [.[] | select(.bench == "oci_net_http" or .bench == "oci_net_tcp")] |
		group_by(.round, .runtime)[] | (map(select(.bench == "oci_net_http"))[0]) as $h |
		def t(d): (map(select(.direction == d))[0].mbps | r(0)) // "-";
		"| \(.[0].round) | \(.[0].runtime) | \($h.first_http_ms // "-") | \($h.run_d_ms // "-") | \($h.rm_ms // "-") | \(t("container_to_host")) | \(t("host_to_container")) |"'
} >"$out/oci_net.md"
bench_rig_end "$out/oci_net.md" "$rc"
