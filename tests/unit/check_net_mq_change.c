/* SPDX-License-Identifier: MIT */
/*
 * virtio-net's active queue pairs changed under traffic (issue 28): the
 * whole device with its queue service and I/O thread, four pairs on the
 * stream back end (net_dev_rig.h: one socketpair per pair, the test the
 * peer), a simulated driver changing the pair count with
 * VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET while frames move both ways:
 * 4 -> 1 -> 3 -> 4, and 0 and 5 (over max_pairs) refused with
 * VIRTIO_NET_ERR in between, the count unchanged.  At each change the
 * frames are in flight: TX posted and kicked on every pair active
 * before it, RX sent by the peer on every pair that stays active; then a
 * round on the new set.  Asserted:
 *   - every TX frame the driver posted comes out of its pair's socket
 *     exactly once, in order and intact (also on a pair just disabled:
 *     it was posted while the pair was active);
 *   - every RX frame the peer sent on a pair that stays active arrives
 *     in order and intact on that pair's RX queue (none lost across a
 *     change), and no RX queue of a disabled pair ever gets a used entry
 *     (the driver keeps buffers posted there, as Linux does);
 *   - used rings stay consistent: each used id is a chain the driver made
 *     available and has not got back yet, TX used length 0, RX the
 *     header and the frame; nothing is left over at the end;
 *   - each pair's statistics (virtio_net_pair_stats()) are the packets and
 *     bytes that moved on it, no drops.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_dev_rig.h"

#define PAIRS NDR_MAX_PAIRS /* 4 */
#define QSIZE 64
#define N 6	    /* frames per pair and direction in one burst */
#define RXBUFS 24   /* RX buffers the driver keeps posted per pair */
#define BUFLEN 2048 /* one RX buffer: the header and any frame here */
#define MAXF 1500   /* longest frame (the bytes after the header) */
#define WAIT_ROUNDS 20000 /* x 0.5 ms: 10 s */

static struct net_dev_rig R;

/* What the driver and the peer moved on one pair, for the checks. */
struct pair_track {
	/* TX: per head, 1 + the frame's number while the chain is the
	 * device's (0: not available). */
	uint32_t tx_head[QSIZE];
	uint32_t tx_posted, tx_used, tx_read;
	uint64_t tx_bytes;
	/* The peer's end: a partly read stream frame. */
	uint8_t in[4 + MAXF];
	size_t in_len;
	/* RX: per head, the buffer's address while the device holds it. */
	uint64_t rx_gpa[QSIZE];
	unsigned int rx_posted_bufs;
	uint32_t rx_sent, rx_got;
	uint64_t rx_bytes;
};

static struct pair_track T[PAIRS];
static unsigned int active; /* pairs the driver set (and the device took) */

/* Frame @seq of pair @p, TX (@dir 'T') or RX ('R'): its length and byte
 * j, all different from one frame to the next. */
static uint32_t flen(unsigned int p, uint32_t seq)
{
	return 60 + (p * 131 + seq * 97) % (MAXF - 60);
}

static uint8_t fbyte(unsigned int p, uint32_t seq, char dir, uint32_t j)
{
	switch (j) {
	case 0:
		return (uint8_t)p;
	case 1:
		return (uint8_t)dir;
	case 2:
		return (uint8_t)seq;
	case 3:
		return (uint8_t)(seq >> 8);
	default:
		return (uint8_t)(p * 53 + seq * 7 + j);
	}
}

/* @buf holds frame @seq of pair @p, @dir, whole (@len bytes). */
static void check_frame(const uint8_t *buf, uint32_t len, unsigned int p,
			uint32_t seq, char dir)
{
	ck_assert_msg(len == flen(p, seq), "pair %u %c frame %u: %u bytes, not %u",
		      p, dir, seq, len, flen(p, seq));
	ck_assert_msg(buf[0] == p && buf[1] == (uint8_t)dir &&
			      (uint32_t)(buf[2] | buf[3] << 8) == (seq & 0xffff),
		      "pair %u %c: frame %u expected, got pair %u %c frame %u", p,
		      dir, seq, buf[0], buf[1], buf[2] | buf[3] << 8);
	for (uint32_t j = 4; j < len; j++)
		ck_assert_msg(buf[j] == fbyte(p, seq, dir, j),
			      "pair %u %c frame %u: byte %u corrupt", p, dir, seq, j);
}

/* The driver posts @n TX frames on pair @p and kicks. */
static void tx_post(unsigned int p, unsigned int n)
{
	struct fg_vq *vq = &R.drv[NDR_TXQ(p)];

	for (unsigned int i = 0; i < n; i++) {
		uint32_t seq = T[p].tx_posted++, len = flen(p, seq);
		uint64_t gpa = fg_alloc(&R.g, VNET_HDR_LEN + len, 8);
		uint8_t *b = fg_ptr(&R.g, gpa, VNET_HDR_LEN + len);
		struct fg_buf buf = { gpa, VNET_HDR_LEN + len, false };
		int head;

		ck_assert_ptr_nonnull(b);
		memset(b, 0, VNET_HDR_LEN);
		for (uint32_t j = 0; j < len; j++)
			b[VNET_HDR_LEN + j] = fbyte(p, seq, 'T', j);
		head = fg_vq_add(vq, &buf, 1, false);
		ck_assert_int_ge(head, 0);
		ck_assert_uint_eq(T[p].tx_head[head], 0);
		T[p].tx_head[head] = seq + 1;
	}
	fg_vq_publish(vq);
	ndr_kick(&R, NDR_TXQ(p));
}

/* Keep RXBUFS buffers posted on pair @p's RX queue. */
static void rx_refill(unsigned int p)
{
	struct fg_vq *vq = &R.drv[NDR_RXQ(p)];
	bool added = false;

	while (T[p].rx_posted_bufs < RXBUFS) {
		struct fg_buf buf = { fg_alloc(&R.g, BUFLEN, 8), BUFLEN, true };
		int head;

		ck_assert_uint_ne(buf.gpa, 0);
		memset(fg_ptr(&R.g, buf.gpa, BUFLEN), 0xee, BUFLEN);
		head = fg_vq_add(vq, &buf, 1, false);
		ck_assert_int_ge(head, 0);
		ck_assert_uint_eq(T[p].rx_gpa[head], 0);
		T[p].rx_gpa[head] = buf.gpa;
		T[p].rx_posted_bufs++;
		added = true;
	}
	if (added) {
		fg_vq_publish(vq);
		ndr_kick(&R, NDR_RXQ(p));
	}
}

/* The peer sends @n frames on pair @p's socket. */
static void peer_send(unsigned int p, unsigned int n)
{
	static uint8_t f[4 + MAXF];

	for (unsigned int i = 0; i < n; i++) {
		uint32_t seq = T[p].rx_sent++, len = flen(p, seq);

		f[0] = 0;
		f[1] = 0;
		f[2] = (uint8_t)(len >> 8);
		f[3] = (uint8_t)len;
		for (uint32_t j = 0; j < len; j++)
			f[4 + j] = fbyte(p, seq, 'R', j);
		ck_assert_int_eq(send(R.peer[p], f, 4 + len, MSG_NOSIGNAL),
				 (ssize_t)(4 + len));
	}
}

/* VQ_PAIRS_SET @n on the control queue: the status byte the device
 * wrote, after checking its used entry (the chain made available, one
 * byte written). */
static uint8_t pairs_set(unsigned int n)
{
	struct fg_vq *ctrl = &R.drv[NDR_CTRLQ(&R)];
	uint8_t cmd[4] = { VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET,
			   (uint8_t)n, (uint8_t)(n >> 8) };
	struct fg_buf b[2] = {
		{ fg_alloc(&R.g, sizeof(cmd), 8), sizeof(cmd), false },
		{ fg_alloc(&R.g, 1, 1), 1, true },
	};
	uint32_t id, len;
	int head, t;

	memcpy(fg_ptr(&R.g, b[0].gpa, sizeof(cmd)), cmd, sizeof(cmd));
	*(uint8_t *)fg_ptr(&R.g, b[1].gpa, 1) = 0xaa;
	head = fg_vq_add(ctrl, b, 2, false);
	ck_assert_int_ge(head, 0);
	fg_vq_publish(ctrl);
	ndr_kick(&R, NDR_CTRLQ(&R));
	for (t = 0; t < WAIT_ROUNDS && fg_vq_get_used(ctrl, &id, &len) != 1; t++)
		usleep(500);
	ck_assert_msg(t < WAIT_ROUNDS, "VQ_PAIRS_SET %u: no answer", n);
	ck_assert_int_eq((int)id, head);
	ck_assert_uint_eq(len, 1);
	return *(uint8_t *)fg_ptr(&R.g, b[1].gpa, 1);
}

/* Take pair @p's TX used entries. */
static void tx_reap(unsigned int p)
{
	uint32_t id, len;

	while (fg_vq_get_used(&R.drv[NDR_TXQ(p)], &id, &len) == 1) {
		ck_assert_msg(id < QSIZE && T[p].tx_head[id],
			      "pair %u TX: used id %u was not made available", p, id);
		ck_assert_uint_eq(len, 0);
		T[p].tx_head[id] = 0;
		T[p].tx_used++;
	}
}

/* Read what pair @p's socket has: whole frames checked in order. */
static void tx_read(unsigned int p)
{
	struct pair_track *t = &T[p];

	for (;;) {
		size_t want = t->in_len < 4 ? 4 - t->in_len : 0;
		uint32_t len;
		ssize_t got;

		if (t->in_len >= 4) {
			len = (uint32_t)t->in[0] << 24 | (uint32_t)t->in[1] << 16 |
			      (uint32_t)t->in[2] << 8 | t->in[3];
			ck_assert_msg(len <= MAXF, "pair %u: a frame of %u bytes", p, len);
			want = 4 + len - t->in_len;
		}
		if (!want) {
			ck_assert_msg(t->tx_read < t->tx_posted,
				      "pair %u: a TX frame more than the %u posted", p,
				      t->tx_posted);
			check_frame(t->in + 4, (uint32_t)t->in_len - 4, p, t->tx_read, 'T');
			t->tx_bytes += t->in_len - 4;
			t->tx_read++;
			t->in_len = 0;
			continue;
		}
		got = recv(R.peer[p], t->in + t->in_len, want, MSG_DONTWAIT);
		if (got <= 0) {
			ck_assert_msg(got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
				      "pair %u: the device's end closed", p);
			return;
		}
		t->in_len += (size_t)got;
	}
}

/* Take pair @p's RX used entries: each frame checked, in order. */
static void rx_reap(unsigned int p)
{
	struct pair_track *t = &T[p];
	uint32_t id, len;

	while (fg_vq_get_used(&R.drv[NDR_RXQ(p)], &id, &len) == 1) {
		const uint8_t *b;

		ck_assert_msg(p < active, "a frame on RX queue %u of disabled pair %u "
					  "(%u active)", NDR_RXQ(p), p, active);
		ck_assert_msg(id < QSIZE && t->rx_gpa[id],
			      "pair %u RX: used id %u was not made available", p, id);
		ck_assert_msg(t->rx_got < t->rx_sent,
			      "pair %u: an RX frame more than the %u sent", p, t->rx_sent);
		ck_assert_uint_ge(len, VNET_HDR_LEN);
		b = fg_ptr(&R.g, t->rx_gpa[id], BUFLEN);
		/* No offload on a stream; one buffer (no MRG_RXBUF). */
		for (unsigned int j = 0; j < 10; j++)
			ck_assert_uint_eq(b[j], 0);
		ck_assert_uint_eq(b[10] | b[11] << 8, 1);
		check_frame(b + VNET_HDR_LEN, len - VNET_HDR_LEN, p, t->rx_got, 'R');
		t->rx_bytes += len - VNET_HDR_LEN;
		t->rx_got++;
		t->rx_gpa[id] = 0;
		t->rx_posted_bufs--;
	}
	rx_refill(p);
}

/* Until everything sent both ways has arrived (bounded, asserts), then
 * the statistics. */
static void settle(void)
{
	int t;

	for (t = 0; t < WAIT_ROUNDS; t++) {
		bool done = true;

		for (unsigned int p = 0; p < PAIRS; p++) {
			tx_reap(p);
			tx_read(p);
			rx_reap(p);
			done = done && T[p].tx_used == T[p].tx_posted &&
			       T[p].tx_read == T[p].tx_posted &&
			       T[p].rx_got == T[p].rx_sent;
		}
		if (done)
			break;
		usleep(500);
	}
	for (unsigned int p = 0; p < PAIRS; p++)
		ck_assert_msg(T[p].tx_used == T[p].tx_posted &&
				      T[p].tx_read == T[p].tx_posted &&
				      T[p].rx_got == T[p].rx_sent,
			      "pair %u (%u active): TX %u posted, %u used, %u out; "
			      "RX %u sent, %u in", p, active, T[p].tx_posted,
			      T[p].tx_used, T[p].tx_read, T[p].rx_sent, T[p].rx_got);
	/* Each pair's statistics are what moved on it so far.  Context: RX
	 * counts a frame just after its used entry (stream.c's rx_one()),
	 * so the last one may come a moment after the entry. */
	for (unsigned int p = 0; p < PAIRS; p++) {
		struct virtio_net_pair_stats st;

		for (t = 0; t < WAIT_ROUNDS; t++) {
			ck_assert_int_eq(virtio_net_pair_stats(R.dev, p, &st), 0);
			if (st.net.rx_packets == T[p].rx_got &&
			    st.net.rx_bytes == T[p].rx_bytes)
				break;
			usleep(500);
		}
		ck_assert_uint_eq(st.net.tx_packets, T[p].tx_posted);
		ck_assert_uint_eq(st.net.tx_bytes, T[p].tx_bytes);
		ck_assert_uint_eq(st.net.rx_packets, T[p].rx_got);
		ck_assert_uint_eq(st.net.rx_bytes, T[p].rx_bytes);
		ck_assert_uint_eq(st.net.tx_drops, 0);
		ck_assert_uint_eq(st.net.rx_drops, 0);
	}
}

/* The driver asks for @n pairs with traffic in flight: TX on every pair
 * active now, RX on those that stay active; then a round on the pairs
 * active after it.  @ok: the device must take it. */
static void change_under_traffic(unsigned int n, bool ok)
{
	unsigned int stay = ok && n < active ? n : active;

	for (unsigned int p = 0; p < active; p++)
		tx_post(p, N);
	for (unsigned int p = 0; p < stay; p++)
		peer_send(p, N);
	ck_assert_msg(pairs_set(n) == (ok ? VIRTIO_NET_OK : VIRTIO_NET_ERR),
		      "VQ_PAIRS_SET %u with %u active: %s expected", n, active,
		      ok ? "OK" : "ERR");
	if (ok)
		active = n;
	settle();
	for (unsigned int p = 0; p < active; p++) {
		tx_post(p, N);
		peer_send(p, N);
	}
	settle();
}

START_TEST(pairs_change_under_traffic)
{
	static const struct {
		unsigned int n;
		bool ok;
	} steps[] = { { 1, true }, { 0, false }, { 3, true },
		      { PAIRS + 1, false }, { PAIRS, true } };

	memset(T, 0, sizeof(T));
	ndr_setup(&R, &(struct ndr_params){ .queue_size = QSIZE, .pairs = PAIRS });
	active = PAIRS; /* the rig enabled them all (VQ_PAIRS_SET) */
	for (unsigned int p = 0; p < PAIRS; p++)
		rx_refill(p);
	for (unsigned int s = 0; s < sizeof(steps) / sizeof(steps[0]); s++)
		change_under_traffic(steps[s].n, steps[s].ok);
	ck_assert_uint_eq(active, PAIRS);
	for (unsigned int p = 0; p < PAIRS; p++) {
		struct virtio_net_pair_stats st;
		uint8_t x;

		/* Nothing more on either side. */
		ck_assert_int_eq(recv(R.peer[p], &x, 1, MSG_DONTWAIT), -1);
		ck_assert_uint_eq(fg_vq_used_pending(&R.drv[NDR_TXQ(p)]), 0);
		ck_assert_uint_eq(fg_vq_used_pending(&R.drv[NDR_RXQ(p)]), 0);
		/* Every pair moved frames both ways (settle() checked the
		 * counts). */
		ck_assert_int_eq(virtio_net_pair_stats(R.dev, p, &st), 0);
		ck_assert_uint_gt(st.net.tx_packets, 0);
		ck_assert_uint_gt(st.net.rx_packets, 0);
	}
	ck_assert_int_eq(virtio_net_pair_stats(R.dev, PAIRS, &(struct virtio_net_pair_stats){ 0 }),
			 -ENOENT);
	ndr_teardown(&R);
}
END_TEST

/* Frames from the peer of a disabled pair (a stream NIC of several
 * sockets, VMM_NET_STREAM): virtio 1.x 5.1.6.5.5, the device must not
 * queue them on that pair's RX queue while the pair is disabled; they
 * wait in the socket and arrive, in order, once the pair is on again,
 * with nothing more from the peer (the control queue's kick). */
START_TEST(rx_not_on_disabled_pair)
{
	memset(T, 0, sizeof(T));
	ndr_setup(&R, &(struct ndr_params){ .queue_size = QSIZE, .pairs = PAIRS });
	active = PAIRS;
	for (unsigned int p = 0; p < PAIRS; p++)
		rx_refill(p); /* buffers stay posted on every pair, as Linux's */
	ck_assert_uint_eq(pairs_set(1), VIRTIO_NET_OK);
	active = 1;
	peer_send(2, 3);
	/* Traffic on the active pair meanwhile; rx_reap() fails on a used
	 * entry of a disabled pair. */
	tx_post(0, N);
	peer_send(0, N);
	for (unsigned int t = 0; t < 200; t++) {
		tx_reap(0);
		tx_read(0);
		rx_reap(0);
		rx_reap(2);
		usleep(500);
	}
	ck_assert_uint_eq(fg_vq_used_pending(&R.drv[NDR_RXQ(2)]), 0);
	ck_assert_uint_eq(T[2].rx_got, 0);
	ck_assert_uint_eq(pairs_set(PAIRS), VIRTIO_NET_OK);
	active = PAIRS;
	settle(); /* pair 2's three frames arrive, in order */
	ck_assert_uint_eq(T[2].rx_got, 3);
	ndr_teardown(&R);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_mq_change");
	TCase *tc = tcase_create("mq");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, pairs_change_under_traffic);
	tcase_add_test(tc, rx_not_on_disabled_pair);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
