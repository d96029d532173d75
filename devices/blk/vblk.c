/* SPDX-License-Identifier: MIT */
/*
 * virtio-blk device logic: image, features, config space (requests and
 * queues: vblk-req.c).  See vblk.h for the request life cycle.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "log.h"
#include "blk/vblk-int.h"

/* ---- host I/O error log ------------------------------------------------ */

static const char *req_type_name(uint32_t type)
{
	switch (type) {
	case VIRTIO_BLK_T_IN: return "read";
	case VIRTIO_BLK_T_OUT: return "write";
	case VIRTIO_BLK_T_FLUSH: return "flush";
	case VIRTIO_BLK_T_DISCARD: return "discard";
	case VIRTIO_BLK_T_WRITE_ZEROES: return "write-zeroes";
	default: return "request";
	}
}

/* Context: any completing thread.  The first error of a burst is logged,
 * the others counted into one "N more I/O errors" line (log.h). */
void vblk_log_io_error(struct vblk *b, const struct vblk_req *req, int err)
{
	char subject[LOG_LIMIT_SUBJECT];

	snprintf(subject, sizeof(subject), "blk: %s", b->name);
	log_limited(&b->err_log, VMM_LOG_WARN, subject,
		    "I/O error on %s at sector %llu: %s", req_type_name(req->type),
		    (unsigned long long)req->sector, strerror(err));
}

/* ---- open / close ------------------------------------------------------ */

/* *@opened: the fd is a new open file description of ours (not a dup of
 * the caller's), opened O_NONBLOCK. */
static int open_image(const struct vblk_options *opt, int *out, bool *opened)
{
	bool ro = opt->flags & VBLK_OPT_READONLY;
	bool direct = opt->flags & VBLK_OPT_DIRECT;
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

static int probe_size(struct vblk *b, uint64_t *bytes, unsigned int *phys)
{
	struct stat st;

	if (fstat(b->fd, &st) < 0)
		return -errno;
	b->blk_size = SECTOR_SIZE;
	*phys = SECTOR_SIZE;
	if (S_ISREG(st.st_mode)) {
		*bytes = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t sz;
		int lbs = 0;
		unsigned int pbs = 0;

		b->is_bdev = true;
		if (ioctl(b->fd, BLKGETSIZE64, &sz) < 0)
			return -errno;
		*bytes = sz;
		if (ioctl(b->fd, BLKSSZGET, &lbs) == 0 && lbs >= 512 &&
		    lbs <= 65536 && !(lbs & (lbs - 1)))
			b->blk_size = (uint32_t)lbs;
		if (ioctl(b->fd, BLKPBSZGET, &pbs) == 0 && pbs >= b->blk_size &&
		    pbs <= 65536 && !(pbs & (pbs - 1)))
			*phys = pbs;
		else
			*phys = b->blk_size;
		return 0;
	}
	vmm_err("blk: %s is neither a regular file nor a block device (%s)",
		b->name, S_ISFIFO(st.st_mode) ? "a FIFO" :
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

static void build_config(struct vblk *b, unsigned int phys)
{
	struct virtio_blk_config *c = &b->cfg;
	unsigned int exp = 0;

	while ((b->blk_size << exp) < phys)
		exp++;
	memset(c, 0, sizeof(*c));
	c->capacity = htole64(b->capacity);
	c->size_max = htole32(b->size_max);
	c->seg_max = htole32(b->seg_max);
	c->blk_size = htole32(b->blk_size);
	c->physical_block_exp = (uint8_t)exp;
	c->alignment_offset = 0;
	c->min_io_size = htole16(1);
	c->opt_io_size = htole32(0);
	c->wce = 1; /* patched from b->wce on every read */
	c->num_queues = htole16(b->num_queues);
	if (b->host_features & (1ull << VIRTIO_BLK_F_DISCARD)) {
		c->max_discard_sectors = htole32(VBLK_MAX_DWZ_SECTORS);
		c->max_discard_seg = htole32(VBLK_MAX_DWZ_SEG);
		c->discard_sector_alignment = htole32(b->blk_size >> SECTOR_SHIFT);
	}
	if (b->host_features & (1ull << VIRTIO_BLK_F_WRITE_ZEROES)) {
		c->max_write_zeroes_sectors = htole32(VBLK_MAX_DWZ_SECTORS);
		c->max_write_zeroes_seg = htole32(VBLK_MAX_DWZ_SEG);
		c->write_zeroes_may_unmap = 1;
	}
}

/*
 * Image locking, in the spirit of QEMU's file.locking: one OFD lock
 * (F_OFD_SETLK) on the whole file, shared for a read-only disk and
 * exclusive for a writable one, so readers share with readers and a writer
 * with nobody.  An OFD lock belongs to the open file description, not to
 * the process: two disks of one VM opening the same path conflict just like
 * two VMMs do, and the lock goes away with the last fd of the description
 * (a SIGKILLed VMM leaves no stale lock).  The whole-file range also
 * conflicts with QEMU's byte-range locks when we write.  A filesystem
 * without lock support opens unlocked, with a warning (QEMU's
 * locking=auto does the same).
 */
static int lock_image(struct vblk *b, bool ro)
{
	struct flock fl = { .l_type = ro ? F_RDLCK : F_WRLCK, .l_whence = SEEK_SET };
	struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	const char *how = "opened elsewhere";
	int err;

	if (fcntl(b->fd, F_OFD_SETLK, &fl) == 0) {
		b->locked = true;
		return 0;
	}
	err = errno;
	if (err != EAGAIN && err != EACCES) {
		vmm_warn("blk: %s: cannot lock the image (%s); using it unlocked",
			 b->name, strerror(err));
		return 0;
	}
	/* Who holds it (racy, only for the message). */
	if (fcntl(b->fd, F_OFD_GETLK, &q) == 0 && q.l_type != F_UNLCK)
		how = q.l_type == F_WRLCK ? "opened writable elsewhere"
					  : "opened read-only elsewhere";
	vmm_err("blk: disk image %s is locked by another process or disk (%s); "
		"use lock=off (VMM_DISK_NO_LOCK) to override", b->name, how);
	return -EBUSY;
}

static void unlock_image(struct vblk *b)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

	/* Explicit: with a caller's fd the description outlives our dup. */
	if (b->locked)
		(void)fcntl(b->fd, F_OFD_SETLK, &fl);
	b->locked = false;
}

int vblk_open(const struct vblk_options *opt, struct vblk **out)
{
	const uint32_t known = VBLK_OPT_READONLY | VBLK_OPT_DIRECT | VBLK_OPT_NO_FLUSH |
			       VBLK_OPT_NO_EVENT_IDX | VBLK_OPT_NO_LOCK;
	struct vblk *b;
	uint64_t bytes = 0;
	unsigned int phys = SECTOR_SIZE, qsz;
	bool opened = false;
	int ret;

	if (!opt || !out || (opt->flags & ~known) || opt->num_queues == 0)
		return -EINVAL;
	qsz = opt->queue_size ? opt->queue_size : VBLK_DEFAULT_QUEUE_SIZE;
	if (qsz < 4 || qsz > VIRTQ_MAX_SIZE || (qsz & (qsz - 1)))
		return -EINVAL;
	if (opt->serial && strlen(opt->serial) > VIRTIO_BLK_ID_BYTES)
		return -EINVAL;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->fd = -1;
	log_limit_init(&b->err_log, "I/O errors");
	log_limit_init(&b->proto_log, "broken queues");
	if (opt->path)
		b->name = strdup(opt->path);
	else if (asprintf(&b->name, "fd %d", opt->fd) < 0)
		b->name = NULL;
	if (!b->name) {
		ret = -ENOMEM;
		goto err;
	}
	b->opt_flags = opt->flags;
	b->num_queues = opt->num_queues;
	b->queue_size = (uint16_t)qsz;
	/* Header and status take two descriptors of a queue_size chain (the
	 * Linux driver and QEMU's seg_max_adjust use the same rule). */
	b->seg_max = qsz - 2;
	/* seg_max * size_max <= VBLK_MAX_REQ_BYTES: what a driver honouring
	 * both can send fits under the cap (see vblk.h). */
	b->size_max = MAX(ALIGN_DOWN(VBLK_MAX_REQ_BYTES / b->seg_max,
				     VBLK_MIN_SIZE_MAX),
			  VBLK_MIN_SIZE_MAX);
	b->wce = 1;
	if (opt->serial)
		memcpy(b->serial, opt->serial, strlen(opt->serial));

	ret = open_image(opt, &b->fd, &opened);
	if (ret < 0)
		goto err;
	ret = probe_size(b, &bytes, &phys);
	if (ret < 0)
		goto err;
	if (opened && (ret = clear_nonblock(b->fd)) < 0)
		goto err;
	if (!(opt->flags & VBLK_OPT_NO_LOCK)) {
		ret = lock_image(b, opt->flags & VBLK_OPT_READONLY);
		if (ret < 0)
			goto err;
	}
	/* A tail shorter than one logical block is not exposed. */
	b->capacity = ALIGN_DOWN(bytes, (uint64_t)b->blk_size) >> SECTOR_SHIFT;

	b->host_features = (1ull << VIRTIO_F_VERSION_1) |
			   (1ull << VIRTIO_RING_F_EVENT_IDX) |
			   (1ull << VIRTIO_RING_F_INDIRECT_DESC) |
			   (1ull << VIRTIO_BLK_F_SIZE_MAX) |
			   (1ull << VIRTIO_BLK_F_SEG_MAX) |
			   (1ull << VIRTIO_BLK_F_BLK_SIZE) |
			   (1ull << VIRTIO_BLK_F_TOPOLOGY) |
			   (1ull << VIRTIO_BLK_F_MQ);
	if (!(opt->flags & VBLK_OPT_NO_FLUSH))
		b->host_features |= (1ull << VIRTIO_BLK_F_FLUSH) |
				    (1ull << VIRTIO_BLK_F_CONFIG_WCE);
	if (opt->flags & VBLK_OPT_NO_EVENT_IDX)
		b->host_features &= ~(1ull << VIRTIO_RING_F_EVENT_IDX);
	if (opt->flags & VBLK_OPT_READONLY)
		b->host_features |= 1ull << VIRTIO_BLK_F_RO;
	else
		b->host_features |= (1ull << VIRTIO_BLK_F_DISCARD) |
				    (1ull << VIRTIO_BLK_F_WRITE_ZEROES);
	build_config(b, phys);

	b->req_size = ALIGN_UP(sizeof(struct vblk_req) +
			       MIN(b->seg_max, VBLK_INLINE_IOV) *
				       sizeof(struct iovec),
			       (size_t)64);
	/* Nothing written here: see struct vblk (vblk-int.h). */
	b->queues = calloc(b->num_queues, sizeof(*b->queues));
	b->pools = calloc((size_t)b->num_queues * qsz, b->req_size);
	if (!b->queues || !b->pools) {
		ret = -ENOMEM;
		goto err;
	}
	*out = b;
	return 0;
err:
	vblk_close(b);
	return ret;
}

void vblk_close(struct vblk *b)
{
	if (!b)
		return;
	if (b->queues) {
		for (unsigned int q = 0; q < b->num_queues; q++) {
			/* A parked request's heap iovec array, if any. */
			if (b->queues[q].pending)
				vblk_req_put(b->queues[q].pending);
		}
		free(b->queues);
	}
	free(b->pools);
	if (b->fd >= 0) {
		unlock_image(b);
		close(b->fd);
	}
	log_limit_destroy(&b->err_log, "until the disk was closed");
	log_limit_destroy(&b->proto_log, "until the disk was closed");
	free(b->name);
	free(b);
}

/* ---- features and config space ---------------------------------------- */

uint64_t vblk_device_features(const struct vblk *b)
{
	return b->host_features;
}

int vblk_set_driver_features(struct vblk *b, uint64_t features)
{
	if (!(features & (1ull << VIRTIO_F_VERSION_1)))
		return -EINVAL;
	/* Only read by I/O threads, which start after FEATURES_OK. */
	__atomic_store_n(&b->driver_features, features & b->host_features,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&b->features_set, true, __ATOMIC_RELAXED);
	return 0;
}

uint64_t vblk_driver_features(const struct vblk *b)
{
	return __atomic_load_n(&b->driver_features, __ATOMIC_RELAXED);
}

int vblk_config_read(const struct vblk *b, uint32_t off, void *buf, uint32_t len)
{
	struct virtio_blk_config c;

	if (off > sizeof(c) || len > sizeof(c) - off)
		return -EINVAL;
	c = b->cfg;
	c.wce = __atomic_load_n(&b->wce, __ATOMIC_RELAXED);
	memcpy(buf, (const char *)&c + off, len);
	return 0;
}

int vblk_config_write(struct vblk *b, uint32_t off, const void *buf, uint32_t len)
{
	const uint32_t wce_off = offsetof(struct virtio_blk_config, wce);

	if (off > sizeof(b->cfg) || len > sizeof(b->cfg) - off)
		return -EINVAL;
	if (off != wce_off || len != 1 ||
	    !(b->host_features & (1ull << VIRTIO_BLK_F_CONFIG_WCE)))
		return -EPERM;
	/* Guest-controlled byte: anything non-zero means writeback. */
	__atomic_store_n(&b->wce, *(const uint8_t *)buf ? 1 : 0, __ATOMIC_RELAXED);
	return 0;
}

int vblk_fd(const struct vblk *b)
{
	return b->fd;
}

uint32_t vblk_size_max(const struct vblk *b)
{
	return b->size_max;
}

uint64_t vblk_capacity(const struct vblk *b)
{
	return b->capacity;
}

uint16_t vblk_num_queues(const struct vblk *b)
{
	return b->num_queues;
}

uint16_t vblk_queue_size(const struct vblk *b)
{
	return b->queue_size;
}

bool vblk_is_block_device(const struct vblk *b)
{
	return b->is_bdev;
}

/*
 * Write-through when the driver turned the cache off (CONFIG_WCE), or
 * accepted our features without FLUSH (it cannot flush, so every write must
 * be durable when completed: spec 5.2.6.2).  Never with NO_FLUSH (unsafe).
 */
bool vblk_write_through(const struct vblk *b)
{
	if (b->opt_flags & VBLK_OPT_NO_FLUSH)
		return false;
	if (!__atomic_load_n(&b->wce, __ATOMIC_RELAXED))
		return true;
	return __atomic_load_n(&b->features_set, __ATOMIC_RELAXED) &&
	       !(vblk_driver_features(b) & (1ull << VIRTIO_BLK_F_FLUSH));
}

