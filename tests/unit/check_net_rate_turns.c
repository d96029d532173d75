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
#include <stdint.h>
#include <unistd.h>

#include "net/net-rate.h"
#include "net_dev_rig.h"

#define PAIRS 2
#define QSIZE 256
#define NF 160 /* frames on each pair: 10 rounds */
#define FLEN 60

static struct net_dev_rig R;

static void setup(void)
{
	struct ratelimit_cfg rate = { .ops = { 2000, 1, 0 } };

	/* Both pairs enabled (MQ, VQ_PAIRS_SET), on the rig's one I/O thread. */
	ndr_setup(&R, &(struct ndr_params){ .queue_size = QSIZE, .pairs = PAIRS,
					    .rate = &rate });
}

static void teardown(void)
{
	ndr_teardown(&R);
}

static uint64_t sent(unsigned int pair)
{
	struct virtio_net_pair_stats st;

	ck_assert_int_eq(virtio_net_pair_stats(R.dev, pair, &st), 0);
	return st.net.tx_packets;
}

START_TEST(busy_pairs_take_turns)
{
	uint64_t s0 = 0, s1 = 0;
	int t;

	for (unsigned int p = 0; p < PAIRS; p++) {
		for (unsigned int i = 0; i < NF; i++)
			ndr_post_tx_pair(&R, p, FLEN, (uint8_t)(p * NF + i));
		fg_vq_publish(&R.drv[NDR_TXQ(p)]);
	}
	ndr_kick(&R, NDR_TXQ(0));
	ndr_kick(&R, NDR_TXQ(1));
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
