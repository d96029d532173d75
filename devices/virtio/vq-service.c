/* SPDX-License-Identifier: MIT */
/* Queue service: a device's virtqueues served on I/O threads (vq-service.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "virtio/vq-service.h"

struct vqs_queue {
	struct vqs *s;
	unsigned int index;
	struct virtio_queue *vq; /* the transport's, while started */
	struct iothread *io;
	unsigned int thread; /* io's slot in the device's I/O threads */
	void *priv;
	struct iothread_fd kick;
	/* kick_fd in the ring's file table, from the first attach until
	 * destroy: see queue_attach(). */
	struct iothread_file kick_file;
	struct iothread_hook hook;
	/* Work left that no kick or completion will bring back: served
	 * again at the next round (VQS_RETRY: iothread_defer_next(); or
	 * VQS_YIELD: iothread_yield(), a round that does not sleep) or at
	 * a time (vqs_retry_at()).  One hook, so queued once: the earliest
	 * of them serves it. */
	struct iothread_hook retry;
	struct iothread_poller poller;
	/* An attach or detach posted to the queue's I/O thread: a device's
	 * queues start and stop in parallel (vqs_start()). */
	struct iothread_call call;
	bool posted;
	bool attached;
	/* The driver broke the ring (process() said -EPROTO): not served
	 * until the queue is detached. */
	bool broken;
	/* Detaching with in-flight work left to finish (stop_queue with
	 * cancel false): its batches still interrupt the driver. */
	bool draining;
	bool pushed; /* used entries pushed since the last notify decision */
	bool started; /* attached once (stats readers: relaxed atomic) */
	bool fills;   /* ops->fills(): its kicks are refills, not requests */
	uint16_t fill_mark; /* fills: the used index fill_note() last saw */
	/* Written by the queue's I/O thread, read by stats readers (relaxed). */
	uint64_t kicks, doorbells, interrupts, suppressed;
};

struct vqs {
	struct vqs_ops ops;
	void *dev;
	char name[32];
	struct iothread **iothreads;
	unsigned int nr_iothreads;
	uint32_t poll_us;
	unsigned int nr_queues;
	struct vqs_queue *qs;
	/* Start failures follow the guest's DRIVER_OK, which a guest can
	 * repeat in a reset loop: rate-limited (log.h). */
	struct log_limit start_log;
};

#define INC(x) __atomic_store_n(&(x), (x) + 1, __ATOMIC_RELAXED)

static void queue_interrupt(struct vqs_queue *q)
{
	INC(q->interrupts);
	virtio_queue_notify(q->vq);
}

/*
 * A queue the device fills (a NIC's RX): the entries it used since it
 * last looked -- one round's: a process() call's, or a round's
 * completions (queue_batch_end() ends in queue_process()) -- tell the
 * adaptive I/O-thread policy how deep the traffic is, as a kick's count
 * does for a request queue: two or more at once are a batch.  One at a
 * time says nothing (the reply to a lone request, or each ACK of a
 * stream the guest sends: the request queues' kicks decide), so only
 * batches are noted.  Context: the queue's I/O thread, attached.
 */
static void fill_note(struct vqs_queue *q)
{
	uint16_t now = q->vq->vq.used_idx;
	uint16_t n = (uint16_t)(now - q->fill_mark);

	q->fill_mark = now;
	if (n >= 2)
		iothread_note_wake(q->io, n);
}

/* Context: queue's I/O thread.  Serve what the driver made available. */
static void queue_process(struct vqs_queue *q)
{
	int r;

	if (!q->attached || q->broken)
		return;
	r = q->s->ops.process(q->s->dev, q);
	if (r < 0) {
		/* Only -EPROTO is defined; anything else is a device bug,
		 * but the ring cannot be trusted after it either. */
		char why[64];

		q->broken = true;
		snprintf(why, sizeof(why), "%s: malformed virtqueue", q->s->name);
		virtio_queue_needs_reset(q->vq, why);
		return;
	}
	/* Ready work first: a yield is never later than a retry. */
	if (r & VQS_YIELD)
		iothread_yield(q->io, &q->retry);
	else if (r & VQS_RETRY)
		iothread_defer_next(q->io, &q->retry);
	if (r & VQS_NOTIFY)
		queue_interrupt(q);
	if (q->fills)
		fill_note(q);
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
	struct vqs_queue *q = opaque;
	uint64_t n;

	INC(q->kicks);
	if (read(q->vq->kick_fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		__atomic_store_n(&q->doorbells, q->doorbells + n, __ATOMIC_RELAXED);
	/* How deep the queue is at this wake, for the adaptive I/O-thread
	 * policy: the requests waiting and those in service.  Not the
	 * waiting alone: a thread that serves each kick at once (SCHED_OTHER)
	 * under a deep queue finds one request waiting per kick, as under a
	 * shallow one, and with EVENT_IDX the kick that ends an idle spell
	 * is the first request after it; the ones in service tell them
	 * apart.  (A guest's bogus avail index only steers the thread's
	 * policy.) */
	if (q->attached && !q->broken && !q->fills)
		iothread_note_wake(q->io, virtq_avail_count(&q->vq->vq) +
						  virtq_in_service(&q->vq->vq));
	queue_process(q);
}

static bool queue_poll(void *opaque)
{
	struct vqs_queue *q = opaque;

	/* A broken queue never consumes the chain it choked on, so its avail
	 * count stays non-zero: reporting work would keep the I/O thread
	 * spinning until the reset. */
	if (!q->attached || q->broken || !virtq_avail_count(&q->vq->vq))
		return false;
	queue_process(q);
	return true;
}

/* End of a batch of completions: at most one interrupt for all of them,
 * and only if EVENT_IDX (used_event) or NO_INTERRUPT allows it. */
static void queue_batch_end(void *opaque)
{
	struct vqs_queue *q = opaque;

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
	/* Completions freed resources: serve what was left waiting or
	 * arrived without a kick. */
	queue_process(q);
}

void vqs_pushed(struct vqs_queue *q)
{
	q->pushed = true;
	iothread_defer(q->io, &q->hook);
}

void vqs_kick(struct vqs_queue *q)
{
	/* A queue not served has nothing to serve again (and a device may
	 * kick a sibling queue the driver never enabled). */
	if (q->attached)
		iothread_defer(q->io, &q->hook);
}

void vqs_retry_at(struct vqs_queue *q, uint64_t when_ns)
{
	/* The same hook as VQS_RETRY's and VQS_YIELD's: whichever comes
	 * first serves it (a hook is queued once). */
	if (q->attached)
		iothread_defer_at(q->io, &q->retry, when_ns);
}

bool vqs_active(const struct vqs_queue *q)
{
	return q->attached && !q->broken;
}

bool vqs_may_finish(const struct vqs_queue *q)
{
	return q->vq && !q->broken;
}

static bool queue_idle(void *opaque)
{
	struct vqs_queue *q = opaque;

	return !q->s->ops.idle || q->s->ops.idle(q->s->dev, q);
}

/* Context: the queue's I/O thread (a call posted by post_attach()). */
static int queue_attach(void *opaque)
{
	struct vqs_queue *q = opaque;
	int ret;

	if (q->s->ops.attach && (ret = q->s->ops.attach(q->s->dev, q)))
		return ret;
	/* Registered once, not at every attach: kick_fd stays the same file
	 * across resets (virtio.h), and on kernels before 6.13 a file
	 * unregistered while the thread's polls run stays referenced until
	 * the ring goes (iothread.h): a reset loop would pile them up. */
	if (!q->kick_file.held || q->kick_file.fd != q->vq->kick_fd) {
		iothread_file_put(q->io, &q->kick_file);
		ret = iothread_file_get(q->io, q->vq->kick_fd, &q->kick_file);
		if (ret)
			goto undo;
	}
	q->kick = (struct iothread_fd){ .fd = q->vq->kick_fd,
					.file = &q->kick_file, .fn = queue_kick,
					.opaque = q };
	ret = iothread_watch_fd(q->io, &q->kick);
	if (ret)
		goto undo;
	q->poller = (struct iothread_poller){ .fn = queue_poll, .opaque = q,
					      .poll_us = q->s->poll_us };
	if (q->poller.poll_us)
		iothread_add_poller(q->io, &q->poller);
	q->attached = true;
	q->broken = false;
	q->fill_mark = q->vq->vq.used_idx;
	__atomic_store_n(&q->started, true, __ATOMIC_RELAXED);
	q->pushed = false;
	queue_process(q); /* buffers made available before DRIVER_OK */
	return 0;
undo:
	/* The device set up its side: take it down again (nothing was
	 * served, so nothing is in flight). */
	if (q->s->ops.quiesce)
		q->s->ops.quiesce(q->s->dev, q, true);
	if (q->s->ops.detached)
		q->s->ops.detached(q->s->dev, q);
	return ret;
}

/*
 * Context: the queue's I/O thread.  Quiesce and drain: after this the
 * queue touches neither guest memory nor the device's host resources.
 * Bounded: unless q->draining, the device cancels what is in flight first
 * (a reset or a stop must not wait on a slow or stuck host resource while
 * the transport lock is held).
 */
static int queue_detach(void *opaque)
{
	struct vqs_queue *q = opaque;

	q->attached = false;
	if (q->s->ops.quiesce)
		q->s->ops.quiesce(q->s->dev, q, !q->draining);
	iothread_unwatch_fd(q->io, &q->kick);
	if (q->poller.poll_us)
		iothread_remove_poller(q->io, &q->poller);
	/* In-flight work completes to the used ring (the guest may still see
	 * it, before the reset finishes); nothing new is popped. */
	iothread_run_until(q->io, queue_idle, q);
	/* Not attached, so nothing queues these again: the device may be
	 * freed once this returns (a cancellation may have queued q->hook
	 * without the loop running another round). */
	iothread_undefer(q->io, &q->retry);
	iothread_undefer(q->io, &q->hook);
	q->pushed = false;
	if (q->s->ops.detached)
		q->s->ops.detached(q->s->dev, q);
	q->draining = false;
	q->broken = false;
	return 0;
}

/* Context: the queue's I/O thread: stop_queue's detach, which also lets go
 * of the kick eventfd (the transport closes it next). */
static int queue_detach_release(void *opaque)
{
	struct vqs_queue *q = opaque;

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
void vqs_stop(struct vqs *s)
{
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		struct vqs_queue *q = &s->qs[i];

		q->posted = q->attached;
		if (q->posted)
			iothread_call_post(q->io, &q->call, queue_detach, q);
	}
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		struct vqs_queue *q = &s->qs[i];

		if (q->posted)
			iothread_call_wait(q->io, &q->call);
		q->posted = false;
		q->vq = NULL;
	}
}

/* Post queue @vq->index's attach to its I/O thread.  Context: transport. */
static void post_attach(struct vqs *s, struct virtio_queue *vq)
{
	struct vqs_queue *q = &s->qs[vq->index];

	q->vq = vq;
	q->posted = true;
	iothread_call_post(q->io, &q->call, queue_attach, q);
}

/* Wait for a posted attach; log a failure (guest-triggerable: a reset loop
 * on a bad ring). */
static int wait_attach(struct vqs *s, struct vqs_queue *q)
{
	int ret = iothread_call_wait(q->io, &q->call);

	q->posted = false;
	if (ret)
		log_limited(&s->start_log, VMM_LOG_ERROR, s->name,
			    "attaching queue %u to I/O thread %u: %s", q->index,
			    iothread_index(q->io), strerror(-ret));
	return ret;
}

/*
 * Attach every enabled queue, all posted before any is waited for (see
 * vq-service.h).  Unlike one attach after another, the queues after a
 * failing one have attached too by then: what the driver made available
 * before DRIVER_OK may have been popped, and is completed (or cancelled)
 * by the stop, before the transport sets NEEDS_RESET.
 */
int vqs_start(struct vqs *s, struct virtio_queue *queues, unsigned int nr)
{
	int ret = 0;

	for (unsigned int i = 0; i < nr; i++)
		if (queues[i].enabled && queues[i].index < s->nr_queues &&
		    !s->qs[queues[i].index].attached)
			post_attach(s, &queues[i]);
	/* Every queue posted is waited for: a posted call must never be
	 * left unwaited. */
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		struct vqs_queue *q = &s->qs[i];
		int r;

		if (!q->posted)
			continue;
		r = wait_attach(s, q);
		if (r && !ret)
			ret = r;
	}
	if (ret)
		vqs_stop(s);
	return ret;
}

int vqs_start_queue(struct vqs *s, struct virtio_queue *vq)
{
	if (vq->index >= s->nr_queues || s->qs[vq->index].attached)
		return -EINVAL;
	post_attach(s, vq);
	return wait_attach(s, &s->qs[vq->index]);
}

void vqs_stop_queue(struct vqs *s, unsigned int index, bool cancel)
{
	struct vqs_queue *q;

	if (index >= s->nr_queues)
		return;
	q = &s->qs[index];
	if (q->attached) {
		q->draining = !cancel;
		iothread_call_sync(q->io, queue_detach_release, q);
	}
	q->vq = NULL;
}

int vqs_create(const struct vqs_params *p, struct vqs **out)
{
	struct vqs *s;

	if (!p->ops || !p->ops->process || !p->nr_queues || !p->iothreads ||
	    !p->nr_iothreads)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->qs = calloc(p->nr_queues, sizeof(*s->qs));
	if (!s->qs) {
		free(s);
		return -ENOMEM;
	}
	s->ops = *p->ops;
	s->dev = p->dev;
	snprintf(s->name, sizeof(s->name), "%s", p->name ? p->name : "virtio");
	s->iothreads = p->iothreads;
	s->nr_iothreads = p->nr_iothreads;
	s->poll_us = p->poll_us;
	s->nr_queues = p->nr_queues;
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		unsigned int t = s->ops.iothread_of ?
			s->ops.iothread_of(s->dev, i, s->nr_iothreads) :
			i % s->nr_iothreads;

		s->qs[i].s = s;
		s->qs[i].index = i;
		/* Once, here: a hook is never queued between a detach and the
		 * next attach (queue_detach() takes both off). */
		s->qs[i].hook = (struct iothread_hook){ .fn = queue_batch_end,
							.opaque = &s->qs[i] };
		s->qs[i].retry = (struct iothread_hook){ .fn = queue_retry,
							 .opaque = &s->qs[i] };
		s->qs[i].thread = t % s->nr_iothreads;
		s->qs[i].io = s->iothreads[s->qs[i].thread];
		s->qs[i].fills = s->ops.fills && s->ops.fills(s->dev, i);
	}
	log_limit_init(&s->start_log, "queue start failures");
	*out = s;
	return 0;
}

void vqs_destroy(struct vqs *s)
{
	if (!s)
		return;
	vqs_stop(s);
	for (unsigned int i = 0; i < s->nr_queues; i++)
		if (s->qs[i].kick_file.held)
			iothread_file_put(s->qs[i].io, &s->qs[i].kick_file);
	log_limit_destroy(&s->start_log, "until the device was removed");
	free(s->qs);
	free(s);
}

int vqs_queue_stats(struct vqs *s, unsigned int index,
		    struct vqs_queue_stats *st)
{
	struct vqs_queue *q;

	if (index >= s->nr_queues)
		return -ENOENT;
	q = &s->qs[index];
	memset(st, 0, sizeof(*st));
	st->kicks = __atomic_load_n(&q->kicks, __ATOMIC_RELAXED);
	st->doorbells = __atomic_load_n(&q->doorbells, __ATOMIC_RELAXED);
	st->interrupts = __atomic_load_n(&q->interrupts, __ATOMIC_RELAXED);
	st->suppressed = __atomic_load_n(&q->suppressed, __ATOMIC_RELAXED);
	st->iothread = q->thread;
	st->attached = __atomic_load_n(&q->attached, __ATOMIC_RELAXED);
	st->started = __atomic_load_n(&q->started, __ATOMIC_RELAXED);
	return 0;
}

struct vqs_queue *vqs_queue(struct vqs *s, unsigned int index)
{
	return index < s->nr_queues ? &s->qs[index] : NULL;
}

unsigned int vqs_index(const struct vqs_queue *q)
{
	return q->index;
}

struct virtq *vqs_virtq(struct vqs_queue *q)
{
	return &q->vq->vq;
}

struct virtio_queue *vqs_virtio_queue(struct vqs_queue *q)
{
	return q->vq;
}

struct iothread *vqs_iothread(const struct vqs_queue *q)
{
	return q->io;
}

void *vqs_queue_priv(const struct vqs_queue *q)
{
	return q->priv;
}

void vqs_set_queue_priv(struct vqs_queue *q, void *priv)
{
	q->priv = priv;
}
