#!/bin/bash
# test-cache.sh: two checkouts share one rig cache (CTest rig/cache_shared;
# KVM-free).  Each checkout (a copy of tests/rig and tests/guest in a temp
# dir: all that mkguest.sh reads of a checkout, so equivalent to a second
# git worktree) has its own payload tests/guest/whoami; both build and use
# guest images in one temporary cache at the same time, ROUNDS times, with a
# new payload every round (new keys), cleanup at its most aggressive
# (RIG_CACHE_KEEP=2, RIG_CACHE_GRACE_MIN=0).  Checks:
#  * mkguest.sh --print-paths names, before building, what mkguest.sh
#    then builds; identical content in both checkouts gives one shared entry;
#  * every image a checkout gets holds its own payload of that round, and
#    stays intact (same bytes) while a "test" uses it through rig-run
#    (direct mode: no KVM needed); every test lasts until all rounds of
#    both checkouts were built and collected, so without rig-run's lock
#    cleanup would delete most of them;
#  * afterwards the cache holds exactly KEEP guest entries and no leftovers.
# The kernel comes from the real rig cache (VMM_RIG_CACHE or the default),
# linked, not copied; exits 77 (skipped) when none was fetched yet.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${ROUNDS:-3}
real=${VMM_RIG_CACHE:-${HOME:-/root}/.cache/minivmm-rig}
if [[ ! -f $real/kernel-version ]]; then
	echo "test-cache.sh: no kernel in $real (run tests/rig/fetch-kernel.sh): skipped" >&2
	exit 77
fi
ver=$(cat "$real/kernel-version")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rig-cache-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cache=$tmp/cache
mkdir -p "$cache/kernel"
cp "$real/kernel-version" "$cache/"
ln -s "$(cd "$real/kernel/$ver" && pwd -P)" "$cache/kernel/$ver"
ln -s "kernel/$ver/vmlinuz" "$cache/vmlinuz"
ln -s "kernel/$ver/lib/modules/$ver" "$cache/modules"
export VMM_RIG_CACHE=$cache RIG_CACHE_KEEP=2 RIG_CACHE_GRACE_MIN=0 RIG_MODE=direct
for c in A B; do
	mkdir -p "$tmp/$c/tests"
	cp -r "$src/tests/rig" "$src/tests/guest" "$tmp/$c/tests/"
done

# The "test" a checkout runs on its image (through rig-run, which locks the
# entry): the payload is the expected one, and the initrd keeps the same
# bytes for the whole run while the other checkout builds and collects.
cat >"$tmp/use.sh" <<'USE'
#!/bin/bash
set -eu
kernel=$1 initrd=$2 want=$3
h1=$(sha256sum <"$initrd")
got=$(gzip -dc "$initrd" | (cd / && cpio -i --quiet --to-stdout tests/whoami))
[[ "$got" == "echo $want" ]] || { echo "use: $initrd has payload '$got', want 'echo $want'"; exit 1; }
[[ -s "$(readlink -f "$kernel")" ]] || { echo "use: kernel $kernel does not resolve"; exit 1; }
# Until every round of both checkouts is built (and collected).
for ((i = 0; i < 3000; i++)); do
	[[ -e "$RELEASE" ]] && break
	sleep 0.2
done
h2=$(sha256sum <"$initrd" 2>/dev/null) || { echo "use: $initrd deleted while in use"; exit 1; }
[[ "$h1" == "$h2" ]] || { echo "use: $initrd changed while in use"; exit 1; }
gzip -t "$initrd"
USE
chmod +x "$tmp/use.sh"

# checkout C ROUND PAYLOAD: one round in checkout C: build (or reuse) its
# image, start a user of it in the background (status in use-C-ROUND.rc),
# set INITRD to the image.
checkout() {
	local c=$1 r=$2 want=$3 pp out
	printf 'echo %s\n' "$want" >"$tmp/$c/tests/guest/whoami"
	pp=$("$tmp/$c/tests/rig/mkguest.sh" --print-paths) || return 1
	out=$("$tmp/$c/tests/rig/mkguest.sh") || return 1
	if [[ "$pp" != "$out" ]]; then
		echo "test-cache.sh: $c round $r: --print-paths said '$pp', mkguest.sh built '$out'" >&2
		return 1
	fi
	mapfile -t paths <<<"$out"
	(
		rc=0
		"$tmp/$c/tests/rig/rig-run" -- "$tmp/use.sh" "${paths[0]}" "${paths[1]}" "$want" \
			>"$tmp/use-$c-$r.log" 2>&1 || rc=$?
		echo "$rc" >"$tmp/use-$c-$r.rc"
	) &
	INITRD=${paths[1]}
}

# loop C: all rounds of checkout C; waits for its users.
loop() {
	local c=$1 r
	for ((r = 1; r <= rounds; r++)); do
		checkout "$c" "$r" "$c-round-$r" || exit 1
		echo "$INITRD" >>"$tmp/paths-$c"
	done
	wait
}

fail=0
# Round 0: the same payload in both checkouts -> one shared entry.
export RELEASE=$tmp/release0
touch "$RELEASE"
checkout A 0 same && p0a=$INITRD && checkout B 0 same && p0b=$INITRD || fail=1
wait
if [[ $fail == 0 && "$p0a" != "$p0b" ]]; then
	echo "test-cache.sh: identical checkouts got different entries: $p0a vs $p0b" >&2
	fail=1
fi

# Rounds 1..N in both checkouts at once; the users of rounds 1..N run until
# both loops are done.
export RELEASE=$tmp/release
loop A &
pa=$!
loop B &
pb=$!
# (loop waits for its users, which wait for the release: poll for the
# builds instead.)
while [[ $(cat "$tmp"/paths-A "$tmp"/paths-B 2>/dev/null | wc -l) -lt $((2 * rounds)) ]]; do
	kill -0 "$pa" 2>/dev/null || kill -0 "$pb" 2>/dev/null || break
	sleep 0.2
done
n_live=$(find "$cache/guest" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
touch "$RELEASE"
wait "$pa" || fail=1
wait "$pb" || fail=1
# Round 0's entry was free (its users are done) and is collected; every
# other entry was in use, none may be.
if [[ $n_live -ne $((2 * rounds)) ]]; then
	echo "test-cache.sh: $n_live entries while $((2 * rounds)) were in use" >&2
	fail=1
fi
n_used=0
for rcf in "$tmp"/use-*.rc; do
	[[ -e $rcf ]] || continue
	n_used=$((n_used + 1))
	if [[ "$(cat "$rcf")" != 0 ]]; then
		echo "test-cache.sh: ${rcf##*/} $(cat "$rcf"): $(cat "${rcf%.rc}.log")" >&2
		fail=1
	fi
done
[[ $n_used -eq $((2 * rounds + 2)) ]] || { echo "test-cache.sh: $n_used uses, want $((2 * rounds + 2))" >&2; fail=1; }
if [[ $fail == 0 ]]; then
	a=$(sort -u "$tmp/paths-A" | wc -l) b=$(sort -u "$tmp/paths-B" | wc -l)
	both=$(sort "$tmp/paths-A" "$tmp/paths-B" | uniq -d | wc -l)
	if [[ $a -ne $rounds || $b -ne $rounds || $both -ne 0 ]]; then
		echo "test-cache.sh: entries not distinct per round/checkout (A $a, B $b, shared $both)" >&2
		fail=1
	fi
fi

# Nothing in use any more: one more build collects down to KEEP entries.
checkout A final final || fail=1
wait
n=$(find "$cache/guest" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
left=$(find "$cache/guest" -mindepth 1 -maxdepth 1 -name '.new*' -o -mindepth 1 -maxdepth 1 -name '.trash*' | wc -l)
if [[ $n -ne $RIG_CACHE_KEEP || $left -ne 0 ]]; then
	echo "test-cache.sh: after the last build: $n entries (want $RIG_CACHE_KEEP), $left leftovers:" >&2
	ls -la "$cache/guest" >&2
	fail=1
fi
[[ $fail == 0 ]] || exit 1
echo "test-cache.sh: OK: 2 checkouts x $rounds rounds, $n_used image uses, $n entries left"
