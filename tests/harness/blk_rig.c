/* SPDX-License-Identifier: MIT */
/* See blk_rig.h. */
#include "blk_rig.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "pci/msix.h"
#include "test_clock.h"

#define DRV_FEATURES                                                        \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |    \
	 (1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << VIRTIO_BLK_F_SEG_MAX) | \
	 (1ull << VIRTIO_BLK_F_BLK_SIZE) | (1ull << VIRTIO_BLK_F_MQ) |         \
	 (1ull << VIRTIO_BLK_F_FLUSH) | (1ull << VIRTIO_BLK_F_CONFIG_WCE))
#define RING_FEATURES \
	((1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_RING_F_INDIRECT_DESC))

uint8_t br_pat(uint64_t off)
{
	return (uint8_t)(off ^ (off >> 9) * 31 ^ (off >> 17) ^ 0x5a);
}

static int fill_image(int fd, uint64_t size)
{
	static uint8_t buf[65536];

	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = (size_t)MIN((uint64_t)sizeof(buf), size - off);

		for (size_t i = 0; i < n; i++)
			buf[i] = br_pat(off + i);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			return -EIO;
	}
	return 0;
}

static uint64_t msg_addr(unsigned int v)
{
	return 0xfee00000ull | (uint64_t)(v & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v)
{
	return 0x4000u + v;
}

int br_drv_up(struct br *r)
{
	uint64_t offered;
	int ret;

	ret = fv_negotiate(&r->v, DRV_FEATURES, &offered);
	if (ret)
		return ret;
	fv_msix_ctrl(&r->v, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v < r->v.nr_vectors; v++) {
		fv_msix_write(&r->v, v, msg_addr(v), msg_data(v));
		fv_msix_mask(&r->v, v, false);
	}
	fv_msix_ctrl(&r->v, MSIX_CTRL_ENABLE);
	FV_COMMON_WR(&r->v, MSIX, 0, 2);
	for (unsigned int q = 0; q < r->o.nq; q++) {
		struct br_q *d = &r->q[q];
		uint16_t vec = (uint16_t)(q + 1);

		if (d->inited)
			fg_vq_destroy(&d->vq);
		d->inited = false;
		ret = fg_vq_init(&r->g, &d->vq, r->o.queue_size, RING_FEATURES);
		if (ret)
			return ret;
		d->inited = true;
		FV_COMMON_WR(&r->v, Q_SELECT, q, 2);
		if (fv_queue_setup(&r->v, q, r->o.queue_size, d->vq.desc_gpa,
				   d->vq.avail_gpa, d->vq.used_gpa, vec) != vec)
			return -EIO;
		d->notify = fv_notify_addr(&r->v, q);
	}
	fv_status_add(&r->v, VIRTIO_CONFIG_S_DRIVER_OK);
	if (!(fv_status(&r->v) & VIRTIO_CONFIG_S_DRIVER_OK) ||
	    (fv_status(&r->v) & VIRTIO_CONFIG_S_NEEDS_RESET))
		return -EIO;
	for (unsigned int q = 0; q < r->o.nq; q++) {
		struct br_q *d = &r->q[q];

		d->kick_fd = fv_kvm_kick_fd(r->v.kvm, d->notify);
		d->call_fd = fv_kvm_call_fd(r->v.kvm, msg_addr(q + 1), msg_data(q + 1));
		if (d->kick_fd < 0 || d->call_fd < 0)
			return -EIO;
	}
	return 0;
}

int br_up(struct br *r, const struct br_opts *o)
{
	struct vblk *blk;
	struct vblk_options bo = { 0 };
	struct virtio_blk_params dp = { 0 };
	struct vpci_params vp = { 0 };
	int ret;

	memset(r, 0, sizeof(*r));
	r->img = -1;
	r->o = *o;
	if (!r->o.ram_size)
		r->o.ram_size = 32ull << 20;
	if (!r->o.img_size)
		r->o.img_size = 4ull << 20;
	if (!r->o.queue_size)
		r->o.queue_size = 128;
	if (!r->o.nq)
		r->o.nq = 1;
	if (!r->o.nio)
		r->o.nio = 1;
	if (!r->o.ring_entries)
		r->o.ring_entries = 64;
	if (r->o.nq > BR_MAX_Q || r->o.nio > BR_MAX_IO)
		return -EINVAL;

	ret = fg_init(&r->g, r->o.ram_size);
	if (ret)
		return ret;
	ret = fv_init(&r->v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &r->g.mem);
	if (ret)
		return ret;
	r->img = fg_tmp_image(r->o.img_size);
	if (r->img < 0)
		return r->img;
	ret = r->o.sparse ? 0 : fill_image(r->img, r->o.img_size);
	if (ret)
		return ret;
	for (unsigned int i = 0; i < r->o.nio; i++) {
		ret = iothread_create(i, r->o.ring_entries, &r->io[i]);
		if (ret)
			return ret;
		ret = iothread_start(r->io[i]);
		if (ret)
			return ret;
	}
	bo.fd = r->img;
	bo.num_queues = (uint16_t)r->o.nq;
	bo.queue_size = r->o.queue_size;
	ret = vblk_open(&bo, &blk);
	if (ret)
		return ret;
	dp.blk = blk;
	dp.iothreads = r->io;
	dp.nr_iothreads = r->o.nio;
	ret = virtio_blk_create(&dp, &r->dev);
	if (ret) {
		vblk_close(blk);
		return ret;
	}
	r->blk = blk;
	vp = fv_params(&r->v);
	vp.ops = virtio_blk_ops();
	vp.dev = r->dev;
	vp.num_queues = (uint16_t)r->o.nq;
	vp.max_queue_size = r->o.queue_size;
	vp.ioeventfd_any_length = true;
	ret = fv_create(&r->v, &vp);
	if (ret)
		return ret;
	return br_drv_up(r);
}

void br_down(struct br *r)
{
	/* The transport first: it stops (drains) the device. */
	vpci_destroy(r->v.t);
	r->v.t = NULL;
	virtio_blk_destroy(r->dev);
	r->dev = NULL;
	for (unsigned int i = 0; i < BR_MAX_IO; i++)
		iothread_destroy(r->io[i]);
	fv_destroy(&r->v);
	for (unsigned int q = 0; q < BR_MAX_Q; q++)
		if (r->q[q].inited)
			fg_vq_destroy(&r->q[q].vq);
	fg_destroy(&r->g);
	if (r->img >= 0)
		close(r->img);
	memset(r, 0, sizeof(*r));
	r->img = -1;
}

struct vblk *br_blk(struct br *r)
{
	return r->blk;
}

struct iothread *br_queue_io(struct br *r, unsigned int q)
{
	return r->io[q % r->o.nio];
}

void br_reset(struct br *r)
{
	FV_COMMON_WR(&r->v, STATUS, 0, 1);
	if (fv_status(&r->v) != 0) {
		fprintf(stderr, "blk_rig: status not 0 after a reset\n");
		abort();
	}
}

void br_kick(struct br *r, unsigned int q)
{
	if (eventfd_write(r->q[q].kick_fd, 1)) {
		perror("blk_rig: kick");
		abort();
	}
}

void br_publish(struct br *r, unsigned int q)
{
	if (fg_vq_publish(&r->q[q].vq))
		br_kick(r, q);
}

unsigned int br_wait_used(struct br *r, unsigned int q, uint32_t *ids,
			  uint32_t *lens, unsigned int n, unsigned int timeout_ms)
{
	struct br_q *d = &r->q[q];
	double deadline = test_now_ms_f() + timeout_ms;
	unsigned int got = 0;

	for (;;) {
		uint32_t id, len;
		struct pollfd p = { .fd = d->call_fd, .events = POLLIN };
		eventfd_t v;

		while (got < n && fg_vq_get_used(&d->vq, &id, &len) == 1) {
			if (ids)
				ids[got] = id;
			if (lens)
				lens[got] = len;
			got++;
		}
		if (got == n || test_now_ms_f() >= deadline)
			return got;
		if (poll(&p, 1, 5) == 1)
			(void)eventfd_read(d->call_fd, &v);
	}
}

int br_wait_popped(struct br *r, unsigned int q, unsigned int timeout_ms)
{
	struct br_q *d = &r->q[q];
	double deadline = test_now_ms_f() + timeout_ms;

	while (fg_vq_avail_event(&d->vq) != d->vq.avail_idx) {
		if (test_now_ms_f() >= deadline)
			return -ETIMEDOUT;
		usleep(100);
	}
	return 0;
}
