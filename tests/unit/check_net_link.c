/* SPDX-License-Identifier: MIT */
/*
 * virtio_net_set_link() (issue 28; QEMU's set_link): the whole device on a
 * real I/O thread over the stream back end (net_dev_rig.h), the test
 * driving the rings as the driver and playing the peer.  Down: the status
 * bit clears with one configuration interrupt, frames the peer sends wait
 * in the socket and reach no buffer, frames the driver sends are used and
 * dropped (counted), never sent; up: the bit back with one more
 * interrupt, the waiting frames delivered without a new one from the peer
 * (the RX queue is served at once) and TX sent again.  A second down is
 * nothing; a stream whose peer went away stays down (-ENOTCONN).
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_dev_rig.h"

static struct net_dev_rig r;

static void setup(void)
{
	ndr_setup(&r, &(struct ndr_params){ .queue_size = 64 });
}

static void teardown(void)
{
	ndr_teardown(&r);
}

static uint16_t status(void)
{
	uint16_t st = 0;

	r.vd.ops->config_read(r.vd.dev, offsetof(struct virtio_net_config, status),
			      &st, sizeof(st));
	return st;
}

static unsigned int link_changes(void)
{
	return __atomic_load_n(&r.link_changes, __ATOMIC_SEQ_CST);
}

static struct virtio_net_pair_stats pair0(void)
{
	struct virtio_net_pair_stats ps;

	ck_assert_int_eq(virtio_net_pair_stats(r.dev, 0, &ps), 0);
	return ps;
}

/* Wait (bounded, 10 s) until pair 0's TX has given back @n chains. */
static void wait_tx_used(unsigned int n)
{
	int t;

	for (t = 0; t < 20000 && ndr_tx_used(&r) < n; t++)
		usleep(500);
	ck_assert_uint_eq(ndr_tx_used(&r), n);
}

START_TEST(down_then_up)
{
	uint64_t gpa[4];
	int head[4];
	uint32_t id, len;
	uint8_t b;

	ck_assert(status() & VIRTIO_NET_S_LINK_UP);
	ck_assert(virtio_net_link_up(r.dev));
	ck_assert_int_eq(virtio_net_set_link(r.dev, false), 0);
	ck_assert(!(status() & VIRTIO_NET_S_LINK_UP));
	ck_assert(!virtio_net_link_up(r.dev));
	ck_assert_uint_eq(link_changes(), 1);
	/* Down again: nothing changes, no interrupt. */
	ck_assert_int_eq(virtio_net_set_link(r.dev, false), 0);
	ck_assert_uint_eq(link_changes(), 1);

	/* RX: buffers posted, two frames from the peer: none delivered. */
	ndr_rx_post(&r, 4, gpa, head);
	ndr_peer_send_numbered(&r, 2, 100, 7);
	usleep(300 * 1000);
	ck_assert_int_eq(fg_vq_get_used(&r.drv[NDR_RX], &id, &len), 0);
	ck_assert_uint_eq(pair0().net.rx_packets, 0);

	/* TX: three frames used and dropped, none reaches the peer. */
	ndr_tx_numbered(&r, 3, 64);
	wait_tx_used(3);
	ck_assert_int_eq(recv(r.peer[0], &b, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(pair0().net.tx_drops, 3);
	ck_assert_uint_eq(pair0().net.tx_packets, 0);

	/* Up: the waiting frames arrive with no new one from the peer. */
	ck_assert_int_eq(virtio_net_set_link(r.dev, true), 0);
	ck_assert(status() & VIRTIO_NET_S_LINK_UP);
	ck_assert(virtio_net_link_up(r.dev));
	ck_assert_uint_eq(link_changes(), 2);
	ndr_rx_expect(&r, 2, gpa, head, 100, 7, 1);
	ck_assert_uint_eq(pair0().net.rx_packets, 2);

	/* And TX goes out again. */
	ndr_tx_numbered(&r, 2, 64);
	ndr_peer_expect_numbered(&r, 2, 64);
	wait_tx_used(5);
	ck_assert_uint_eq(pair0().net.tx_packets, 2);
	ck_assert_uint_eq(pair0().net.tx_drops, 3);
	ck_assert_int_eq(virtio_net_set_link(r.dev, true), 0);
	ck_assert_uint_eq(link_changes(), 2);
}
END_TEST

START_TEST(peer_gone_stays_down)
{
	uint64_t gpa[2];
	int head[2];
	int t;

	ndr_rx_post(&r, 2, gpa, head);
	close(r.peer[0]);
	r.peer[0] = -1;
	/* The I/O thread takes the link down in steps (the flag, the status
	 * bit, the steering, the configuration interrupt last): wait for
	 * the last, bounded, then check them all.  (Waiting on the flag
	 * alone raced with the bit: seen once on the slow arm64 rig.) */
	for (t = 0; t < 20000 && link_changes() < 1; t++)
		usleep(500);
	ck_assert(!virtio_net_link_up(r.dev));
	ck_assert(!(status() & VIRTIO_NET_S_LINK_UP));
	ck_assert_uint_eq(link_changes(), 1);
	ck_assert_int_eq(virtio_net_set_link(r.dev, true), -ENOTCONN);
	/* Held down as well: the bit was clear already, no interrupt. */
	ck_assert_int_eq(virtio_net_set_link(r.dev, false), 0);
	ck_assert_uint_eq(link_changes(), 1);
	ck_assert_int_eq(virtio_net_set_link(r.dev, true), -ENOTCONN);
	ck_assert(!(status() & VIRTIO_NET_S_LINK_UP));
	ck_assert_uint_eq(link_changes(), 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_link");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, down_then_up);
	tcase_add_test(tc, peer_gone_stays_down);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
