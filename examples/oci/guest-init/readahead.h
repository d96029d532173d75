/* SPDX-License-Identifier: MIT */
/*
 * The read-ahead of a virtio-fs mount in the guest.  The kernel starts
 * every FUSE mount at 128 KiB (and caps it there whatever the back end
 * says), so a sequential read is one 128 KiB round trip to virtiofsd after
 * another; virtiofsd takes requests of up to 1 MiB (256 pages).  The
 * guest init raises the volumes' and the virtio-fs root's read-ahead to
 * INIT_FS_READAHEAD_KB: requests of 1 MiB and a few of them ahead of the
 * reader.  Split from init.c so that a unit test runs it on the host
 * against a directory standing for /sys.
 */
#ifndef MINIVMM_OCI_INIT_READAHEAD_H
#define MINIVMM_OCI_INIT_READAHEAD_H

/* 4 MiB: the window sequential reads grow to (random reads start small
 * and stay so: the kernel's read-ahead only grows on sequential access). */
#define INIT_FS_READAHEAD_KB 4096u

/*
 * Writes @kb to SYSFS/class/bdi/MAJOR:MINOR/read_ahead_kb, the backing
 * device of the file system mounted at @mountpoint (its st_dev).  @sysfs is
 * "/sys" in the guest.  Returns 0 or -errno (stat() of the mount point,
 * opening or writing the attribute).  Context: the guest init (or a unit
 * test).
 */
int init_fs_readahead(const char *sysfs, const char *mountpoint, unsigned int kb);

#endif
