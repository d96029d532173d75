#!/bin/bash
# tests/unit/blkverify.sh BLKVERIFY: the guests' disk verifier
# (tests/guest/blkverify.c, what the arm64 guest runs instead of fio)
# checks itself on a temp file, KVM-free: write-verify passes, so does a
# later verify with the same seed (what a guest does after a reboot); a
# corrupted block, a block written at the wrong place and a wrong seed are
# caught (exit 1, with the offset); bad arguments and regions that do not
# fit are refused (exit 2).
# tests/unit/blkverify.sh EMULATOR BLKVERIFY: the same, BLKVERIFY run
# through EMULATOR (a cross build's qemu-aarch64-static).
set -uo pipefail
(($# == 1 || $# == 2)) || { echo "usage: $0 [EMULATOR] BLKVERIFY"; exit 2; }
prog=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
img=$dir/disk.img
n=$(nproc) # --cpus all is our affinity, which nproc counts
mb=2 bs=4096
truncate -s $((n * mb))M "$img"
fail=0

# shellcheck source=tests/unit/expect.sh
. "$(dirname "$0")/expect.sh"
blocks=$((n * mb * 1048576 / bs))
ok="^BLKVERIFY OK cpus=$n blocks=$blocks mb=$((n * mb))"
run=(--cpus all --mb-per-cpu "$mb" --depth 4 --seed 7)

expect 0 "$ok bytes_written=$((blocks * bs)) seconds=" "${run[@]}" "$img"
expect 0 "$ok bytes_written=0 seconds=" "${run[@]}" --mode verify "$img"
expect 1 "MISMATCH .*seed expected 0x8 got 0x7" "${run[@]}" --seed 8 --mode verify "$img"

# One byte flipped in the fourth block of the file: its crc no longer holds.
printf '\377' | dd of="$img" bs=1 seek=$((3 * bs + 100)) conv=notrunc status=none
expect 1 "MISMATCH cpu=[0-9]+ offset=$((3 * bs)) .*crc32c bad" "${run[@]}" --mode verify "$img"
expect 1 "^BLKVERIFY FAIL mismatches=1 " "${run[@]}" --mode verify "$img"

# A whole good block at the wrong place (a misdirected write): crc fine, offset not.
expect 0 "$ok" "${run[@]}" "$img"
dd if="$img" of="$img" bs=$bs skip=5 seek=9 count=1 conv=notrunc status=none
expect 1 "offset=$((9 * bs)) .*offset expected 0x$(printf %x $((9 * bs))) got 0x$(printf %x $((5 * bs)))" \
	"${run[@]}" --mode verify "$img"

# Another block size, one CPU, depth 1.
expect 0 "^BLKVERIFY OK cpus=1 blocks=128 mb=1 " --cpus 0 --mb-per-cpu 1 --bs 8192 "$img"

# Refused: exit 2 with a message.
expect 2 "does not fit|do not fit" --cpus all --mb-per-cpu $((mb + 1)) "$img"
expect 2 "--depth" --depth 0 "$img"
expect 2 "power of two" --bs 1536 "$img"
expect 2 "--bs" --bs 256 "$img"
expect 2 "neither write-verify nor verify" --mode check "$img"
expect 2 "not available" --cpus 1023 "$img"
expect 2 "--cpus" --cpus 3-1 "$img"
expect 2 "--mb-per-cpu" --mb-per-cpu -1 "$img"
expect 2 "usage" "$img" extra
expect 2 "usage" --frobnicate 1 "$img"
expect 2 "No such file" "$dir/missing"
expect 2 "neither a block device nor a regular file" "$dir"
exit $fail
