/* SPDX-License-Identifier: MIT */
/*
 * Synchronous I/O engine: every request is executed inside submit() with
 * plain system calls.  Used by the unit tests and as a fallback where
 * io_uring is unavailable.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/fs.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"

#define ZERO_BUF_SIZE (64u * 1024)

struct blk_sync {
	struct blk_engine base;
	void *zeros; /* ZERO_BUF_SIZE bytes of zeros for the write fallback */
};

/*
 * preadv/pwritev the whole iovec list, continuing after short transfers and
 * EINTR.  Returns bytes done (less than asked only at end of file for a
 * read) or -errno.  The list is patched in place around each call and
 * restored, so the request's iov[] is unchanged afterwards.
 */
static int64_t rw_all(int fd, struct iovec *iov, unsigned int niov,
		      uint64_t off, bool write)
{
	unsigned int i = 0;
	uint64_t done = 0;
	size_t skip = 0; /* bytes of iov[i] already done */

	while (i < niov) {
		struct iovec saved = iov[i];
		int cnt = (int)MIN(niov - i, (unsigned int)IOV_MAX);
		ssize_t n;

		iov[i].iov_base = (char *)iov[i].iov_base + skip;
		iov[i].iov_len -= skip;
		if (write)
			n = pwritev(fd, iov + i, cnt, (off_t)(off + done));
		else
			n = preadv(fd, iov + i, cnt, (off_t)(off + done));
		iov[i] = saved;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			break; /* EOF (read), or a write that cannot progress */
		done += (uint64_t)n;
		/* Advance (i, skip) by n bytes. */
		while (n > 0 && i < niov) {
			size_t left = iov[i].iov_len - skip;

			if ((size_t)n < left) {
				skip += (size_t)n;
				n = 0;
			} else {
				n -= (ssize_t)left;
				i++;
				skip = 0;
			}
		}
	}
	return (int64_t)done;
}

static int do_sync(int fd)
{
	while (fdatasync(fd) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static int do_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	while (fallocate(fd, mode, (off_t)off, (off_t)len) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static int write_zero_bufs(struct blk_sync *s, int fd, uint64_t off, uint64_t len)
{
	while (len) {
		struct iovec iov = {
			.iov_base = s->zeros,
			.iov_len = (size_t)MIN(len, (uint64_t)ZERO_BUF_SIZE),
		};
		int64_t n = rw_all(fd, &iov, 1, off, true);

		if (n < 0)
			return (int)n;
		if ((uint64_t)n != iov.iov_len)
			return -EIO;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static bool unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -ENOTTY || err == -EINVAL;
}

static int do_discard(struct vblk_req *req)
{
	int fd = disk_fd(req->disk);

	if (disk_is_block_device(req->disk)) {
		uint64_t range[2] = { req->offset, req->len };

		if (ioctl(fd, BLKDISCARD, range) < 0)
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		return 0;
	}
	return do_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			    req->offset, req->len);
}

static int do_write_zeroes(struct blk_sync *s, struct vblk_req *req)
{
	int fd = disk_fd(req->disk);
	int r = -EOPNOTSUPP;

	if (req->flags & VBLK_REQ_F_UNMAP)
		r = do_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 req->offset, req->len);
	if (unsupported(r))
		r = do_fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
				 req->offset, req->len);
	if (unsupported(r) && disk_is_block_device(req->disk)) {
		uint64_t range[2] = { req->offset, req->len };

		r = ioctl(fd, BLKZEROOUT, range) < 0 ? -errno : 0;
	}
	if (unsupported(r))
		r = write_zero_bufs(s, fd, req->offset, req->len);
	if (r == 0 && (req->flags & VBLK_REQ_F_SYNC))
		r = do_sync(fd);
	return r;
}

/* Context: the I/O thread using this engine */
static int sync_submit(struct blk_engine *eng, struct vblk_req *req)
{
	struct blk_sync *s = container_of(eng, struct blk_sync, base);
	int fd = disk_fd(req->disk);
	int64_t n;
	int r;

	switch (req->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT: {
		bool write = req->type == VIRTIO_BLK_T_OUT;

		n = rw_all(fd, req->iov, req->niov, req->offset, write);
		if (n >= 0 && write && (req->flags & VBLK_REQ_F_SYNC) &&
		    (uint64_t)n == req->len) {
			r = do_sync(fd);
			if (r < 0)
				n = r;
		}
		vblk_req_complete(req, n);
		return BLK_SUBMIT_DONE;
	}
	case VIRTIO_BLK_T_FLUSH:
		r = do_sync(fd);
		break;
	case VIRTIO_BLK_T_DISCARD:
		r = do_discard(req);
		break;
	case VIRTIO_BLK_T_WRITE_ZEROES:
		r = do_write_zeroes(s, req);
		break;
	default:
		r = -EOPNOTSUPP;
		break;
	}
	vblk_req_complete(req, r);
	return BLK_SUBMIT_DONE;
}

static void sync_destroy(struct blk_engine *eng)
{
	struct blk_sync *s = container_of(eng, struct blk_sync, base);

	free(s->zeros);
	free(s);
}

static const struct blk_engine_ops sync_ops = {
	.name = "sync",
	.submit = sync_submit,
	.destroy = sync_destroy,
};

int blk_sync_engine_create(struct blk_engine **out)
{
	struct blk_sync *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->zeros = calloc(1, ZERO_BUF_SIZE);
	if (!s->zeros) {
		free(s);
		return -ENOMEM;
	}
	s->base.ops = &sync_ops;
	*out = &s->base;
	return 0;
}
