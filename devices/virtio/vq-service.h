/* SPDX-License-Identifier: MIT */
/*
 * Queue service: a virtio device's queues served on the machine's I/O
 * threads, for any device type.  A device declares its queues and a few
 * callbacks (struct vqs_ops) at create time and forwards its transport's
 * start/stop ops here; the service does the rest, the same for every
 * device:
 *
 *  - queue i is served by I/O thread iothread_of(i) (default i mod T: with
 *    one queue and one thread per vCPU, a queue, its MSI-X vector and its
 *    thread line up with one vCPU);
 *  - attach and detach run on the queue's own I/O thread, posted to all the
 *    device's threads first and waited for after, so a guest's DRIVER_OK or
 *    reset stalls its vCPU for about one round trip, not one per queue;
 *  - a kick (the queue's ioeventfd) or a busy-poll hit calls ops->process();
 *    the eventfd's counter is read to count doorbells;
 *  - once per batch of completions (vqs_pushed()) the service asks
 *    virtq_should_notify() (EVENT_IDX, NO_INTERRUPT) and interrupts the
 *    driver at most once;
 *  - a call that used its budget with more ready (VQS_YIELD) is served
 *    again at the next round, after the thread's other queues, without
 *    sleeping; one that waits for a resource (VQS_RETRY) at the next
 *    round, which may sleep;
 *  - a malformed ring (process() returns -EPROTO) sets NEEDS_RESET through
 *    the transport; the queue is not served again until it is reset;
 *  - per-queue counters: kicks, doorbells, interrupts, suppressed.
 *
 * The device keeps what its queues mean (requests, packets, engines); the
 * service keeps how they are served.  Neither knows the transport (PCI).
 */
#ifndef VMM_DEVICES_VIRTIO_VQ_SERVICE_H
#define VMM_DEVICES_VIRTIO_VQ_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "iothread.h"
#include "util/compiler.h"
#include "virtio/virtio.h"

struct vqs;
struct vqs_queue;

/* ops->process() results, or'ed (a negative value is an error). */
#define VQS_NOTIFY 1u /* used entries pushed and virtq_should_notify() said
			 yes: interrupt the driver now */
#define VQS_RETRY  2u /* work left that waits for a resource no kick or
			 completion will signal (the engine's ring was
			 full): process again at the end of the next round,
			 whose wait may sleep (1 ms at most) */
#define VQS_YIELD  4u /* work left that is ready now: the call used its
			 budget and lets the thread's other queues have a
			 turn.  Process again at the end of the next round,
			 which does not sleep: it serves the kicks and
			 completions ready by then first.  Wins over
			 VQS_RETRY when both are set. */

/*
 * What a device tells the service.  Every callback gets the device pointer
 * given in struct vqs_params.  Context: the queue's I/O thread, unless said.
 */
struct vqs_ops {
	/*
	 * Serve what the driver made available on @q (vqs_virtq()): pop,
	 * handle, push used entries.  Entries pushed here may be signalled
	 * either by returning VQS_NOTIFY (the device asked
	 * virtq_should_notify() itself) or by vqs_pushed().  Returns a mask
	 * of VQS_* or -EPROTO (the driver broke the ring: NEEDS_RESET).
	 * Required.
	 */
	int (*process)(void *dev, struct vqs_queue *q);
	/* Optional: set up @q's per-queue resources on its I/O thread (an
	 * I/O engine, a host fd to watch) before it is served.  Called at
	 * every attach; returns 0 or -errno (the start then fails). */
	int (*attach)(void *dev, struct vqs_queue *q);
	/* Optional: @q stops being served.  Cancel in-flight work (@cancel:
	 * complete it with an error status) or let it finish; stop watching
	 * host fds.  The service then runs the loop until idle(). */
	void (*quiesce)(void *dev, struct vqs_queue *q, bool cancel);
	/* Optional: nothing of @q is in flight any more.  NULL: always. */
	bool (*idle)(void *dev, struct vqs_queue *q);
	/* Optional: @q is idle and detached; give back a chain popped but
	 * never started (virtq_unpop()), forget per-queue state. */
	void (*detached)(void *dev, struct vqs_queue *q);
	/* Optional: I/O thread (0..nr_iothreads-1) serving queue @index, e.g.
	 * the same one for both queues of a network queue pair.  Called at
	 * create time.  NULL: @index mod nr_iothreads. */
	unsigned int (*iothread_of)(void *dev, unsigned int index,
				    unsigned int nr_iothreads);
	/* Optional: queue @index holds buffers the device fills (a NIC's
	 * receive queues, vsock's RX and event queues): a kick there says
	 * "more room", not "a request", so its count of waiting entries
	 * (a whole refill) does not steer the adaptive I/O-thread policy
	 * (iothread_note_wake()); the entries the device fills in one round,
	 * two or more, do (a batch of traffic).  Called at create time.
	 * NULL: every queue carries requests. */
	bool (*fills)(void *dev, unsigned int index);
};

struct vqs_params {
	const struct vqs_ops *ops;
	void *dev;
	const char *name;	     /* device name for log lines ("virtio-blk") */
	unsigned int nr_queues;
	struct iothread **iothreads; /* borrowed; must outlive the service */
	unsigned int nr_iothreads;
	uint32_t poll_us;	     /* busy-poll window per queue (0 = off) */
};

struct vqs_queue_stats {
	uint64_t kicks;		/* I/O-thread wake-ups on the kick eventfd */
	uint64_t doorbells;	/* guest notifications (notify writes) that
				   reached the device: the eventfd counts
				   them, a wake-up may serve several */
	uint64_t interrupts;	/* interrupts raised */
	uint64_t suppressed;	/* batches whose interrupt EVENT_IDX suppressed */
	uint32_t iothread;	/* index of the serving I/O thread */
	bool attached;
	bool started;		/* attached at least once since create */
};

/* Context: the device's creator.  Returns 0, -EINVAL (no ops->process, no
 * queue or no I/O thread) or -ENOMEM. */
int vqs_create(const struct vqs_params *p, struct vqs **out) __must_check;
/* Stops every queue (as vqs_stop()) and frees. */
void vqs_destroy(struct vqs *s);

/*
 * The device's virtio_device_ops start/stop/start_queue/stop_queue
 * forward here, with the same meaning (virtio.h).  vqs_start() attaches
 * every enabled queue; on failure every queue that attached is stopped
 * again and the error of the lowest-numbered failing queue is returned
 * (logged, rate-limited: a guest can repeat DRIVER_OK).  Context: the
 * transport's thread (a vCPU, or the vhost-user back end's).
 */
int vqs_start(struct vqs *s, struct virtio_queue *queues, unsigned int nr);
void vqs_stop(struct vqs *s);
int vqs_start_queue(struct vqs *s, struct virtio_queue *vq);
void vqs_stop_queue(struct vqs *s, unsigned int index, bool cancel);

/* Context: any thread.  -ENOENT for a queue out of range. */
int vqs_queue_stats(struct vqs *s, unsigned int index,
		    struct vqs_queue_stats *st);
struct vqs_queue *vqs_queue(struct vqs *s, unsigned int index);

/* ---- For the device's callbacks.  Context: the queue's I/O thread. ---- */

/* A completion pushed used entries on @q: the service decides at the end
 * of this batch whether to interrupt the driver (once for the batch). */
void vqs_pushed(struct vqs_queue *q);
/* Serve @q again at the end of this batch (e.g. a host fd became
 * writable, or completions freed room for requests left waiting); a no-op
 * while @q is not attached. */
void vqs_kick(struct vqs_queue *q);
/* Serve @q again at @when_ns (CLOCK_MONOTONIC) or at the end of an
 * earlier round that serves it anyway (a kick): for work held back by a
 * rate limit until its tokens are back.  One timed wait per queue, on
 * its I/O thread's own wait (iothread_defer_at()); a no-op while @q is
 * not attached. */
void vqs_retry_at(struct vqs_queue *q, uint64_t when_ns);
/* Whether @q is being served (attached, not broken).  Completions that
 * arrive while it is not must not touch the ring except to finish. */
bool vqs_active(const struct vqs_queue *q);
/* Whether a completion on @q may still push its used entry: the queue is
 * served, or being stopped or reset (in-flight work finishes to the used
 * ring before the stop returns: the driver of a reset may still read it),
 * but not broken (DEVICE_NEEDS_RESET: its ring is not touched again). */
bool vqs_may_finish(const struct vqs_queue *q);

unsigned int vqs_index(const struct vqs_queue *q);
struct virtq *vqs_virtq(struct vqs_queue *q);
struct virtio_queue *vqs_virtio_queue(struct vqs_queue *q);
struct iothread *vqs_iothread(const struct vqs_queue *q);
/* Per-queue device state, set by the device (e.g. in ops->attach()). */
void *vqs_queue_priv(const struct vqs_queue *q);
void vqs_set_queue_priv(struct vqs_queue *q, void *priv);

#endif
