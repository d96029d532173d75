/* SPDX-License-Identifier: MIT */
/*
 * Stream back end (devices/net/stream.h), TX: each frame goes out as its
 * length (big-endian) and the frame, without the virtio-net header.  A
 * full socket: a chain it takes nothing of stays in the ring (not used,
 * not dropped; *more says to come back), a frame it takes in part has its
 * tail kept and sent first next time; the peer reads every frame intact
 * and in order; while the socket takes nothing the wait is on record
 * (nstream_blocked_since()), cleared once it takes frames again.  A header
 * asking for an offload (not negotiated on a stream NIC) is a frame
 * dropped and counted.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "stream_fixture.h"

static struct stream_fixture f;

static void setup(void)
{
	int small = 4096;

	ck_assert_int_eq(sfx_init(&f, 128), 0);
	/* Small buffers both sides: the socket fills after a few frames. */
	ck_assert_int_eq(setsockopt(f.dev_fd, SOL_SOCKET, SO_SNDBUF, &small,
				    sizeof(small)), 0);
	ck_assert_int_eq(setsockopt(f.peer_fd, SOL_SOCKET, SO_RCVBUF, &small,
				    sizeof(small)), 0);
}

static void teardown(void)
{
	sfx_fini(&f);
}

/* Read the stream on the peer's side into @buf (up to @cap).  Bytes. */
static size_t peer_drain(uint8_t *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n < cap && (r = recv(f.peer_fd, buf + n, cap - n, MSG_DONTWAIT)) > 0)
		n += (size_t)r;
	return n;
}

/* The next frame at @p: length @len, byte i = i * 3 + @seed. */
static const uint8_t *check_frame(const uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t l = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | p[2] << 8 | p[3];

	ck_assert_uint_eq(l, len);
	for (uint32_t i = 0; i < len; i++)
		ck_assert_uint_eq(p[4 + i], (uint8_t)(i * 3 + seed));
	return p + 4 + len;
}

START_TEST(full_socket_waits)
{
	static uint8_t got[1 << 20];
	const unsigned int nr = 40;
	unsigned int sent = 0, rounds = 0;
	size_t have = 0;
	const uint8_t *p;
	bool more = true, waited = false, blocked = false;

	for (unsigned int i = 0; i < nr; i++)
		sfx_post_tx(&f, 1500, 0, 0, (uint8_t)i);
	while (more && rounds++ < 1000) {
		int r = nstream_tx(f.s, &f.vq, f.chain, 64, &f.st, &more);

		ck_assert_int_ge(r, 0);
		sent += (unsigned int)r;
		if (more) {
			waited = true;
			/* Nothing taken: the wait is on record (the device warns
			 * when it lasts). */
			blocked = blocked || nstream_blocked_since(f.s) != 0;
			/* Chains not taken are still in the ring. */
			ck_assert_uint_eq(fg_vq_used_pending(&f.fvq), sent);
		}
		have += peer_drain(got + have, sizeof(got) - have);
	}
	have += peer_drain(got + have, sizeof(got) - have);
	ck_assert(waited);
	ck_assert(blocked);
	ck_assert(!more);
	/* Everything taken: no wait on record any more. */
	ck_assert_uint_eq(nstream_blocked_since(f.s), 0);
	ck_assert_uint_eq(sent, nr);
	ck_assert_uint_eq(f.st.tx_packets, nr);
	ck_assert_uint_eq(f.st.tx_drops, 0);
	ck_assert_uint_eq(f.st.tx_bytes, nr * 1500ull);
	ck_assert_uint_eq(have, nr * 1504ull);
	p = got;
	for (unsigned int i = 0; i < nr; i++)
		p = check_frame(p, 1500, (uint8_t)i);
	ck_assert(!f.s->dead);
}
END_TEST

/* One frame larger than the socket's buffer: taken in part, its tail
 * kept; flushing as the peer reads delivers it whole. */
START_TEST(partial_frame_tail)
{
	static uint8_t got[1 << 17];
	size_t have = 0;
	bool more = false;
	int r;

	sfx_post_tx(&f, 60000, 0, 0, 5);
	sfx_post_tx(&f, 100, 0, 0, 6);
	r = nstream_tx(f.s, &f.vq, f.chain, 64, &f.st, &more);
	ck_assert_int_eq(r, 1); /* the big one used, its tail kept */
	ck_assert(more);
	ck_assert_uint_gt(f.s->tx_len - f.s->tx_off, 0);
	for (int i = 0; i < 10000 && (more || have < 60004 + 104); i++) {
		have += peer_drain(got + have, sizeof(got) - have);
		if (more)
			ck_assert_int_ge(nstream_tx(f.s, &f.vq, f.chain, 64, &f.st,
						    &more), 0);
	}
	ck_assert_uint_eq(have, 60004 + 104);
	check_frame(check_frame(got, 60000, 5), 100, 6);
	ck_assert_uint_eq(f.st.tx_packets, 2);
}
END_TEST

START_TEST(offload_header_dropped)
{
	uint8_t got[64];
	bool more;

	sfx_post_tx(&f, 60, VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 1);
	sfx_post_tx(&f, 60, 0, VIRTIO_NET_HDR_GSO_TCPV4, 1);
	ck_assert_int_eq(nstream_tx(f.s, &f.vq, f.chain, 64, &f.st, &more), 2);
	ck_assert_uint_eq(f.st.tx_drops, 2);
	ck_assert_int_eq(recv(f.peer_fd, got, sizeof(got), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(fg_vq_used_pending(&f.fvq), 2);
}
END_TEST


static Suite *suite(void)
{
	Suite *s = suite_create("net_stream_full");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, full_socket_waits);
	tcase_add_test(tc, partial_frame_tail);
	tcase_add_test(tc, offload_header_dropped);
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
