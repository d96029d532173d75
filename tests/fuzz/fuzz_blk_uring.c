/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: virtio-blk on the io_uring engine (devices/blk/blk-uring.c)
 * as the VMM runs it: the device of devices/blk/virtio-blk.c serving its
 * queues on a real I/O thread's io_uring (libvmm/core/iothread.c, ring
 * restricted and with registered files as in production), requests
 * against a memfd image; fuzz_virtqueue_blk drives the same requests
 * through the synchronous engine.  The I/O thread is never started: its
 * loop runs on the fuzzer's thread (iothread_run_until(), as a queue's
 * drain on reset does; calls to the thread run inline), with a 1 ms
 * timerfd watched so that a round never sleeps longer, so each input
 * replays the same way up to the kernel's completion order.
 *
 * The transport is a minimal one of the target's own (interrupts counted,
 * NEEDS_RESET latched per queue); the driver side is fuzz_blk_drv.h's.
 * Besides its requests: kicks that are served to the end or left in
 * flight, device resets (ops->stop: cancellation of what is in flight)
 * and restarts, single-queue stops that cancel or let requests finish
 * (vhost-user's way) and restarts, a ring of 4 to 64 entries and SQE
 * refusals (iothread_fail_sqes(): requests parked and retried, short-I/O
 * continuations and fdatasyncs that find no room), config accesses.
 *
 * Input: [features u64][setup u8] then action records [action u8][fields]
 * (fuzz.h, fuzz_blk_drv.h).
 *
 * Checked beyond the sanitizers (abort()):
 *  - a kick served to the end leaves nothing in flight within 3 s: the
 *    kick is read, every chain the device took is completed exactly once
 *    (its used index reaches its avail position, never passes it) but
 *    the one a broken queue choked on (NEEDS_RESET), nothing is parked;
 *  - a device stop, and a queue stop, returns with every chain the queue
 *    took completed, as above (a queue stop that lets requests finish
 *    gives back the one it parked);
 *  - no file descriptor is leaked, and the I/O thread's registered-file
 *    table holds only the thread's own files again once the device is
 *    gone.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "fuzz.h"
#include "fuzz_blk_drv.h"
#include "iothread.h"

#define RAM_SIZE (64u << 10)
#define IMG_SIZE (64u << 10)
#define MAX_ACTIONS 256
#define DRAIN_MS 3000

enum {
	A_QSEL,
	A_CHAIN,
	A_BLK,
	A_INDIRECT,
	A_KICK,	      /* publish, kick, serve to the end or leave in flight */
	A_RESET,      /* device reset (ops->stop) and DRIVER_OK again */
	A_QSTOP,      /* one queue stopped (cancel or finish), then started */
	A_FAIL_SQES,  /* the ring refuses SQEs for a while */
	A_CFG,
	A_RAM,
	A_AVAIL_IDX,
	A_SUPPRESS,
	A_NR,
};

struct fz {
	struct fbd d; /* the driver side, and the input */
	struct iothread *io;
	struct virtio_blk *dev;
	struct vblk *blk; /* the device's (it owns it) */
	const struct virtio_device_ops *ops;
	struct virtio_queue vqs[FBD_MAX_QUEUES];
	bool attached[FBD_MAX_QUEUES];
	bool needs_reset[FBD_MAX_QUEUES];
	/* Chains broken queues choked on before a queue stop and restart
	 * kept the ring where it was: never completed (see choked()). */
	unsigned int absorbed[FBD_MAX_QUEUES];
	unsigned int interrupts;
	int timer_fd;
	struct iothread_fd timer_w;
	struct timespec deadline;
	uint32_t files_before; /* the I/O thread's own registered files */
};

static void fail(const char *what, int q)
{
	fprintf(stderr, "fuzz_blk_uring: %s (queue %d)\n", what, q);
	abort();
}

/* ---- the transport --------------------------------------------------------- */

static struct fz *the_fz; /* the transport callbacks' way back */

static void t_notify(struct virtio_queue *q)
{
	(void)q;
	the_fz->interrupts++;
}

static void t_needs_reset(struct virtio_queue *q, const char *why)
{
	(void)why;
	the_fz->needs_reset[q->index] = true;
}

static const struct virtio_transport_ops t_ops = {
	.queue_notify = t_notify,
	.needs_reset = t_needs_reset,
};

/* ---- the I/O thread's loop, run here ----------------------------------------- */

static void timer_tick(void *opaque)
{
	uint64_t n;

	if (read(((struct fz *)opaque)->timer_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		abort();
}

static bool past_deadline(const struct fz *f)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > f->deadline.tv_sec ||
	       (now.tv_sec == f->deadline.tv_sec && now.tv_nsec > f->deadline.tv_nsec);
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Chains queue @q took and has not completed. */
static unsigned int lag(const struct fz *f, unsigned int q)
{
	return (uint16_t)(f->vqs[q].vq.last_avail_idx - f->vqs[q].vq.used_idx);
}

/* A queue that broke on a chain (NEEDS_RESET) keeps it, never completed:
 * the reset that must come resets the ring (vblk.h).  A queue stop clears
 * the latch (vhost-user restarts the same ring), so the queue can break
 * and keep one more. */
static unsigned int choked(const struct fz *f, unsigned int q)
{
	return f->absorbed[q] + (f->needs_reset[q] ? 1 : 0);
}

/* Nothing left for the device to do by itself: every attached queue's
 * kick read, every chain it took completed, none parked. */
static bool quiescent(void *opaque)
{
	struct fz *f = opaque;
	struct vblk *blk = f->blk;

	for (unsigned int q = 0; q < f->d.nq; q++) {
		const struct virtq *vq = &f->vqs[q].vq;

		if (!f->attached[q])
			continue;
		/* Taken minus completed: never below zero.  (Above the queue
		 * size it may be: chains broken queues kept, see choked().) */
		if ((int16_t)(vq->last_avail_idx - vq->used_idx) < 0)
			fail("more completions than chains taken", (int)q);
		if (readable(f->vqs[q].kick_fd) || lag(f, q) > choked(f, q) ||
		    vblk_queue_parked(blk, q)) {
			if (past_deadline(f)) {
				fprintf(stderr, "kick %s, used %u, taken %u, parked %d\n",
					readable(f->vqs[q].kick_fd) ? "unread" : "read",
					vq->used_idx, vq->last_avail_idx,
					vblk_queue_parked(blk, q));
				fail("requests still in flight after 3 s", (int)q);
			}
			return false;
		}
	}
	return true;
}

static void serve(struct fz *f)
{
	clock_gettime(CLOCK_MONOTONIC, &f->deadline);
	f->deadline.tv_sec += DRAIN_MS / 1000;
	iothread_run_until(f->io, quiescent, f);
}

static unsigned int rounds_left;

static bool some_rounds(void *opaque)
{
	(void)opaque;
	return !rounds_left || !rounds_left--;
}

/* Every chain queue @q took is completed (after a stop). */
static void check_completed(struct fz *f, unsigned int q)
{
	if (lag(f, q) > choked(f, q))
		fail("a stop returned with chains not completed", (int)q);
}

static void drain_used(struct fz *f, unsigned int q)
{
	uint32_t id, len;

	while (fg_vq_get_used(&f->d.fvq[q], &id, &len) == 1)
		;
}

/* ---- actions ------------------------------------------------------------------ */

static void ring_up(struct fz *f, unsigned int q)
{
	struct virtio_queue *vq = &f->vqs[q];

	memset(&vq->vq, 0, sizeof(vq->vq));
	vq->enabled = fg_vq_attach(&f->d.fvq[q], &vq->vq) == 0;
	f->needs_reset[q] = false;
	f->absorbed[q] = 0;
	f->d.slot[q] = 0;
}

/* What the driver asks for of what the device offers (VERSION_1 always). */
static void negotiate(struct fz *f)
{
	f->d.features = (f->d.features & f->ops->features(f->dev)) |
			(1ull << VIRTIO_F_VERSION_1);
	if (f->ops->set_features(f->dev, f->d.features))
		abort();
}

static void device_up(struct fz *f)
{
	negotiate(f);
	for (unsigned int q = 0; q < f->d.nq; q++)
		ring_up(f, q);
	/* The transport sets NEEDS_RESET on a failed start; nothing runs. */
	if (f->ops->start(f->dev, f->vqs, f->d.nq))
		return;
	for (unsigned int q = 0; q < f->d.nq; q++)
		f->attached[q] = f->vqs[q].enabled;
}

static void do_kick(struct fz *f)
{
	unsigned int q = f->d.q;
	uint8_t m = fi_u8(&f->d.in);
	uint64_t one = 1;

	fg_vq_publish(&f->d.fvq[q]);
	if (write(f->vqs[q].kick_fd, &one, sizeof(one)) != sizeof(one))
		abort();
	switch (m & 3) {
	case 0:
	case 1:
		serve(f);
		break;
	case 2: /* a round or three: some of it still in flight */
		rounds_left = 1 + (m >> 2) % 3;
		iothread_run_until(f->io, some_rounds, NULL);
		break;
	default: /* submitted at the next round, whenever that is */
		break;
	}
	drain_used(f, q);
}

/*
 * SQE refusals end before a queue stops: an unwatch that finds no SQE
 * leaves its poll (and the fd's slot) in place by design (iothread.c), a
 * degradation the checks here would take for a leak.
 */
static void end_refusals(struct fz *f)
{
	iothread_fail_sqes(f->io, 0, 0);
}

/* Device reset: every attached queue stopped, what it took completed. */
static void device_stop(struct fz *f)
{
	end_refusals(f);
	f->ops->stop(f->dev);
	for (unsigned int q = 0; q < f->d.nq; q++) {
		if (f->attached[q])
			check_completed(f, q);
		f->attached[q] = false;
	}
}

static void do_reset(struct fz *f)
{
	f->d.features = fi_u64(&f->d.in);
	device_stop(f);
	for (unsigned int q = 0; q < f->d.nq; q++) {
		drain_used(f, q);
		virtq_reset(&f->vqs[q].vq);
		fbd_ring_reinit(&f->d, q);
	}
	device_up(f);
}

static void do_qstop(struct fz *f)
{
	uint8_t m = fi_u8(&f->d.in);
	unsigned int q = m % f->d.nq;

	if (!f->attached[q])
		return;
	end_refusals(f);
	f->ops->stop_queue(f->dev, q, m & 0x10);
	f->attached[q] = false;
	check_completed(f, q);
	f->absorbed[q] = lag(f, q);
	f->needs_reset[q] = false; /* the stop cleared the device's latch */
	drain_used(f, q);
	/* vhost-user's restart: the same ring, where it was. */
	if (!(m & 0x20) && f->vqs[q].enabled && !f->ops->start_queue(f->dev, &f->vqs[q]))
		f->attached[q] = true;
}

static void do_cfg(struct fz *f)
{
	uint32_t off = fi_u8(&f->d.in) % (sizeof(struct virtio_blk_config) + 8);
	uint8_t m = fi_u8(&f->d.in), buf[8];
	uint32_t len = m % 9;

	if (off + len > f->ops->config_size)
		return; /* the transport bounds it */
	if (m & 0x80) {
		fi_bytes(&f->d.in, buf, len);
		f->ops->config_write(f->dev, off, buf, len);
	} else {
		f->ops->config_read(f->dev, off, buf, len);
	}
}

/* ---- set-up --------------------------------------------------------------------- */

static void setup(struct fz *f, uint8_t setup)
{
	static const unsigned int entries[] = { 4, 8, 16, 64 };
	struct vblk_options o = { .serial = "fuzz-uring" };
	struct itimerspec ts = { .it_interval = { 0, 1000000 }, .it_value = { 0, 1000000 } };
	struct virtio_blk_params p = { .nr_iothreads = 1 };
	struct iothread_stats st;
	struct vblk *blk;

	f->d.qsize = (uint16_t)(4u << (setup & 3));
	f->d.nq = 1 + ((setup >> 2) & 1);
	o.num_queues = (uint16_t)f->d.nq;
	o.queue_size = f->d.qsize;
	o.flags = (setup & 0x08 ? VBLK_OPT_READONLY : 0) |
		  (setup & 0x10 ? VBLK_OPT_NO_FLUSH : 0) | VBLK_OPT_NO_LOCK;
	o.fd = fuzz_image(IMG_SIZE);
	if (o.fd < 0 || iothread_create(0, entries[(setup >> 5) & 3], &f->io) ||
	    vblk_open(&o, &blk))
		abort();
	iothread_get_stats(f->io, &st);
	f->files_before = st.files;
	p.blk = blk;
	p.iothreads = &f->io;
	if (virtio_blk_create(&p, &f->dev))
		abort();
	f->blk = blk;
	f->ops = virtio_blk_ops();
	f->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (f->timer_fd < 0 || timerfd_settime(f->timer_fd, 0, &ts, NULL))
		abort();
	f->timer_w = (struct iothread_fd){ .fd = f->timer_fd, .fn = timer_tick, .opaque = f };
	if (iothread_watch_fd(f->io, &f->timer_w))
		abort();

	f->d.ram_size = RAM_SIZE;
	f->d.img_sectors = IMG_SIZE / 512;
	negotiate(f); /* the rings' layout depends on it (EVENT_IDX) */
	if (fg_init(&f->d.g, RAM_SIZE))
		abort();
	for (unsigned int q = 0; q < f->d.nq; q++) {
		struct virtio_queue *vq = &f->vqs[q];

		if (fg_vq_init(&f->d.g, &f->d.fvq[q], f->d.qsize, f->d.features))
			abort();
		vq->t_ops = &t_ops;
		vq->index = q;
		vq->vector = VIRTIO_NO_VECTOR;
		vq->call_fd = -1;
		vq->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (vq->kick_fd < 0)
			abort();
	}
	f->d.data_gpa = (f->d.g.bump + 4095) & ~4095ull;
	f->d.g.bump = f->d.data_gpa;
	f->d.scratch = f->d.data_gpa;
	device_up(f);
}

static void teardown(struct fz *f)
{
	struct iothread_stats st;

	/* The queues' end: served to the end, then stopped. */
	serve(f);
	device_stop(f);
	virtio_blk_destroy(f->dev);
	iothread_unwatch_fd(f->io, &f->timer_w);
	iothread_get_stats(f->io, &st);
	if (st.files != f->files_before)
		fail("registered files left once the device is gone", -1);
	iothread_destroy(f->io);
	close(f->timer_fd);
	for (unsigned int q = 0; q < f->d.nq; q++) {
		close(f->vqs[q].kick_fd);
		fg_vq_destroy(&f->d.fvq[q]);
	}
	fg_destroy(&f->d.g);
}

int fuzz_blk_uring(const uint8_t *data, size_t size)
{
	struct fz *f = calloc(1, sizeof(*f));
	int fd_before;

	fuzz_quiet_logs();
	if (!f || fuzz_image(IMG_SIZE) < 0)
		abort();
	the_fz = f;
	f->d.in = (struct fuzz_in){ data, size };
	f->d.features = fi_u64(&f->d.in);
	fd_before = fuzz_probe_fd(); /* after the image cache opened its memfd */
	setup(f, fi_u8(&f->d.in));

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f->d.in); i++) {
		switch (fi_u8(&f->d.in) % A_NR) {
		case A_QSEL:
			f->d.q = fi_u8(&f->d.in) % f->d.nq;
			break;
		case A_CHAIN:
			fbd_chain(&f->d);
			break;
		case A_BLK:
			fbd_blk(&f->d);
			break;
		case A_INDIRECT:
			fbd_indirect(&f->d);
			break;
		case A_KICK:
			do_kick(f);
			break;
		case A_RESET:
			do_reset(f);
			break;
		case A_QSTOP:
			do_qstop(f);
			break;
		case A_FAIL_SQES: {
			uint8_t m = fi_u8(&f->d.in);

			iothread_fail_sqes(f->io, m & 15, 1 + (m >> 4) % 8);
			break;
		}
		case A_CFG:
			do_cfg(f);
			break;
		case A_RAM:
			fbd_ram(&f->d);
			break;
		case A_AVAIL_IDX:
			fg_vq_set_avail_idx(&f->d.fvq[f->d.q],
					    (uint16_t)(f->d.fvq[f->d.q].avail_idx + fi_u8(&f->d.in)));
			break;
		case A_SUPPRESS:
			fbd_suppress(&f->d);
			break;
		}
	}
	teardown(f);
	free(f);
	the_fz = NULL;
	if (fuzz_probe_fd() != fd_before)
		fail("a file descriptor leaked", -1);
	return 0;
}

FUZZ_TARGET(fuzz_blk_uring)
