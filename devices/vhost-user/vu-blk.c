/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user-blk back end of minivmm-blkd (shared/vhost-user-blk.h):
 * the virtio-blk device the VMM runs, with its I/O threads, behind the
 * vhost-user transport in place of virtio-pci.
 *
 * Threads: the control thread (the caller: create, confine, serve, stats,
 * destroy) handles one front end's messages at a time; the "vmm-ioN" I/O
 * threads serve the rings.  Both run under seccomp-bpf allow-lists
 * ("vhost" and "io") from before the first connection, and the I/O
 * threads' rings are restricted (registered files only) as in the VMM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "iothread.h"
#include "log.h"
#include "nbfd.h"
#include "sandbox.h"
#include "shared/vhost-user-blk.h"
#include "vhost-user/vu-backend.h"

/* Ring entries per I/O thread, as the VMM's (machine.c). */
#define VU_BLK_RING_ENTRIES 256
/* The longest per-queue entry of the stats line: four 20-digit counters. */
#define VU_BLK_STATS_PER_QUEUE 160

struct vu_blk {
	struct iothread **io;
	unsigned int nio;
	unsigned int num_queues;
	struct virtio_blk *dev;
	struct vu_backend *vu;
	struct sandbox *sb;
	struct nbfd out; /* stats_fd: never blocks (nbfd.h) */
	/* The stats line, sized at create for every queue (the control
	 * thread formats it under seccomp). */
	char *stats_buf;
	size_t stats_len;
};

static int start_iothreads(struct vu_blk *b, const struct vu_blk_params *p)
{
	int ret;

	b->io = calloc(p->nr_iothreads, sizeof(*b->io));
	if (!b->io)
		return -ENOMEM;
	for (unsigned int i = 0; i < p->nr_iothreads; i++) {
		ret = iothread_create(i, VU_BLK_RING_ENTRIES, &b->io[i]);
		if (ret)
			return ret;
		b->nio++;
		iothread_set_batch(b->io[i], p->io_sched == VMM_IOTHREAD_SCHED_BATCH);
		iothread_set_adaptive(b->io[i],
				      p->io_sched == VMM_IOTHREAD_SCHED_ADAPTIVE);
		ret = iothread_start(b->io[i]);
		if (ret)
			return ret;
	}
	return 0;
}

int vu_blk_create(const struct vu_blk_params *p, struct vu_blk **out)
{
	const struct vmm_disk_config *c = p->disk;
	struct vblk_options vo = {
		.path = c->path,
		.fd = -1,
		.flags = c->flags,
		.num_queues = c->num_queues,
		.queue_size = c->queue_size,
		.serial = c->serial,
	};
	struct virtio_blk_params dp = { .poll_us = c->poll_us };
	struct vu_backend_params vp = { .ops = virtio_blk_ops(), .name = c->path };
	struct vu_blk *b;
	struct vblk *blk;
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->out.fd = -1;
	b->num_queues = c->num_queues;
	if (p->stats_fd >= 0)
		nbfd_open(p->stats_fd, O_WRONLY, &b->out); /* before confinement */
	ret = vblk_open(&vo, &blk);
	if (ret) {
		vmm_err("--disk %s: cannot open the image: %s", c->path,
			strerror(-ret));
		vu_blk_destroy(b);
		return ret;
	}
	ret = start_iothreads(b, p);
	if (!ret) {
		dp.blk = blk;
		dp.iothreads = b->io;
		dp.nr_iothreads = b->nio;
		ret = virtio_blk_create(&dp, &b->dev);
	}
	if (ret) {
		vblk_close(blk);
		vu_blk_destroy(b);
		return ret;
	}
	if (p->stats_fd >= 0) {
		b->stats_len = 512 + (size_t)c->num_queues * VU_BLK_STATS_PER_QUEUE;
		b->stats_buf = malloc(b->stats_len);
		if (!b->stats_buf) {
			vu_blk_destroy(b);
			return -ENOMEM;
		}
	}
	vp.dev = b->dev;
	vp.num_queues = vblk_num_queues(blk);
	vp.max_queue_size = vblk_queue_size(blk);
	ret = vu_backend_create(&vp, &b->vu);
	if (ret) {
		vu_blk_destroy(b);
		return ret;
	}
	vmm_info("%s: %llu sectors%s, up to %u queues of up to %u entries, %u I/O threads",
		 c->path, (unsigned long long)disk_capacity(vblk_disk(blk)),
		 (c->flags & VMM_DISK_READONLY) ? " read-only" : "",
		 vp.num_queues, vp.max_queue_size, b->nio);
	*out = b;
	return 0;
}

static int confine_io(void *opaque)
{
	return sandbox_install(opaque, SANDBOX_CLASS_IO);
}

int vu_blk_confine(struct vu_blk *b)
{
	int ret;

	ret = sandbox_build_classes(VMM_SECCOMP_KILL,
				    (1u << SANDBOX_CLASS_IO) | (1u << SANDBOX_CLASS_VHOST),
				    &b->sb);
	for (unsigned int i = 0; !ret && i < b->nio; i++)
		ret = iothread_call_sync(b->io[i], confine_io, b->sb);
	if (!ret)
		ret = sandbox_install(b->sb, SANDBOX_CLASS_VHOST);
	return ret;
}

int vu_blk_serve(struct vu_blk *b, int conn, int stop_fd)
{
	return vu_backend_serve(b->vu, conn, stop_fd);
}

/* The counters since the start (doorbells: the front end's kick eventfd
 * writes; kicks: the I/O thread wake-ups that served them), per queue only
 * those a front end started (of up to 1024 offered), formatted in the
 * buffer sized at create and written with one write(2): the thread runs
 * under seccomp and stdio may need more than write.  Context: the control
 * thread, between front ends or after the last (the I/O threads update the
 * counters with relaxed atomics; a reader between front ends sees them
 * final). */
void vu_blk_print_stats(struct vu_blk *b)
{
	char *buf = b->stats_buf;
	size_t n = 0, cap = b->stats_len - 4;
	uint64_t req = 0, kicks = 0, bells = 0, irqs = 0, supp = 0, errs = 0, disc = 0, wz = 0;
	bool first = true;
	int err;

	if (!buf)
		return;
#define OUT(...)                                                                \
	do {                                                                    \
		int w_ = snprintf(buf + n, cap - n, __VA_ARGS__);               \
		if (w_ > 0)                                                     \
			n = n + (size_t)w_ >= cap ? cap : n + (size_t)w_;       \
	} while (0)
	OUT("{\"blkd\":{\"queues\":[");
	for (unsigned int q = 0; q < b->num_queues; q++) {
		struct virtio_blk_queue_stats st;
		uint64_t r = 0;

		if (virtio_blk_queue_stats(b->dev, q, &st) || !st.svc.started)
			continue;
		for (unsigned int t = 0; t < VBLK_STAT_NR; t++)
			r += st.blk.reqs[t];
		req += r;
		kicks += st.svc.kicks;
		bells += st.svc.doorbells;
		irqs += st.svc.interrupts;
		supp += st.svc.suppressed;
		errs += st.blk.io_errors;
		disc += st.blk.reqs[VBLK_STAT_DISCARD];
		wz += st.blk.reqs[VBLK_STAT_WRITE_ZEROES];
		OUT("%s{\"q\":%u,\"requests\":%llu,\"doorbells\":%llu,\"kicks\":%llu,"
		    "\"interrupts\":%llu}",
		    first ? "" : ",", q, (unsigned long long)r,
		    (unsigned long long)st.svc.doorbells, (unsigned long long)st.svc.kicks,
		    (unsigned long long)st.svc.interrupts);
		first = false;
	}
	OUT("],\"requests\":%llu,\"doorbells\":%llu,\"kicks\":%llu,\"interrupts\":%llu,"
	    "\"suppressed\":%llu,\"io_errors\":%llu,\"discards\":%llu,"
	    "\"write_zeroes\":%llu}}",
	    (unsigned long long)req, (unsigned long long)bells,
	    (unsigned long long)kicks,
	    (unsigned long long)irqs, (unsigned long long)supp,
	    (unsigned long long)errs, (unsigned long long)disc,
	    (unsigned long long)wz);
#undef OUT
	buf[n++] = '\n';
	/* stdout may be the pipe stderr is on, stalled: a reader that keeps
	 * reading gets the line, one that takes nothing for a second loses
	 * it, and the front end after it is served all the same. */
	if (nbfd_write_all(&b->out, buf, n, 1000, &err) != n)
		vmm_warn("--stats-json: counters line not written: %s",
			 strerror(err == -EAGAIN ? ETIMEDOUT : -err));
}

void vu_blk_destroy(struct vu_blk *b)
{
	if (!b)
		return;
	vu_backend_destroy(b->vu);
	/* Stops the queues (none runs after the disconnect) and closes the
	 * image; then the threads go. */
	virtio_blk_destroy(b->dev);
	for (unsigned int i = 0; i < b->nio; i++)
		iothread_stop(b->io[i]);
	for (unsigned int i = 0; i < b->nio; i++)
		iothread_destroy(b->io[i]);
	free(b->io);
	free(b->stats_buf);
	nbfd_close(&b->out);
	sandbox_free(b->sb);
	free(b);
}
