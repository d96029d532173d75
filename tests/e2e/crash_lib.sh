# shellcheck shell=bash
# Helpers for the crash_*.sh / fault_*.sh end-to-end tests (sourced after
# lib.sh).  Block i of a crash image is 128 copies of the 32-byte line
# "MINIVMM-CRASH-BLK %08d ABCD\n" % i (tests/guest/crash-write); no byte of
# it is zero, so a block is intact, missing (all zeros) or torn.

# crash_expect FIRST COUNT: the expected bytes of blocks FIRST..FIRST+COUNT-1.
crash_expect() {
	awk -v f="$1" -v n="$2" 'BEGIN {
		for (i = f; i < f + n; i++) {
			l = sprintf("MINIVMM-CRASH-BLK %08d ABCD\n", i); s = ""
			for (k = 0; k < 128; k++) s = s l
			printf "%s", s
		}
	}'
}

# crash_check IMG N: blocks 0..N-1 must be intact (fails the test
# otherwise); the next 128 blocks must each be intact or all zeros (a
# write cut by the crash may be missing, never torn).  Prints a summary.
# (Temporary files, not <(...): the rig's /dev has no /dev/fd.)
crash_check() {
	local img=$1 n=$2 res later missing torn
	crash_expect 0 "$n" >"$img.exp"
	dd if="$img" of="$img.got" bs=4096 count="$n" 2>/dev/null
	if ! cmp "$img.exp" "$img.got"; then
		od -A d -c "$img.got" | head -n 8
		e2e_fail "blocks 0..$((n - 1)) acknowledged before the flush are not all intact"
	fi
	crash_expect "$n" 128 >"$img.exp"
	dd if="$img" of="$img.got" bs=4096 skip="$n" count=128 2>/dev/null
	# cmp exits 1 when blocks differ (not written): not an error here.
	res=$({ cmp -l "$img.exp" "$img.got" 2>/dev/null || true; } |
		awk '{ b = int(($1 - 1) / 4096); c[b]++; if ($3 != 0) bad[b] = 1 }
		     END { miss = 0; torn = 0
			   for (b in c) { if (c[b] == 4096 && !(b in bad)) miss++; else torn++ }
			   printf "%d %d %d\n", 128 - miss - torn, miss, torn }')
	rm -f "$img.exp" "$img.got"
	read -r later missing torn <<<"$res"
	echo "check: blocks 0..$((n - 1)) intact; of the next 128: $later intact, $missing not written, $torn torn or garbage"
	[[ $torn -eq 0 ]] || e2e_fail "$torn torn or garbage blocks after block $n"
}

# crash_wait_for LOG PATTERN SECONDS PID: wait until PATTERN is in LOG;
# fails if PID exits first or time runs out.
crash_wait_for() {
	local log=$1 pat=$2 t=$(($3 * 10)) pid=$4
	while ! grep -q -- "$pat" "$log" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || { cat "$log"; e2e_fail "minivmm exited before '$pat'"; }
		((t-- > 0)) || { cat "$log"; e2e_fail "no '$pat' in time"; }
		sleep 0.1
	done
}

# crash_start MINIVMM KERNEL INITRD IMG DIRECT MODE LOG: start minivmm in the
# background on IMG (serial "crash", direct=DIRECT) with the crash-write
# payload in guest.mode=MODE, output to LOG; sets CRASH_PID.
crash_start() {
	"$1" --smp 2 --mem 512M --kernel "$2" --initrd "$3" \
		--disk "path=$4,serial=crash,direct=$5" \
		--append "quiet guest.run=crash-write guest.mode=$6" \
		</dev/null >"$7" 2>&1 &
	# shellcheck disable=SC2034 # read by the caller
	CRASH_PID=$!
}
