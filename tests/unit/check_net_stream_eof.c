/* SPDX-License-Identifier: MIT */
/*
 * Stream back end (devices/net/stream.h): the peer going away.  End of
 * file (after whole frames, or in the middle of one) makes the pair dead
 * (why -EPIPE) with the whole frames delivered; a send to a peer gone is
 * no SIGPIPE (MSG_NOSIGNAL) but a dead pair, the frame dropped and
 * counted, its chain used.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "stream_fixture.h"

static struct stream_fixture f;
static uint8_t buf[4096];

static void setup(void)
{
	/* A SIGPIPE would end the test: it must not come. */
	signal(SIGPIPE, SIG_DFL);
	ck_assert_int_eq(sfx_init(&f, 16), 0);
}

static void teardown(void)
{
	sfx_fini(&f);
}

START_TEST(eof_mid_frame)
{
	size_t n = sfx_frame(buf, 100, 1);
	unsigned int pushed;

	n += sfx_frame(buf + n, 500, 2);
	sfx_post_rx(&f, 4, 2048, NULL);
	ck_assert_int_eq(sfx_send(&f, buf, n - 100), 0);
	close(f.peer_fd);
	f.peer_fd = -1;
	ck_assert_int_eq(nstream_rx(f.s, f.rq, &f.vq, false, 64, &f.st, &pushed),
			 VNET_RX_DRAINED);
	ck_assert_uint_eq(pushed, 1);
	ck_assert(f.s->dead);
	ck_assert_int_eq(f.s->why, -EPIPE);
	ck_assert_uint_eq(f.st.rx_packets, 1);
}
END_TEST

START_TEST(send_to_gone_peer)
{
	bool more;
	uint32_t id, len;

	close(f.peer_fd);
	f.peer_fd = -1;
	sfx_post_tx(&f, 60, 0, 0, 1);
	sfx_post_tx(&f, 60, 0, 0, 2);
	ck_assert_int_eq(nstream_tx(f.s, &f.vq, f.chain, 64, &f.st, &more), 2);
	ck_assert(!more);
	ck_assert(f.s->dead);
	ck_assert_int_eq(f.s->why, -EPIPE);
	ck_assert_uint_eq(f.st.tx_drops, 2);
	ck_assert_int_eq(fg_vq_get_used(&f.fvq, &id, &len), 1);
	ck_assert_int_eq(fg_vq_get_used(&f.fvq, &id, &len), 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_stream_eof");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, eof_mid_frame);
	tcase_add_test(tc, send_to_gone_peer);
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
