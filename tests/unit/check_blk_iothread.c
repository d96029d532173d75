/* SPDX-License-Identifier: MIT */
/*
 * The threaded virtio-blk data path without KVM: the real virtio-pci
 * transport on a real PCI bus (config space through 0xCF8/0xCFC, registers
 * through BAR MMIO), the real wiring transaction over a fake KVM that
 * records ioeventfds and irqfds, real I/O threads with real io_uring rings,
 * the io_uring engine and a real image file.  The test is the guest driver:
 * it negotiates, lays out rings in fake guest RAM, kicks by writing the
 * eventfd KVM would signal for the queue's notify address, and takes
 * interrupts by reading the eventfd KVM would use as the queue's irqfd.
 *
 * Nothing here asserts on timing: waits poll with a 10 s deadline, and
 * "nothing happened" is checked after settle(), which returns only once
 * the I/O thread has finished the round in which everything observed so
 * far happened (including its end-of-batch interrupt decisions).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <linux/kvm.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "fake_guest.h"
#include "iobus.h"
#include "iothread.h"
#include "irq.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"

#include "fake_vpci.h"
#include "test_clock.h"

#define RAM_SIZE (32ull << 20)
#define QSIZE 128
#define NQ 4
#define NIO 2
#define IO_RING_ENTRIES 64
#define IMG_SIZE (4ull << 20)
#define WAIT_MS 10000
#define SECTOR 512u

/* What the driver accepts (all offered by vblk). */
#define DRV_FEATURES                                                      \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |  \
	 (1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << VIRTIO_BLK_F_SEG_MAX) | \
	 (1ull << VIRTIO_BLK_F_BLK_SIZE) | (1ull << VIRTIO_BLK_F_MQ) |       \
	 (1ull << VIRTIO_BLK_F_FLUSH))
#define RING_FEATURES \
	((1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_RING_F_INDIRECT_DESC))

/* ---- the machine ------------------------------------------------------- */

struct drvq {
	struct fg_vq vq;
	bool inited;
	uint16_t vector;
	uint64_t notify;
	int kick_fd;
	int call_fd;   /* -1: poll queue */
	uint64_t irqs; /* interrupts taken (sum of the call eventfd counter) */
};

struct rig_opts {
	uint64_t img_size;
	uint32_t poll_us;
	uint16_t vectors[NQ]; /* 0: the default, queue q on vector q + 1 */
};

static struct {
	struct fv v; /* fake KVM, buses, transport, the driver's probe */
	struct fake_guest g;
	int img;
	uint64_t img_size;
	struct iothread *io[NIO];
	struct virtio_blk *dev;
	struct drvq q[NQ];
} R;

/* Image content before any write. */
static uint8_t pat(uint64_t off)
{
	return (uint8_t)(off ^ (off >> 9) * 31 ^ (off >> 17) ^ 0x5a);
}

/* Content of the driver's writes, per seed. */
static uint8_t wpat(uint64_t off, uint8_t seed)
{
	return (uint8_t)(pat(off) * 3 + seed + 1);
}

static void fill_image(int fd, uint64_t size)
{
	static uint8_t buf[65536];

	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = (size_t)MIN((uint64_t)sizeof(buf), size - off);

		for (size_t i = 0; i < n; i++)
			buf[i] = pat(off + i);
		ck_assert_int_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	}
}

/* ---- config space and BAR access (fake_vpci.h) ---------------------- */

#define mr(off, len) fv_mr(&R.v, off, len)
#define COMMON_RD(field, len) FV_COMMON_RD(&R.v, field, len)
#define COMMON_WR(field, val, len) FV_COMMON_WR(&R.v, field, val, len)
#define status_rd() fv_status(&R.v)
#define msix_mask(vec, masked) fv_msix_mask(&R.v, vec, masked)
#define pba_bit(vec) fv_pba_bit(&R.v, vec)

static void drv_probe(void)
{
	ck_assert_int_eq(fv_probe(&R.v), 0);
	ck_assert_uint_eq(fv_cfg_rd(&R.v, PCI_CFG_DEVICE_ID, 2), VPCI_DEVICE_ID_BASE + 2);
	ck_assert_uint_eq(R.v.nq, NQ);
	ck_assert_uint_eq(R.v.nr_vectors, NQ + 1);
}

static uint64_t msg_addr(unsigned int v)
{
	return 0xfee00000ull | (uint64_t)(v & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v)
{
	return 0x4000u + v;
}

/*
 * Bring the device up like virtio_pci_modern + virtio_blk: reset,
 * negotiate, MSI-X (config vector 0), fresh rings for every queue with
 * @o's vectors, DRIVER_OK.  Returns the device status after it.
 */
static uint8_t drv_try_up(const struct rig_opts *o)
{
	uint64_t offered;
	uint16_t nq;
	uint64_t cap;

	ck_assert_int_eq(fv_negotiate(&R.v, DRV_FEATURES, &offered), 0);
	ck_assert_uint_eq(offered & DRV_FEATURES, DRV_FEATURES);

	nq = (uint16_t)mr(R.v.devcfg + offsetof(struct virtio_blk_config, num_queues), 2);
	ck_assert_uint_eq(nq, NQ);
	cap = mr(R.v.devcfg + offsetof(struct virtio_blk_config, capacity), 8);
	ck_assert_uint_eq(cap, R.img_size / SECTOR);

	fv_msix_ctrl(&R.v, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v < R.v.nr_vectors; v++) {
		fv_msix_write(&R.v, v, msg_addr(v), msg_data(v));
		msix_mask(v, false);
	}
	fv_msix_ctrl(&R.v, MSIX_CTRL_ENABLE);
	COMMON_WR(MSIX, 0, 2);
	ck_assert_uint_eq(COMMON_RD(MSIX, 2), 0);

	for (unsigned int q = 0; q < NQ; q++) {
		struct drvq *d = &R.q[q];

		if (d->inited)
			fg_vq_destroy(&d->vq);
		ck_assert_int_eq(fg_vq_init(&R.g, &d->vq, QSIZE, RING_FEATURES), 0);
		d->inited = true;
		d->vector = o->vectors[q] ? o->vectors[q] : (uint16_t)(q + 1);
		d->irqs = 0;
		COMMON_WR(Q_SELECT, q, 2);
		ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), QSIZE);
		ck_assert_uint_eq(fv_queue_setup(&R.v, q, QSIZE, d->vq.desc_gpa,
						 d->vq.avail_gpa, d->vq.used_gpa,
						 d->vector),
				  d->vector);
		d->notify = fv_notify_addr(&R.v, q);
	}
	fv_status_add(&R.v, VIRTIO_CONFIG_S_DRIVER_OK);
	return status_rd();
}

/* drv_try_up(), which must succeed; then find each queue's kick and call
 * eventfds in what the fake KVM was asked to wire. */
static void drv_up(const struct rig_opts *o)
{
	uint8_t status = drv_try_up(o);

	ck_assert(status & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status & VIRTIO_CONFIG_S_NEEDS_RESET));

	for (unsigned int q = 0; q < NQ; q++) {
		struct drvq *d = &R.q[q];

		d->kick_fd = fv_kvm_kick_fd(R.v.kvm, d->notify);
		ck_assert_int_ge(d->kick_fd, 0);
		if (d->vector == VIRTIO_NO_VECTOR) {
			d->call_fd = -1;
		} else {
			d->call_fd = fv_kvm_call_fd(R.v.kvm, msg_addr(d->vector),
						    msg_data(d->vector));
			ck_assert_int_ge(d->call_fd, 0);
		}
	}
}

static void rig_up(const struct rig_opts *o)
{
	struct vblk *blk;
	struct vblk_options bo = { .num_queues = NQ, .queue_size = QSIZE,
				   .serial = "itest" };
	struct virtio_blk_params dp = { .nr_iothreads = NIO };
	struct vpci_params vp = {
		.num_queues = NQ,
		.max_queue_size = QSIZE,
		.ioeventfd_any_length = true,
	};

	memset(&R, 0, sizeof(R));
	R.img = -1;
	ck_assert_int_eq(fg_init(&R.g, RAM_SIZE), 0);
	ck_assert_int_eq(fv_init(&R.v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &R.g.mem), 0);

	R.img_size = o->img_size ? o->img_size : IMG_SIZE;
	R.img = fg_tmp_image(R.img_size);
	ck_assert_int_ge(R.img, 0);
	fill_image(R.img, R.img_size);

	for (unsigned int i = 0; i < NIO; i++) {
		ck_assert_int_eq(iothread_create(i, IO_RING_ENTRIES, &R.io[i]), 0);
		ck_assert_int_eq(iothread_start(R.io[i]), 0);
	}
	bo.fd = R.img;
	ck_assert_int_eq(vblk_open(&bo, &blk), 0);
	dp.blk = blk;
	dp.iothreads = R.io;
	dp.poll_us = o->poll_us;
	dp.sync_engine = false; /* the io_uring engine */
	ck_assert_int_eq(virtio_blk_create(&dp, &R.dev), 0);
	vp.bus = R.v.bus;
	vp.irq = R.v.irq;
	vp.mem = &R.g.mem;
	vp.ops = virtio_blk_ops();
	vp.dev = R.dev;
	ck_assert_int_eq(vpci_create(&vp, &R.v.t), 0);
	drv_probe();
}

static void rig_down(void)
{
	vpci_destroy(R.v.t);
	R.v.t = NULL;
	virtio_blk_destroy(R.dev);
	for (unsigned int i = 0; i < NIO; i++)
		iothread_destroy(R.io[i]);
	fv_destroy(&R.v);
	for (unsigned int q = 0; q < NQ; q++)
		if (R.q[q].inited)
			fg_vq_destroy(&R.q[q].vq);
	fg_destroy(&R.g);
	if (R.img >= 0)
		close(R.img);
	memset(&R, 0, sizeof(R));
}

static void rig_up_default(uint32_t poll_us)
{
	struct rig_opts o = { .poll_us = poll_us };

	rig_up(&o);
	drv_up(&o);
}

/* ---- I/O thread synchronisation ------------------------------------------ */

static struct iothread *queue_io(unsigned int q)
{
	return R.io[q % NIO];
}

static int read_loops(void *opaque)
{
	struct iothread_stats st;

	iothread_get_stats(opaque, &st);
	return (int)st.loops;
}

/*
 * Return once @io has completed the loop iteration in which the first
 * call ran: everything it did before (completions pushed, end-of-batch
 * interrupt decisions) is finished.  A call may land in the same round as
 * earlier CQEs, before that round's hooks, hence the second, later round.
 */
static void settle(struct iothread *io)
{
	int first = iothread_call_sync(io, read_loops, io);
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (iothread_call_sync(io, read_loops, io) == first)
		ck_assert_msg(test_now_ms() < deadline, "I/O thread stuck in one round");
}

static void settle_all(void)
{
	for (unsigned int i = 0; i < NIO; i++)
		settle(R.io[i]);
}

/* ---- the driver's side of requests --------------------------------------- */

struct io_req {
	struct fg_blk_req r;
	uint32_t type;
	uint64_t sector;
	uint64_t data; /* gpa of the (contiguous) data buffer */
	uint32_t len;
	bool seen;
};

struct used_ent {
	uint32_t id, len;
};

static uint8_t *gptr(uint64_t gpa, uint64_t len)
{
	uint8_t *p = fg_ptr(&R.g, gpa, len);

	ck_assert_ptr_nonnull(p);
	return p;
}

/* @len bytes at @p all equal @v (a plain loop: a ck_assert per byte
 * would send a checkpoint message to the parent for each). */
static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/*
 * Add (not publish) a request of @len bytes at @sector, its buffer split
 * into @nseg equal segments.  OUT data is wpat(@seed); IN buffers are
 * pre-filled with 0xee so zero-fill and untouched bytes are told apart.
 */
static void add_req(unsigned int q, struct io_req *io, uint32_t type,
		    uint64_t sector, uint32_t len, unsigned int nseg,
		    bool indirect, uint8_t seed)
{
	struct fg_buf bufs[16];
	uint8_t *p;

	ck_assert_uint_le(nseg, 16);
	ck_assert_uint_eq(len % nseg, 0);
	memset(io, 0, sizeof(*io));
	io->type = type;
	io->sector = sector;
	io->len = len;
	io->data = fg_alloc(&R.g, len, 4096);
	ck_assert_uint_ne(io->data, 0);
	p = gptr(io->data, len);
	for (uint32_t i = 0; i < len; i++)
		p[i] = type == VIRTIO_BLK_T_OUT ? wpat(sector * SECTOR + i, seed) : 0xee;
	for (unsigned int s = 0; s < nseg; s++)
		bufs[s] = (struct fg_buf){ io->data + (uint64_t)s * (len / nseg),
					   len / nseg, type == VIRTIO_BLK_T_IN };
	ck_assert_int_eq(fg_blk_add(&R.q[q].vq, type, sector, bufs, nseg,
				    indirect, &io->r), 0);
}

static void kick(unsigned int q)
{
	ck_assert_int_eq(eventfd_write(R.q[q].kick_fd, 1), 0);
}

/* Publish what was added; kick if the device asked for it. */
static bool publish(unsigned int q)
{
	bool k = fg_vq_publish(&R.q[q].vq);

	if (k)
		kick(q);
	return k;
}

/* Take whatever interrupts are pending on @q (non-blocking). */
static uint64_t take_irqs(unsigned int q)
{
	struct drvq *d = &R.q[q];
	eventfd_t v;

	if (d->call_fd < 0 || eventfd_read(d->call_fd, &v) < 0)
		return 0;
	d->irqs += v;
	return v;
}

/* Block until an interrupt arrives on @q. */
static void wait_irq(unsigned int q)
{
	struct pollfd p = { .fd = R.q[q].call_fd, .events = POLLIN };

	ck_assert_int_ge(p.fd, 0);
	ck_assert_msg(poll(&p, 1, WAIT_MS) == 1, "queue %u: no interrupt", q);
	ck_assert_uint_gt(take_irqs(q), 0);
}

/*
 * Collect @n used entries of @q into @ents like the Linux driver: wait for
 * an interrupt (or poll the ring on a poll queue / while interrupts are
 * suppressed), then consume everything, which re-arms used_event unless
 * the test turned that off.
 */
static void wait_used(unsigned int q, struct used_ent *ents, unsigned int n)
{
	struct drvq *d = &R.q[q];
	uint64_t deadline = test_now_ms() + WAIT_MS;
	unsigned int got = 0;

	for (;;) {
		uint32_t id, len;

		while (got < n && fg_vq_get_used(&d->vq, &id, &len)) {
			ents[got].id = id;
			ents[got].len = len;
			got++;
		}
		if (got == n)
			break;
		ck_assert_msg(test_now_ms() < deadline, "queue %u: %u of %u completions",
			      q, got, n);
		if (d->call_fd >= 0) {
			struct pollfd p = { .fd = d->call_fd, .events = POLLIN };

			if (poll(&p, 1, 5) == 1)
				take_irqs(q);
		} else {
			usleep(200);
		}
	}
	ck_assert_uint_eq(fg_vq_used_pending(&d->vq), 0);
}

/* Every request got exactly one used entry with the right length and
 * @status (IN: data + status byte on success, else the status byte). */
static void check_done(const struct used_ent *ents, unsigned int n,
		       struct io_req *reqs, unsigned int nreq, uint8_t status)
{
	ck_assert_uint_eq(n, nreq);
	for (unsigned int i = 0; i < nreq; i++)
		reqs[i].seen = false;
	for (unsigned int e = 0; e < n; e++) {
		struct io_req *r = NULL;

		for (unsigned int i = 0; i < nreq; i++)
			if (!reqs[i].seen && (uint32_t)reqs[i].r.head == ents[e].id)
				r = &reqs[i];
		ck_assert_msg(r, "used id %u matches no request", ents[e].id);
		r->seen = true;
		ck_assert_uint_eq(fg_blk_status(&R.g, &r->r), status);
		if (r->type == VIRTIO_BLK_T_IN && status == VIRTIO_BLK_S_OK)
			ck_assert_uint_eq(ents[e].len, r->len + 1);
		else
			ck_assert_uint_eq(ents[e].len, 1);
	}
}

/* The IN request's buffer holds the image's original content. */
static void check_read_pat(const struct io_req *r)
{
	const uint8_t *p = gptr(r->data, r->len);

	for (uint32_t i = 0; i < r->len; i++)
		if (p[i] != pat(r->sector * SECTOR + i))
			ck_abort_msg("read sector %llu byte %u: 0x%02x, want 0x%02x",
				     (unsigned long long)r->sector, i, p[i],
				     pat(r->sector * SECTOR + i));
}

/* The image holds the OUT request's data. */
static void check_written(const struct io_req *r)
{
	uint8_t *buf = malloc(r->len);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(R.img, buf, r->len, (off_t)(r->sector * SECTOR)),
			 (ssize_t)r->len);
	ck_assert_mem_eq(buf, gptr(r->data, r->len), r->len);
	free(buf);
}

static void dev_stats(unsigned int q, struct virtio_blk_queue_stats *st)
{
	ck_assert_int_eq(virtio_blk_queue_stats(R.dev, q, st), 0);
}

/* Simple one-read check used after disruptive events. */
static void one_read(unsigned int q, uint64_t sector)
{
	struct io_req r;
	struct used_ent e;

	add_req(q, &r, VIRTIO_BLK_T_IN, sector, 4096, 1, false, 0);
	publish(q);
	wait_used(q, &e, 1);
	check_done(&e, 1, &r, 1, VIRTIO_BLK_S_OK);
	check_read_pat(&r);
}

/* ---- 1. reads and writes through every queue ---------------------------- */

START_TEST(rw_every_queue)
{
	struct io_req reqs[NQ][3];
	struct used_ent ents[3];
	struct iothread_stats ios[NIO];

	rig_up_default(0);
	for (unsigned int q = 0; q < NQ; q++) {
		bool ind = q & 1;
		/* Disjoint regions per queue: write 8 KiB in two segments,
		 * read 16 KiB in four (direct and indirect chains); the
		 * written regions are read back further down. */
		add_req(q, &reqs[q][0], VIRTIO_BLK_T_OUT, 1000 + q * 64, 8192, 2,
			ind, (uint8_t)q);
		add_req(q, &reqs[q][1], VIRTIO_BLK_T_IN, 4000 + q * 64, 16384, 4,
			!ind, 0);
		ck_assert(publish(q));
	}
	for (unsigned int q = 0; q < NQ; q++) {
		struct virtio_blk_queue_stats st;

		wait_irq(q);
		wait_used(q, ents, 2);
		check_done(ents, 2, reqs[q], 2, VIRTIO_BLK_S_OK);
		check_written(&reqs[q][0]);
		check_read_pat(&reqs[q][1]);
		dev_stats(q, &st);
		ck_assert(st.svc.attached);
		ck_assert_uint_eq(st.svc.iothread, q % NIO);
		ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_OUT], 1);
		ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 1);
		ck_assert_uint_eq(st.blk.bytes_written, 8192);
		ck_assert_uint_eq(st.blk.bytes_read, 16384);
		ck_assert_uint_eq(st.svc.kicks, 1);
	}
	/* Read back what the writes put there, through the other thread's
	 * queues, plus a FLUSH. */
	for (unsigned int q = 0; q < NQ; q++) {
		unsigned int w = (q + 1) % NQ;
		const uint8_t *p;

		add_req(q, &reqs[q][2], VIRTIO_BLK_T_IN, 1000 + w * 64, 8192, 1,
			false, 0);
		publish(q);
		wait_used(q, ents, 1);
		check_done(ents, 1, &reqs[q][2], 1, VIRTIO_BLK_S_OK);
		p = gptr(reqs[q][2].data, 8192);
		ck_assert_mem_eq(p, gptr(reqs[w][0].data, 8192), 8192);
	}
	{
		struct io_req f;

		memset(&f, 0, sizeof(f));
		f.type = VIRTIO_BLK_T_FLUSH;
		ck_assert_int_eq(fg_blk_add(&R.q[2].vq, VIRTIO_BLK_T_FLUSH, 0, NULL,
					    0, false, &f.r), 0);
		publish(2);
		wait_used(2, ents, 1);
		check_done(ents, 1, &f, 1, VIRTIO_BLK_S_OK);
	}
	/* Both threads did io_uring work. */
	for (unsigned int i = 0; i < NIO; i++) {
		iothread_get_stats(R.io[i], &ios[i]);
		ck_assert_uint_gt(ios[i].cqes, 0);
	}
	settle_all();
	for (unsigned int q = 0; q < NQ; q++) {
		struct virtio_blk_queue_stats st;

		take_irqs(q);
		dev_stats(q, &st);
		ck_assert_uint_eq(st.svc.interrupts, R.q[q].irqs);
		ck_assert_uint_eq(vpci_queue_interrupts(R.v.t, q), R.q[q].irqs);
	}
	rig_down();
}
END_TEST

/* ---- 2. queue depth 64 with EVENT_IDX ------------------------------------- */

START_TEST(qd64_event_idx)
{
	enum { N = 64, Q = 2 };
	struct io_req *reqs = calloc(N, sizeof(*reqs));
	struct used_ent ents[N];
	struct virtio_blk_queue_stats st, st2;
	uint64_t irqs;
	eventfd_t v;

	ck_assert_ptr_nonnull(reqs);
	rig_up_default(0);
	for (unsigned int i = 0; i < N; i++)
		add_req(Q, &reqs[i], i & 1 ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN,
			(uint64_t)i * 16, 4096, 1u << (i % 4), i % 8 != 0, (uint8_t)i);
	ck_assert(publish(Q)); /* one kick for all 64 */
	ck_assert_uint_eq(R.q[Q].vq.kicks, 1);
	wait_used(Q, ents, N);
	check_done(ents, N, reqs, N, VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < N; i++) {
		if (i & 1)
			check_written(&reqs[i]);
		else
			check_read_pat(&reqs[i]);
	}
	settle(queue_io(Q));
	take_irqs(Q);
	irqs = R.q[Q].irqs;
	dev_stats(Q, &st);
	ck_assert_uint_eq(st.svc.kicks, 1);
	ck_assert_uint_ge(irqs, 1);
	ck_assert_uint_le(irqs, N);
	/* Every interrupt the device counted reached the driver, and every
	 * notify decision was either an interrupt or a suppression. */
	ck_assert_uint_eq(st.svc.interrupts, irqs);
	ck_assert_uint_eq(vpci_queue_interrupts(R.v.t, Q), irqs);
	ck_assert_uint_le(st.svc.interrupts + st.svc.suppressed, N);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], N / 2);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_OUT], N / 2);
	ck_assert_uint_eq(st.blk.bytes_read + st.blk.bytes_written, N * 4096ull);
	/* The other queues saw nothing. */
	for (unsigned int q = 0; q < NQ; q++) {
		if (q == Q)
			continue;
		ck_assert_int_lt(eventfd_read(R.q[q].call_fd, &v), 0);
		dev_stats(q, &st2);
		ck_assert_uint_eq(st2.svc.kicks, 0);
	}

	/* The driver suppresses: used_event far ahead of anything the next
	 * 64 completions reach.  No interrupt at all. */
	R.q[Q].vq.auto_used_event = false;
	fg_vq_set_used_event(&R.q[Q].vq, (uint16_t)(R.q[Q].vq.last_used_idx + 1000));
	for (unsigned int i = 0; i < N; i++)
		add_req(Q, &reqs[i], VIRTIO_BLK_T_IN, 4096 + (uint64_t)i * 8, 4096,
			1, true, 0);
	ck_assert(publish(Q));
	wait_used(Q, ents, N);
	check_done(ents, N, reqs, N, VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < N; i++)
		check_read_pat(&reqs[i]);
	settle(queue_io(Q));
	ck_assert_uint_eq(take_irqs(Q), 0);
	dev_stats(Q, &st2);
	ck_assert_uint_eq(st2.svc.kicks, 2);
	ck_assert_uint_eq(st2.svc.interrupts, st.svc.interrupts);
	ck_assert_uint_gt(st2.svc.suppressed, st.svc.suppressed);
	ck_assert_uint_eq(vpci_queue_interrupts(R.v.t, Q), irqs);
	free(reqs);
	rig_down();
}
END_TEST

/* ---- 3. a poll queue (VIRTIO_NO_VECTOR) ----------------------------------- */

START_TEST(poll_queue_no_vector)
{
	struct rig_opts o = { .vectors = { 0, 0, 0, VIRTIO_NO_VECTOR } };
	struct io_req reqs[8];
	struct used_ent ents[8];
	struct vpci_stats vs;
	struct virtio_blk_queue_stats st;

	rig_up(&o);
	drv_up(&o);
	ck_assert_int_eq(R.q[3].call_fd, -1);
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->live_irqfd), NQ - 1);
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->live_ioev), NQ);

	for (unsigned int i = 0; i < 8; i++)
		add_req(3, &reqs[i], i < 4 ? VIRTIO_BLK_T_IN : VIRTIO_BLK_T_OUT,
			2048 + (uint64_t)i * 32, 8192, 2, false, 0x30);
	ck_assert(publish(3));
	wait_used(3, ents, 8); /* polls the used ring */
	check_done(ents, 8, reqs, 8, VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < 8; i++) {
		if (i < 4)
			check_read_pat(&reqs[i]);
		else
			check_written(&reqs[i]);
	}
	settle_all();
	/* No eventfd of any queue was written. */
	for (unsigned int q = 0; q < NQ - 1; q++)
		ck_assert_uint_eq(take_irqs(q), 0);
	vpci_get_stats(R.v.t, &vs);
	ck_assert_uint_eq(vs.interrupts, 0);
	ck_assert_uint_eq(vs.interrupts_masked, 0);
	ck_assert_uint_eq(vpci_queue_interrupts(R.v.t, 3), 0);
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->msi_calls), 0);
	dev_stats(3, &st);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN] + st.blk.reqs[VBLK_STAT_OUT], 8);

	/* Queue 1, on the same I/O thread, still interrupts. */
	one_read(1, 10);
	settle_all();
	take_irqs(1);
	ck_assert_uint_ge(R.q[1].irqs, 1);
	vpci_get_stats(R.v.t, &vs);
	ck_assert_uint_eq(vs.interrupts, R.q[1].irqs);
	rig_down();
}
END_TEST

/* After a reset the device comes back: fresh rings, and every queue
 * serves again (request pools, engines and kick watches were reset). */
static void check_comes_back(const struct rig_opts *o)
{
	drv_up(o);
	for (unsigned int q = 0; q < NQ; q++)
		one_read(q, 6000 + q * 8);
}

/*
 * Wait until the device has popped the first @n requests of queue @q: it
 * asks for the next kick at avail index @n once it has (EVENT_IDX:
 * virtq_enable_notify after the pops).
 */
static void wait_popped(unsigned int q, uint16_t n)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (fg_vq_avail_event(&R.q[q].vq) != n) {
		ck_assert_msg(test_now_ms() < deadline,
			      "queue %u: requests never popped", q);
		usleep(100);
	}
}

/*
 * After a reset: each of the @n writes of @len bytes in @reqs on queue @q
 * got exactly one used entry, of length 1 (the status byte): done (OK, its
 * data in the image) or cancelled by the reset (IOERR, never acknowledged);
 * the queue's statistics agree.  Consumes the used entries.
 */
static void check_answered(unsigned int q, struct io_req *reqs, unsigned int n,
			   uint32_t len)
{
	struct drvq *d = &R.q[q];
	struct virtio_blk_queue_stats st;
	unsigned int ok = 0;

	dev_stats(q, &st);
	ck_assert(!st.svc.attached);
	ck_assert_uint_eq(fg_vq_used_idx(&d->vq), n);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_OUT], n);
	for (unsigned int i = 0; i < n; i++)
		reqs[i].seen = false;
	for (unsigned int e = 0; e < n; e++) {
		uint32_t id, used_len;
		bool found = false;

		ck_assert_int_eq(fg_vq_get_used(&d->vq, &id, &used_len), 1);
		ck_assert_uint_eq(used_len, 1);
		for (unsigned int i = 0; i < n && !found; i++)
			if (!reqs[i].seen && (uint32_t)reqs[i].r.head == id)
				reqs[i].seen = found = true;
		ck_assert_msg(found, "queue %u: used id %u matches no request", q, id);
	}
	ck_assert_uint_eq(fg_vq_used_pending(&d->vq), 0);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t status = fg_blk_status(&R.g, &reqs[i].r);

		if (status == VIRTIO_BLK_S_OK) {
			check_written(&reqs[i]);
			ok++;
		} else {
			ck_assert_uint_eq(status, VIRTIO_BLK_S_IOERR);
		}
	}
	ck_assert_uint_eq(st.blk.bytes_written, (uint64_t)ok * len);
	ck_assert_uint_eq(st.blk.cancelled, n - ok);
	ck_assert_uint_eq(st.blk.io_errors, n - ok);
}

/* ---- 4. reset with requests in flight ---------------------------------- */

START_TEST(reset_drains_in_flight)
{
	enum { N = 32, LEN = 64 * 1024, Q = 0 };
	struct rig_opts o = { 0 };
	struct io_req *reqs = calloc(N, sizeof(*reqs));
	struct drvq *d = &R.q[Q];
	uint8_t *used, *statuses[N];
	size_t used_len = 6 + 8 * QSIZE;

	ck_assert_ptr_nonnull(reqs);
	rig_up(&o);
	drv_up(&o);
	for (unsigned int i = 0; i < N; i++)
		add_req(Q, &reqs[i], VIRTIO_BLK_T_OUT, (uint64_t)i * (LEN / SECTOR),
			LEN, 4, i & 1, (uint8_t)(0x80 + i));
	ck_assert(publish(Q));
	wait_popped(Q, N);

	/* Reset: returns only once every popped request is answered: done
	 * (OK, its data in the image) or cancelled by the reset (IOERR,
	 * never acknowledged; check_blk_bounded covers cancellation). */
	COMMON_WR(STATUS, 0, 1);
	ck_assert_uint_eq(status_rd(), 0);
	/* The interrupts are unwired; the kicks stay with the BAR. */
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->live_ioev), NQ);
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->live_irqfd), 0);
	check_answered(Q, reqs, N, LEN);

	/* Poison every byte the device could still write: the used ring,
	 * the status bytes, the buffers. */
	used = gptr(d->vq.used_gpa, used_len);
	for (unsigned int i = 0; i < N; i++)
		statuses[i] = gptr(reqs[i].r.status_gpa, 1);
	memset(used, 0xa5, used_len);
	for (unsigned int i = 0; i < N; i++) {
		*statuses[i] = 0xa5;
		memset(gptr(reqs[i].data, LEN), 0xa5, LEN);
	}
	/* "A while": both threads go through full rounds, plus real time. */
	usleep(20 * 1000);
	settle_all();
	usleep(20 * 1000);
	settle_all();
	ck_assert(all_bytes(used, used_len, 0xa5));
	for (unsigned int i = 0; i < N; i++) {
		ck_assert_uint_eq(*statuses[i], 0xa5);
		ck_assert(all_bytes(gptr(reqs[i].data, LEN), LEN, 0xa5));
	}

	check_comes_back(&o);
	free(reqs);
	rig_down();
}
END_TEST

/*
 * The same with writes in flight on every queue, two queues per I/O thread:
 * the reset posts every detach before it waits, so the two detaches of one
 * thread may run one inside the other (a detach drains in a nested loop,
 * which may take the next call).  Each queue is answered in full all the
 * same, and the device comes back.
 */
START_TEST(reset_drains_every_queue)
{
	enum { N = 16, LEN = 16 * 1024 }; /* 1 MiB: below one_read's sectors */
	struct rig_opts o = { 0 };
	struct io_req *reqs = calloc(NQ * N, sizeof(*reqs));

	ck_assert_ptr_nonnull(reqs);
	rig_up(&o);
	drv_up(&o);
	for (unsigned int q = 0; q < NQ; q++) {
		for (unsigned int i = 0; i < N; i++)
			add_req(q, &reqs[q * N + i], VIRTIO_BLK_T_OUT,
				(uint64_t)(q * N + i) * (LEN / SECTOR), LEN, 2,
				false, (uint8_t)(q * N + i));
		publish(q);
	}
	for (unsigned int q = 0; q < NQ; q++)
		wait_popped(q, N);
	COMMON_WR(STATUS, 0, 1);
	ck_assert_uint_eq(status_rd(), 0);
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->live_irqfd), 0);
	for (unsigned int q = 0; q < NQ; q++)
		check_answered(q, &reqs[q * N], N, LEN);
	check_comes_back(&o);
	free(reqs);
	rig_down();
}
END_TEST

/* ---- 5. a malformed chain breaks one queue, the others keep going ------- */

START_TEST(malformed_chain_needs_reset)
{
	enum { BAD = 1 };
	struct drvq *d;
	uint64_t deadline, buf;
	struct virtio_blk_queue_stats st;
	struct vpci_stats vs;
	struct iothread_stats s1, s2;

	/* Busy polling on: a broken queue must not make its thread spin. */
	rig_up_default(200);
	d = &R.q[BAD];
	/* A two-descriptor loop: 0 -> 1 -> 0. */
	buf = fg_alloc(&R.g, 64, 16);
	fg_vq_set_desc(&d->vq, 0, buf, 16, VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&d->vq, 1, buf + 16, 16, VRING_DESC_F_NEXT, 0);
	fg_vq_add_raw_head(&d->vq, 0);
	/* No assertion on the kick: the thread may be inside its 200 us
	 * busy-poll window (after the round that attached the queues), pop
	 * the head between our avail->idx store and our avail_event load,
	 * and so have moved avail_event on already -- no kick is then wanted,
	 * and NEEDS_RESET below is the proof that the chain was seen. */
	publish(BAD);
	deadline = test_now_ms() + WAIT_MS;
	while (!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET)) {
		ck_assert_msg(test_now_ms() < deadline, "NEEDS_RESET never set");
		usleep(100);
	}
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	/* Configuration-change interrupt: ISR bit 1 and an MSI on the
	 * config vector.  The device sets the status bit first, then ISR,
	 * then sends the MSI (vpci_set_needs_reset()): a driver that sees
	 * the status bit may be early for the rest, so wait for the MSI,
	 * after which ISR must be set (a CI run on the arm64 kernel read
	 * ISR in between, 2026-12-01). */
	while (fv_kvm_get(R.v.kvm, &R.v.kvm->msi_calls) < 1) {
		ck_assert_msg(test_now_ms() < deadline, "no config interrupt after NEEDS_RESET");
		usleep(100);
	}
	ck_assert_uint_eq(mr(R.v.isr, 1) & VIRTIO_PCI_ISR_CONFIG, VIRTIO_PCI_ISR_CONFIG);
	vpci_get_stats(R.v.t, &vs);
	ck_assert_uint_eq(vs.needs_reset, 1);
	dev_stats(BAD, &st);
	ck_assert_uint_eq(st.blk.proto_errors, 1);
	ck_assert_uint_eq(fg_vq_used_idx(&d->vq), 0);

	/* The broken queue's thread goes to sleep instead of busy-polling
	 * the chain it cannot consume. */
	settle(queue_io(BAD));
	iothread_get_stats(queue_io(BAD), &s1);
	usleep(50 * 1000);
	iothread_get_stats(queue_io(BAD), &s2);
	ck_assert_uint_eq(s2.poll_hits, s1.poll_hits);

	/* Every other queue, including queue 3 on the same thread, works. */
	for (unsigned int q = 0; q < NQ; q++)
		if (q != BAD)
			one_read(q, 300 + q * 8);
	ck_assert_uint_eq(fg_vq_used_idx(&d->vq), 0);
	dev_stats(BAD, &st);
	ck_assert_uint_eq(st.blk.proto_errors, 1);
	vpci_get_stats(R.v.t, &vs);
	ck_assert_uint_eq(vs.needs_reset, 1);
	rig_down();
}
END_TEST

/* ---- 6. capacity tail, out-of-capacity and short reads ------------------ */

START_TEST(tail_and_short_reads)
{
	const uint64_t size = 512 * 1024 + 512; /* multiple of 512, not 4096 */
	struct rig_opts o = { .img_size = size };
	struct io_req r[5];
	struct used_ent ents[5];
	struct virtio_blk_queue_stats st;
	struct stat sb;
	const uint8_t *p;
	uint64_t eof;

	rig_up(&o);
	drv_up(&o); /* checks capacity == 1025 sectors */

	/* The last sector reads and writes fine. */
	add_req(0, &r[0], VIRTIO_BLK_T_IN, 1024, 512, 1, false, 0);
	add_req(0, &r[1], VIRTIO_BLK_T_OUT, 1024, 512, 1, false, 0x77);
	/* Not ordered against each other: the read may see either. */
	publish(0);
	wait_used(0, ents, 2);
	check_done(ents, 2, r, 2, VIRTIO_BLK_S_OK);
	check_written(&r[1]);

	/* Past capacity: IOERR, nothing transferred, file size unchanged. */
	add_req(0, &r[0], VIRTIO_BLK_T_IN, 1024, 4096, 1, false, 0);
	add_req(0, &r[1], VIRTIO_BLK_T_IN, 0, 1024 * 1024, 4, false, 0);
	add_req(0, &r[2], VIRTIO_BLK_T_OUT, 1025, 512, 1, false, 0x11);
	add_req(0, &r[3], VIRTIO_BLK_T_OUT, 1024, 1024, 2, true, 0x12);
	publish(0);
	wait_used(0, ents, 4);
	check_done(ents, 4, r, 4, VIRTIO_BLK_S_IOERR);
	p = gptr(r[0].data, 4096);
	ck_assert(all_bytes(p, 4096, 0xee));
	ck_assert_int_eq(fstat(R.img, &sb), 0);
	ck_assert_uint_eq((uint64_t)sb.st_size, size);
	dev_stats(0, &st);
	ck_assert_uint_eq(st.blk.io_errors, 4);

	/* The file shrinks under the device to an EOF that is not even
	 * sector-aligned: reads across it are short (the engine resubmits
	 * the rest, then sees EOF) and the tail reads as zeros. */
	eof = size - 40000; /* 484800 */
	ck_assert_int_eq(ftruncate(R.img, (off_t)eof), 0);
	/* The last 64 KiB of capacity, in 4 segments from 459264: EOF
	 * 25536 bytes in, inside segment 1. */
	add_req(0, &r[0], VIRTIO_BLK_T_IN, 897, 65536, 4, false, 0);
	/* 8 KiB from 484352: 448 bytes, then EOF inside segment 0. */
	add_req(0, &r[1], VIRTIO_BLK_T_IN, 946, 8192, 2, true, 0);
	/* Entirely past EOF (but inside capacity): all zeros. */
	add_req(0, &r[2], VIRTIO_BLK_T_IN, 1020, 2048, 2, false, 0);
	publish(0);
	wait_used(0, ents, 3);
	check_done(ents, 3, r, 3, VIRTIO_BLK_S_OK);
	for (unsigned int k = 0; k < 3; k++) {
		uint64_t off = r[k].sector * SECTOR;

		p = gptr(r[k].data, r[k].len);
		for (uint32_t i = 0; i < r[k].len; i++) {
			uint8_t want = off + i < eof ? pat(off + i) : 0;

			if (p[i] != want)
				ck_abort_msg("req %u byte %u: 0x%02x, want 0x%02x",
					     k, i, p[i], want);
		}
	}
	dev_stats(0, &st);
	ck_assert_uint_eq(st.blk.io_errors, 4);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 1 + 2 + 3);
	rig_down();
}
END_TEST

/* ---- 7. masked vector: pending bit, delivered on unmask ----------------- */

START_TEST(masked_vector_pending)
{
	enum { Q = 0 };
	struct io_req r[4];
	struct used_ent ents[4];
	unsigned int vec;
	struct vpci_stats vs;
	struct virtio_blk_queue_stats st;
	eventfd_t v;

	rig_up_default(0);
	vec = R.q[Q].vector;
	msix_mask(vec, true);
	for (unsigned int i = 0; i < 4; i++)
		add_req(Q, &r[i], VIRTIO_BLK_T_IN, 64 + (uint64_t)i * 8, 4096, 1,
			false, 0);
	publish(Q);
	wait_used(Q, ents, 4);
	check_done(ents, 4, r, 4, VIRTIO_BLK_S_OK);
	settle(queue_io(Q));
	ck_assert_int_lt(eventfd_read(R.q[Q].call_fd, &v), 0); /* not sent */
	ck_assert(pba_bit(vec));
	vpci_get_stats(R.v.t, &vs);
	ck_assert_uint_ge(vs.interrupts_masked, 1);
	ck_assert_uint_eq(vs.interrupts, 0);
	dev_stats(Q, &st);
	ck_assert_uint_ge(st.svc.interrupts, 1); /* the device did raise it */

	/* Unmask: delivered through the queue's irqfd, exactly once. */
	msix_mask(vec, false);
	ck_assert_uint_eq(take_irqs(Q), 1);
	ck_assert(!pba_bit(vec));
	ck_assert_uint_eq(take_irqs(Q), 0);

	/* Unmasked again: the next completion interrupts directly. */
	one_read(Q, 200);
	settle(queue_io(Q));
	take_irqs(Q);
	ck_assert_uint_ge(R.q[Q].irqs, 2);
	rig_down();
}
END_TEST

/* ---- 8. busy polling -------------------------------------------------- */

struct post {
	unsigned int q;
	bool kick_wanted;
};

/* Runs on the queue's I/O thread: the "guest" makes requests available
 * right when the thread is awake, just before it would go to sleep, and
 * does not kick (as if its kick were still on the way). */
static int post_no_kick(void *opaque)
{
	struct post *p = opaque;

	p->kick_wanted = fg_vq_publish(&R.q[p->q].vq);
	return 0;
}

static void busy_poll_case(uint32_t poll_us)
{
	enum { Q = 0, N = 4 };
	struct io_req r[N];
	struct used_ent ents[N];
	struct iothread_stats s0, s1;
	struct virtio_blk_queue_stats st;
	struct post p = { .q = Q };

	rig_up_default(poll_us);
	one_read(Q, 8); /* a kick's batch */
	settle(queue_io(Q));
	iothread_get_stats(queue_io(Q), &s0);

	for (unsigned int i = 0; i < N; i++)
		add_req(Q, &r[i], VIRTIO_BLK_T_IN, 100 + (uint64_t)i * 8, 4096, 1,
			false, 0);
	ck_assert_int_eq(iothread_call_sync(queue_io(Q), post_no_kick, &p), 0);
	ck_assert(p.kick_wanted); /* the device did ask for a kick */
	if (poll_us) {
		/* Served without a kick, by the poller. */
		wait_used(Q, ents, N);
		check_done(ents, N, r, N, VIRTIO_BLK_S_OK);
		settle(queue_io(Q));
		iothread_get_stats(queue_io(Q), &s1);
		ck_assert_uint_gt(s1.poll_hits, s0.poll_hits);
		dev_stats(Q, &st);
		ck_assert_uint_eq(st.svc.kicks, 1);
	} else {
		/* Nobody looks at the ring until the kick arrives. */
		settle(queue_io(Q));
		ck_assert_uint_eq(fg_vq_used_pending(&R.q[Q].vq), 0);
		kick(Q);
		wait_used(Q, ents, N);
		check_done(ents, N, r, N, VIRTIO_BLK_S_OK);
		settle(queue_io(Q));
		for (unsigned int i = 0; i < NIO; i++) {
			iothread_get_stats(R.io[i], &s1);
			ck_assert_uint_eq(s1.poll_hits, 0);
		}
		dev_stats(Q, &st);
		ck_assert_uint_eq(st.svc.kicks, 2);
	}
	for (unsigned int i = 0; i < N; i++)
		check_read_pat(&r[i]);
	rig_down();
}

START_TEST(busy_poll_serves_without_kick)
{
	busy_poll_case(200);
}
END_TEST

START_TEST(no_busy_poll_when_off)
{
	busy_poll_case(0);
}
END_TEST

/* ---- 9. teardown ------------------------------------------------------- */

static unsigned int count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	unsigned int n = 0;

	ck_assert_ptr_nonnull(dir);
	while (readdir(dir))
		n++;
	closedir(dir);
	return n;
}

START_TEST(teardown_leaves_nothing)
{
	unsigned int before = count_fds();
	struct io_req r[NQ][8];

	rig_up_default(50);
	for (unsigned int q = 0; q < NQ; q++)
		one_read(q, 40 + q * 8);
	/* Destroy with writes in flight on every queue: vpci_destroy drains. */
	for (unsigned int q = 0; q < NQ; q++) {
		for (unsigned int i = 0; i < 8; i++)
			add_req(q, &r[q][i], VIRTIO_BLK_T_OUT,
				(uint64_t)(q * 8 + i) * 64, 32768, 2, false, 1);
		publish(q);
	}
	rig_down();
	ck_assert_uint_eq(count_fds(), before);

	/* Never started (no DRIVER_OK). */
	{
		struct rig_opts o = { 0 };

		rig_up(&o);
		rig_down();
	}
	ck_assert_uint_eq(count_fds(), before);
}
END_TEST

/* ---- 10. a start that fails on one I/O thread ----------------------------- */

/*
 * The queues attach in parallel (virtio_blk_start() posts every attach, then
 * waits): when one I/O thread cannot take its queues -- its table of
 * registered files is full -- DRIVER_OK fails with NEEDS_RESET and the
 * queues that did attach on the other thread are detached again, nothing
 * left wired or watched.  Once the thread has room, a reset and a new
 * bring-up serve every queue.
 */
START_TEST(start_fails_on_one_thread)
{
	struct rig_opts o = { 0 };
	struct iothread_file f[64];
	struct virtio_blk_queue_stats st;
	struct iothread_stats ist;
	struct io_req r;
	struct rlimit rl, low;
	unsigned int n = 0, files0;
	uint8_t status;

	/* Rings sized by RLIMIT_NOFILE (iothread-ring.c): 64 slots each. */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	rig_up(&o);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	iothread_get_stats(R.io[1], &ist);
	if (!ist.files_max) {
		fprintf(stderr, "start_fails_on_one_thread: SKIPPED: the kernel's "
				"io_uring has no registered files\n");
		rig_down();
		return;
	}
	iothread_get_stats(R.io[0], &ist);
	files0 = ist.files;
	ck_assert_uint_eq(ist.files_max, 64);
	memset(f, 0, sizeof(f));
	while (n < 64 && iothread_file_get(R.io[1], R.img, &f[n]) == 0)
		n++;
	ck_assert_uint_lt(n, 64);

	/* Queues 1 and 3 live on R.io[1]: their attach fails. */
	status = drv_try_up(&o);
	ck_assert(status & VIRTIO_CONFIG_S_NEEDS_RESET);
	settle_all();
	/* Queues 0 and 2 did attach on R.io[0] -- each registered its kick
	 * eventfd there, kept until the device goes -- queue 2 too, whose
	 * attach was waited for after queue 1's failure. */
	iothread_get_stats(R.io[0], &ist);
	ck_assert_uint_eq(ist.files, files0 + 2);
	for (unsigned int q = 0; q < NQ; q++) {
		dev_stats(q, &st);
		ck_assert_msg(!st.svc.attached, "queue %u left attached", q);
	}
	ck_assert_uint_eq(fv_kvm_get(R.v.kvm, &R.v.kvm->live_irqfd), 0);
	/* Queue 0 attached and was detached: its kick is not served. */
	add_req(0, &r, VIRTIO_BLK_T_IN, 0, 4096, 1, false, 0);
	fg_vq_publish(&R.q[0].vq);
	R.q[0].kick_fd = fv_kvm_kick_fd(R.v.kvm, R.q[0].notify); /* placed with the BAR */
	ck_assert_int_ge(R.q[0].kick_fd, 0);
	kick(0);
	settle_all();
	ck_assert_uint_eq(fg_vq_used_idx(&R.q[0].vq), 0);

	for (unsigned int i = 0; i < n; i++)
		iothread_file_put(R.io[1], &f[i]);
	drv_up(&o); /* resets first */
	for (unsigned int q = 0; q < NQ; q++) {
		dev_stats(q, &st);
		ck_assert(st.svc.attached);
		one_read(q, 8 + q * 8);
	}
	rig_down();
}
END_TEST

static Suite *blk_iothread_suite(void)
{
	Suite *s = suite_create("blk-iothread");
	TCase *tc = tcase_create("threaded data path");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rw_every_queue);
	tcase_add_test(tc, qd64_event_idx);
	tcase_add_test(tc, poll_queue_no_vector);
	tcase_add_test(tc, reset_drains_in_flight);
	tcase_add_test(tc, reset_drains_every_queue);
	tcase_add_test(tc, malformed_chain_needs_reset);
	tcase_add_test(tc, tail_and_short_reads);
	tcase_add_test(tc, masked_vector_pending);
	tcase_add_test(tc, busy_poll_serves_without_kick);
	tcase_add_test(tc, no_busy_poll_when_off);
	tcase_add_test(tc, teardown_leaves_nothing);
	tcase_add_test(tc, start_fails_on_one_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(blk_iothread_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
