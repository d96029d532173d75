#!/bin/bash
# minivmm-oci-mkinitrd [--init INIT] --kver VERSION [--modroot DIR] --out FILE
#
# Builds the initramfs minivmm-oci boots every container VM with: the static
# guest init as /init -- INIT, or by default libexec/minivmm-oci/init beside
# this script (the build tree), else ../libexec/minivmm-oci/init (an
# install: LIBEXECDIR/minivmm-oci/init) -- and the kernel modules it needs
# from DIR/lib/modules/VERSION (default DIR=/, i.e. the host's modules of
# that kernel), with their dependencies: virtio_pci, virtio_blk,
# virtio_console, ext4 (jbd2, mbcache, crc16, crc32c), virtio_net (the
# container's network: net_failover, failover), vmw_vsock_virtio_transport
# (exec and ps: vsock, vmw_vsock_virtio_transport_common), virtiofs (volumes:
# fuse).  A module built into
# the kernel is simply not copied.  Writes FILE atomically (gzip'd newc
# cpio); prints nothing unless it fails.  minivmm-oci runs this itself when
# its initramfs is missing (see minivmm-oci(1), "Kernel and initramfs").
set -euo pipefail

init= kver= modroot=/ out=
while [[ $# -gt 0 ]]; do
	case "$1" in
	--init) init=$2; shift ;;
	--kver) kver=$2; shift ;;
	--modroot) modroot=$2; shift ;;
	--out) out=$2; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "minivmm-oci-mkinitrd: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
die() { echo "minivmm-oci-mkinitrd: $*" >&2; exit 1; }
[[ -n "$kver" && -n "$out" ]] || die "--kver and --out are required"
if [[ -z "$init" ]]; then
	here=$(dirname "$(readlink -f "$0")")
	for init in "$here/libexec/minivmm-oci/init" "$here/../libexec/minivmm-oci/init"; do
		[[ -x "$init" ]] && break
	done
fi
[[ -x "$init" ]] || die "guest init $init is missing or not executable"
moddir="$modroot/lib/modules/$kver"
[[ -d "$moddir" ]] || die "no modules for kernel $kver in $moddir"
for c in modprobe cpio gzip; do
	command -v "$c" >/dev/null || die "'$c' not found (apt-get install kmod cpio gzip)"
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{dev,proc,sys,etc,newroot,lib/modules}
cp "$init" "$stage/init"
chmod 755 "$stage/init"
: >"$stage/etc/modules.load"
for m in virtio_pci virtio_blk virtio_console ext4 virtio_net vmw_vsock_virtio_transport virtiofs; do
	while read -r kind path _; do
		[[ "$kind" == insmod ]] || continue
		rel=${path#"$moddir"/}
		name=${rel//\//_}
		grep -qxF "${name%.xz}" "$stage/etc/modules.load" && continue
		case "$path" in
		*.ko.xz) xz -dc "$path" >"$stage/lib/modules/${name%.xz}" ;;
		*.ko.zst) zstd -qdc "$path" >"$stage/lib/modules/${name%.zst}"; name=${name%.zst} ;;
		*.ko) cp "$path" "$stage/lib/modules/$name" ;;
		*) die "unsupported module file $path" ;;
		esac
		echo "${name%.xz}" >>"$stage/etc/modules.load"
	done < <(modprobe -d "$modroot" -S "$kver" --show-depends "$m" 2>/dev/null ||
		die "module $m not found for kernel $kver")
done
mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet -R 0:0 --reproducible) | gzip -1 -n >"$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
