/* SPDX-License-Identifier: MIT */
/*
 * A disk: the host file or block device behind a guest's disk, opened,
 * locked and sized.  It knows nothing of virtio: the virtio-blk model
 * (vblk.h) presents it to a driver, the I/O engines (blk-engine.h) read
 * and write it through disk_fd().
 *
 * Context: opened and closed by the thread that builds or tears down the
 * device; the accessors may be called from any thread (nothing changes
 * after disk_open()).
 */
#ifndef VMM_DEVICES_BLK_DISK_H
#define VMM_DEVICES_BLK_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"

struct disk;

struct disk_options {
	const char *path; /* image path, or NULL and use @fd */
	int fd;		  /* used when @path is NULL; dup'ed */
	bool readonly;	  /* open O_RDONLY; take a shared lock */
	bool direct;	  /* open with O_DIRECT, no fallback */
	bool no_lock;	  /* take no OFD lock on the image */
};

/**
 * disk_open() - open a disk image.
 * @opt: options (see struct disk_options)
 * @out: receives the disk
 *
 * Capacity is the file size (or block-device size) rounded DOWN to the
 * logical block size: a tail shorter than one block is not exposed to the
 * guest.  The logical block size is 512 for files and BLKSSZGET for block
 * devices.  The capacity is fixed here: if the file shrinks later, reads
 * past its new end return zeros and writes there extend it again (plain
 * pread/pwrite semantics).
 *
 * Locking (unless @opt->no_lock): an OFD lock on the whole image, shared
 * for a read-only disk, exclusive otherwise, held until disk_close().  Any
 * number of read-only opens may share an image; a writable open excludes
 * every other open, whether by another process or by another disk of the
 * same process.  With @opt->fd (no path, no O_DIRECT reopen) the lock is
 * on the caller's open file description, which dup()s share: two disks
 * made from one fd do not exclude each other.  Where the filesystem has
 * no lock support the image is used unlocked (with a warning).
 *
 * Returns: 0; -EINVAL for an fd opened read-only for a writable disk, a
 * file that is neither regular nor a block device, or O_DIRECT refused by
 * the filesystem (logged: no silent fallback); -EBUSY if the image is
 * locked in a conflicting way (logged: "disk image PATH is locked by
 * another process or disk (opened writable elsewhere); use lock=off ...");
 * -errno from open/dup/fstat/ioctl; -ENOMEM.
 */
int disk_open(const struct disk_options *opt, struct disk **out) __must_check;
/* Unlock and close the image, free @d (NULL-safe). */
void disk_close(struct disk *d);

int disk_fd(const struct disk *d);
/* The image path, or "fd N", for messages. */
const char *disk_name(const struct disk *d);
uint64_t disk_capacity(const struct disk *d); /* 512-byte sectors */
uint32_t disk_block_size(const struct disk *d);	 /* logical, bytes */
uint32_t disk_physical_block_size(const struct disk *d);
bool disk_is_block_device(const struct disk *d);

#endif
