#!/bin/bash
# fs.sh MINIVMM KERNEL INITRD
# virtio-fs on QEMU 7.2's virtiofsd (issue 29), the default guest at 4
# vCPUs:
#   socket  virtiofsd started here on a tree this test made (files of
#           known sha256, modes, a subdirectory, a symlink, a 32 MiB file);
#           minivmm --fs tag=share,socket=...: the guest mounts the tag,
#           checks every checksum and mode, copies the big file out (rate
#           printed), writes one file per CPU concurrently (the host checks
#           their sha256), mkdir/rename/link/symlink/unlink; minivmm exits
#           0, virtiofsd ends with the connection, --stats-json counts one
#           start, no disconnect, no timeout, no NEEDS_RESET
#   path    minivmm --fs tag=ro,path=DIR,ro=on starts virtiofsd itself:
#           the same tree reads back, writes fail with EROFS, and the
#           child is reaped (no virtiofsd left, its socket dir removed)
#   kill    virtiofsd SIGKILLed while the guest reads: minivmm notices
#           (the device needs a reset), stays up, stops on SIGTERM within
#           20 s, --stats-json counts the disconnect and the NEEDS_RESET
set -euo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
e2e_require_kvm

vmm=$1 kernel=$2 initrd=$3
vfsd=/usr/lib/qemu/virtiofsd
[[ -x $vfsd ]] || e2e_fail "$vfsd missing (scripts/deps.sh: qemu-system-common)"
dir=$(mktemp -d "${RIG_SCRATCH:-/var/tmp}/fs.XXXXXX")
vpid=
cleanup() {
	[[ -n $vpid ]] && kill -9 "$vpid" 2>/dev/null || true
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
# The manifest the guest checks: every file's sha256 and mode.
manifest() {
	(cd "$share" && find . -type f ! -name MANIFEST.sha256 ! -name MODES | sort |
		xargs sha256sum >MANIFEST.sha256 &&
		find . -type f ! -name MANIFEST.sha256 ! -name MODES | sort |
		xargs stat -c '%a %n' >MODES)
}
manifest

# --- socket=: a virtiofsd of our own --------------------------------------
"$vfsd" --socket-path="$dir/vfs.sock" -o source="$share" -o cache=auto \
	2>"$dir/vfsd.log" &
vpid=$!
for _ in $(seq 100); do [[ -S $dir/vfs.sock ]] && break; sleep 0.1; done
[[ -S $dir/vfs.sock ]] || { cat "$dir/vfsd.log"; e2e_fail "virtiofsd did not start"; }
log=$dir/boot1.log
e2e_run_vmm "$log" -- "$vmm" --smp 4 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --fs "tag=share,socket=$dir/vfs.sock" --stats-json \
	--append "guest.run=virtiofs guest.tag=share"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$log" || e2e_fail "guest virtiofs payload failed"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC"
for i in 0 1 2 3; do
	(cd "$share" && sha256sum -c "guest.$i.sha256" >/dev/null) ||
		e2e_fail "guest.$i: the host reads other bytes than the guest wrote"
done
[[ -f $share/d2/moved && -L $share/d2/sym && ! -e $share/d2/hard && ! -e $share/dir/small ]] ||
	e2e_fail "rename/symlink/unlink not seen on the host"
for _ in $(seq 50); do kill -0 "$vpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$vpid" 2>/dev/null; then e2e_fail "virtiofsd still running after the VM ended"; fi
vpid=
fsj=$(grep -o '"fs":\[[^]]*\]' "$log" | tail -1) || e2e_fail "no fs counters in --stats-json"
grep -q '"request_queues":1' <<<"$fsj" || e2e_fail "expected 1 request queue (virtiofsd 7.2): $fsj"
grep -q '"starts":[1-9]' <<<"$fsj" && grep -q '"disconnects":0' <<<"$fsj" &&
	grep -q '"timeouts":0' <<<"$fsj" && grep -q '"needs_reset":0' <<<"$fsj" ||
	e2e_fail "fs counters: $fsj"
rate=$(grep -o 'VIRTIOFS copy: .*' "$log" | head -1 || true)

# --- path=DIR,ro=on: minivmm starts virtiofsd -----------------------------
# The tree as the first guest left it (its renames included).
rm -f "$share"/guest.*
mkdir -p "$share/dir" && printf 'small file' >"$share/dir/small"
manifest
log=$dir/boot2.log
e2e_run_vmm "$log" -- "$vmm" --smp 4 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --fs "tag=ro,path=$share,ro=on" \
	--append "guest.run=virtiofs guest.tag=ro guest.ro=1"
grep -q "MINIVMM-PAYLOAD-EXIT=0" "$log" || e2e_fail "guest payload failed on the ro share"
[[ $E2E_RC -eq 0 ]] || e2e_fail "minivmm exited $E2E_RC (path= form)"
grep -q "VIRTIOFS ro: write refused" "$log" || e2e_fail "no EROFS seen"
[[ ! -e $share/refused ]] || e2e_fail "the ro share was written"
for _ in $(seq 50); do pgrep -f "source=$share" >/dev/null || break; sleep 0.1; done
if pgrep -f "source=$share" >/dev/null; then e2e_fail "the virtiofsd minivmm started is still running"; fi
for d in /tmp/minivmm-fs.*; do
	if [[ -e $d/virtiofsd.sock ]]; then e2e_fail "socket dir $d left behind"; fi
done
# --- the back end dies under a running guest --------------------------------
"$vfsd" --socket-path="$dir/vfs3.sock" -o source="$share" -o cache=auto \
	2>"$dir/vfsd3.log" &
vpid=$!
for _ in $(seq 100); do [[ -S $dir/vfs3.sock ]] && break; sleep 0.1; done
log3=$dir/boot3.log
e2e_run_vmm "$log3" -- "$vmm" --smp 4 --mem 512M --kernel "$kernel" \
	--initrd "$initrd" --fs "tag=share,socket=$dir/vfs3.sock" --stats-json \
	--append "guest.run=virtiofs guest.tag=share guest.kill=1" &
runner=$!
for _ in $(seq 1200); do grep -q "VIRTIOFS mounted" "$log3" 2>/dev/null && break; sleep 0.1; done
grep -q "VIRTIOFS mounted" "$log3" || e2e_fail "the guest did not mount before the kill"
vmmpid=$(e2e_find_vmm "$dir/vfs3.sock")
kill -9 "$vpid"
vpid=
for _ in $(seq 100); do grep -q "back end went away\|closed the connection" "$log3" && break; sleep 0.1; done
grep -q "closed the connection" "$log3" || e2e_fail "minivmm did not notice the back end's death"
kill -0 "$vmmpid" || e2e_fail "minivmm died with its back end"
t0=$SECONDS
kill -TERM "$vmmpid"
wait "$runner" || true
(( SECONDS - t0 <= 20 )) || e2e_fail "minivmm took $((SECONDS - t0)) s to stop after the back end died"
fsj3=$(grep -o '"fs":\[[^]]*\]' "$log3" | tail -1) || e2e_fail "no fs counters (boot 3)"
grep -q '"disconnects":1' <<<"$fsj3" && grep -q '"needs_reset":1' <<<"$fsj3" ||
	e2e_fail "back end death not counted: $fsj3"

rate2=$(grep -o 'VIRTIOFS copy: .*' "$log" | head -1 || true)
echo "PASS: virtio-fs on virtiofsd, 4 vCPUs: tree checksums + modes, 4 concurrent guest writes verified on the host, rename/link/symlink/unlink, counters $fsj; ${rate:-no rate}; path=,ro=on: EROFS, child reaped; ${rate2:-no rate}; virtiofsd SIGKILLed under a running guest: NEEDS_RESET, minivmm up, stopped by SIGTERM in $((SECONDS - t0)) s"
