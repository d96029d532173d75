/* SPDX-License-Identifier: MIT */
/* virtio-blk device: queues served on I/O threads (see virtio-blk.h). */
#include <errno.h>
#include <linux/virtio_ids.h>
#include <stdlib.h>
#include <string.h>

#include "blk/blk-null.h"
#include "blk/blk-uring.h"
#include "blk/virtio-blk.h"
#include "ratelimit.h"
#include "virtio/vq-service.h"

/* What the disk keeps per queue beside the queue service's own state. */
struct virtio_blk_queue {
	struct virtio_blk *d;
	struct blk_engine *eng; /* created on the queue's I/O thread */
};

struct virtio_blk {
	struct vblk *blk;
	struct vqs *svc;
	bool sync_engine;
	struct blk_engine *sync; /* when sync_engine */
	unsigned int nr_queues;
	struct virtio_blk_queue *qs;
	/* All queues' rate limit (vblk_set_ratelimit()): one lock-free
	 * limiter shared across the I/O threads, so the disk's limit holds
	 * whichever queues the guest uses, served FIFO across them. */
	struct ratelimit rl;
};

/* Context: queue's I/O thread (the queue service's process op).  Pop and
 * submit what the driver made available. */
static int blk_process(void *dev, struct vqs_queue *sq)
{
	struct virtio_blk *d = dev;
	unsigned int i = vqs_index(sq);
	bool notify = false;
	uint64_t until;
	int r;

	r = vblk_process_queue(d->blk, i, vqs_virtq(sq), d->qs[i].eng, &notify);
	if (r == -EPROTO)
		return r;
	until = vblk_queue_throttled(d->blk, i);
	if (until) {
		/* Waiting for tokens: wake at the booked time, or earlier to
		 * see a changed limit. */
		uint64_t recheck = ratelimit_now() + RATELIMIT_RECHECK_NS;

		vqs_retry_at(sq, until < recheck ? until : recheck);
		return notify ? VQS_NOTIFY : 0;
	}
	return (notify ? VQS_NOTIFY : 0) |
	       (vblk_queue_parked(d->blk, i) ? VQS_RETRY : 0);
}

/* Context: I/O thread.  The engine finished @req. */
static void queue_req_done(void *opaque, struct vblk_req *req, int64_t res,
			   bool completed)
{
	struct vqs_queue *sq = opaque;

	if (completed)
		vblk_queue_push(req, vqs_virtq(sq));
	else
		vblk_queue_complete(req, vqs_virtq(sq), res);
	vqs_pushed(sq);
}

/* Context: the queue's I/O thread: the engine is made there, once, and
 * resumed at every attach. */
static int blk_attach(void *dev, struct vqs_queue *sq)
{
	struct virtio_blk *d = dev;
	struct virtio_blk_queue *q = &d->qs[vqs_index(sq)];
	int ret;

	if (!q->eng) {
		if (d->sync_engine)
			q->eng = d->sync;
		else if ((ret = blk_uring_engine_create(vqs_iothread(sq),
							vblk_queue_size(d->blk),
							queue_req_done, sq, &q->eng)))
			return ret;
	}
	if (!d->sync_engine)
		blk_uring_engine_resume(q->eng);
	return 0;
}

/*
 * Context: the queue's I/O thread.  What is in flight is cancelled first
 * unless the stop lets it finish (a reset or a stop must not wait for up
 * to queue-size requests of VBLK_MAX_REQ_BYTES each on a slow or stuck
 * backend, while the transport lock is held and, for a stop, SIGTERM
 * waits).  Only what the kernel is already running finishes on its own;
 * it completes to the used ring, cancelled ones with VIRTIO_BLK_S_IOERR.
 */
static void blk_quiesce(void *dev, struct vqs_queue *sq, bool cancel)
{
	struct virtio_blk *d = dev;

	if (!d->sync_engine && cancel)
		blk_uring_engine_cancel(d->qs[vqs_index(sq)].eng);
}

static bool blk_idle(void *dev, struct vqs_queue *sq)
{
	struct virtio_blk *d = dev;

	return d->sync_engine || blk_uring_engine_idle(d->qs[vqs_index(sq)].eng);
}

/*
 * Context: the queue's I/O thread, once it is idle.  A chain popped but
 * parked (the engine had no room for it) was never started: it goes back
 * to the avail ring, whatever the stop.  The ring may be kept (bus
 * mastering off and on again, a vhost-user ring stopped and started):
 * dropped, it would never be completed.  It is the last one popped
 * (popping stops at it).
 */
static void blk_detached(void *dev, struct vqs_queue *sq)
{
	struct virtio_blk *d = dev;
	unsigned int i = vqs_index(sq);

	if (vblk_queue_parked(d->blk, i))
		virtq_unpop(vqs_virtq(sq));
	vblk_queue_reset(d->blk, i);
}

static const struct vqs_ops virtio_blk_service = {
	.process = blk_process,
	.attach = blk_attach,
	.quiesce = blk_quiesce,
	.idle = blk_idle,
	.detached = blk_detached,
};

static int virtio_blk_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	return vqs_start(((struct virtio_blk *)dev)->svc, queues, nr);
}

static void virtio_blk_stop(void *dev)
{
	vqs_stop(((struct virtio_blk *)dev)->svc);
}

static int virtio_blk_start_queue(void *dev, struct virtio_queue *vq)
{
	return vqs_start_queue(((struct virtio_blk *)dev)->svc, vq);
}

static void virtio_blk_stop_queue(void *dev, unsigned int index, bool cancel)
{
	vqs_stop_queue(((struct virtio_blk *)dev)->svc, index, cancel);
}

static uint64_t virtio_blk_features(void *dev)
{
	return vblk_device_features(((struct virtio_blk *)dev)->blk);
}

static int virtio_blk_set_features(void *dev, uint64_t f)
{
	return vblk_set_driver_features(((struct virtio_blk *)dev)->blk, f);
}

static void virtio_blk_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	if (vblk_config_read(((struct virtio_blk *)dev)->blk, off, buf, len))
		memset(buf, 0, len);
}

static void virtio_blk_config_write(void *dev, uint32_t off, const void *buf,
				  uint32_t len)
{
	/* Writes to read-only fields are ignored, as the spec allows. */
	(void)vblk_config_write(((struct virtio_blk *)dev)->blk, off, buf, len);
}

static const struct virtio_device_ops virtio_blk_ops_table = {
	.device_id = VIRTIO_ID_BLOCK,
	.config_size = sizeof(struct virtio_blk_config),
	.features = virtio_blk_features,
	.set_features = virtio_blk_set_features,
	.config_read = virtio_blk_config_read,
	.config_write = virtio_blk_config_write,
	.start = virtio_blk_start,
	.stop = virtio_blk_stop,
	.start_queue = virtio_blk_start_queue,
	.stop_queue = virtio_blk_stop_queue,
};

const struct virtio_device_ops *virtio_blk_ops(void)
{
	return &virtio_blk_ops_table;
}

void virtio_blk_virtio(struct virtio_blk *d, struct virtio_device *out)
{
	*out = (struct virtio_device){
		.ops = &virtio_blk_ops_table,
		.dev = d,
		.num_queues = d->nr_queues,
		.queue_size = vblk_queue_size(d->blk),
	};
}

int virtio_blk_create(const struct virtio_blk_params *p, struct virtio_blk **out)
{
	struct virtio_blk *d;
	int ret;

	if (!p->blk || !p->nr_iothreads || !p->iothreads)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->nr_queues = vblk_num_queues(p->blk);
	d->qs = calloc(d->nr_queues, sizeof(*d->qs));
	if (!d->qs) {
		free(d);
		return -ENOMEM;
	}
	if (p->null_engine)
		ret = blk_null_engine_create(&d->sync);
	else
		ret = p->sync_engine ? blk_sync_engine_create(&d->sync) : 0;
	if (!ret)
		ret = vqs_create(&(struct vqs_params){
					 .ops = &virtio_blk_service, .dev = d,
					 .name = "virtio-blk",
					 .nr_queues = d->nr_queues,
					 .iothreads = p->iothreads,
					 .nr_iothreads = p->nr_iothreads,
					 .poll_us = p->poll_us },
				 &d->svc);
	if (ret) {
		blk_engine_destroy(d->sync);
		free(d->qs);
		free(d);
		return ret;
	}
	for (unsigned int i = 0; i < d->nr_queues; i++)
		d->qs[i].d = d;
	d->blk = p->blk;
	ratelimit_init(&d->rl);
	if (p->rate)
		ratelimit_set(&d->rl, p->rate);
	vblk_set_ratelimit(d->blk, &d->rl);
	d->sync_engine = p->sync_engine || p->null_engine; /* both synchronous */
	*out = d;
	return 0;
}

void virtio_blk_destroy(struct virtio_blk *d)
{
	if (!d)
		return;
	/* Stops the queues first: no engine is in use after this. */
	vqs_destroy(d->svc);
	for (unsigned int i = 0; i < d->nr_queues; i++) {
		struct virtio_blk_queue *q = &d->qs[i];

		if (q->eng && q->eng != d->sync)
			blk_engine_destroy(q->eng);
	}
	blk_engine_destroy(d->sync);
	vblk_close(d->blk);
	free(d->qs);
	free(d);
}

int virtio_blk_queue_stats(struct virtio_blk *d, unsigned int q,
			 struct virtio_blk_queue_stats *st)
{
	int ret;

	if (q >= d->nr_queues)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	ret = vblk_queue_get_stats(d->blk, q, &st->blk);
	return ret ? ret : vqs_queue_stats(d->svc, q, &st->svc);
}

struct ratelimit *virtio_blk_ratelimit(struct virtio_blk *d)
{
	return &d->rl;
}
