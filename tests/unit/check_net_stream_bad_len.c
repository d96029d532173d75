/* SPDX-License-Identifier: MIT */
/*
 * Stream back end (devices/net/stream.h): a length word over the largest
 * frame is a broken peer.  Nothing is buffered for it: the pair is dead
 * (why -EMSGSIZE), the socket shut down (the peer reads end of file), and
 * what the guest sends afterwards is dropped and counted, its chains
 * used; the frames before the bad one were delivered.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "stream_fixture.h"

static struct stream_fixture f;
static uint8_t buf[NSTREAM_BUF];

static void setup(void)
{
	ck_assert_int_eq(sfx_init(&f, 16), 0);
}

static void teardown(void)
{
	sfx_fini(&f);
}

START_TEST(huge_length)
{
	size_t n = sfx_frame(buf, 64, 1);
	uint8_t bad[4] = { 0x00, 0x01, 0x00, 0x12 }; /* 65554: one too many */
	unsigned int pushed;
	uint8_t got[8];
	uint32_t id, len;
	bool more;

	ck_assert_uint_eq(NSTREAM_MAX_FRAME, 65553);
	sfx_post_rx(&f, 1, 2048, NULL); /* one queue: RX then TX */
	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	ck_assert_int_eq(sfx_send(&f, bad, sizeof(bad)), 0);
	ck_assert_int_eq(nstream_rx(f.s, f.rq, &f.vq, false, 64, &f.st, &pushed),
			 VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert(f.s->dead);
	ck_assert_int_eq(f.s->why, -EMSGSIZE);
	ck_assert_int_eq(recv(f.peer_fd, got, sizeof(got), MSG_DONTWAIT), 0);
	/* Dead: nothing more read, the guest's frames dropped and counted. */
	ck_assert_int_eq(nstream_rx(f.s, f.rq, &f.vq, false, 64, &f.st, &pushed),
			 VNET_RX_DRAINED);
	ck_assert_int_eq(fg_vq_get_used(&f.fvq, &id, &len), 1);
	sfx_post_tx(&f, 60, 0, 0, 0);
	ck_assert_int_eq(nstream_tx(f.s, &f.vq, f.chain, 64, &f.st, &more), 1);
	ck_assert(!more);
	ck_assert_uint_eq(f.st.tx_drops, 1);
	ck_assert_uint_eq(f.st.tx_packets, 0);
}
END_TEST

/* The framing alone: the largest length is taken, one more is not. */
START_TEST(largest_frame)
{
	const uint8_t *fr;
	uint32_t l;
	size_t n = sfx_frame(buf, NSTREAM_MAX_FRAME, 9);

	ck_assert_int_eq(sfx_send(&f, buf, n), 0);
	for (int i = 0; i < 100 && nstream_frame(f.s, &fr, &l) == 0; i++)
		ck_assert_int_ge(nstream_fill(f.s), 0);
	ck_assert_int_eq(nstream_frame(f.s, &fr, &l), 1);
	ck_assert_uint_eq(l, NSTREAM_MAX_FRAME);
	ck_assert_uint_eq(fr[l - 1], (uint8_t)((l - 1) * 7 + 9));
	nstream_consume(f.s);
	buf[0] = 0xff; /* 4 GiB - something */
	ck_assert_int_eq(sfx_send(&f, buf, 4), 0);
	ck_assert_int_eq(nstream_fill(f.s), 4);
	ck_assert_int_eq(nstream_frame(f.s, &fr, &l), -EMSGSIZE);
	ck_assert(f.s->dead);
	ck_assert_int_eq(nstream_fill(f.s), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_stream_bad_len");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, huge_length);
	tcase_add_test(tc, largest_frame);
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
