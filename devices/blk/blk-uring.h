/* SPDX-License-Identifier: MIT */
/*
 * io_uring I/O engine: executes a virtqueue's requests on the io_uring of
 * the I/O thread that serves the queue (one ring per thread, shared by all
 * the queues the thread serves).  Reads and writes go out as READV/WRITEV,
 * FLUSH as FSYNC(DATASYNC), DISCARD/WRITE_ZEROES as FALLOCATE; a short read
 * or write is resubmitted for the rest, -EAGAIN/-EINTR are retried, and what
 * io_uring cannot do (BLKDISCARD on block devices, fallocate modes the file
 * system refuses) falls back to the synchronous engine.  Submission is
 * batched: SQEs are handed to the kernel once per I/O-thread loop.  A step
 * that finds no room in the ring waits for the next loop (never an error).
 *
 * Context: everything runs on the owning I/O thread.
 */
#ifndef VMM_DEVICES_BLK_BLK_URING_H
#define VMM_DEVICES_BLK_BLK_URING_H

#include <stdbool.h>

#include "blk/blk-engine.h"
#include "iothread.h"

/*
 * Called once per request submitted with BLK_SUBMIT_QUEUED.  If @completed
 * is false the owner must call vblk_queue_complete(req, vq, res); if true
 * the status is already written (fallback path) and the owner calls
 * vblk_queue_push(req, vq).
 */
typedef void (*blk_uring_done_fn)(void *opaque, struct vblk_req *req,
				  int64_t res, bool completed);

/*
 * One engine per virtqueue; @slots = the queue size (the most requests the
 * queue can have in flight).  Returns 0 or -ENOMEM.
 */
int blk_uring_engine_create(struct iothread *io, unsigned int slots,
			    blk_uring_done_fn done, void *opaque,
			    struct blk_engine **out) __must_check;

/* No request in flight and no cancellation outstanding: the engine touches
 * neither guest memory nor the image until the next submit. */
bool blk_uring_engine_idle(struct blk_engine *eng);

/*
 * blk_uring_engine_cancel - for a reset or a stop: cancel every request in
 * flight (IORING_OP_ASYNC_CANCEL, one per request) and start no further
 * step of any (the rest of a short transfer, the fdatasync of a
 * write-through write, a retry).  Each request still completes through the
 * done callback exactly once: normally if the kernel had finished it,
 * otherwise with -ECANCELED (VIRTIO_BLK_S_IOERR, never acknowledged as
 * written).  What the kernel has already started (a running io-wq worker,
 * a bio at the device) cannot be cancelled and finishes on its own, at
 * most VBLK_MAX_REQ_BYTES per request.  Run the I/O thread until
 * blk_uring_engine_idle(), then blk_uring_engine_resume() before the next
 * submit.
 */
void blk_uring_engine_cancel(struct blk_engine *eng);
void blk_uring_engine_resume(struct blk_engine *eng);

#endif
