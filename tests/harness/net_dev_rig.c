/* SPDX-License-Identifier: MIT */
/* The virtio-net device on an I/O thread over socketpairs (net_dev_rig.h). */
#include "net_dev_rig.h"

#include <check.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net-backend.h"

#define HDR sizeof(struct virtio_net_hdr_v1)

static void t_notify(struct virtio_queue *q)
{
	(void)q;
}

static void t_needs_reset(struct virtio_queue *q, const char *why)
{
	ck_abort_msg("queue %u: needs reset: %s", q->index, why);
}

/* The device's link went down or up: the transport's configuration
 * interrupt, counted.  Context: an I/O thread. */
static void ndr_link_changed(void *opaque)
{
	struct net_dev_rig *r = opaque;

	__atomic_add_fetch(&r->link_changes, 1, __ATOMIC_SEQ_CST);
}

static const struct virtio_transport_ops t_ops = {
	.queue_notify = t_notify,
	.needs_reset = t_needs_reset,
};

/* VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET r->pairs on the control queue, as a
 * driver enables its pairs: the device acks it (VIRTIO_NET_OK). */
static void ndr_pairs_set(struct net_dev_rig *r)
{
	uint8_t cmd[4] = { VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET,
			   (uint8_t)r->pairs, 0 };
	struct fg_buf b[2] = {
		{ fg_alloc(&r->g, sizeof(cmd), 8), sizeof(cmd), false },
		{ fg_alloc(&r->g, 1, 1), 1, true },
	};
	struct fg_vq *ctrl = &r->drv[NDR_CTRLQ(r)];
	uint32_t id, len;
	int t;

	memcpy(fg_ptr(&r->g, b[0].gpa, sizeof(cmd)), cmd, sizeof(cmd));
	*(uint8_t *)fg_ptr(&r->g, b[1].gpa, 1) = 0xaa;
	ck_assert_int_ge(fg_vq_add(ctrl, b, 2, false), 0);
	fg_vq_publish(ctrl);
	ndr_kick(r, NDR_CTRLQ(r));
	for (t = 0; t < 20000 && fg_vq_get_used(ctrl, &id, &len) != 1; t++)
		usleep(500);
	ck_assert_int_lt(t, 20000);
	ck_assert_uint_eq(*(uint8_t *)fg_ptr(&r->g, b[1].gpa, 1), VIRTIO_NET_OK);
}

void ndr_setup(struct net_dev_rig *r, const struct ndr_params *p)
{
	unsigned int pairs = p->pairs ? p->pairs : 1;
	int fds[NDR_MAX_PAIRS];
	struct virtio_net_params np = {
		.net = { .max_pairs = pairs, .mac = { 0x52, 0x54, 0, 0, 0, 9 } },
		.fds = fds,
		.backend = &net_stream_backend,
		.queue_size = p->queue_size,
		.iothreads = &r->io,
		.nr_iothreads = 1,
		.rate = p->rate,
		.link_changed = ndr_link_changed,
		.link_opaque = r,
	};
	uint64_t features = 1ull << VIRTIO_F_VERSION_1;

	ck_assert_uint_le(pairs, NDR_MAX_PAIRS);
	memset(r, 0, sizeof(*r));
	r->pairs = pairs;
	for (unsigned int i = 0; i < pairs; i++) {
		int sv[2];

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
							 SOCK_CLOEXEC, 0, sv), 0);
		fds[i] = sv[0];
		r->peer[i] = sv[1];
		if (p->sndbuf > 0) {
			ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &p->sndbuf,
						    sizeof(p->sndbuf)), 0);
			ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &p->sndbuf,
						    sizeof(p->sndbuf)), 0);
		}
	}
	if (pairs > 1)
		features |= (1ull << VIRTIO_NET_F_CTRL_VQ) | (1ull << VIRTIO_NET_F_MQ);
	if (p->event_idx)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	ck_assert_int_eq(fg_init(&r->g, 8ull << 20), 0);
	ck_assert_int_eq(iothread_create(0, 64, &r->io), 0);
	ck_assert_int_eq(iothread_start(r->io), 0);
	ck_assert_int_eq(virtio_net_create(&np, &r->dev), 0);
	virtio_net_virtio(r->dev, &r->vd);
	ck_assert_uint_eq(r->vd.num_queues, 2 * pairs + 1);
	ck_assert_int_eq(r->vd.ops->set_features(r->vd.dev, features), 0);
	for (unsigned int i = 0; i < r->vd.num_queues; i++) {
		struct virtio_queue *q = &r->qs[i];

		ck_assert_int_eq(fg_vq_init(&r->g, &r->drv[i], p->queue_size,
					    features & (1ull << VIRTIO_RING_F_EVENT_IDX)), 0);
		ck_assert_int_eq(fg_vq_attach(&r->drv[i], &q->vq), 0);
		q->t_ops = &t_ops;
		q->index = i;
		q->enabled = true;
		q->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		q->call_fd = -1;
		ck_assert_int_ge(q->kick_fd, 0);
	}
	ck_assert_int_eq(r->vd.ops->start(r->vd.dev, r->qs, r->vd.num_queues), 0);
	if (pairs > 1)
		ndr_pairs_set(r);
}

void ndr_teardown(struct net_dev_rig *r)
{
	r->vd.ops->stop(r->vd.dev);
	virtio_net_destroy(r->dev);
	iothread_stop(r->io);
	iothread_destroy(r->io);
	for (unsigned int i = 0; i < r->vd.num_queues; i++) {
		close(r->qs[i].kick_fd);
		fg_vq_destroy(&r->drv[i]);
	}
	fg_destroy(&r->g);
	for (unsigned int i = 0; i < r->pairs; i++)
		close(r->peer[i]);
}

void ndr_kick(struct net_dev_rig *r, unsigned int q)
{
	ck_assert_int_eq(eventfd_write(r->qs[q].kick_fd, 1), 0);
}

void ndr_post_tx_pair(struct net_dev_rig *r, unsigned int pair, uint32_t len, uint8_t seed)
{
	uint64_t gpa = fg_alloc(&r->g, HDR + len, 8);
	uint8_t *b = fg_ptr(&r->g, gpa, HDR + len);
	struct fg_buf buf = { gpa, HDR + len, false };

	memset(b, 0, HDR);
	for (uint32_t j = 0; j < len; j++)
		b[HDR + j] = (uint8_t)(seed + j);
	ck_assert_int_ge(fg_vq_add(&r->drv[NDR_TXQ(pair)], &buf, 1, false), 0);
}

void ndr_post_tx(struct net_dev_rig *r, uint32_t len, uint8_t seed)
{
	ndr_post_tx_pair(r, 0, len, seed);
}

unsigned int ndr_tx_used(struct net_dev_rig *r)
{
	uint32_t id, len;

	while (fg_vq_get_used(&r->drv[NDR_TX], &id, &len) == 1)
		r->tx_used++;
	return r->tx_used;
}

void ndr_peer_read(struct net_dev_rig *r, uint8_t *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; n < len && i < 40000; i++) {
		ssize_t got = recv(r->peer[0], buf + n, len - n, MSG_DONTWAIT);

		if (got > 0)
			n += (size_t)got;
		else
			usleep(500);
	}
	ck_assert_uint_eq(n, len);
}

uint64_t ndr_throttled(struct net_dev_rig *r, bool tx)
{
	uint64_t n, ns;

	ratelimit_stats(virtio_net_ratelimit(r->dev, tx), &n, &ns);
	return n;
}

void ndr_tx_numbered(struct net_dev_rig *r, unsigned int n, uint32_t flen)
{
	for (unsigned int i = 0; i < n; i++)
		ndr_post_tx(r, flen, (uint8_t)i);
	fg_vq_publish(&r->drv[NDR_TX]);
	ndr_kick(r, NDR_TX);
}

void ndr_peer_expect_numbered(struct net_dev_rig *r, unsigned int n, uint32_t flen)
{
	uint8_t frame[4 + NDR_MAX_FLEN];

	ck_assert_uint_le(flen, NDR_MAX_FLEN);
	for (unsigned int i = 0; i < n; i++) {
		ndr_peer_read(r, frame, 4 + flen);
		ck_assert_uint_eq((uint32_t)frame[2] << 8 | frame[3], flen);
		for (unsigned int j = 0; j < flen; j++)
			ck_assert_uint_eq(frame[4 + j], (uint8_t)(i + j));
	}
}

void ndr_rx_add(struct net_dev_rig *r, unsigned int n, uint64_t *gpa, int *head)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf buf;

		gpa[i] = fg_alloc(&r->g, 2048, 8);
		buf = (struct fg_buf){ gpa[i], 2048, true };
		head[i] = fg_vq_add(&r->drv[NDR_RX], &buf, 1, false);
		ck_assert_int_ge(head[i], 0);
	}
}

void ndr_rx_post(struct net_dev_rig *r, unsigned int n, uint64_t *gpa, int *head)
{
	ndr_rx_add(r, n, gpa, head);
	fg_vq_publish(&r->drv[NDR_RX]);
	ndr_kick(r, NDR_RX);
}

void ndr_peer_send_numbered(struct net_dev_rig *r, unsigned int n, uint32_t flen,
			    uint8_t seed)
{
	uint8_t f[4 + NDR_MAX_FLEN];

	ck_assert_uint_le(flen, NDR_MAX_FLEN);
	f[0] = (uint8_t)(flen >> 24);
	f[1] = (uint8_t)(flen >> 16);
	f[2] = (uint8_t)(flen >> 8);
	f[3] = (uint8_t)flen;
	for (unsigned int i = 0; i < n; i++) {
		for (uint32_t j = 0; j < flen; j++)
			f[4 + j] = (uint8_t)(seed + i + j);
		ck_assert_int_eq(send(r->peer[0], f, 4 + flen, MSG_NOSIGNAL), (ssize_t)(4 + flen));
	}
}

void ndr_rx_expect(struct net_dev_rig *r, unsigned int n, const uint64_t *gpa,
		   const int *head, uint32_t flen, uint8_t seed, unsigned int step)
{
	uint32_t id, len;
	unsigned int got = 0;

	for (int t = 0; got < n && t < 20000; t++) {
		const uint8_t *b;

		if (fg_vq_get_used(&r->drv[NDR_RX], &id, &len) != 1) {
			usleep(500);
			continue;
		}
		/* In order: the i-th chain posted holds frame i, after the
		 * header. */
		ck_assert_int_eq((int)id, head[got]);
		ck_assert_uint_eq(len, HDR + flen);
		b = fg_ptr(&r->g, gpa[got], HDR + flen);
		for (unsigned int j = 0; j < flen; j++)
			ck_assert_uint_eq(b[HDR + j], (uint8_t)(seed + got * step + j));
		got++;
	}
	ck_assert_uint_eq(got, n);
}
