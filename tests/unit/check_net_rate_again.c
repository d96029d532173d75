/* SPDX-License-Identifier: MIT */
/*
 * A rate-limited NIC queue whose round stopped at its budget
 * (NET_RATE_BUDGET frames) is served again as soon as the limiter has
 * credit, not at the I/O thread's next retry round (up to 1 ms later when
 * nothing else wakes the thread: 16 frames a millisecond was a ceiling
 * below the configured rate, bench/net_ratelimit_bench.sh measured
 * 18.9 MiB/s for a 50 MiB/s limit).
 *
 * On the real device, its queue service and an I/O thread, over the
 * stream back end (a socket pair): 240 frames each way at a limit of
 * 50000 frames/s with a one-frame bucket.  A round moves 16 frames
 * (320 us of tokens); rounds that follow each other at once run out of
 * credit, so the limiter must have made the queue wait (counted), while
 * rounds a millisecond apart never would (the bucket refills in 320 us).
 * Counts, no timings; every frame arrives intact and in order.
 */
#include <check.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_dev_rig.h"

#define QSIZE 256
#define NF 240 /* frames each way: 15 rounds of 16 */
#define FLEN 60

static struct net_dev_rig R;

static void setup(void)
{
	struct ratelimit_cfg rate = { .ops = { 50000, 1, 0 } };

	ndr_setup(&R, &(struct ndr_params){ .queue_size = QSIZE, .rate = &rate });
}

static void teardown(void)
{
	ndr_teardown(&R);
}

START_TEST(tx_served_again_at_once)
{
	/* One kick for all: no other event wakes the I/O thread. */
	ndr_tx_numbered(&R, NF, FLEN);
	ndr_peer_expect_numbered(&R, NF, FLEN);
	/* The limiter set the pace: it ran dry and made the queue wait. */
	ck_assert_uint_gt(ndr_throttled(&R, true), 0);
}
END_TEST

START_TEST(rx_served_again_at_once)
{
	static uint8_t frames[NF * (4 + FLEN)];
	uint64_t gpa[NF];
	int head[NF];

	/* Every frame in the socket first, in one send: the device reads
	 * them all in one go (its buffer holds 64 KiB) and then finds no
	 * buffer; the socket has nothing more to wake the I/O thread. */
	for (unsigned int i = 0; i < NF; i++) {
		uint8_t *f = frames + i * (4 + FLEN);

		f[0] = f[1] = f[2] = 0;
		f[3] = FLEN;
		for (unsigned int j = 0; j < FLEN; j++)
			f[4 + j] = (uint8_t)(i * 3 + j);
	}
	ck_assert_int_eq(send(R.peer[0], frames, sizeof(frames), MSG_NOSIGNAL), sizeof(frames));
	usleep(20000);
	ndr_rx_post(&R, NF, gpa, head);
	ndr_rx_expect(&R, NF, gpa, head, FLEN, 0, 3);
	ck_assert_uint_gt(ndr_throttled(&R, false), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_rate_again");
	TCase *tc = tcase_create("again");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tx_served_again_at_once);
	tcase_add_test(tc, rx_served_again_at_once);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
