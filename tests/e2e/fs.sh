#!/bin/bash
# fs.sh MINIVMM KERNEL INITRD
# virtio-fs on QEMU 7.2's virtiofsd (issue 29): ONE boot of the default
# guest at 4 vCPUs with two shares of one tree this test made (files of
# known sha256 and modes, a subdirectory, a symlink, a 32 MiB file):
#   share  --fs tag=share,socket=...: a virtiofsd started here
#   ro     --fs tag=ro,path=DIR,ro=on: minivmm starts virtiofsd itself
# The guest (tests/guest/virtiofs) checks every checksum and mode on both,
# sees EROFS on ro, copies the big file out (rate printed), writes one file
# per CPU concurrently and renames/links/unlinks; the host verifies what it
# wrote, and the bytes of a file the guest wrote through a shared mapping
# + msync, one written + fsync()ed and one written O_DIRECT, read while
# the guest still holds them open (so before any close's FLUSH;
# tests/guest/fsio.c).  O_DIRECT works with this cache=auto: the guest's
# page cache is bypassed, and virtiofsd drops the flag on its side (its
# default no_allow_direct_io).  Then the test SIGKILLs the share's
# virtiofsd under the running guest: minivmm notices (NEEDS_RESET) and
# answers the share's requests itself with EIO (the guest's next open
# fails instead of hanging), stays up, stops on SIGTERM within 20 s;
# --stats-json: one request queue each (virtiofsd 7.2), the share's
# disconnect, NEEDS_RESET and answered requests counted, none for ro, no
# reply timeout; the ro virtiofsd is gone after minivmm's exit.
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
vfsd=/usr/lib/qemu/virtiofsd
[[ -x $vfsd ]] || e2e_fail "$vfsd missing (scripts/deps.sh: qemu-system-common)"
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/fs.XXXXXX")
vpid= runner=
cleanup() {
	[[ -n $vpid ]] && kill -9 "$vpid" 2>/dev/null || true
	[[ -n $runner ]] && kill "$runner" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
share=$dir/share
mkdir -p "$share/dir/sub"
head -c 32M /dev/urandom >"$share/big"
for i in 1 2 3 4 5; do head -c $((i * 4099)) /dev/urandom >"$share/dir/sub/f$i"; done
printf 'small file' >"$share/dir/small"
chmod 0640 "$share/dir/sub/f1"
chmod 0755 "$share/dir/sub/f2"
ln -s dir/small "$share/link"
(cd "$share" && find . -type f | sort | xargs sha256sum >"$dir/MANIFEST.sha256" &&
	find . -type f | sort | xargs stat -c '%a %n' >"$dir/MODES" &&
	mv "$dir/MANIFEST.sha256" "$dir/MODES" .)

"$vfsd" --socket-path="$dir/vfs.sock" -o source="$share" -o cache=auto \
	2>"$dir/vfsd.log" &
vpid=$!
"$here/wait-listening.sh" "$dir/vfs.sock" ||
	{ cat "$dir/vfsd.log"; e2e_fail "virtiofsd did not start listening"; }
log=$dir/boot.log
# The rig's /tmp shows the host's (its 9p share under an overlay), where
# unit tests that CTest runs beside this one (check_virtiofsd_fd) make and
# may leave socket directories of their own: only those that appear from
# here on can be this minivmm's.
before=$(ls -d /tmp/minivmm-fs.* 2>/dev/null || true)
e2e_run_vmm "$log" -- "$vmm" --smp 4 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --fs "tag=share,socket=$dir/vfs.sock" \
	--fs "tag=ro,path=$share,ro=on" --stats-json \
	--append "quiet guest.run=virtiofs" &
runner=$!
for _ in $(seq 3000); do
	grep -q "VIRTIOFS ready\|VIRTIOFS FAIL\|MINIVMM-PAYLOAD-EXIT" "$log" 2>/dev/null && break
	sleep 0.1
done
grep -q "VIRTIOFS ready" "$log" || e2e_fail "the guest's checks did not pass"
vmmpid=$(e2e_find_vmm "$dir/vfs.sock")
for i in 0 1 2 3; do
	(cd "$share" && sha256sum -c "guest.$i.sha256" >/dev/null) ||
		e2e_fail "guest.$i: the host reads other bytes than the guest wrote"
done
[[ -f $share/d2/moved && -L $share/d2/sym && ! -e $share/d2/hard && ! -e $share/dir/small ]] ||
	e2e_fail "rename/symlink/unlink not seen on the host"
[[ ! -e $share/refused ]] || e2e_fail "the ro share was written"
# mmap + msync, write + fsync, O_DIRECT: read here while the guest's fsio
# still holds the files open (no close's FLUSH has written them yet).
for f in mm:"mmap + msync" fs:"write + fsync" dio:"O_DIRECT"; do
	grep " ${f%%:*}\$" "$share/io.sha256" >"$dir/io.1" || e2e_fail "no io.sha256 for ${f%%:*}"
	(cd "$share" && sha256sum -c "$dir/io.1" >/dev/null) ||
		e2e_fail "${f#*:}: the host reads other bytes than the guest wrote"
done

# The share's back end dies under the running guest.
kill -9 "$vpid"
vpid=
for _ in $(seq 100); do grep -q "closed the connection" "$log" && break; sleep 0.1; done
grep -q "closed the connection" "$log" || e2e_fail "minivmm did not notice the back end's death"
grep -q "device needs reset: the vhost-user back end went away" "$log" ||
	e2e_fail "no NEEDS_RESET for the dead back end"
sleep 2
# The guest's next open on the share fails (the VMM answers EIO for the
# dead back end) instead of waiting forever.
for _ in $(seq 150); do grep -q "VIRTIOFS read error" "$log" && break; sleep 0.1; done
grep -q "VIRTIOFS read error: .*Input/output error" "$log" ||
	e2e_fail "the guest got no I/O error from the dead share: $(grep 'VIRTIOFS read error' "$log" | head -1)"
grep -q "answering the guest's requests with errors" "$log" ||
	e2e_fail "minivmm did not say it answers for the dead back end"
kill -0 "$vmmpid" || e2e_fail "minivmm died with its back end"
t0=$SECONDS
kill -TERM "$vmmpid"
wait "$runner" || true
runner=
stop_s=$((SECONDS - t0))
((stop_s <= 20)) || e2e_fail "minivmm took $stop_s s to stop after the back end died"
fsj=$(grep -o '"fs":\[[^]]*\]' "$log" | tail -1) || e2e_fail "no fs counters in --stats-json"
share_j=$(grep -o '{[^}]*}' <<<"$fsj" | sed -n 1p)
ro_j=$(grep -o '{[^}]*}' <<<"$fsj" | sed -n 2p)
for j in "$share_j" "$ro_j"; do
	grep -q '"request_queues":1,' <<<"$j" && grep -q '"starts":[1-9]' <<<"$j" &&
		grep -q '"timeouts":0' <<<"$j" || e2e_fail "fs counters: $fsj"
done
grep -q '"disconnects":1' <<<"$share_j" && grep -q '"needs_reset":1' <<<"$share_j" &&
	grep -q '"orphaned":[1-9]' <<<"$share_j" ||
	e2e_fail "the share's death not counted: $share_j"
grep -q '"disconnects":0' <<<"$ro_j" && grep -q '"needs_reset":0' <<<"$ro_j" &&
	grep -q '"orphaned":0' <<<"$ro_j" ||
	e2e_fail "the ro share should be untouched: $ro_j"
for _ in $(seq 50); do pgrep -f "source=$share" >/dev/null || break; sleep 0.1; done
if pgrep -f "source=$share" >/dev/null; then e2e_fail "a virtiofsd is still running"; fi
for d in /tmp/minivmm-fs.*; do
	grep -qxF -- "$d" <<<"$before" && continue
	if [[ -e $d/virtiofsd.sock ]]; then e2e_fail "socket dir $d left behind"; fi
done
rate=$(grep -o 'VIRTIOFS copy: .*' "$log" | head -1 || true)
echo "PASS: virtio-fs on virtiofsd, 4 vCPUs, one boot: checksums + modes on a socket= and a path=,ro=on share (EROFS), 4 concurrent guest writes verified on the host, rename/link/symlink/unlink, mmap+msync/write+fsync/O_DIRECT bytes seen on the host; ${rate:-no rate}; the share's virtiofsd SIGKILLed under the guest: NEEDS_RESET, the guest's next open fails with EIO (answered by minivmm), minivmm up, stopped by SIGTERM in $stop_s s; counters $fsj"
