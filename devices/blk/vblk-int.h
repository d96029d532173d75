/* SPDX-License-Identifier: MIT */
/*
 * Inside vblk: the device state shared by vblk.c (image, features, config
 * space) and vblk-req.c (request parsing and completion, the queue
 * owner's side).
 */
#ifndef VMM_BLK_VBLK_INT_H
#define VMM_BLK_VBLK_INT_H

#include <linux/virtio_blk.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk/vblk.h"
#include "log.h"
#include "virtio/virtqueue.h"

#define SECTOR_SHIFT 9
#define SECTOR_SIZE 512u
struct vblk_queue {
	struct vblk_queue_stats stats; /* written by the owner, atomically */
	bool broken;		       /* protocol error latched until reset */
	struct vblk_req *free;	       /* free list of used-before requests */
	unsigned int nr_fresh;	       /* slots [nr_fresh..] of its pool
					  (struct vblk.pools) never handed out */
	struct vblk_req *pending;      /* refused with -EAGAIN, retried first */
	struct virtq_chain chain;      /* scratch for virtq_pop() */
};

struct vblk {
	int fd;
	char *name;		/* image path, or "fd N", for messages */
	bool locked;		/* holds an OFD lock on fd */
	bool is_bdev;
	uint32_t opt_flags;
	uint64_t capacity;	/* 512-byte sectors */
	uint32_t blk_size;	/* logical block size, bytes */
	uint16_t num_queues;
	uint16_t queue_size;
	uint32_t seg_max;
	uint32_t size_max;	/* advertised segment size limit (VBLK_MAX_REQ_BYTES) */
	char serial[VIRTIO_BLK_ID_BYTES]; /* NUL-padded */
	uint64_t host_features;
	/* Written by the transport (vCPU thread), read by I/O threads. */
	uint64_t driver_features;
	bool features_set;
	uint8_t wce;		/* config `writeback`; atomic */
	/* Rate limits (log.h): host I/O errors (one line per burst, then a
	 * "N more I/O errors" summary); queues the guest broke (a reset loop
	 * with a bad ring breaks one every cycle). */
	struct log_limit err_log, proto_log;
	struct virtio_blk_config cfg; /* little-endian image, wce patched */
	size_t req_size;
	/*
	 * Per queue, its state and a pool of queue_size requests of req_size
	 * bytes (queue q's at pools + q * queue_size * req_size).  Each is one
	 * calloc, written nowhere at open: a large calloc maps zero pages
	 * lazily, so a queue costs memory only once it is used (minivmm-blkd
	 * offers 1024 queues; most front ends start a few).
	 */
	struct vblk_queue *queues;
	char *pools;
};

static inline void stat_add(uint64_t *c, uint64_t n)
{
	/* Counters are read by other threads (stats queries); relaxed is
	 * enough, nothing is ordered against them. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* A host I/O error of @req, rate-limited (err_log). */
void vblk_log_io_error(struct vblk *b, const struct vblk_req *req, int err);
/* Every write must be durable when it completes: the driver turned the
 * cache off, or cannot flush (see vblk.c). */
bool vblk_write_through(const struct vblk *b);

#endif
