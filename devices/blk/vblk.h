/* SPDX-License-Identifier: MIT */
/*
 * The virtio-blk model of a disk: what a virtio-blk driver sees of it,
 * independent of the transport (virtio-pci, vhost-user), of the threads
 * (virtio-blk.h serves it on I/O threads) and of the I/O engine
 * (blk-engine.h).
 *
 * One struct vblk presents one disk (disk.h, the image it opens and owns).
 * It holds the feature bits it offers, the config-space image and, per
 * virtqueue, a pool of request descriptors (struct vblk_req), a
 * protocol-error latch and statistics.
 *
 * Request life cycle (one queue, all on that queue's I/O thread):
 *
 *   virtq_pop()          chain from the guest
 *   vblk_req_parse()     validate; returns VBLK_REQ_EXECUTE, VBLK_REQ_DONE
 *                        (status already written: GET_ID, IOERR, UNSUPP...)
 *                        or -EPROTO (the transport sets NEEDS_RESET)
 *   engine->submit()     only for VBLK_REQ_EXECUTE (see blk-engine.h)
 *   vblk_req_complete()  called by the engine with the I/O result: writes
 *                        the status byte, fixes req->used_len
 *   vblk_queue_push()    the queue owner returns the chain (virtq_push) and
 *                        the request to the pool
 *   virtq_should_notify() once per batch of pushes, by the queue owner, who
 *                        then raises the queue's interrupt (MSI-X / irqfd)
 *
 * vblk_process_queue() does the first four steps for every available chain
 * and pushes whatever completed synchronously.
 *
 * Context: the config/feature calls run on a vCPU thread (transport);
 * everything taking a queue index runs on that queue's I/O thread.
 */
#ifndef VMM_DEVICES_BLK_VBLK_H
#define VMM_DEVICES_BLK_VBLK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <linux/virtio_blk.h>

#include "blk/disk.h"
#include "util/compiler.h"
#include "virtio/virtqueue.h"

/* struct vblk_options.flags (same values as VMM_DISK_* in vmm.h). */
#define VBLK_OPT_READONLY (1u << 0) /* open O_RDONLY, offer VIRTIO_BLK_F_RO */
#define VBLK_OPT_DIRECT (1u << 1)   /* open with O_DIRECT, no fallback */
#define VBLK_OPT_NO_FLUSH (1u << 2) /* no FLUSH/CONFIG_WCE; FLUSH is a no-op */
#define VBLK_OPT_NO_EVENT_IDX (1u << 3) /* do not offer VIRTIO_RING_F_EVENT_IDX */
#define VBLK_OPT_NO_LOCK (1u << 4)  /* take no OFD lock on the image */

#define VBLK_DEFAULT_QUEUE_SIZE 256u
/*
 * Most data bytes one read or write may carry: 4 MiB.  Without a cap a
 * guest bounds a request only by seg_max descriptors of up to 4 GiB each,
 * all of which may alias the same guest pages: one request could make the
 * host read or write hundreds of times guest RAM, and a reset or a stop
 * would wait for all of it.  Larger requests complete with
 * VIRTIO_BLK_S_IOERR (a driver bug, not a transport violation).
 *
 * The driver is told through seg_max and size_max (VIRTIO_BLK_F_SIZE_MAX,
 * see vblk_size_max()): Linux's virtio_blk sets max_segments = seg_max and
 * max_segment_size = size_max and leaves max_hw_sectors unlimited, so the
 * largest request it can build, even with max_sectors_kb raised to the
 * maximum, is seg_max * size_max <= this cap.  Linux's default
 * max_sectors_kb (1280) is below it: default traffic is unchanged.  4 MiB
 * is the smallest power of two that keeps seg_max = queue size - 2 with
 * 4 KiB segments for every queue size we allow (1022 * 4 KiB).
 */
#define VBLK_MAX_REQ_BYTES (4u << 20)
/* size_max never goes below a page: Linux refuses smaller segments. */
#define VBLK_MIN_SIZE_MAX 4096u
_Static_assert((VIRTQ_MAX_SIZE - 2) * VBLK_MIN_SIZE_MAX <= VBLK_MAX_REQ_BYTES,
	       "seg_max * size_max must fit under the request cap");

/* One discard / write-zeroes range per request. */
#define VBLK_MAX_DWZ_SEG 1u
/* Per-range limit for discard / write-zeroes: 2 GiB in sectors. */
#define VBLK_MAX_DWZ_SECTORS (1u << 22)

struct vblk_options {
	const char *path;	  /* image path, or NULL and use @fd */
	int fd;			  /* used when @path is NULL; dup'ed */
	uint32_t flags;		  /* VBLK_OPT_* */
	uint16_t num_queues;	  /* >= 1 */
	uint16_t queue_size;	  /* 0 = 256; power of two, 4..VIRTQ_MAX_SIZE */
	const char *serial;	  /* GET_ID answer, <= 20 bytes, or NULL */
};

/* enum for struct vblk_queue_stats.reqs[] */
enum vblk_stat_type {
	VBLK_STAT_IN,
	VBLK_STAT_OUT,
	VBLK_STAT_FLUSH,
	VBLK_STAT_GET_ID,
	VBLK_STAT_DISCARD,
	VBLK_STAT_WRITE_ZEROES,
	VBLK_STAT_OTHER, /* unknown / unsupported types */
	VBLK_STAT_NR,
};

struct vblk_queue_stats {
	uint64_t reqs[VBLK_STAT_NR]; /* completed requests by type */
	uint64_t bytes_read;	     /* IN data bytes completed OK */
	uint64_t bytes_written;	     /* OUT data bytes completed OK */
	uint64_t io_errors;	     /* requests completed VIRTIO_BLK_S_IOERR */
	uint64_t unsupported;	     /* requests completed VIRTIO_BLK_S_UNSUPP */
	uint64_t proto_errors;	     /* -EPROTO (chains that broke the queue) */
	uint64_t cancelled;	     /* IOERR because a reset/stop cancelled them
				        (also counted in io_errors) */
};

/* struct vblk_req.flags */
#define VBLK_REQ_F_SYNC (1u << 0)  /* write-through: fdatasync after the write */
#define VBLK_REQ_F_UNMAP (1u << 1) /* write-zeroes may deallocate (punch hole) */

/* vblk_req_parse() results */
#define VBLK_REQ_EXECUTE 0 /* submit to the engine */
#define VBLK_REQ_DONE 1	   /* status written, just push it */

struct vblk;

/*
 * One in-flight request.  Everything the engine needs is here; the data
 * buffers (iov) and the status byte point into guest memory and stay valid
 * until the request is pushed.
 */
struct vblk_req {
	struct vblk *blk;
	struct disk *disk;	 /* the image the engine reads and writes */
	unsigned int queue;	 /* virtqueue index */
	uint16_t head;		 /* chain id for virtq_push() */
	uint32_t type;		 /* VIRTIO_BLK_T_* */
	uint32_t flags;		 /* VBLK_REQ_F_* */
	uint64_t sector;	 /* IN/OUT: header sector; DISCARD/WZ: range start */
	uint64_t offset;	 /* byte offset in the image (sector * 512) */
	uint64_t len;		 /* IN/OUT: data bytes; DISCARD/WZ: range bytes */
	uint8_t *status;	 /* the status byte in guest memory */
	uint8_t status_val;	 /* VIRTIO_BLK_S_* written there */
	uint32_t used_len;	 /* len for virtq_push() (set on completion) */
	void *engine_data;	 /* free for the engine */
	uint64_t engine_u64;	 /* free for the engine (e.g. bytes done) */
	struct vblk_req *next;	 /* list link for the current owner */
	unsigned int niov;	 /* data segments (IN/OUT only) */
	unsigned int max_iov;	 /* most segments a request may have (seg_max) */
	/* Data segments in guest memory: inline_iov, or for a chain of more
	 * than VBLK_INLINE_IOV segments a heap array of max_iov entries,
	 * freed by vblk_req_put(). */
	struct iovec *iov;
	struct iovec inline_iov[];
};

/*
 * Segments kept inline in every request slot.  Each queue preallocates
 * queue_size slots (pages touched lazily, reused LIFO); with seg_max
 * inline entries a slot is 4 KiB and a burst of large requests at boot
 * left megabytes resident.  32 covers 4 KiB random I/O and 128 KiB
 * readahead of scattered pages; longer chains allocate their array.
 */
#define VBLK_INLINE_IOV 32u

/**
 * vblk_open() - open a disk (disk_open()) and build its virtio-blk model.
 * @opt: options (see struct vblk_options)
 * @out: receives the model, which owns the disk
 *
 * I/O errors from the host (EIO, ENOSPC, ...) are completed as
 * VIRTIO_BLK_S_IOERR and the device keeps working.  The image's size,
 * block sizes and locking: disk_open().
 *
 * Returns: 0; -EINVAL for bad options; any error of disk_open() (-EINVAL,
 * -EBUSY for a locked image, -errno, logged as it says); -ENOMEM.
 */
int vblk_open(const struct vblk_options *opt, struct vblk **out) __must_check;
/* Close the disk and free everything (NULL-safe).  No request in flight. */
void vblk_close(struct vblk *b);

/* Feature bits the device offers (VIRTIO_F_*, VIRTIO_RING_F_*, VIRTIO_BLK_F_*). */
uint64_t vblk_device_features(const struct vblk *b);
/*
 * Record what the driver accepted (FEATURES_OK).  Bits not offered are
 * dropped.  Decides write-through mode (see vblk_config_write()).
 * Returns 0, or -EINVAL if VIRTIO_F_VERSION_1 is missing (we are modern-only).
 */
int vblk_set_driver_features(struct vblk *b, uint64_t features);
uint64_t vblk_driver_features(const struct vblk *b);

/* Config space: struct virtio_blk_config, little-endian.
 * Returns 0 or -EINVAL when [off, off+len) is not inside it. */
int vblk_config_read(const struct vblk *b, uint32_t off, void *buf, uint32_t len);
/*
 * Only `writeback` is writable, and only when CONFIG_WCE is offered:
 * 0 = write-through (every write is followed by fdatasync before it is
 * completed), 1 = writeback.  Returns 0; -EINVAL out of bounds; -EPERM
 * for any other byte (the transport ignores the write).
 */
int vblk_config_write(struct vblk *b, uint32_t off, const void *buf, uint32_t len);

/* The disk @b presents (owned by @b). */
struct disk *vblk_disk(const struct vblk *b);
/* The size_max advertised: the largest multiple of 4 KiB (at least 4 KiB)
 * with seg_max * size_max <= VBLK_MAX_REQ_BYTES. */
uint32_t vblk_size_max(const struct vblk *b);
uint16_t vblk_num_queues(const struct vblk *b);
uint16_t vblk_queue_size(const struct vblk *b);

/*
 * Parse and validate one chain (from virtq_pop on queue @req->queue) into
 * @req, which must come from vblk_req_get().  Guest data is copied out once (header, discard range).
 * Returns:
 *   VBLK_REQ_EXECUTE - @req is ready for the engine;
 *   VBLK_REQ_DONE    - @req already carries its status (OK for GET_ID and
 *                      FLUSH without flush support, IOERR for a bad request,
 *                      UNSUPP for an unknown type) and used_len: push it;
 *   -EPROTO          - no writable byte for the status: the request cannot
 *                      even be failed, the device must set NEEDS_RESET.
 * IOERR cases: header < 16 readable bytes, data length 0 or not a multiple
 * of the block size or over VBLK_MAX_REQ_BYTES, range beyond capacity,
 * write/discard/write-zeroes on a read-only disk, data in the wrong
 * direction, more than seg_max data segments, bad discard/write-zeroes
 * range list.
 * UNSUPP: unknown type, UNMAP or unknown flag on DISCARD, unknown flag on
 * WRITE_ZEROES.
 */
int vblk_req_parse(struct vblk *b, const struct virtq_chain *chain,
		   struct vblk_req *req) __must_check;

/*
 * Finish an executed request: @res is bytes transferred (IN/OUT) or 0
 * (FLUSH/DISCARD/WRITE_ZEROES) on success, -errno on failure.
 *   - a short IN (end of file) is zero-filled and succeeds;
 *   - a short OUT is an IOERR (the engine retries short writes first);
 *   - -EOPNOTSUPP on DISCARD succeeds (discard is a hint);
 *   - -ECANCELED (the engine cancelled it for a reset or stop) is an IOERR
 *     that is counted (cancelled) but not logged as a host I/O error;
 *   - any other error is IOERR.
 * Host I/O errors are logged once per burst: the first in full, the rest
 * counted (queue stat io_errors) and summarised in one "N more I/O errors"
 * line at the first completion a second or more after the burst's last
 * error, every 10 s while it lasts, or at vblk_close().
 * Writes the status byte, sets and returns req->used_len, counts stats.
 * Context: any thread, but only once per request.
 */
uint32_t vblk_req_complete(struct vblk_req *req, int64_t res);

/*
 * Queue-owner side (the I/O thread of queue @q).
 */
/* Take a free request of queue @q (NULL if all queue_size are in use). */
struct vblk_req *vblk_req_get(struct vblk *b, unsigned int q);
/* Give it back without pushing anything (e.g. on teardown). */
void vblk_req_put(struct vblk_req *req);
/* virtq_push(vq, req->head, req->used_len) then vblk_req_put(req). */
void vblk_queue_push(struct vblk_req *req, struct virtq *vq);
/* Complete + push in one call: the async engine's reap path. */
void vblk_queue_complete(struct vblk_req *req, struct virtq *vq, int64_t res);

/**
 * vblk_process_queue() - serve every available chain of queue @q.
 * @b:      disk
 * @q:      queue index (< num_queues)
 * @vq:     that virtqueue
 * @eng:    engine executing the requests
 * @notify: set to true if the driver must be interrupted (never cleared)
 *
 * Loops disable-notify / pop / enable-notify until the ring is empty with
 * kicks enabled, parsing each chain and submitting it.  Requests that finish
 * synchronously (parse errors, GET_ID, a synchronous engine) are pushed
 * here; asynchronous ones are pushed by the engine's reaper through
 * vblk_queue_complete().  If the engine answers -EAGAIN, or all requests of
 * the queue are in flight, processing stops with kicks still disabled: call
 * again after reaping (the request that got -EAGAIN is kept and retried
 * first; vblk_queue_parked() says whether there is one: with nothing of
 * the queue in flight, no completion will come to call again, so the owner
 * must schedule the retry itself).
 *
 * Returns: chains consumed (>= 0); -EPROTO on a protocol violation, after
 * which the queue is latched broken and every call returns -EPROTO until
 * vblk_queue_reset() (the transport sets NEEDS_RESET); -EINVAL for a bad @q.
 */
struct blk_engine;
int vblk_process_queue(struct vblk *b, unsigned int q, struct virtq *vq,
		       struct blk_engine *eng, bool *notify);

/* Device reset of queue @q: forget the broken latch and pending requests
 * (a request parked after -EAGAIN is released, never pushed: the ring is
 * being reset).  The engine must have been drained (no request of @q in
 * flight). */
void vblk_queue_reset(struct vblk *b, unsigned int q);
/* Whether queue @q holds a request the engine refused with -EAGAIN or
 * that the rate limit holds back (popped, never started). */
bool vblk_queue_parked(const struct vblk *b, unsigned int q);
/* The time (ratelimit_now()) at which queue @q's request held by the rate
 * limit may start; 0 when none is held.  Call vblk_process_queue() again
 * then (or within RATELIMIT_RECHECK_NS: a limit changed meanwhile is
 * applied to it). */
uint64_t vblk_queue_throttled(const struct vblk *b, unsigned int q);

/*
 * Charge every request executed on @b's queues (one operation; the data
 * bytes of reads and writes) to @rl, shared by all queues (lock-free,
 * ratelimit.h), or to nothing (NULL, the default).  A request the limit
 * holds back is popped and kept (vblk_queue_parked()) until its booked
 * time: the queue takes nothing more meanwhile.  Set before the queues
 * are served; @rl outlives @b's use of it.
 */
struct ratelimit;
void vblk_set_ratelimit(struct vblk *b, struct ratelimit *rl);
bool vblk_queue_broken(const struct vblk *b, unsigned int q);
/* Snapshot of queue @q's counters (may run on any thread). */
int vblk_queue_get_stats(const struct vblk *b, unsigned int q,
			 struct vblk_queue_stats *out);

#endif
