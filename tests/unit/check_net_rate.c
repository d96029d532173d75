/* SPDX-License-Identifier: MIT */
/*
 * virtio-net rate limits (devices/net/net-rate.c) on the real device, its
 * queue service and an I/O thread, over the stream back end (a socket
 * pair; no tap needed): a limit of 200 frames/s with a one-frame bucket
 * throttles TX and RX (the limiters count waits), every frame still goes
 * through intact and in order (RX frames wait in the socket, TX chains in
 * the ring), and lifting the limit stops the waits.  Counts, no timings.
 */
#include <check.h>
#include <linux/virtio_net.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_dev_rig.h"

#define NF 40 /* frames each way */
#define FLEN 100
#define HDR sizeof(struct virtio_net_hdr_v1)

static struct net_dev_rig R;

static void setup(void)
{
	struct ratelimit_cfg rate = { .ops = { 200, 1, 0 } };

	ndr_setup(&R, &(struct ndr_params){ .queue_size = 64, .rate = &rate });
}

static void teardown(void)
{
	ndr_teardown(&R);
}

static uint64_t throttled(bool tx)
{
	uint64_t n, ns;

	ratelimit_stats(virtio_net_ratelimit(R.dev, tx), &n, &ns);
	return n;
}

START_TEST(tx_throttled_in_order)
{
	uint8_t frame[4 + FLEN];

	for (unsigned int i = 0; i < NF; i++)
		ndr_post_tx(&R, FLEN, (uint8_t)i);
	fg_vq_publish(&R.drv[NDR_TX]);
	ndr_kick(&R, NDR_TX);
	for (unsigned int i = 0; i < NF; i++) {
		ndr_peer_read(&R, frame, sizeof(frame));
		ck_assert_uint_eq((uint32_t)frame[2] << 8 | frame[3], FLEN);
		for (unsigned int j = 0; j < FLEN; j++)
			ck_assert_uint_eq(frame[4 + j], (uint8_t)(i + j));
	}
	ck_assert_uint_gt(throttled(true), 0);
	ck_assert_uint_eq(throttled(false), 0);
}
END_TEST

/* Post @n RX buffers, have the peer send @n frames, wait for all. */
static void rx_round(unsigned int n, uint8_t seed)
{
	uint64_t gpa[NF];
	int head[NF];
	uint8_t frame[4 + FLEN];
	uint32_t id, len;
	unsigned int got = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf buf;

		gpa[i] = fg_alloc(&R.g, 2048, 8);
		buf = (struct fg_buf){ gpa[i], 2048, true };
		head[i] = fg_vq_add(&R.drv[NDR_RX], &buf, 1, false);
		ck_assert_int_ge(head[i], 0);
	}
	fg_vq_publish(&R.drv[NDR_RX]);
	ndr_kick(&R, NDR_RX);
	for (unsigned int i = 0; i < n; i++) {
		frame[0] = frame[1] = frame[2] = 0;
		frame[3] = FLEN;
		for (unsigned int j = 0; j < FLEN; j++)
			frame[4 + j] = (uint8_t)(seed + i + j);
		ck_assert_int_eq(send(R.peer[0], frame, sizeof(frame), MSG_NOSIGNAL), sizeof(frame));
	}
	for (int t = 0; got < n && t < 20000; t++) {
		if (fg_vq_get_used(&R.drv[NDR_RX], &id, &len) != 1) {
			usleep(500);
			continue;
		}
		/* In order: the i-th chain posted holds frame i, after the
		 * header. */
		ck_assert_int_eq((int)id, head[got]);
		ck_assert_uint_eq(len, HDR + FLEN);
		{
			const uint8_t *b = fg_ptr(&R.g, gpa[got], HDR + FLEN);

			for (unsigned int j = 0; j < FLEN; j++)
				ck_assert_uint_eq(b[HDR + j], (uint8_t)(seed + got + j));
		}
		got++;
	}
	ck_assert_uint_eq(got, n);
}

START_TEST(rx_throttled_then_lifted)
{
	uint64_t before;

	/* 40 frames at once: more than a limited round moves (16). */
	rx_round(NF, 7);
	ck_assert_uint_gt(throttled(false), 0);
	/* Lifted: the same again waits no more. */
	ratelimit_set(virtio_net_ratelimit(R.dev, false), &(struct ratelimit_cfg){ 0 });
	before = throttled(false);
	rx_round(NF, 9);
	ck_assert_uint_eq(throttled(false), before);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_rate");
	TCase *tc = tcase_create("rate");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tx_throttled_in_order);
	tcase_add_test(tc, rx_throttled_then_lifted);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
