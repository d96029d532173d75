/* SPDX-License-Identifier: MIT */
/*
 * devbench target "vhost": a minimal vhost-user front end (the part of QEMU
 * that talks to a vhost-user-blk back end such as qemu-storage-daemon), so
 * the same simulated driver runs on rings served by another process.
 *
 * Protocol (docs/interop/vhost-user.rst): SET_OWNER, GET_FEATURES,
 * GET/SET_PROTOCOL_FEATURES (MQ, REPLY_ACK, CONFIG when offered),
 * GET_QUEUE_NUM, GET_CONFIG (capacity), SET_FEATURES (VERSION_1,
 * INDIRECT_DESC, EVENT_IDX on request, PROTOCOL_FEATURES), SET_MEM_TABLE
 * (the guest-RAM memfd passed with SCM_RIGHTS, one region at gpa 0), then
 * per queue SET_VRING_NUM / BASE / ADDR / KICK / CALL / ENABLE.  Ring
 * addresses are front-end virtual addresses, as in QEMU.  Teardown:
 * GET_VRING_BASE per queue (stops the ring), then close the socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "devbench.h"

enum {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_SET_MEM_TABLE = 5,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_GET_CONFIG = 24,
};

#define VU_VERSION 0x1u
#define VU_REPLY 0x4u
#define VU_NEED_REPLY 0x8u
#define VU_F_PROTOCOL_FEATURES 30
#define VU_PF_MQ 0
#define VU_PF_REPLY_ACK 3
#define VU_PF_CONFIG 9
#define MAXQ 64

struct vu_hdr {
	uint32_t request, flags, size;
} __attribute__((packed));

struct vu_state {
	uint32_t index, num;
};

struct vu_addr {
	uint32_t index, flags;
	uint64_t desc, used, avail, log;
};

struct vu_region {
	uint64_t gpa, size, uaddr, mmap_offset;
};

struct vu_mem {
	uint32_t nregions, padding;
	struct vu_region r[1];
};

struct vu_config {
	uint32_t offset, size, flags;
	uint8_t data[256];
};

static struct {
	int sock;
	bool reply_ack;
	unsigned int nq;
	int kick[MAXQ], call[MAXQ];
} V = { .sock = -1 };

static int vu_send(uint32_t req, const void *payload, uint32_t size,
		   const int *fds, unsigned int nfds, uint32_t extra_flags)
{
	struct vu_hdr h = { req, VU_VERSION | extra_flags, size };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, size } };
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(V.sock, &m, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)(sizeof(h) + size) ? 0 : -EIO;
}

static int read_full(void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(V.sock, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

/* Read the reply to @req into @payload (at most @max bytes). */
static int vu_recv(uint32_t req, void *payload, uint32_t max)
{
	struct vu_hdr h;
	uint8_t junk[512];
	int ret;

	if ((ret = read_full(&h, sizeof(h))))
		return ret;
	if (h.request != req || !(h.flags & VU_REPLY) || h.size > sizeof(junk)) {
		fprintf(stderr, "devbench: vhost-user: bad reply %u (flags %#x size %u) to %u\n",
			h.request, h.flags, h.size, req);
		return -EPROTO;
	}
	if ((ret = read_full(junk, h.size)))
		return ret;
	memcpy(payload, junk, h.size < max ? h.size : max);
	return (int)h.size;
}

static int vu_get_u64(uint32_t req, uint64_t *v)
{
	int ret = vu_send(req, NULL, 0, NULL, 0, 0);

	if (ret)
		return ret;
	ret = vu_recv(req, v, sizeof(*v));
	return ret < 0 ? ret : ret == 8 ? 0 : -EPROTO;
}

/* A message without a reply of its own: with REPLY_ACK ask for one. */
static int vu_set(uint32_t req, const void *payload, uint32_t size,
		  const int *fds, unsigned int nfds)
{
	uint64_t ack = 0;
	int ret = vu_send(req, payload, size, fds, nfds,
			  V.reply_ack ? VU_NEED_REPLY : 0);

	if (ret || !V.reply_ack)
		return ret;
	ret = vu_recv(req, &ack, sizeof(ack));
	if (ret < 0)
		return ret;
	if (ack) {
		fprintf(stderr, "devbench: vhost-user: request %u refused (%llu)\n",
			req, (unsigned long long)ack);
		return -EIO;
	}
	return 0;
}

static int vh_setup(const struct db_cfg *c, struct db_ram *ram,
		    struct db_queue *q, volatile int *stop)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t f = 0, pf = 0, qnum = 0, want, cap = c->capacity;
	int ret;

	for (unsigned int i = 0; i < MAXQ; i++)
		V.kick[i] = V.call[i] = -1;
	if (c->queues > MAXQ || strlen(c->sock) >= sizeof(sa.sun_path))
		return -EINVAL;
	strcpy(sa.sun_path, c->sock);
	V.sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (V.sock < 0)
		return -errno;
	for (int tries = 0; connect(V.sock, (struct sockaddr *)&sa, sizeof(sa)); tries++) {
		if (tries > 50)
			return -errno;
		usleep(100000); /* back end still starting, or busy with the
				 * previous client */
	}
	if ((ret = vu_send(VU_SET_OWNER, NULL, 0, NULL, 0, 0)) ||
	    (ret = vu_get_u64(VU_GET_FEATURES, &f)))
		return ret;
	if (f & (1ull << VU_F_PROTOCOL_FEATURES)) {
		if ((ret = vu_get_u64(VU_GET_PROTOCOL_FEATURES, &pf)))
			return ret;
		pf &= (1ull << VU_PF_MQ) | (1ull << VU_PF_REPLY_ACK) |
		      (1ull << VU_PF_CONFIG);
		if ((ret = vu_send(VU_SET_PROTOCOL_FEATURES, &pf, 8, NULL, 0, 0)))
			return ret;
		V.reply_ack = pf & (1ull << VU_PF_REPLY_ACK);
	}
	if (pf & (1ull << VU_PF_MQ)) {
		if ((ret = vu_get_u64(VU_GET_QUEUE_NUM, &qnum)))
			return ret;
		if (qnum < c->queues) {
			fprintf(stderr, "devbench: back end has %llu queues, want %u\n",
				(unsigned long long)qnum, c->queues);
			return -EINVAL;
		}
	} else if (c->queues > 1) {
		return -ENOTSUP;
	}
	if (!cap && (pf & (1ull << VU_PF_CONFIG))) {
		/* Only the capacity: back ends refuse sizes beyond their own
		 * (older) struct virtio_blk_config. */
		struct vu_config cfg = { 0, 8, 0, { 0 } };

		if ((ret = vu_send(VU_GET_CONFIG, &cfg, 12 + cfg.size, NULL, 0, 0)))
			return ret;
		if ((ret = vu_recv(VU_GET_CONFIG, &cfg, sizeof(cfg))) < 20)
			return ret < 0 ? ret : -EPROTO;
		memcpy(&cap, cfg.data, 8); /* capacity, le64 sectors */
		cap *= 512;
	}
	if (!cap) {
		fprintf(stderr, "devbench: vhost-user: capacity unknown (--capacity)\n");
		return -EINVAL;
	}
	want = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	if (c->event_idx)
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if ((f & want) != want) {
		fprintf(stderr, "devbench: back end lacks features %#llx\n",
			(unsigned long long)(want & ~f));
		return -ENOTSUP;
	}
	want |= f & (1ull << VU_F_PROTOCOL_FEATURES);
	if ((ret = vu_set(VU_SET_FEATURES, &want, 8, NULL, 0)))
		return ret;
	{
		struct vu_mem m = { 1, 0, { { 0, ram->size, (uint64_t)(uintptr_t)ram->base, 0 } } };

		if ((ret = vu_set(VU_SET_MEM_TABLE, &m, sizeof(m), &ram->fd, 1)))
			return ret;
	}
	V.nq = c->queues;
	for (unsigned int i = 0; i < c->queues; i++) {
		uint64_t base = (uint64_t)(uintptr_t)ram->base;
		struct vu_state num = { i, c->queue_size }, vbase = { i, 0 }, en = { i, 1 };
		struct vu_addr a;
		uint64_t idx = i;

		if ((ret = db_queue_init(&q[i], ram, i, (uint16_t)c->queue_size, c->qd,
					 cap, c->event_idx, stop)))
			return ret;
		V.kick[i] = q[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		V.call[i] = q[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (V.kick[i] < 0 || V.call[i] < 0)
			return -errno;
		a = (struct vu_addr){ i, 0, base + q[i].desc_gpa, base + q[i].used_gpa,
				      base + q[i].avail_gpa, 0 };
		if ((ret = vu_set(VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0)) ||
		    (ret = vu_set(VU_SET_VRING_BASE, &vbase, sizeof(vbase), NULL, 0)) ||
		    (ret = vu_set(VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0)) ||
		    (ret = vu_set(VU_SET_VRING_KICK, &idx, 8, &V.kick[i], 1)) ||
		    (ret = vu_set(VU_SET_VRING_CALL, &idx, 8, &V.call[i], 1)))
			return ret;
		if ((f & (1ull << VU_F_PROTOCOL_FEATURES)) &&
		    (ret = vu_set(VU_SET_VRING_ENABLE, &en, sizeof(en), NULL, 0)))
			return ret;
	}
	return 0;
}

static void vh_teardown(void)
{
	for (unsigned int i = 0; i < V.nq && V.sock >= 0; i++) {
		struct vu_state s = { i, 0 };

		if (vu_send(VU_GET_VRING_BASE, &s, sizeof(s), NULL, 0, 0) ||
		    vu_recv(VU_GET_VRING_BASE, &s, sizeof(s)) < 0)
			break;
	}
	if (V.sock >= 0)
		close(V.sock);
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
