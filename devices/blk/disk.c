/* SPDX-License-Identifier: MIT */
/* A disk image: open, probe, lock, close (see disk.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include "blk/disk.h"
#include "log.h"

#define SECTOR_SHIFT 9
#define SECTOR_SIZE 512u

struct disk {
	int fd;
	char *name;		/* image path, or "fd N", for messages */
	bool locked;		/* holds an OFD lock on fd */
	bool is_bdev;
	uint64_t capacity;	/* 512-byte sectors */
	uint32_t blk_size;	/* logical block size, bytes */
	uint32_t phys_size;	/* physical block size, bytes */
};

/* *@opened: the fd is a new open file description of ours (not a dup of
 * the caller's), opened O_NONBLOCK. */
static int open_image(const struct disk_options *opt, int *out, bool *opened)
{
	bool ro = opt->readonly;
	bool direct = opt->direct;
	/* O_NONBLOCK: a FIFO (or a tty) given by mistake must not block
	 * vmm_start() in open() (an O_RDONLY open of a FIFO waits for a
	 * writer); probe_size() then refuses it and clear_nonblock() makes
	 * the image's fd blocking again.  O_NOCTTY: never our terminal. */
	int oflags = O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (ro ? O_RDONLY : O_RDWR) |
		     (direct ? O_DIRECT : 0);
	char proc[64];
	const char *name = opt->path;
	int fd, fl;

	if (!opt->path) {
		if (opt->fd < 0)
			return -EINVAL;
		fl = fcntl(opt->fd, F_GETFL);
		if (fl < 0)
			return -errno;
		if ((fl & O_ACCMODE) == O_WRONLY ||
		    ((fl & O_ACCMODE) == O_RDONLY && !ro)) {
			vmm_err("blk: fd %d is not open for reading%s", opt->fd,
				ro ? "" : " and writing (add the read-only flag?)");
			return -EINVAL;
		}
		if (!direct || (fl & O_DIRECT)) {
			fd = fcntl(opt->fd, F_DUPFD_CLOEXEC, 0);
			if (fd < 0)
				return -errno;
			*out = fd;
			return 0;
		}
		/* O_DIRECT via F_SETFL would change the caller's open file
		 * description too: reopen it instead. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", opt->fd);
		name = proc;
	}
	*opened = true;
	fd = open(name, oflags);
	if (fd < 0) {
		int err = errno;

		if (err == EINVAL && direct) {
			vmm_err("blk: %s: the filesystem does not support O_DIRECT "
				"(tmpfs?); not falling back to buffered I/O", name);
			return -EINVAL;
		}
		vmm_err("blk: cannot open %s: %s", name, strerror(err));
		return -err;
	}
	*out = fd;
	return 0;
}

/* Size and block sizes of @d's fd.  Returns 0 or -errno (-EINVAL, logged,
 * for anything but a regular file or a block device). */
static int probe_size(struct disk *d, uint64_t *bytes)
{
	struct stat st;

	if (fstat(d->fd, &st) < 0)
		return -errno;
	d->blk_size = SECTOR_SIZE;
	d->phys_size = SECTOR_SIZE;
	if (S_ISREG(st.st_mode)) {
		*bytes = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t sz;
		int lbs = 0;
		unsigned int pbs = 0;

		d->is_bdev = true;
		if (ioctl(d->fd, BLKGETSIZE64, &sz) < 0)
			return -errno;
		*bytes = sz;
		if (ioctl(d->fd, BLKSSZGET, &lbs) == 0 && lbs >= 512 &&
		    lbs <= 65536 && !(lbs & (lbs - 1)))
			d->blk_size = (uint32_t)lbs;
		if (ioctl(d->fd, BLKPBSZGET, &pbs) == 0 && pbs >= d->blk_size &&
		    pbs <= 65536 && !(pbs & (pbs - 1)))
			d->phys_size = pbs;
		else
			d->phys_size = d->blk_size;
		return 0;
	}
	vmm_err("blk: %s is neither a regular file nor a block device (%s)",
		d->name, S_ISFIFO(st.st_mode) ? "a FIFO" :
			 S_ISCHR(st.st_mode)  ? "a character device" :
			 S_ISDIR(st.st_mode)  ? "a directory" :
			 S_ISSOCK(st.st_mode) ? "a socket" : "not a file");
	return -EINVAL;
}

/* Blocking I/O from here on (open_image() opened it O_NONBLOCK). */
static int clear_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		return -errno;
	return 0;
}

/*
 * One OFD lock (F_OFD_SETLK) on the whole file, shared for a read-only
 * disk and exclusive for a writable one, so readers share with readers and
 * a writer with nobody.  An OFD lock belongs to the open file description,
 * not to the process: two disks of one VM opening the same path conflict
 * just like two VMMs do, and the lock goes away with the last fd of the
 * description (a SIGKILLed VMM leaves no stale lock).  A filesystem
 * without lock support opens unlocked, with a warning.  (Why this shape:
 * docs/design-notes.md, "Block and vhost-user".)
 */
static int lock_image(struct disk *d, bool ro)
{
	struct flock fl = { .l_type = ro ? F_RDLCK : F_WRLCK, .l_whence = SEEK_SET };
	struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	const char *how = "opened elsewhere";
	int err;

	if (fcntl(d->fd, F_OFD_SETLK, &fl) == 0) {
		d->locked = true;
		return 0;
	}
	err = errno;
	if (err != EAGAIN && err != EACCES) {
		vmm_warn("blk: %s: cannot lock the image (%s); using it unlocked",
			 d->name, strerror(err));
		return 0;
	}
	/* Who holds it (racy, only for the message). */
	if (fcntl(d->fd, F_OFD_GETLK, &q) == 0 && q.l_type != F_UNLCK)
		how = q.l_type == F_WRLCK ? "opened writable elsewhere"
					  : "opened read-only elsewhere";
	vmm_err("blk: disk image %s is locked by another process or disk (%s); "
		"use lock=off (VMM_DISK_NO_LOCK) to override", d->name, how);
	return -EBUSY;
}

static void unlock_image(struct disk *d)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

	/* Explicit: with a caller's fd the description outlives our dup. */
	if (d->locked)
		(void)fcntl(d->fd, F_OFD_SETLK, &fl);
	d->locked = false;
}

int disk_open(const struct disk_options *opt, struct disk **out)
{
	struct disk *d;
	uint64_t bytes = 0;
	bool opened = false;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fd = -1;
	if (opt->path)
		d->name = strdup(opt->path);
	else if (asprintf(&d->name, "fd %d", opt->fd) < 0)
		d->name = NULL;
	if (!d->name) {
		ret = -ENOMEM;
		goto err;
	}
	ret = open_image(opt, &d->fd, &opened);
	if (ret < 0)
		goto err;
	ret = probe_size(d, &bytes);
	if (ret < 0)
		goto err;
	if (opened && (ret = clear_nonblock(d->fd)) < 0)
		goto err;
	if (!opt->no_lock) {
		ret = lock_image(d, opt->readonly);
		if (ret < 0)
			goto err;
	}
	/* A tail shorter than one logical block is not exposed. */
	d->capacity = ALIGN_DOWN(bytes, (uint64_t)d->blk_size) >> SECTOR_SHIFT;
	*out = d;
	return 0;
err:
	disk_close(d);
	return ret;
}

void disk_close(struct disk *d)
{
	if (!d)
		return;
	if (d->fd >= 0) {
		unlock_image(d);
		close(d->fd);
	}
	free(d->name);
	free(d);
}

int disk_fd(const struct disk *d)
{
	return d->fd;
}

const char *disk_name(const struct disk *d)
{
	return d->name;
}

uint64_t disk_capacity(const struct disk *d)
{
	return d->capacity;
}

uint32_t disk_block_size(const struct disk *d)
{
	return d->blk_size;
}

uint32_t disk_physical_block_size(const struct disk *d)
{
	return d->phys_size;
}

bool disk_is_block_device(const struct disk *d)
{
	return d->is_bdev;
}
