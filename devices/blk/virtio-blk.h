/* SPDX-License-Identifier: MIT */
/*
 * The virtio-blk device (struct virtio_device_ops): binds a disk's
 * virtio-blk model (vblk.h) to a transport's queues, served on the I/O
 * threads by the queue service (virtio/vq-service.h: queue i on I/O thread
 * i mod T, so with one queue and one thread per vCPU a queue, its MSI-X
 * vector and its thread line up with one vCPU), with an I/O engine per
 * queue (io_uring unless told otherwise).
 *
 * Per queue, on its I/O thread: a kick or a busy-poll hit pops and submits
 * every available request (vblk_process_queue); the engine's completions
 * push used entries; once per batch of completions the service asks
 * virtq_should_notify() (EVENT_IDX) and interrupts the guest at most once.
 */
#ifndef VMM_DEVICES_BLK_VIRTIO_BLK_H
#define VMM_DEVICES_BLK_VIRTIO_BLK_H

#include <stdint.h>

#include "blk/vblk.h"
#include "iothread.h"
#include "virtio/virtio.h"
#include "virtio/vq-service.h"

struct virtio_blk;

struct ratelimit_cfg;
struct virtio_blk_params {
	struct vblk *blk;	     /* opened disk; owned by the device after create */
	struct iothread **iothreads; /* borrowed; must outlive the device */
	unsigned int nr_iothreads;
	uint32_t poll_us;	     /* busy-poll window per queue (0 = off) */
	bool sync_engine;	     /* synchronous pread/pwrite engine (tests) */
	bool null_engine;	     /* no I/O at all (blk-null.h, benchmarks) */
	/* Initial rate limits (ratelimit.h), or NULL: unlimited.  Valid
	 * (ratelimit_check()). */
	const struct ratelimit_cfg *rate;
};

struct virtio_blk_queue_stats {
	struct vblk_queue_stats blk;	/* requests */
	struct vqs_queue_stats svc;	/* kicks, doorbells, interrupts, thread */
};

int virtio_blk_create(const struct virtio_blk_params *p, struct virtio_blk **out)
	__must_check;
/* Stops the queues if running and closes the disk. */
void virtio_blk_destroy(struct virtio_blk *d);
/* The ops table to hand to a transport, with @d as its device pointer. */
const struct virtio_device_ops *virtio_blk_ops(void);
/* @d as a virtio device (virtio.h): its ops, queues and queue size. */
void virtio_blk_virtio(struct virtio_blk *d, struct virtio_device *out);
int virtio_blk_queue_stats(struct virtio_blk *d, unsigned int q,
			 struct virtio_blk_queue_stats *st);
/* The disk's rate limiter, shared by its queues: change it
 * (ratelimit_set()) and read its statistics from any thread. */
struct ratelimit *virtio_blk_ratelimit(struct virtio_blk *d);

#endif
