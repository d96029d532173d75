/* SPDX-License-Identifier: MIT */
/*
 * The pairs of a rate-limited NIC take turns (devices/net/net-rate.h): a
 * queue that finds the limiter in debt books a turn, and turns are served
 * in the order they were booked, so busy pairs sharing the limit advance
 * together.  Before turns, the queue that ran first when the tokens came
 * back took them every time: four pairs on one I/O thread, one of them got
 * every frame (bench/net_ratelimit_bench.sh, netbench --iothreads 1).
 *
 * On the real device, its queue service and ONE I/O thread serving both
 * pairs, over the stream back end (a socket pair per pair): MQ and the
 * control queue negotiated, both pairs enabled (VQ_PAIRS_SET), 160 TX
 * frames queued on each, a limit of 2000 frames/s with a one-frame bucket
 * (a round moves 16).  When one pair has sent all of its frames, the
 * other has sent all but at most three rounds' worth.  Counts, no timings.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_guest.h"
#include "iothread.h"
#include "net/net-backend.h"
#include "net/net-rate.h"
#include "net/virtio-net.h"
#include "ratelimit.h"

#define PAIRS 2
#define NQ (2 * PAIRS + 1) /* rx0, tx0, rx1, tx1, ctrl */
#define CTRLQ (2 * PAIRS)
#define QSIZE 256
#define NF 160 /* frames on each pair: 10 rounds */
#define FLEN 60
#define HDR sizeof(struct virtio_net_hdr_v1)

static struct fake_guest G;
static struct fg_vq drv[NQ];
static struct virtio_queue qs[NQ];
static struct iothread *io;
static struct virtio_net *dev;
static struct virtio_device vd;
static int peer[PAIRS];

static void t_notify(struct virtio_queue *q)
{
	(void)q;
}

static void t_needs_reset(struct virtio_queue *q, const char *why)
{
	ck_abort_msg("queue %u: needs reset: %s", q->index, why);
}

static const struct virtio_transport_ops t_ops = {
	.queue_notify = t_notify,
	.needs_reset = t_needs_reset,
};

static void kick(unsigned int q)
{
	ck_assert_int_eq(eventfd_write(qs[q].kick_fd, 1), 0);
}

/* VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET PAIRS on the control queue. */
static void pairs_set(void)
{
	uint8_t cmd[4] = { VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, PAIRS, 0 };
	struct fg_buf b[2] = {
		{ fg_alloc(&G, sizeof(cmd), 8), sizeof(cmd), false },
		{ fg_alloc(&G, 1, 1), 1, true },
	};
	uint32_t id, len;
	int t;

	memcpy(fg_ptr(&G, b[0].gpa, sizeof(cmd)), cmd, sizeof(cmd));
	*(uint8_t *)fg_ptr(&G, b[1].gpa, 1) = 0xaa;
	ck_assert_int_ge(fg_vq_add(&drv[CTRLQ], b, 2, false), 0);
	fg_vq_publish(&drv[CTRLQ]);
	kick(CTRLQ);
	for (t = 0; t < 20000 && fg_vq_get_used(&drv[CTRLQ], &id, &len) != 1; t++)
		usleep(500);
	ck_assert_int_lt(t, 20000);
	ck_assert_uint_eq(*(uint8_t *)fg_ptr(&G, b[1].gpa, 1), VIRTIO_NET_OK);
}

static void setup(void)
{
	struct ratelimit_cfg rate = { .ops = { 2000, 1, 0 } };
	int fds[PAIRS];
	struct virtio_net_params p = {
		.net = { .max_pairs = PAIRS, .mac = { 0x52, 0x54, 0, 0, 0, 9 } },
		.fds = fds,
		.backend = &net_stream_backend,
		.queue_size = QSIZE,
		.iothreads = &io,
		.nr_iothreads = 1,
		.rate = &rate,
	};

	for (unsigned int i = 0; i < PAIRS; i++) {
		int sv[2];

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
							 SOCK_CLOEXEC, 0, sv), 0);
		fds[i] = sv[0];
		peer[i] = sv[1];
	}
	ck_assert_int_eq(fg_init(&G, 8ull << 20), 0);
	ck_assert_int_eq(iothread_create(0, 64, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
	ck_assert_int_eq(virtio_net_create(&p, &dev), 0);
	virtio_net_virtio(dev, &vd);
	ck_assert_uint_eq(vd.num_queues, NQ);
	ck_assert_int_eq(vd.ops->set_features(vd.dev, (1ull << VIRTIO_F_VERSION_1) |
							      (1ull << VIRTIO_NET_F_CTRL_VQ) |
							      (1ull << VIRTIO_NET_F_MQ)),
			 0);
	for (unsigned int i = 0; i < NQ; i++) {
		ck_assert_int_eq(fg_vq_init(&G, &drv[i], QSIZE, 0), 0);
		ck_assert_int_eq(fg_vq_attach(&drv[i], &qs[i].vq), 0);
		qs[i].t_ops = &t_ops;
		qs[i].index = i;
		qs[i].enabled = true;
		qs[i].kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		qs[i].call_fd = -1;
		ck_assert_int_ge(qs[i].kick_fd, 0);
	}
	ck_assert_int_eq(vd.ops->start(vd.dev, qs, NQ), 0);
	pairs_set();
}

static void teardown(void)
{
	vd.ops->stop(vd.dev);
	virtio_net_destroy(dev);
	iothread_stop(io);
	iothread_destroy(io);
	for (unsigned int i = 0; i < NQ; i++) {
		close(qs[i].kick_fd);
		fg_vq_destroy(&drv[i]);
	}
	fg_destroy(&G);
	for (unsigned int i = 0; i < PAIRS; i++)
		close(peer[i]);
}

static uint64_t sent(unsigned int pair)
{
	struct virtio_net_pair_stats st;

	ck_assert_int_eq(virtio_net_pair_stats(dev, pair, &st), 0);
	return st.net.tx_packets;
}

START_TEST(busy_pairs_take_turns)
{
	uint64_t s0 = 0, s1 = 0;
	int t;

	for (unsigned int p = 0; p < PAIRS; p++) {
		struct fg_vq *tx = &drv[2 * p + 1];

		for (unsigned int i = 0; i < NF; i++) {
			uint64_t gpa = fg_alloc(&G, HDR + FLEN, 8);
			struct fg_buf buf = { gpa, HDR + FLEN, false };

			memset(fg_ptr(&G, gpa, HDR + FLEN), (int)p, HDR + FLEN);
			memset(fg_ptr(&G, gpa, HDR), 0, HDR);
			ck_assert_int_ge(fg_vq_add(tx, &buf, 1, false), 0);
		}
		fg_vq_publish(tx);
	}
	kick(1);
	kick(3);
	/* The socket pairs hold every frame (160 * 64 bytes): the peers
	 * need not read. */
	for (t = 0; t < 40000; t++) {
		s0 = sent(0);
		s1 = sent(1);
		if (s0 == NF || s1 == NF)
			break;
		usleep(250);
	}
	ck_assert_msg(s0 == NF || s1 == NF, "sent %llu and %llu of %u",
		      (unsigned long long)s0, (unsigned long long)s1, NF);
	/* The other one is at most three rounds behind (one each way for
	 * the kicks' order, one for this sampling). */
	ck_assert_uint_ge(s0, NF - 3 * NET_RATE_BUDGET);
	ck_assert_uint_ge(s1, NF - 3 * NET_RATE_BUDGET);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_rate_turns");
	TCase *tc = tcase_create("turns");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, busy_pairs_take_turns);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
