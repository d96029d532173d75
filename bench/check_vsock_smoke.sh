#!/bin/bash
# check_vsock_smoke.sh OUT_DIR
#
# Checks what `bench/vsock_bench.sh --smoke` wrote to OUT_DIR (CTest's
# bench/vsock_smoke), so that the vsock benchmark cannot rot: each of the
# three sides (minivmm hybrid, minivmm vhost=on, QEMU vhost-vsock-pci)
# moved its bytes both ways and answered every one-byte round trip, no run
# failed, and the summary (and the plot, where gnuplot is) was written.  It
# never looks at a timing beyond "was measured" (> 0).
set -euo pipefail
out=${1:?OUT_DIR}
r=$out/vsock.json
fails=0
check() { # DESCRIPTION JQ-EXPRESSION (true when fine)
	if jq -e "$2" "$r" >/dev/null; then
		echo "ok: $1"
	else
		echo "FAIL: $1" >&2
		fails=$((fails + 1))
	fi
}
[[ -s $r ]] || { echo "FAIL: no $r" >&2; exit 1; }
check "records are smoke records with a date" \
	'type == "array" and length > 0 and all(.[]; .date and .run_mode == "smoke")'
check "the machine record names the three sides" \
	'[.[] | select(.bench == "vsock_machine")][0].sides == ["hybrid", "vhost", "qemu"]'
for side in hybrid vhost qemu; do
	check "$side: bytes both ways and every round trip measured" \
		"([.[] | select(.bench == \"vsock_machine\")][0].pings) as \$p |
		 any(.[]; .bench == \"vsock\" and .side == \"$side\" and .bytes > 0 and
		     .to_guest_mibs > 0 and .from_guest_mibs > 0 and .rtt_n == \$p and .rtt_p50_us > 0)"
done
check "no failed run" '[.[] | select(.bench == "vsock_error")] | length == 0'
grep -q 'Target (issue 29): hybrid >= 0.7x vhost throughput' "$out/vsock.md" && echo "ok: vsock.md" ||
	{ echo "FAIL: vsock.md has no target line" >&2; fails=$((fails + 1)); }
if command -v gnuplot >/dev/null; then
	[[ -s $out/vsock.png ]] && echo "ok: vsock.png" ||
		{ echo "FAIL: no vsock.png" >&2; fails=$((fails + 1)); }
fi
[[ $fails -eq 0 ]] || { echo "check_vsock_smoke: $fails check(s) failed" >&2; exit 1; }
echo "check_vsock_smoke: all checks passed"
