/* SPDX-License-Identifier: MIT */
/* io_uring engine (see blk-uring.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>

#include "blk/blk-uring.h"
#include "blk/vblk.h"
#include "log.h"

/* Per in-flight request: the completion token and the resubmit state. */
struct uring_slot {
	struct iothread_cb cb;
	struct iothread_cb cancel_cb; /* the ASYNC_CANCEL aimed at cb */
	struct blk_uring *eng;
	struct vblk_req *req;
	uint64_t done;		/* bytes transferred so far (READ/WRITE) */
	bool syncing;		/* write done, fdatasync of a write-through in flight */
	struct iovec *tmp_iov;	/* the rest of the iovec after a short transfer */
	struct uring_slot *next_free; /* free list, or eng->parked */
};

struct blk_uring {
	struct blk_engine base;
	struct iothread *io;
	struct blk_engine *sync; /* fallback */
	/* The image as the ring's SQEs name it: registered on the first
	 * request (on the I/O thread), kept until the engine is destroyed
	 * (registrations should live as long as the fd: iothread.h). */
	struct iothread_file file;
	bool no_file; /* registration failed: every request goes sync */
	blk_uring_done_fn done;
	void *opaque;
	struct uring_slot *slots, *free;
	unsigned int nr_slots;
	unsigned int inflight; /* requests between QUEUED and done() */
	/*
	 * Requests whose next SQE (the rest of a short transfer, the
	 * fdatasync of a write-through write, an -EAGAIN retry) found no room
	 * in the ring: reissued at the next round (retry_hook) instead of
	 * failing a request whose data may already be on the disk.
	 */
	struct uring_slot *parked;
	struct iothread_hook retry_hook;
	/*
	 * Cancelling (blk_uring_engine_cancel(), a reset or stop): nothing is
	 * resubmitted, a request that is not finished completes with
	 * -ECANCELED.  cancels counts ASYNC_CANCEL SQEs whose CQE is due.
	 */
	bool cancelling;
	unsigned int cancels;
};

static void uring_cqe(struct iothread_cb *cb, int res, uint32_t flags);

static struct uring_slot *slot_get(struct blk_uring *e)
{
	struct uring_slot *s = e->free;

	if (s)
		e->free = s->next_free;
	return s;
}

static void slot_put(struct blk_uring *e, struct uring_slot *s)
{
	free(s->tmp_iov);
	s->tmp_iov = NULL;
	s->req = NULL;
	s->next_free = e->free;
	e->free = s;
}

/*
 * The iovec of @req minus its first @skip bytes, in s->tmp_iov (only after
 * a short transfer, so the common path allocates nothing).  req->iov stays
 * intact: vblk_req_complete() zero-fills short reads through it.
 */
static int slot_rest_iov(struct uring_slot *s, uint64_t skip,
			 const struct iovec **iov, unsigned int *niov)
{
	const struct vblk_req *req = s->req;
	unsigned int i = 0;

	while (i < req->niov && skip >= req->iov[i].iov_len)
		skip -= req->iov[i++].iov_len;
	free(s->tmp_iov);
	s->tmp_iov = malloc((req->niov - i) * sizeof(struct iovec));
	if (!s->tmp_iov)
		return -ENOMEM;
	memcpy(s->tmp_iov, &req->iov[i], (req->niov - i) * sizeof(struct iovec));
	s->tmp_iov[0].iov_base = (char *)s->tmp_iov[0].iov_base + skip;
	s->tmp_iov[0].iov_len -= skip;
	*iov = s->tmp_iov;
	*niov = req->niov - i;
	return 0;
}

/* Queue the next SQE for @s. Returns 0, -EAGAIN (ring full) or -errno. */
static int slot_issue(struct uring_slot *s)
{
	struct vblk_req *req = s->req;
	const struct iothread_file *f = &s->eng->file;
	int fd = f->idx; /* a registered slot, or the fd (iothread.h) */
	struct io_uring_sqe *sqe = iothread_get_sqe(s->eng->io, &s->cb);
	const struct iovec *iov = req->iov;
	unsigned int niov = req->niov;
	int mode;

	if (!sqe)
		return -EAGAIN;
	if (s->syncing || req->type == VIRTIO_BLK_T_FLUSH) {
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		iothread_sqe_file(sqe, f);
		return 0;
	}
	switch (req->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		if (s->done && slot_rest_iov(s, s->done, &iov, &niov)) {
			/* The SQE is taken: make it a NOP nobody waits for. */
			io_uring_prep_nop(sqe);
			iothread_sqe_nofile(s->eng->io, sqe);
			io_uring_sqe_set_data(sqe, NULL);
			return -ENOMEM;
		}
		if (req->type == VIRTIO_BLK_T_IN)
			io_uring_prep_readv(sqe, fd, iov, niov, req->offset + s->done);
		else
			io_uring_prep_writev(sqe, fd, iov, niov, req->offset + s->done);
		iothread_sqe_file(sqe, f);
		return 0;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		mode = FALLOC_FL_KEEP_SIZE |
		       (req->type == VIRTIO_BLK_T_DISCARD || (req->flags & VBLK_REQ_F_UNMAP)
				? FALLOC_FL_PUNCH_HOLE
				: FALLOC_FL_ZERO_RANGE);
		io_uring_prep_fallocate(sqe, fd, mode, (off_t)req->offset,
					(off_t)req->len);
		iothread_sqe_file(sqe, f);
		return 0;
	default:
		io_uring_prep_nop(sqe);
		iothread_sqe_nofile(s->eng->io, sqe);
		io_uring_sqe_set_data(sqe, NULL);
		return -EINVAL;
	}
}

/* Finish @s: hand the request back to the owner and free the slot. */
static void slot_finish(struct uring_slot *s, int64_t res, bool completed)
{
	struct blk_uring *e = s->eng;
	struct vblk_req *req = s->req;

	slot_put(e, s);
	e->inflight--;
	e->done(e->opaque, req, res, completed);
}

/* Keep @s until the ring has room for its next SQE (uring_retry()). */
static void slot_park(struct uring_slot *s)
{
	struct blk_uring *e = s->eng;

	s->next_free = e->parked;
	e->parked = s;
	iothread_defer_next(e->io, &e->retry_hook);
}

/* Context: I/O thread, end of a round.  Reissue what found the ring full. */
static void uring_retry(void *opaque)
{
	struct blk_uring *e = opaque;
	struct uring_slot *list = e->parked;

	e->parked = NULL;
	while (list) {
		struct uring_slot *s = list;
		int r;

		list = s->next_free;
		s->next_free = NULL;
		if (e->cancelling) {
			slot_finish(s, -ECANCELED, false);
			continue;
		}
		r = slot_issue(s);
		if (r == -EAGAIN)
			slot_park(s); /* still full: next round */
		else if (r)
			slot_finish(s, r, false);
	}
}

/* Context: I/O thread.  One CQE of a request. */
static void uring_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct uring_slot *s = container_of(cb, struct uring_slot, cb);
	struct vblk_req *req = s->req;
	bool rw = req->type == VIRTIO_BLK_T_IN || req->type == VIRTIO_BLK_T_OUT;

	(void)flags;
	if (res == -EAGAIN || res == -EINTR)
		goto reissue;
	if (res < 0) {
		/* Modes a file system refuses (e.g. ZERO_RANGE on some, any
		 * fallocate on a block device) go through the synchronous
		 * engine, which has ioctl and zero-writing fallbacks. */
		if ((res == -EOPNOTSUPP || res == -EINVAL || res == -ENODEV) &&
		    !s->eng->cancelling &&
		    (req->type == VIRTIO_BLK_T_DISCARD ||
		     req->type == VIRTIO_BLK_T_WRITE_ZEROES)) {
			int r = blk_engine_submit(s->eng->sync, req);

			slot_finish(s, r < 0 ? r : 0, r >= 0);
			return;
		}
		slot_finish(s, res, false);
		return;
	}
	if (rw && !s->syncing) {
		s->done += (uint64_t)res;
		if (s->done < req->len && res > 0)
			goto reissue; /* short transfer: the rest */
		if (req->type == VIRTIO_BLK_T_OUT && s->done == req->len &&
		    (req->flags & VBLK_REQ_F_SYNC)) {
			s->syncing = true; /* write-through: fdatasync next */
			goto reissue;
		}
		/* res == 0 before the end: EOF on a read (zero-filled by
		 * vblk_req_complete), or a write that cannot progress (IOERR). */
		slot_finish(s, (int64_t)s->done, false);
		return;
	}
	if (s->syncing) {
		slot_finish(s, (int64_t)s->done, false);
		return;
	}
	if ((req->type == VIRTIO_BLK_T_WRITE_ZEROES) && (req->flags & VBLK_REQ_F_SYNC)) {
		s->syncing = true;
		s->done = 0;
		goto reissue;
	}
	slot_finish(s, 0, false);
	return;
reissue: {
		int r;

		if (s->eng->cancelling) {
			/*
			 * Reset/stop: start no further step.  What is not
			 * finished (the rest of a short or interrupted
			 * transfer, the fdatasync of a write-through write)
			 * completes as an error: never acknowledged.
			 */
			slot_finish(s, -ECANCELED, false);
			return;
		}
		r = slot_issue(s);

		if (r == -EAGAIN)
			/* The ring is full even after a submit (the kernel
			 * refused it): try again next round.  The step done
			 * so far (e.g. a write before its fdatasync) must not
			 * turn into an error for the guest. */
			slot_park(s);
		else if (r)
			slot_finish(s, r, false);
	}
}

/*
 * Register the image with the ring on the first request (context: the I/O
 * thread).  An engine serves one queue of one disk, so every request has
 * the same fd.  Returns whether SQEs can name it.
 */
static bool uring_file(struct blk_uring *e, int fd)
{
	int ret;

	if (e->file.held)
		return e->file.fd == fd;
	if (e->no_file)
		return false;
	ret = iothread_file_get(e->io, fd, &e->file);
	if (ret) {
		/* Table full (see IOTHREAD_MAX_FILES): slower, not broken. */
		vmm_warn("io_uring: cannot register the image (fd %d): %s; "
			 "this queue's I/O goes synchronous", fd, strerror(-ret));
		e->no_file = true;
	}
	return !ret;
}

static int uring_submit(struct blk_engine *base, struct vblk_req *req)
{
	struct blk_uring *e = container_of(base, struct blk_uring, base);
	struct uring_slot *s;
	int r;

	if (req->type == VIRTIO_BLK_T_DISCARD && disk_is_block_device(req->disk))
		return blk_engine_submit(e->sync, req); /* BLKDISCARD ioctl */
	if (!uring_file(e, disk_fd(req->disk)))
		return blk_engine_submit(e->sync, req);
	s = slot_get(e);
	if (!s)
		return -EAGAIN;
	s->req = req;
	s->done = 0;
	s->syncing = false;
	r = slot_issue(s);
	if (r == -EAGAIN) {
		slot_put(e, s);
		return -EAGAIN;
	}
	if (r) {
		/* The SQE became an orphan NOP; report the error here. */
		slot_put(e, s);
		vblk_req_complete(req, r);
		return BLK_SUBMIT_DONE;
	}
	e->inflight++;
	return BLK_SUBMIT_QUEUED;
}

bool blk_uring_engine_idle(struct blk_engine *base)
{
	struct blk_uring *e = container_of(base, struct blk_uring, base);

	return !e->inflight && !e->cancels;
}

/* Context: I/O thread.  The answer to one ASYNC_CANCEL: 0 (cancelled: the
 * request's own CQE says -ECANCELED), -EALREADY (running: it completes on
 * its own), -ENOENT (already completed, CQE reaped or about to be). */
static void uring_cancel_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct uring_slot *s = container_of(cb, struct uring_slot, cancel_cb);

	(void)res;
	(void)flags;
	s->eng->cancels--;
}

void blk_uring_engine_cancel(struct blk_engine *base)
{
	struct blk_uring *e = container_of(base, struct blk_uring, base);

	e->cancelling = true;
	/* Parked requests are not in the kernel: finish them here.  Nothing
	 * parks while cancelling, so the hook cannot be queued again and
	 * the engine can be freed once idle. */
	iothread_undefer(e->io, &e->retry_hook);
	uring_retry(e);
	for (unsigned int i = 0; i < e->nr_slots; i++) {
		struct uring_slot *s = &e->slots[i];
		struct io_uring_sqe *sqe;

		if (!s->req)
			continue; /* free */
		sqe = iothread_get_sqe(e->io, &s->cancel_cb);
		if (!sqe) {
			/* No room even for a cancel: the rest completes on its
			 * own, each request at most VBLK_MAX_REQ_BYTES. */
			vmm_dbg("io_uring: ring full, %u requests not cancelled",
				e->inflight);
			return;
		}
		io_uring_prep_cancel(sqe, &s->cb, 0);
		iothread_sqe_nofile(e->io, sqe);
		e->cancels++;
	}
}

void blk_uring_engine_resume(struct blk_engine *base)
{
	container_of(base, struct blk_uring, base)->cancelling = false;
}

static void uring_destroy(struct blk_engine *base)
{
	struct blk_uring *e = container_of(base, struct blk_uring, base);

	/* Idle (drained), so retry_hook is not queued (uring_retry() ran). */
	/* Before the owner closes the image (virtio_blk_destroy()). */
	iothread_file_put(e->io, &e->file);
	blk_engine_destroy(e->sync);
	free(e->slots);
	free(e);
}

static const struct blk_engine_ops uring_ops = {
	.name = "io_uring",
	.submit = uring_submit,
	.destroy = uring_destroy,
};

int blk_uring_engine_create(struct iothread *io, unsigned int slots,
			    blk_uring_done_fn done, void *opaque,
			    struct blk_engine **out)
{
	struct blk_uring *e = calloc(1, sizeof(*e));
	int ret;

	if (!e)
		return -ENOMEM;
	e->slots = calloc(slots, sizeof(*e->slots));
	if (!e->slots) {
		free(e);
		return -ENOMEM;
	}
	ret = blk_sync_engine_create(&e->sync);
	if (ret) {
		free(e->slots);
		free(e);
		return ret;
	}
	e->nr_slots = slots;
	e->retry_hook = (struct iothread_hook){ .fn = uring_retry, .opaque = e };
	for (unsigned int i = 0; i < slots; i++) {
		e->slots[i].cb.fn = uring_cqe;
		e->slots[i].cancel_cb.fn = uring_cancel_cqe;
		e->slots[i].eng = e;
		e->slots[i].next_free = i + 1 < slots ? &e->slots[i + 1] : NULL;
	}
	e->free = &e->slots[0];
	e->base.ops = &uring_ops;
	e->io = io;
	e->done = done;
	e->opaque = opaque;
	*out = &e->base;
	return 0;
}
