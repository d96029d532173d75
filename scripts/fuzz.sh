#!/bin/bash
# Builds the libFuzzer targets (clang, -DVMM_FUZZ=ON, ASan+UBSan) into
# build-fuzz/ and runs each for a fixed time on a working copy of its seed
# corpus, then prints per target the executions, the coverage reached
# (edges, features, corpus) and the crashes found.
#
#   scripts/fuzz.sh                  20 s per target (same as --quick)
#   scripts/fuzz.sh --quick          20 s per target
#   scripts/fuzz.sh --smoke          10 s per target (scripts/test.sh)
#   scripts/fuzz.sh --long SECONDS   SECONDS per target, for real campaigns
#   scripts/fuzz.sh ... -- TARGET..  only these targets (e.g. fuzz_cli)
#   scripts/fuzz.sh --jobs N ...     N targets at a time (default: nproc)
#   scripts/fuzz.sh --build-only     build build-fuzz/ and stop (scripts/test.sh
#                                    builds it at nice 19 beside the tests)
#
# Every input runs under a 5 s timeout with leak detection, with
# tests/fuzz/<target>.dict as libFuzzer's dictionary if there is one.  The
# working corpus is build-fuzz/corpus/<target>/ (seeded from
# tests/fuzz/corpus/ and kept between runs); crashes land in
# build-fuzz/crashes/ and make the script fail.  Keep each crash as
# tests/fuzz/regressions/<target>/<name> (check_fuzz_regressions replays it
# in every build), and fix the bug.
#
# The build is not -Werror: the targets must build while other code is in
# flight; `cmake -DVMM_WERROR=ON` in the normal builds keeps the warnings out.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=20
build_only=0
# Each target is one single-threaded process: as many at a time as CPUs.
par=$(nproc)
while [[ $# -gt 0 ]]; do
	case "$1" in
	--quick) secs=20; shift ;;
	--smoke) secs=10; shift ;;
	--long) secs=${2:?--long needs SECONDS}; shift 2 ;;
	--jobs) par=${2:?--jobs needs N}; shift 2 ;;
	--build-only) build_only=1; shift ;;
	--) shift; break ;;
	*) echo "usage: $0 [--quick|--smoke|--long SECONDS|--build-only] [--jobs N] [-- TARGET...]" >&2; exit 2 ;;
	esac
done
[[ $par =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs wants a positive number" >&2; exit 2; }
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] ||
	targets=(fuzz_virtqueue_blk fuzz_virtio_pci fuzz_bzimage fuzz_pvh fuzz_arm64_boot fuzz_cli
		fuzz_vhost_user)

# The PC's ports and serial console, the PCI bus, the io_uring engine,
# vhost-user's socket layer, minivmm-blkd's command line.
[[ $# -gt 0 ]] || targets+=(fuzz_pc_ports fuzz_pci_bus fuzz_blk_uring fuzz_vu_socket
	fuzz_blkd_cli)
# The hybrid vsock's guest packets and host sockets.
[[ $# -gt 0 ]] || targets+=(fuzz_vsock)
# The OCI runtime's guest-facing parsers (virtio-console, proto.c), its
# VMM process's control plane (shim-ctl.c), its guest init's decoder of
# what the host sends, its config.json and state.json loaders and command
# line.
[[ $# -gt 0 ]] || targets+=(fuzz_vcon fuzz_oci_proto fuzz_oci_shim fuzz_oci_init_config
	fuzz_oci_config fuzz_oci_state fuzz_oci_cli)
# virtio-net's TX, RX and control paths (devices/net/vnet.c).
[[ $# -gt 0 ]] || targets+=(fuzz_net)
# virtio-net's stream back end: reassembly, bad lengths, a peer gone.
[[ $# -gt 0 ]] || targets+=(fuzz_net_stream)
# minivmm's API socket requests.
[[ $# -gt 0 ]] || targets+=(fuzz_api_request)
# minivmm-oci exec's channel (the guest init's exec server's decoder).
[[ $# -gt 0 ]] || targets+=(fuzz_oci_exec)

if ! command -v clang >/dev/null; then
	echo "fuzz.sh: clang not found (scripts/deps.sh installs it)" >&2
	exit 1
fi
CC=clang cmake -S . -B build-fuzz -DVMM_FUZZ=ON -DVMM_WERROR=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The default target, not just the fuzz_* programs: a fuzz tree must build
# with a plain `cmake --build` (libvmm.so included, see CMakeLists.txt), and
# this is where CI checks that it does.  The unit tests are not in it
# (tests/CMakeLists.txt): instrumented, they were over half its CPU time.
cmake --build build-fuzz -j"$(nproc)"
[[ $build_only -eq 0 ]] || exit 0

mkdir -p build-fuzz/crashes
# run_target T: one campaign; its exit status lands in build-fuzz/T.log.rc.
run_target() {
	local t=$1 corpus=build-fuzz/corpus/$1 log=build-fuzz/$1.log rc=0
	local dict=()
	mkdir -p "$corpus"
	cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
	: >"$log.start"
	# A dictionary of the format's tokens, where the target has one.
	[[ -f tests/fuzz/"$t".dict ]] && dict=(-dict=tests/fuzz/"$t".dict)
	ASAN_OPTIONS=detect_leaks=1 build-fuzz/tests/fuzz/"$t" \
		-max_total_time="$secs" -timeout=5 -detect_leaks=1 "${dict[@]}" \
		-print_final_stats=1 -artifact_prefix=build-fuzz/crashes/"$t"- \
		"$corpus" >"$log" 2>&1 || rc=$?
	echo "$rc" >"$log.rc"
}
for t in "${targets[@]}"; do
	while [[ $(jobs -rp | wc -l) -ge $par ]]; do
		wait -n || true
	done
	echo "== $t: ${secs} s" >&2
	rm -f build-fuzz/"$t".log.rc
	run_target "$t" &
done
wait

declare -A execs cov ncrash
failed=()
for t in "${targets[@]}"; do
	log=build-fuzz/$t.log
	rc=$(cat "$log.rc" 2>/dev/null || echo 1)
	execs[$t]=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$log" | tail -1)
	# Coverage at the end: libFuzzer's last status line (edges "cov",
	# features "ft", corpus entries/size).
	cov[$t]=$(awk '/^#[0-9]+/ { for (i = 1; i < NF; i++) { if ($i == "cov:") c = $(i + 1); if ($i == "ft:") f = $(i + 1); if ($i == "corp:") k = $(i + 1) } } END { print c " " f " " k }' "$log")
	ncrash[$t]=$(find build-fuzz/crashes -name "$t-*" -newer "$log.start" 2>/dev/null | wc -l)
	if [[ $rc -ne 0 ]]; then
		failed+=("$t")
		echo "== $t failed (exit $rc):" >&2
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" >&2 || tail -20 "$log" >&2
	fi
done

echo "fuzz.sh: ${secs} s per target, $par at a time (cov: edges, ft: features, corpus: entries/size, crashes: new files in build-fuzz/crashes):"
printf '  %-20s %12s %6s %7s %14s %8s\n' target execs cov ft corpus crashes
for t in "${targets[@]}"; do
	read -r c f k <<<"${cov[$t]:-}"
	printf '  %-20s %12s %6s %7s %14s %8s\n' "$t" "${execs[$t]:-?}" "${c:-?}" "${f:-?}" "${k:-?}" "${ncrash[$t]:-?}"
done
if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz.sh: FAILED: ${failed[*]} (inputs in build-fuzz/crashes/)" >&2
	exit 1
fi
