#!/bin/bash
# rig-summary.sh [LOG]: sums up a rig log (RIG_LOG of tests/rig/rig-run, one
# line per L1 boot; default build/rig-runs.log), e.g.
#   rig: 17 runs (18 L1 boots), 1 L1 stall (1 retried: 1 recovered), 3 keyboard interrupts sent to a quiet L1 (2 stuck L1s moved again), 2 NMIs sent to a stuck L1 (0 moved again), 0 timeouts, 0 rig errors; heartbeat max gap 7.6 s
# and lists the stalls with their kept state directories (BUILD/rig-stalls/).
set -euo pipefail
log=${1:-build/rig-runs.log}
if [[ ! -s $log ]]; then
	echo "rig: 0 runs (no $log)"
	exit 0
fi
awk '
	{ for (i = 2; i <= NF; i++) if (split($i, kv, "=") == 2 && !(kv[1] in v)) v[kv[1]] = kv[2]
	  boots++
	  if (v["attempt"] == 1) runs++
	  r = v["result"]
	  if (r == "stalled") stalls++
	  else if (r == "ok-after-stall") recovered++
	  else if (r == "timeout") timeouts++
	  else if (r == "rig-error") errors++
	  if (v["result"] == "stalled" && v["attempt"] > 1) again++
	  nmi += v["nmi_sent"]; nmi_ok += v["nmi_resumed"]
	  kick += v["kick_sent"]; kick_ok += v["kick_resumed"]
	  if (v["hb_max_gap"] + 0 > gap) gap = v["hb_max_gap"] + 0
	  delete v }
	END {
	  # A stalled attempt followed by another attempt was retried; runs that
	  # ended stalled gave up.
	  printf "rig: %d runs (%d L1 boots), %d L1 stall%s (%d retried: %d recovered), %d keyboard interrupt%s sent to a quiet L1 (%d stuck L1%s moved again), %d NMI%s sent to a stuck L1 (%d moved again), %d timeout%s, %d rig error%s; heartbeat max gap %.1f s\n",
	    runs, boots, stalls, stalls == 1 ? "" : "s", boots - runs, recovered,
	    kick, kick == 1 ? "" : "s", kick_ok, kick_ok == 1 ? "" : "s",
	    nmi, nmi == 1 ? "" : "s", nmi_ok,
	    timeouts, timeouts == 1 ? "" : "s", errors, errors == 1 ? "" : "s", gap
	}' "$log"
if grep -q ' result=stalled ' "$log"; then
	echo "rig: L1 stalls (state kept in $(dirname "$log")/rig-stalls/):"
	grep ' result=stalled ' "$log" | sed 's/^/  /'
fi
