/* SPDX-License-Identifier: MIT */
/* virtio-blk device: queues served on I/O threads (see virtio-blk.h). */
#include <errno.h>
#include <linux/virtio_ids.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk/blk-null.h"
#include "blk/blk-uring.h"
#include "blk/virtio-blk.h"
#include "log.h"
#include "util/barrier.h"

struct virtio_blk_queue {
	struct virtio_blk *d;
	unsigned int index;
	struct virtio_queue *vq; /* the transport's, while started */
	struct iothread *io;
	struct blk_engine *eng;
	struct iothread_fd kick;
	/* kick_fd in the ring's file table, from the first attach until
	 * destroy: see queue_attach(). */
	struct iothread_file kick_file;
	struct iothread_hook hook;
	/* A request the engine refused (-EAGAIN: no room in the ring) is
	 * retried at the next round: no completion of this queue may come
	 * to call queue_process() again. */
	struct iothread_hook retry;
	struct iothread_poller poller;
	/* An attach or detach posted to the queue's I/O thread: a device's
	 * queues start and stop in parallel (virtio_blk_start()). */
	struct iothread_call call;
	bool posted;
	bool attached;
	/* Detaching with in-flight requests left to finish (stop_queue()
	 * with cancel false): their batches still interrupt the driver. */
	bool draining;
	bool pushed; /* used entries pushed since the last notify decision */
	bool started; /* attached once (stats readers: relaxed atomic) */
	/* Written by the queue's I/O thread, read by stats readers (relaxed). */
	uint64_t kicks, doorbells, interrupts, suppressed;
};

struct virtio_blk {
	struct vblk *blk;
	struct iothread **iothreads;
	unsigned int nr_iothreads;
	uint32_t poll_us;
	bool sync_engine;
	struct blk_engine *sync; /* when sync_engine */
	unsigned int nr_queues;
	struct virtio_blk_queue *qs;
	/* Start failures follow the guest's DRIVER_OK, which a guest can
	 * repeat in a reset loop: rate-limited (log.h). */
	struct log_limit start_log;
};

#define INC(x) __atomic_store_n(&(x), (x) + 1, __ATOMIC_RELAXED)

static void queue_interrupt(struct virtio_blk_queue *q)
{
	INC(q->interrupts);
	virtio_queue_notify(q->vq);
}

/* Context: queue's I/O thread.  Pop and submit what the driver made
 * available. */
static void queue_process(struct virtio_blk_queue *q)
{
	bool notify = false;
	int r;

	if (!q->attached)
		return;
	r = vblk_process_queue(q->d->blk, q->index, &q->vq->vq, q->eng, &notify);
	if (r == -EPROTO) {
		virtio_queue_needs_reset(q->vq, "virtio-blk: malformed virtqueue");
		return;
	}
	if (vblk_queue_parked(q->d->blk, q->index))
		iothread_defer_next(q->io, &q->retry);
	if (notify)
		queue_interrupt(q);
}

static void queue_retry(void *opaque)
{
	queue_process(opaque);
}

/*
 * The kick eventfd became readable: a wake-up ("kicks").  Its counter holds
 * the doorbells rung since the last read -- every notify write KVM turned
 * into an eventfd signal, plus those the transport forwarded -- however
 * many wake-ups they took: read (and so reset) it to count them.  Read
 * before the queue is served: a doorbell after the read wakes the poll
 * again, one before it is seen by this round.  (The same file lives across
 * resets, so a doorbell left unread by a reset is counted at the next.)
 */
static void queue_kick(void *opaque)
{
	struct virtio_blk_queue *q = opaque;
	uint64_t n;

	INC(q->kicks);
	if (read(q->vq->kick_fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		__atomic_store_n(&q->doorbells, q->doorbells + n, __ATOMIC_RELAXED);
	queue_process(q);
}

static bool queue_poll(void *opaque)
{
	struct virtio_blk_queue *q = opaque;

	/* A broken queue (NEEDS_RESET) never consumes the chain it choked
	 * on, so its avail count stays non-zero: reporting work would keep
	 * the I/O thread spinning until the reset. */
	if (!q->attached || vblk_queue_broken(q->d->blk, q->index) ||
	    !virtq_avail_count(&q->vq->vq))
		return false;
	queue_process(q);
	return true;
}

/* End of a batch of completions: at most one interrupt for all of them,
 * and only if EVENT_IDX (used_event) or NO_INTERRUPT allows it. */
static void queue_batch_end(void *opaque)
{
	struct virtio_blk_queue *q = opaque;

	if (!q->attached) {
		/* Detached for a reset: the ring may be gone, the guest is not
		 * waiting for an interrupt any more.  Draining for a ring stop
		 * (vhost-user): the driver still waits for these. */
		if (q->draining && q->pushed && virtq_should_notify(&q->vq->vq))
			queue_interrupt(q);
		q->pushed = false;
		return;
	}
	if (q->pushed) {
		q->pushed = false;
		if (virtq_should_notify(&q->vq->vq))
			queue_interrupt(q);
		else
			INC(q->suppressed);
	}
	/* Completions freed requests: serve what was left waiting (ring
	 * or request pool full) or arrived without a kick. */
	queue_process(q);
}

/* Context: I/O thread.  The engine finished @req. */
static void queue_req_done(void *opaque, struct vblk_req *req, int64_t res,
			   bool completed)
{
	struct virtio_blk_queue *q = opaque;

	if (completed)
		vblk_queue_push(req, &q->vq->vq);
	else
		vblk_queue_complete(req, &q->vq->vq, res);
	q->pushed = true;
	iothread_defer(q->io, &q->hook);
}

static bool queue_drained(void *opaque)
{
	struct virtio_blk_queue *q = opaque;

	return q->d->sync_engine || blk_uring_engine_idle(q->eng);
}

/* Context: the queue's I/O thread (a call posted by virtio_blk_post_attach()). */
static int queue_attach(void *opaque)
{
	struct virtio_blk_queue *q = opaque;
	int ret;

	if (!q->eng) {
		if (q->d->sync_engine)
			q->eng = q->d->sync;
		else if ((ret = blk_uring_engine_create(q->io,
							vblk_queue_size(q->d->blk),
							queue_req_done, q, &q->eng)))
			return ret;
	}
	/* Registered once, not at every attach: kick_fd stays the same file
	 * across resets (virtio-pci.h), and on kernels before 6.13 a file
	 * unregistered while the thread's polls run stays referenced until
	 * the ring goes (iothread.h): a reset loop would pile them up. */
	if (!q->kick_file.held || q->kick_file.fd != q->vq->kick_fd) {
		iothread_file_put(q->io, &q->kick_file);
		ret = iothread_file_get(q->io, q->vq->kick_fd, &q->kick_file);
		if (ret)
			return ret;
	}
	q->kick = (struct iothread_fd){ .fd = q->vq->kick_fd,
					.file = &q->kick_file, .fn = queue_kick,
					.opaque = q };
	ret = iothread_watch_fd(q->io, &q->kick);
	if (ret)
		return ret;
	if (!q->d->sync_engine)
		blk_uring_engine_resume(q->eng);
	q->hook = (struct iothread_hook){ .fn = queue_batch_end, .opaque = q };
	q->retry = (struct iothread_hook){ .fn = queue_retry, .opaque = q };
	q->poller = (struct iothread_poller){ .fn = queue_poll, .opaque = q,
					      .poll_us = q->d->poll_us };
	if (q->poller.poll_us)
		iothread_add_poller(q->io, &q->poller);
	q->attached = true;
	__atomic_store_n(&q->started, true, __ATOMIC_RELAXED);
	q->pushed = false;
	queue_process(q); /* buffers made available before DRIVER_OK */
	return 0;
}

/*
 * Context: the queue's I/O thread.  Quiesce and drain: after this the
 * queue touches neither guest memory nor the image.
 *
 * Bounded: what is in flight is cancelled first (a reset or a stop must
 * not wait for up to queue-size requests of VBLK_MAX_REQ_BYTES each on a
 * slow or stuck backend, while the transport lock is held and, for a
 * stop, SIGTERM waits).  Only what the kernel is already running finishes
 * on its own.  Except with q->draining (stop_queue() without cancel): the
 * requests finish normally.  Either way a chain popped but parked (never
 * started) goes back to the avail ring.
 */
static int queue_detach(void *opaque)
{
	struct virtio_blk_queue *q = opaque;

	q->attached = false;
	if (!q->d->sync_engine && !q->draining)
		blk_uring_engine_cancel(q->eng);
	iothread_unwatch_fd(q->io, &q->kick);
	if (q->poller.poll_us)
		iothread_remove_poller(q->io, &q->poller);
	/* In-flight requests complete to the used ring (the guest may still
	 * see them, before the reset finishes): done, or cancelled with
	 * VIRTIO_BLK_S_IOERR; nothing new is popped. */
	iothread_run_until(q->io, queue_drained, q);
	/* Not attached, so nothing queues these again: the device may be
	 * freed once this returns (a cancellation may have queued q->hook
	 * without the loop running another round). */
	iothread_undefer(q->io, &q->retry);
	iothread_undefer(q->io, &q->hook);
	q->pushed = false;
	/*
	 * A chain popped but parked (the engine had no room for it) was never
	 * started: it goes back to the avail ring, whatever the stop.  The
	 * ring may be kept (bus mastering off and on again, a vhost-user ring
	 * stopped and started): dropped, it would never be completed.  It is
	 * the last one popped (popping stops at it).
	 */
	if (vblk_queue_parked(q->d->blk, q->index))
		virtq_unpop(&q->vq->vq);
	q->draining = false;
	vblk_queue_reset(q->d->blk, q->index);
	return 0;
}

/* Context: the queue's I/O thread: stop_queue()'s detach, which also lets
 * go of the kick eventfd (the transport closes it next). */
static int queue_detach_release(void *opaque)
{
	struct virtio_blk_queue *q = opaque;

	queue_detach(q);
	iothread_file_put(q->io, &q->kick_file);
	return 0;
}

/*
 * Stop every attached queue: the detaches are posted to their I/O threads
 * first and waited for after, so the queues drain in parallel and the
 * caller (a guest's reset, holding its vCPU; or VM teardown) waits about
 * as long as the slowest queue, not their sum.
 */
static void virtio_blk_stop(void *dev)
{
	struct virtio_blk *d = dev;

	for (unsigned int i = 0; i < d->nr_queues; i++) {
		struct virtio_blk_queue *q = &d->qs[i];

		q->posted = q->attached;
		if (q->posted)
			iothread_call_post(q->io, &q->call, queue_detach, q);
	}
	for (unsigned int i = 0; i < d->nr_queues; i++) {
		struct virtio_blk_queue *q = &d->qs[i];

		if (q->posted)
			iothread_call_wait(q->io, &q->call);
		q->posted = false;
		q->vq = NULL;
	}
}

/* Post queue @vq->index's attach to its I/O thread.  Context: transport. */
static void virtio_blk_post_attach(struct virtio_blk *d, struct virtio_queue *vq)
{
	struct virtio_blk_queue *q = &d->qs[vq->index];

	q->vq = vq;
	q->io = d->iothreads[vq->index % d->nr_iothreads];
	q->posted = true;
	iothread_call_post(q->io, &q->call, queue_attach, q);
}

/* Wait for a posted attach; log a failure (guest-triggerable: a reset loop
 * on a bad ring). */
static int virtio_blk_wait_attach(struct virtio_blk *d, struct virtio_blk_queue *q)
{
	int ret = iothread_call_wait(q->io, &q->call);

	q->posted = false;
	if (ret)
		log_limited(&d->start_log, VMM_LOG_ERROR, "virtio-blk",
			    "attaching queue %u to I/O thread %u: %s", q->index,
			    iothread_index(q->io), strerror(-ret));
	return ret;
}

/*
 * Attach every enabled queue.  Each attach runs on its queue's I/O thread;
 * they are all posted before any is waited for, so a guest's DRIVER_OK
 * stalls its vCPU for one wait, not one round trip per queue (on a host
 * with the cores to run them at once; bench/start_bench.sh).  On failure
 * every queue that did attach is stopped again and the error of the
 * lowest-numbered failing queue is returned.  Unlike one attach after
 * another, the queues after a failing one have attached too by then: what
 * the driver made available before DRIVER_OK may have been popped, and is
 * completed (or cancelled, VIRTIO_BLK_S_IOERR) by the stop, before the
 * transport sets NEEDS_RESET.
 */
static int virtio_blk_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	struct virtio_blk *d = dev;
	int ret = 0;

	for (unsigned int i = 0; i < nr && i < d->nr_queues; i++)
		if (queues[i].enabled)
			virtio_blk_post_attach(d, &queues[i]);
	/* Every queue posted is waited for (the transport's queues[i] is
	 * queue i, but a posted call must never be left unwaited). */
	for (unsigned int i = 0; i < d->nr_queues; i++) {
		struct virtio_blk_queue *q = &d->qs[i];
		int r;

		if (!q->posted)
			continue;
		r = virtio_blk_wait_attach(d, q);
		if (r && !ret)
			ret = r;
	}
	if (ret)
		virtio_blk_stop(d);
	return ret;
}

static int virtio_blk_start_queue(void *dev, struct virtio_queue *vq)
{
	struct virtio_blk *d = dev;

	if (vq->index >= d->nr_queues || d->qs[vq->index].attached)
		return -EINVAL;
	virtio_blk_post_attach(d, vq);
	return virtio_blk_wait_attach(d, &d->qs[vq->index]);
}

static void virtio_blk_stop_queue(void *dev, unsigned int index, bool cancel)
{
	struct virtio_blk *d = dev;
	struct virtio_blk_queue *q;

	if (index >= d->nr_queues)
		return;
	q = &d->qs[index];
	if (q->attached) {
		q->draining = !cancel;
		iothread_call_sync(q->io, queue_detach_release, q);
	}
	q->vq = NULL;
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
	if (ret) {
		free(d->qs);
		free(d);
		return ret;
	}
	for (unsigned int i = 0; i < d->nr_queues; i++) {
		d->qs[i].d = d;
		d->qs[i].index = i;
	}
	log_limit_init(&d->start_log, "queue start failures");
	d->blk = p->blk;
	d->iothreads = p->iothreads;
	d->nr_iothreads = p->nr_iothreads;
	d->poll_us = p->poll_us;
	d->sync_engine = p->sync_engine || p->null_engine; /* both synchronous */
	*out = d;
	return 0;
}

void virtio_blk_destroy(struct virtio_blk *d)
{
	if (!d)
		return;
	virtio_blk_stop(d);
	for (unsigned int i = 0; i < d->nr_queues; i++) {
		struct virtio_blk_queue *q = &d->qs[i];

		if (q->eng && q->eng != d->sync)
			blk_engine_destroy(q->eng);
		if (q->kick_file.held)
			iothread_file_put(q->io, &q->kick_file);
	}
	blk_engine_destroy(d->sync);
	vblk_close(d->blk);
	log_limit_destroy(&d->start_log, "until the disk was removed");
	free(d->qs);
	free(d);
}

int virtio_blk_queue_stats(struct virtio_blk *d, unsigned int q,
			 struct virtio_blk_queue_stats *st)
{
	struct virtio_blk_queue *dq;
	int ret;

	if (q >= d->nr_queues)
		return -ENOENT;
	dq = &d->qs[q];
	memset(st, 0, sizeof(*st));
	ret = vblk_queue_get_stats(d->blk, q, &st->blk);
	if (ret)
		return ret;
	st->kicks = __atomic_load_n(&dq->kicks, __ATOMIC_RELAXED);
	st->doorbells = __atomic_load_n(&dq->doorbells, __ATOMIC_RELAXED);
	st->interrupts = __atomic_load_n(&dq->interrupts, __ATOMIC_RELAXED);
	st->suppressed = __atomic_load_n(&dq->suppressed, __ATOMIC_RELAXED);
	st->iothread = (uint32_t)(q % d->nr_iothreads);
	st->attached = __atomic_load_n(&dq->attached, __ATOMIC_RELAXED);
	st->started = __atomic_load_n(&dq->started, __ATOMIC_RELAXED);
	return 0;
}
