/* SPDX-License-Identifier: MIT */
/*
 * virtio-net asks the driver for a kick only when it needs one (issue 28's
 * notifications per packet), the real device with its queue service and
 * I/O thread on the stream back end, the driver deciding each kick as
 * Linux's virtqueue_kick_prepare() does (fg_vq_publish()): with EVENT_IDX
 * (avail_event) and without (VRING_USED_F_NO_NOTIFY), each test both ways.
 *   - RX: a refill after the device took every buffer, with no frame
 *     waiting, brings no kick (it used to: every pop asked for a kick at
 *     the next entry); a device that starves with a frame waiting asks
 *     for one, and the refill delivers the frame.
 *   - TX: a frame added while the device still has frames in hand (here:
 *     the socket full in the middle of one) brings no kick (it used to);
 *     once the device has drained the ring it asks for kicks again.
 * Counts of kicks, no timings.
 */
#include <check.h>
#include <linux/virtio_ring.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_dev_rig.h"

#define FLEN 1000
#define BIG 60000 /* a TX frame the 4 KiB socket takes only in part */
#define CYCLES 8
#define NB 4 /* RX buffers per cycle */

static struct net_dev_rig R;

/* Publish what was added, and kick if the device asked for it. */
static bool publish_kick(unsigned int q)
{
	if (!fg_vq_publish(&R.drv[q]))
		return false;
	ndr_kick(&R, q);
	return true;
}

/* The device asks for a kick at the next entry the driver adds. */
static bool kicks_on(unsigned int q, bool event_idx)
{
	struct fg_vq *vq = &R.drv[q];

	if (event_idx)
		return fg_vq_avail_event(vq) == vq->avail_idx;
	return !(fg_vq_used_flags(vq) & VRING_USED_F_NO_NOTIFY);
}

/* Until the device asks for kicks on queue @q (bounded: 10 s). */
static void wait_kicks_on(unsigned int q, bool event_idx)
{
	int t;

	for (t = 0; t < 20000 && !kicks_on(q, event_idx); t++)
		usleep(500);
	ck_assert_msg(t < 20000, "queue %u never asked for a kick", q);
}

START_TEST(rx_kicks_only_when_starved)
{
	bool ei = _i;
	uint64_t gpa[NB];
	int head[NB];
	unsigned int refill_kicks = 0;

	ndr_setup(&R, &(struct ndr_params){ .queue_size = 64, .event_idx = ei });
	ndr_rx_add(&R, NB, gpa, head);
	(void)publish_kick(NDR_RX);
	/* Each cycle the device fills every buffer the ring holds and then
	 * finds the socket empty: it does not starve, so the refill (Linux
	 * refills at the end of a NAPI poll) needs no kick; the frames that
	 * come next find the buffers by themselves. */
	for (unsigned int c = 0; c < CYCLES; c++) {
		ndr_peer_send_numbered(&R, NB, FLEN, (uint8_t)(c * NB));
		ndr_rx_expect(&R, NB, gpa, head, FLEN, (uint8_t)(c * NB), 1);
		ndr_rx_add(&R, NB, gpa, head);
		refill_kicks += publish_kick(NDR_RX);
	}
	ck_assert_msg(refill_kicks == 0,
		      "%u kicks for %u refills while the device never starved (EVENT_IDX %d)",
		      refill_kicks, CYCLES, ei);
	/* One frame more than the ring holds: the device starves on it and
	 * asks for a kick; the refill kicks (unless the device's last look
	 * after turning kicks on already found the buffer: no kick due
	 * then), and the frame arrives either way. */
	ndr_peer_send_numbered(&R, NB + 1, FLEN, 100);
	ndr_rx_expect(&R, NB, gpa, head, FLEN, 100, 1);
	wait_kicks_on(NDR_RX, ei);
	ndr_rx_add(&R, 1, gpa, head);
	(void)publish_kick(NDR_RX);
	ndr_rx_expect(&R, 1, gpa, head, FLEN, 100 + NB, 1);
	ndr_teardown(&R);
}
END_TEST

/* Read one stream frame of @len bytes from the peer end: ndr_post_tx()'s
 * bytes, @seed + j. */
static void peer_expect(uint32_t len, uint8_t seed)
{
	static uint8_t f[4 + BIG];

	ck_assert_uint_le(len, BIG);
	ndr_peer_read(&R, f, 4 + len);
	ck_assert_uint_eq((uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 |
				  (uint32_t)f[2] << 8 | f[3], len);
	for (uint32_t j = 0; j < len; j++)
		ck_assert_uint_eq(f[4 + j], (uint8_t)(seed + j));
}

/* Until pair 0's TX has given back @n chains (bounded: 10 s). */
static void wait_tx_used(unsigned int n)
{
	int t;

	for (t = 0; t < 20000 && ndr_tx_used(&R) < n; t++)
		usleep(500);
	ck_assert_uint_eq(ndr_tx_used(&R), n);
}

START_TEST(tx_no_kick_while_the_device_has_work)
{
	bool ei = _i;

	/* A 4 KiB socket that the peer does not read yet. */
	ndr_setup(&R, &(struct ndr_params){ .queue_size = 64, .sndbuf = 4096,
					    .event_idx = ei });
	ndr_post_tx(&R, BIG, 1);
	ck_assert_msg(publish_kick(NDR_TX), "an idle device asked for no kick");
	/* The socket took part of it: the device waits for POLLOUT with the
	 * rest in hand (the chain is given back once the frame is copied
	 * out of guest memory). */
	wait_tx_used(1);
	/* Frames added meanwhile are the device's work when it goes on: no
	 * kick. */
	ndr_post_tx(&R, FLEN, 2);
	ck_assert_msg(!publish_kick(NDR_TX),
		      "a kick while the device had work in hand (EVENT_IDX %d)", ei);
	ndr_post_tx(&R, FLEN, 3);
	ck_assert_msg(!publish_kick(NDR_TX),
		      "a kick while the device had work in hand (EVENT_IDX %d)", ei);
	/* The peer reads: all of it, in order, without another kick. */
	peer_expect(BIG, 1);
	peer_expect(FLEN, 2);
	peer_expect(FLEN, 3);
	wait_tx_used(3);
	/* The ring drained: the device asks for kicks again, and the next
	 * frame kicks and goes out. */
	wait_kicks_on(NDR_TX, ei);
	ndr_post_tx(&R, FLEN, 4);
	ck_assert_msg(publish_kick(NDR_TX), "a drained device asked for no kick");
	peer_expect(FLEN, 4);
	wait_tx_used(4);
	ndr_teardown(&R);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_kicks");
	TCase *tc = tcase_create("kicks");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	/* Loop index: EVENT_IDX off (0) and on (1). */
	tcase_add_loop_test(tc, rx_kicks_only_when_starved, 0, 2);
	tcase_add_loop_test(tc, tx_no_kick_while_the_device_has_work, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
