#!/bin/sh
# virtiofsd-rig.sh ARGS...: Debian's arm64 virtiofsd as minivmm's --fs
# path= starts it (MINIVMM_VIRTIOFSD=this script), in the arm64 rig's L1:
# run through its own ld-linux-aarch64.so.1 from VFSD_ROOT (its library
# closure, tests/rig/fetch-virtiofsd.sh), with sandbox=chroot instead of
# the sandbox=namespace minivmm asks for, which pivot_roots into the share
# and fails with EINVAL ("pivot_root(., .): Invalid argument") where / is
# an initramfs's rootfs, as in this L1.  Every other argument (--fd=3,
# source=, cache=, --thread-pool-size=) and fd 3 pass as they are.
vr=$VFSD_ROOT/root
n=$#
while [ "$n" -gt 0 ]; do
	a=$1
	shift
	n=$((n - 1))
	[ "$a" = sandbox=namespace ] && a=sandbox=chroot
	set -- "$@" "$a"
done
exec "$vr/lib/ld-linux-aarch64.so.1" \
	--library-path "$vr/lib/aarch64-linux-gnu:$vr/usr/lib/aarch64-linux-gnu" \
	"$vr/usr/lib/qemu/virtiofsd" "$@"
