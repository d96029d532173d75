/* SPDX-License-Identifier: MIT */
/*
 * Stream back end (devices/net/stream.h), RX: frames that arrive in pieces
 * are delivered only once whole, several frames in one read each get
 * their own packet, the header is synthesized (no offload, num_buffers),
 * and with MRG_RXBUF a large frame spreads over several chains.  The
 * driver short of buffers: nothing more is read, the frame waits.
 */
#include <check.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>

#include "stream_fixture.h"

static struct stream_fixture f;
static uint8_t buf[2 * NSTREAM_BUF];

static void setup(void)
{
	ck_assert_int_eq(sfx_init(&f, 16), 0);
}

static void teardown(void)
{
	sfx_fini(&f);
}

static int rx(bool mrg, unsigned int *pushed)
{
	return nstream_rx(f.s, f.rq, &f.vq, mrg, 64, &f.st, pushed);
}

/* Packet at @gpa: a zero header (num_buffers @nbufs) and @len bytes of
 * frame (byte i = i * 7 + @seed). */
static void check_packet(uint64_t gpa, uint32_t len, uint8_t seed, uint16_t nbufs)
{
	uint8_t *p = fg_ptr(&f.g, gpa, VNET_HDR_LEN + len);
	struct virtio_net_hdr_v1 h;

	memcpy(&h, p, sizeof(h));
	ck_assert_uint_eq(h.flags, 0);
	ck_assert_uint_eq(h.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	ck_assert_uint_eq(h.num_buffers, nbufs);
	for (uint32_t i = 0; i < len; i++)
		ck_assert_uint_eq(p[VNET_HDR_LEN + i], (uint8_t)(i * 7 + seed));
}

START_TEST(frame_in_pieces)
{
	size_t n = sfx_frame(buf, 100, 1);
	uint64_t gpa[2];
	unsigned int pushed;
	uint32_t id, len;

	sfx_post_rx(&f, 2, 2048, gpa);
	/* One byte of the length, then the rest of it, then most of the
	 * frame: nothing whole yet. */
	ck_assert_int_eq(sfx_send(&f, buf, 1), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_int_eq(sfx_send(&f, buf + 1, 3), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_int_eq(sfx_send(&f, buf + 4, 50), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 0);
	ck_assert_uint_eq(fg_vq_used_pending(&f.fvq), 0);
	ck_assert_int_eq(sfx_send(&f, buf + 54, n - 54), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert_int_eq(fg_vq_get_used(&f.fvq, &id, &len), 1);
	ck_assert_uint_eq(len, VNET_HDR_LEN + 100);
	check_packet(gpa[0], 100, 1, 1);
	ck_assert_uint_eq(f.st.rx_packets, 1);
	ck_assert_uint_eq(f.st.rx_bytes, 100);
	ck_assert(!f.s->dead);
}
END_TEST

START_TEST(frames_in_one_read)
{
	size_t n = sfx_frame(buf, 60, 2);
	uint64_t gpa[4];
	unsigned int pushed;
	uint32_t id, len;

	n += sfx_frame(buf + n, 1514, 3);
	n += sfx_frame(buf + n, 70, 4); /* and half of a fourth */
	n += 40;
	sfx_frame(buf + n - 40, 200, 5);
	sfx_post_rx(&f, 4, 2048, gpa);
	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 3);
	check_packet(gpa[0], 60, 2, 1);
	check_packet(gpa[1], 1514, 3, 1);
	check_packet(gpa[2], 70, 4, 1);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fg_vq_get_used(&f.fvq, &id, &len), 1);
	/* The fourth's rest completes it. */
	n = sfx_frame(buf, 200, 5);
	ck_assert_int_eq(sfx_send(&f, buf + 40, n - 40), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	check_packet(gpa[3], 200, 5, 1);
}
END_TEST

START_TEST(mergeable_spread)
{
	size_t n = sfx_frame(buf, 9000, 6);
	uint64_t gpa[8];
	unsigned int pushed;
	uint32_t id, len;

	sfx_post_rx(&f, 8, 4096, gpa);
	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	ck_assert_int_eq(rx(true, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert_uint_eq(fg_vq_used_pending(&f.fvq), 3); /* 9012 bytes */
	ck_assert_int_eq(fg_vq_get_used(&f.fvq, &id, &len), 1);
	ck_assert_uint_eq(len, 4096);
	ck_assert_uint_eq(*(uint16_t *)((uint8_t *)fg_ptr(&f.g, gpa[0], 12) + 10), 3);
	ck_assert_uint_eq(((uint8_t *)fg_ptr(&f.g, gpa[2], 4096))[9012 - 8192 - 1],
			  (uint8_t)(8999 * 7 + 6));
}
END_TEST

/* Too few buffers: the frame waits (nothing dropped); more buffers, and
 * it goes in.  A frame larger than every buffer the driver can post
 * (one chain without MRG_RXBUF) is dropped and counted. */
START_TEST(short_of_buffers)
{
	size_t n = sfx_frame(buf, 3000, 7);
	uint64_t gpa[2];
	unsigned int pushed;

	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	ck_assert_int_eq(rx(true, &pushed), VNET_RX_NO_BUFS);
	sfx_post_rx(&f, 1, 2048, gpa);
	ck_assert_int_eq(rx(true, &pushed), VNET_RX_NO_BUFS);
	ck_assert_uint_eq(fg_vq_used_pending(&f.fvq), 0);
	sfx_post_rx(&f, 1, 2048, gpa + 1);
	ck_assert_int_eq(rx(true, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert_uint_eq(f.st.rx_drops, 0);
	/* Without MRG_RXBUF: one 2048-byte chain cannot take it. */
	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	sfx_post_rx(&f, 1, 2048, gpa);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 0);
	ck_assert_uint_eq(f.st.rx_drops, 1);
	ck_assert(!f.s->dead);
}
END_TEST

/* A runt (shorter than an Ethernet header, or empty) is dropped and
 * counted; the stream goes on. */
START_TEST(runts)
{
	size_t n = sfx_frame(buf, 0, 0);
	uint64_t gpa[1];
	unsigned int pushed;

	n += sfx_frame(buf + n, 13, 0);
	n += sfx_frame(buf + n, 14, 8);
	sfx_post_rx(&f, 1, 2048, gpa);
	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	ck_assert_int_eq(rx(false, &pushed), VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert_uint_eq(f.st.rx_drops, 2);
	check_packet(gpa[0], 14, 8, 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_stream_pieces");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, frame_in_pieces);
	tcase_add_test(tc, frames_in_one_read);
	tcase_add_test(tc, mergeable_spread);
	tcase_add_test(tc, short_of_buffers);
	tcase_add_test(tc, runts);
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
