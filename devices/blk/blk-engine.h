/* SPDX-License-Identifier: MIT */
/*
 * I/O engine interface: executes parsed virtio-blk requests against the
 * disk (disk.h).  Implementations: blk-sync.c (synchronous, declared
 * here), blk-uring.c (one ring per I/O thread) and blk-null.c (no I/O).
 *
 * What an engine receives (struct vblk_req, see vblk.h), by req->type:
 *   VIRTIO_BLK_T_IN     preadv(disk_fd(req->disk), req->iov, req->niov,
 *                       req->offset) for req->len bytes.  Short reads must
 *                       be continued; at end of file report the bytes read:
 *                       vblk_req_complete() zero-fills the rest.
 *   VIRTIO_BLK_T_OUT    pwritev likewise; short writes must be continued
 *                       (a final short count becomes IOERR).  If
 *                       req->flags has VBLK_REQ_F_SYNC (write-through),
 *                       fdatasync after the write before completing.
 *   VIRTIO_BLK_T_FLUSH  fdatasync.
 *   VIRTIO_BLK_T_DISCARD  fallocate(PUNCH_HOLE|KEEP_SIZE, req->offset,
 *                       req->len) (BLKDISCARD on a block device);
 *                       -EOPNOTSUPP may be reported as is (it succeeds).
 *   VIRTIO_BLK_T_WRITE_ZEROES  VBLK_REQ_F_UNMAP: PUNCH_HOLE|KEEP_SIZE, else
 *                       ZERO_RANGE|KEEP_SIZE (BLKZEROOUT on a block device);
 *                       if unsupported, write zero buffers.  Honour
 *                       VBLK_REQ_F_SYNC as for OUT.
 * Retry -EINTR and -EAGAIN internally.
 *
 * Completion: the engine calls vblk_req_complete(req, res) exactly once,
 * with res = bytes transferred (IN/OUT), 0 (other types) or -errno.  That
 * only writes the status byte.  The queue owner then pushes the used entry
 * with vblk_queue_push() and, once per batch, asks virtq_should_notify().
 * An asynchronous engine's reaper does both at once with
 * vblk_queue_complete(req, vq, res).
 *
 * Context: an engine instance is used by one I/O thread only.
 */
#ifndef VMM_DEVICES_BLK_BLK_ENGINE_H
#define VMM_DEVICES_BLK_BLK_ENGINE_H

#include "util/compiler.h"

struct vblk_req; /* vblk.h */

/* submit() results besides -errno */
#define BLK_SUBMIT_QUEUED 0 /* in flight; completed later by the reaper */
#define BLK_SUBMIT_DONE 1   /* vblk_req_complete() was already called */

struct blk_engine;

struct blk_engine_ops {
	const char *name;
	/*
	 * Start @req.  Returns BLK_SUBMIT_DONE (the engine ran it and called
	 * vblk_req_complete(), I/O errors included), BLK_SUBMIT_QUEUED, or
	 * -EAGAIN when it cannot take the request now (ring full): the caller
	 * keeps @req and submits it again after reaping completions.
	 */
	int (*submit)(struct blk_engine *eng, struct vblk_req *req);
	/* Free the engine (may be NULL for static engines). */
	void (*destroy)(struct blk_engine *eng);
};

/* Embed as the first member of an engine's own struct (container_of). */
struct blk_engine {
	const struct blk_engine_ops *ops;
};

static inline int blk_engine_submit(struct blk_engine *eng, struct vblk_req *req)
{
	return eng->ops->submit(eng, req);
}

static inline void blk_engine_destroy(struct blk_engine *eng)
{
	if (eng && eng->ops->destroy)
		eng->ops->destroy(eng);
}

/*
 * Synchronous engine (blk-sync.c): preadv/pwritev loops handling short I/O
 * and EINTR, fdatasync, fallocate with a zero-writing fallback.  It keeps no
 * state, so one instance may serve any number of disks and threads.
 * Returns 0 or -ENOMEM.
 */
int blk_sync_engine_create(struct blk_engine **out) __must_check;

#endif
