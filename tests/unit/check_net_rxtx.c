/* SPDX-License-Identifier: MIT */
/*
 * virtio-net packet paths (vnet.h) on a simulated driver and a datagram
 * socket standing in for the tap: TX frames written as the chain holds
 * them (header included), RX into one chain or, with MRG_RXBUF, several
 * with num_buffers set, the driver short of buffers (nothing read, chains
 * given back), and broken chains (-EPROTO).
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_guest.h"
#include "net/vnet.h"

#define RAM_SIZE (16u << 20)

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vnet_rxq *rq;
static struct virtq_chain *chain;
static struct vnet_pair_stats st;
static int sv[2]; /* sv[0]: the device's "tap", sv[1]: the host side */

static void setup(void)
{
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, 16, 1ull << VIRTIO_RING_F_EVENT_IDX), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	rq = calloc(1, sizeof(*rq));
	chain = malloc(sizeof(*chain));
	ck_assert_ptr_nonnull(rq);
	ck_assert_ptr_nonnull(chain);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	memset(&st, 0, sizeof(st));
}

static void teardown(void)
{
	close(sv[0]);
	close(sv[1]);
	free(rq);
	free(chain);
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
}

/* Post @n writable buffers of @len bytes each (one per chain). */
static void post_rx(unsigned int n, uint32_t len, uint64_t *gpa)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf b = { fg_alloc(&g, len, 8), len, true };

		gpa[i] = b.gpa;
		memset(fg_ptr(&g, b.gpa, len), 0xee, len);
		ck_assert_int_ge(fg_vq_add(&fvq, &b, 1, false), 0);
	}
	fg_vq_publish(&fvq);
}

/* A frame from the host side: a header (flags, num_buffers 0) and
 * @len bytes of payload, byte i = i * 7. */
static void host_send(size_t len)
{
	uint8_t *p = calloc(1, VNET_HDR_LEN + len);

	p[0] = VIRTIO_NET_HDR_F_DATA_VALID;
	for (size_t i = 0; i < len; i++)
		p[VNET_HDR_LEN + i] = (uint8_t)(i * 7);
	ck_assert_int_eq(send(sv[1], p, VNET_HDR_LEN + len, 0),
			 (ssize_t)(VNET_HDR_LEN + len));
	free(p);
}

START_TEST(tx_frame_as_is)
{
	uint8_t hdr[VNET_HDR_LEN] = { VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 34, 0, 16, 0 };
	struct fg_buf b[2] = {
		{ fg_alloc(&g, VNET_HDR_LEN, 8), VNET_HDR_LEN, false },
		{ fg_alloc(&g, 60, 8), 60, false },
	};
	uint8_t got[128];
	uint32_t id, len;
	bool more;

	memcpy(fg_ptr(&g, b[0].gpa, VNET_HDR_LEN), hdr, VNET_HDR_LEN);
	memset(fg_ptr(&g, b[1].gpa, 60), 0x5a, 60);
	ck_assert_int_ge(fg_vq_add(&fvq, b, 2, false), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vnet_tx(&vq, chain, sv[0], 64, &st, &more), 1);
	ck_assert(!more);
	ck_assert_int_eq(recv(sv[1], got, sizeof(got), 0), VNET_HDR_LEN + 60);
	ck_assert_mem_eq(got, hdr, VNET_HDR_LEN);
	ck_assert_uint_eq(got[VNET_HDR_LEN + 59], 0x5a);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(len, 0);
	ck_assert_uint_eq(st.tx_packets, 1);
	ck_assert_uint_eq(st.tx_bytes, 60);
}
END_TEST

/* A chain shorter than the header, and a frame the "tap" refuses: both
 * dropped, counted, and their chains used all the same. */
START_TEST(tx_drops)
{
	struct fg_buf runt = { fg_alloc(&g, 4, 8), 4, false };
	uint32_t id, len;
	bool more;

	ck_assert_int_ge(fg_vq_add(&fvq, &runt, 1, false), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vnet_tx(&vq, chain, -1, 64, &st, &more), 1);
	ck_assert_uint_eq(st.tx_drops, 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
}
END_TEST

START_TEST(tx_budget)
{
	bool more;

	for (int i = 0; i < 5; i++) {
		struct fg_buf b = { fg_alloc(&g, 64, 8), 64, false };

		ck_assert_int_ge(fg_vq_add(&fvq, &b, 1, false), 0);
	}
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vnet_tx(&vq, chain, sv[0], 3, &st, &more), 3);
	ck_assert(more);
	ck_assert_int_eq(vnet_tx(&vq, chain, sv[0], 3, &st, &more), 2);
	ck_assert(!more);
	ck_assert_uint_eq(st.tx_packets, 5);
}
END_TEST

START_TEST(rx_one_chain)
{
	uint64_t gpa[2];
	unsigned int pushed;
	uint32_t id, len;
	uint8_t *p;

	post_rx(2, 2048, gpa);
	host_send(100);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], false, 1530, 64, &st, &pushed),
			 VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(len, VNET_HDR_LEN + 100);
	p = fg_ptr(&g, gpa[0], 2048);
	ck_assert_uint_eq(p[0], VIRTIO_NET_HDR_F_DATA_VALID);
	ck_assert_uint_eq(p[10] | p[11] << 8, 1); /* num_buffers */
	ck_assert_uint_eq(p[VNET_HDR_LEN + 99], (uint8_t)(99 * 7));
	ck_assert_uint_eq(p[VNET_HDR_LEN + 100], 0xee); /* untouched */
	/* The second buffer went back: the next packet takes it, and then
	 * the driver has none left. */
	host_send(10);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], false, 1530, 64, &st, &pushed),
			 VNET_RX_NO_BUFS);
	ck_assert_uint_eq(pushed, 1);
	ck_assert_uint_eq(st.rx_packets, 2);
	ck_assert_uint_eq(st.rx_bytes, 110);
}
END_TEST

/* MRG_RXBUF: a 3000-byte frame over 1024-byte buffers takes three, the
 * first's header says so, the unused ones are given back. */
START_TEST(rx_mergeable)
{
	uint64_t gpa[8];
	unsigned int pushed;
	uint32_t id, len, total = 0;
	uint8_t *p;

	post_rx(8, 1024, gpa);
	host_send(3000);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], true, 4096, 64, &st, &pushed),
			 VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		total += len;
	}
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 0);
	ck_assert_uint_eq(total, VNET_HDR_LEN + 3000);
	p = fg_ptr(&g, gpa[0], 1024);
	ck_assert_uint_eq(p[10] | p[11] << 8, 3);
	p = fg_ptr(&g, gpa[2], 1024);
	ck_assert_uint_eq(p[3012 - 2048 - 1], (uint8_t)(2999 * 7));
	ck_assert_uint_eq(virtq_avail_count(&vq), 5);
}
END_TEST

/* Fewer buffers than the largest packet needs, ring not full: nothing is
 * read (the frame stays queued), every chain goes back. */
START_TEST(rx_short_of_buffers)
{
	uint64_t gpa[16];
	unsigned int pushed;
	uint8_t x[8];

	host_send(100);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], true, 65565, 64, &st, &pushed),
			 VNET_RX_NO_BUFS);
	post_rx(2, 1024, gpa);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], true, 65565, 64, &st, &pushed),
			 VNET_RX_NO_BUFS);
	ck_assert_uint_eq(pushed, 0);
	ck_assert_uint_eq(virtq_avail_count(&vq), 2);
	ck_assert_uint_eq(fg_vq_used_pending(&fvq), 0);
	ck_assert_int_eq(recv(sv[1], x, sizeof(x), MSG_DONTWAIT), -1);
	/* A whole ring posted is all the driver can give: read. */
	post_rx(14, 1024, gpa);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], true, 65565, 64, &st, &pushed),
			 VNET_RX_NO_BUFS); /* one used: short again */
	ck_assert_uint_eq(pushed, 1);
	ck_assert_uint_eq(virtq_avail_count(&vq), 15);
}
END_TEST

START_TEST(rx_budget)
{
	uint64_t gpa[8];
	unsigned int pushed;

	post_rx(8, 2048, gpa);
	for (int i = 0; i < 3; i++)
		host_send(64);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], false, 1530, 2, &st, &pushed),
			 VNET_RX_BUDGET);
	ck_assert_uint_eq(pushed, 2);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], false, 1530, 2, &st, &pushed),
			 VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
}
END_TEST

/* An RX chain with nothing writable breaks the protocol. */
START_TEST(rx_readonly_chain)
{
	struct fg_buf b = { fg_alloc(&g, 64, 8), 64, false };
	unsigned int pushed;

	ck_assert_int_ge(fg_vq_add(&fvq, &b, 1, false), 0);
	fg_vq_publish(&fvq);
	host_send(10);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], false, 1530, 64, &st, &pushed),
			 -EPROTO);
}
END_TEST

/* A descriptor pointing outside guest RAM: -EPROTO on both paths. */
START_TEST(bad_descriptor)
{
	unsigned int pushed;
	bool more;

	fg_vq_set_desc(&fvq, 0, RAM_SIZE * 2, 64, VRING_DESC_F_WRITE, 0);
	fg_vq_add_raw_head(&fvq, 0);
	fg_vq_set_avail_idx(&fvq, 1);
	host_send(10);
	ck_assert_int_eq(vnet_rx(rq, &vq, sv[0], true, 1530, 64, &st, &pushed),
			 -EPROTO);
	ck_assert_int_eq(vnet_tx(&vq, chain, sv[0], 64, &st, &more), -EPROTO);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_rxtx");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tx_frame_as_is);
	tcase_add_test(tc, tx_drops);
	tcase_add_test(tc, tx_budget);
	tcase_add_test(tc, rx_one_chain);
	tcase_add_test(tc, rx_mergeable);
	tcase_add_test(tc, rx_short_of_buffers);
	tcase_add_test(tc, rx_budget);
	tcase_add_test(tc, rx_readonly_chain);
	tcase_add_test(tc, bad_descriptor);
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
