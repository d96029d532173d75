/* SPDX-License-Identifier: MIT */
/*
 * devbench target "vhost": the simulated driver on rings served by another
 * process, a vhost-user-blk back end (qemu-storage-daemon, minivmm-blkd),
 * through the minimal vhost-user front end of tests/harness/vu_front.c:
 * MQ, REPLY_ACK and CONFIG when offered, the guest-RAM memfd as one region
 * at gpa 0, per queue NUM/BASE/ADDR/KICK/CALL/ENABLE.  Teardown:
 * GET_VRING_BASE per queue (stops the ring), then close the socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "devbench.h"
#include "vu_front.h"

#define BIT(n) (1ull << (n))
#define MAXQ 64

static struct {
	struct vuf f;
	unsigned int nq;
	int kick[MAXQ], call[MAXQ];
} V = { .f.sock = -1 };

static int vh_setup(const struct db_cfg *c, struct db_ram *ram,
		    struct db_queue *q, volatile int *stop)
{
	uint64_t want, cap = c->capacity;
	uint64_t base = (uint64_t)(uintptr_t)ram->base;
	int ret;

	for (unsigned int i = 0; i < MAXQ; i++)
		V.kick[i] = V.call[i] = -1;
	if (c->queues > MAXQ)
		return -EINVAL;
	/* The back end may still be starting, or busy with the previous
	 * client. */
	if ((ret = vuf_connect(&V.f, c->sock, 5000)) ||
	    (ret = vuf_init(&V.f, BIT(VHOST_USER_PROTOCOL_F_MQ) |
					  BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
					  BIT(VHOST_USER_PROTOCOL_F_CONFIG))))
		return ret;
	if (V.f.queue_num < c->queues) {
		fprintf(stderr, "devbench: back end has %llu queues, want %u\n",
			(unsigned long long)V.f.queue_num, c->queues);
		return -EINVAL;
	}
	if (!cap && (V.f.protocol & BIT(VHOST_USER_PROTOCOL_F_CONFIG))) {
		/* Only the capacity: back ends refuse sizes beyond their own
		 * (older) struct virtio_blk_config. */
		if ((ret = vuf_get_config(&V.f, 0, 8, &cap)))
			return ret;
		cap *= 512; /* le64 sectors */
	}
	if (!cap) {
		fprintf(stderr, "devbench: vhost-user: capacity unknown (--capacity)\n");
		return -EINVAL;
	}
	want = BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_INDIRECT_DESC);
	if (c->event_idx)
		want |= BIT(VIRTIO_RING_F_EVENT_IDX);
	if ((V.f.features & want) != want) {
		fprintf(stderr, "devbench: back end lacks features %#llx\n",
			(unsigned long long)(want & ~V.f.features));
		return -ENOTSUP;
	}
	if ((ret = vuf_set_features(&V.f, want)) ||
	    (ret = vuf_set_mem_one(&V.f, ram->fd, ram->base, ram->size)))
		return ret;
	V.nq = c->queues;
	for (unsigned int i = 0; i < c->queues; i++) {
		if ((ret = db_queue_init(&q[i], ram, i, (uint16_t)c->queue_size, c->qd,
					 cap, c->event_idx, stop)))
			return ret;
		V.kick[i] = q[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		V.call[i] = q[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (V.kick[i] < 0 || V.call[i] < 0)
			return -errno;
		if ((ret = vuf_ring_setup(&V.f, i, c->queue_size, 0, base + q[i].desc_gpa,
					  base + q[i].avail_gpa, base + q[i].used_gpa,
					  V.kick[i], V.call[i])) ||
		    (ret = vuf_ring_enable(&V.f, i, true)))
			return ret;
	}
	return 0;
}

static void vh_teardown(void)
{
	for (unsigned int i = 0; i < V.nq && V.f.sock >= 0; i++) {
		uint32_t b;

		if (vuf_get_vring_base(&V.f, i, &b))
			break;
	}
	vuf_close(&V.f);
	for (unsigned int i = 0; i < MAXQ; i++) {
		if (V.kick[i] >= 0)
			close(V.kick[i]);
		if (V.call[i] >= 0)
			close(V.call[i]);
	}
}

const struct db_target db_vhost_target = {
	.setup = vh_setup,
	.teardown = vh_teardown,
};
