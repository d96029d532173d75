#!/bin/bash
# scripts/ci-costs.sh CI_LOG... > tests/ci-costs.txt
#
# The CTest schedule's costs from a CI run's log (scripts/test.sh's
# output): one line "SECONDS NAME" per test that passed, the longest
# first.  tests/ci-costs.cmake hands them to CTest as each test's COST,
# so a fresh clone (no timing history of its own) starts the longest
# tests first and the short ones fill in beside them, instead of a long
# test declared late ending the run beside an idle CPU.  Regenerate the
# table from a clean-clone run when tests are added or change length.
set -euo pipefail
[[ $# -gt 0 ]] || { sed -n '2,/^set -e/p' "$0" | sed '$d' >&2; exit 2; }
echo "# scripts/ci-costs.sh $(basename "$1"): seconds, test (the longest first)"
# "12/201 Test  #20: unit/check_x ........   Passed    1.34 sec"; the
# ASan build's and the aarch64 units' stages repeat unit names: the last
# (the main CTest run's) wins.
awk '/ Test +#[0-9]+: / && / Passed / {
	name = $0; sub(/.*Test +#[0-9]+: /, "", name); sub(/ .*/, "", name)
	secs = $0; sub(/ sec$/, "", secs); sub(/.* /, "", secs)
	t[name] = secs
}
END { for (n in t) if (t[n] >= 1) printf "%d %s\n", t[n] + 0.5, n }' "$@" | sort -k1,1nr -k2
