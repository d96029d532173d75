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
#include <sys/socket.h>

#include "net_dev_rig.h"

#define NF 40 /* frames each way */
#define FLEN 100

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

START_TEST(tx_throttled_in_order)
{
	ndr_tx_numbered(&R, NF, FLEN);
	ndr_peer_expect_numbered(&R, NF, FLEN);
	ck_assert_uint_gt(ndr_throttled(&R, true), 0);
	ck_assert_uint_eq(ndr_throttled(&R, false), 0);
}
END_TEST

/* Post @n RX buffers, have the peer send @n frames, wait for all. */
static void rx_round(unsigned int n, uint8_t seed)
{
	uint64_t gpa[NF];
	int head[NF];

	ndr_rx_post(&R, n, gpa, head);
	ndr_peer_send_numbered(&R, n, FLEN, seed);
	ndr_rx_expect(&R, n, gpa, head, FLEN, seed, 1);
}

START_TEST(rx_throttled_then_lifted)
{
	uint64_t before;

	/* 40 frames at once: more than a limited round moves (16). */
	rx_round(NF, 7);
	ck_assert_uint_gt(ndr_throttled(&R, false), 0);
	/* Lifted: the same again waits no more. */
	ratelimit_set(virtio_net_ratelimit(R.dev, false), &(struct ratelimit_cfg){ 0 });
	before = ndr_throttled(&R, false);
	rx_round(NF, 9);
	ck_assert_uint_eq(ndr_throttled(&R, false), before);
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
