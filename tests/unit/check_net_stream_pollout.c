/* SPDX-License-Identifier: MIT */
/*
 * virtio-net on the stream back end, the real device with its queue
 * service and I/O thread: when the socket is full (the peer reads
 * nothing), TX waits for the socket's POLLOUT, and its I/O thread sleeps
 * meanwhile -- it used to try again every round, a wake-up each 1 ms for
 * as long as the peer did not read.  Once the peer reads, the wake-up
 * serves the queue again and every frame arrives intact and in order.
 * Counts (the thread's wake-ups), no timings.
 */
#include <check.h>
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
#include "net/virtio-net.h"

#define NQ 3 /* rx0, tx0, ctrl */
#define QSIZE 128
#define NF 100 /* frames */
#define FLEN 1500
#define HDR sizeof(struct virtio_net_hdr_v1)

static struct fake_guest G;
static struct fg_vq drv[NQ];
static struct virtio_queue qs[NQ];
static struct iothread *io;
static struct virtio_net *dev;
static struct virtio_device vd;
static int peer;

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

static void setup(void)
{
	int sv[2], small = 4096;
	struct virtio_net_params p = {
		.net = { .max_pairs = 1, .mac = { 0x52, 0x54, 0, 0, 0, 9 } },
		.fds = &sv[0],
		.backend = &net_stream_backend,
		.queue_size = QSIZE,
		.iothreads = &io,
		.nr_iothreads = 1,
	};

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv), 0);
	peer = sv[1];
	/* Small buffers: the socket is full after a few frames. */
	ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(fg_init(&G, 8ull << 20), 0);
	ck_assert_int_eq(iothread_create(0, 64, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
	ck_assert_int_eq(virtio_net_create(&p, &dev), 0);
	virtio_net_virtio(dev, &vd);
	ck_assert_int_eq(vd.ops->set_features(vd.dev, 1ull << VIRTIO_F_VERSION_1), 0);
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
	close(peer);
}

static uint64_t wakeups(void)
{
	struct iothread_stats st;

	iothread_get_stats(io, &st);
	return st.loops;
}

/* Chains the device has given back so far. */
static unsigned int used_tx(void)
{
	static unsigned int n;
	uint32_t id, len;

	while (fg_vq_get_used(&drv[1], &id, &len) == 1)
		n++;
	return n;
}

START_TEST(full_socket_sleeps_until_writable)
{
	static uint8_t got[NF * (4 + FLEN)];
	unsigned int before_used;
	uint64_t w0, w1;
	size_t have = 0;

	for (unsigned int i = 0; i < NF; i++) {
		uint64_t gpa = fg_alloc(&G, HDR + FLEN, 8);
		uint8_t *b = fg_ptr(&G, gpa, HDR + FLEN);
		struct fg_buf buf = { gpa, HDR + FLEN, false };

		memset(b, 0, HDR);
		for (unsigned int j = 0; j < FLEN; j++)
			b[HDR + j] = (uint8_t)(i * 7 + j);
		ck_assert_int_ge(fg_vq_add(&drv[1], &buf, 1, false), 0);
	}
	fg_vq_publish(&drv[1]);
	ck_assert_int_eq(eventfd_write(qs[1].kick_fd, 1), 0);
	/* The device fills the socket and stops taking chains. */
	do {
		before_used = used_tx();
		usleep(50000);
	} while (used_tx() != before_used);
	ck_assert_uint_lt(before_used, NF);
	/* Blocked for a while: the thread is not woken (it was, every 1 ms
	 * of this, before TX waited for POLLOUT). */
	w0 = wakeups();
	usleep(300000);
	w1 = wakeups();
	ck_assert_msg(w1 - w0 <= 3, "the I/O thread woke %llu times while TX was blocked",
		      (unsigned long long)(w1 - w0));
	ck_assert_uint_eq(used_tx(), before_used);
	/* The peer reads: every frame, in order, through the POLLOUT wake-ups. */
	for (int i = 0; have < sizeof(got) && i < 40000; i++) {
		ssize_t r = recv(peer, got + have, sizeof(got) - have, MSG_DONTWAIT);

		if (r > 0)
			have += (size_t)r;
		else
			usleep(500);
	}
	ck_assert_uint_eq(have, sizeof(got));
	for (unsigned int i = 0; i < NF; i++) {
		const uint8_t *f = got + i * (4 + FLEN);

		ck_assert_uint_eq((uint32_t)f[2] << 8 | f[3], FLEN);
		for (unsigned int j = 0; j < FLEN; j++)
			ck_assert_uint_eq(f[4 + j], (uint8_t)(i * 7 + j));
	}
	for (int i = 0; used_tx() < NF && i < 2000; i++)
		usleep(1000);
	ck_assert_uint_eq(used_tx(), NF);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_stream_pollout");
	TCase *tc = tcase_create("pollout");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, full_socket_sleeps_until_writable);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
