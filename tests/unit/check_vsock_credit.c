/* SPDX-License-Identifier: MIT */
/*
 * Hybrid vsock flow control, KVM-free (tests/harness/vsock_drv.h): the
 * device never sends the guest more than its credit (buf_alloc minus what
 * is in flight), and sends more once the guest's fwd_cnt moves; a guest
 * that never reads leaves the data in the host socket, whose writer then
 * blocks; a host that never reads stops the guest's credit (the device
 * buffers at most its buf_alloc per connection), and once it reads again
 * a CREDIT_UPDATE lets the guest go on, every byte arriving in order; a
 * guest that sends beyond its credit is reset; CREDIT_REQUEST is answered.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vsock_drv.h"

#define BUF 8192u /* the device's buf_alloc in these tests */

static struct vsock_drv d;
static int lfd;

static void setup(void)
{
	vd_init(&d, 0, BUF);
	vd_post_rx(&d, 64);
	lfd = vd_host_listen(&d, 6000);
}

static void teardown(void)
{
	close(lfd);
	vd_fini(&d);
}

/* Receive every packet waiting; returns the RW payload bytes, counting
 * other operations in *@ctl (NULL: none allowed). */
static size_t drain_rx(uint8_t *out, size_t max, unsigned int *ctl)
{
	struct vsock_hdr h;
	static uint8_t tmp[VD_RXBUF];
	size_t got = 0;

	while (vd_recv(&d, &h, tmp, sizeof(tmp)) == 1) {
		vd_post_rx(&d, 1);
		if (h.op != VSOCK_OP_RW) {
			ck_assert_ptr_nonnull(ctl);
			(*ctl)++;
			continue;
		}
		ck_assert_uint_le(got + h.len, max);
		memcpy(out + got, tmp, h.len);
		got += h.len;
	}
	return got;
}

START_TEST(test_never_beyond_guest_credit)
{
	const uint32_t credit = 10000;
	static uint8_t in[100000], out[sizeof(in)];
	unsigned int ctl = 0;
	size_t got;
	int hs;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + 3);
	hs = vd_guest_connect(&d, lfd, 1234, 6000, credit);
	ck_assert_int_ge(hs, 0);
	ck_assert_int_eq(fcntl(hs, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(write(hs, in, sizeof(in)), (ssize_t)sizeof(in));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(vd_pump(&d), 0);
	got = drain_rx(out, sizeof(out), &ctl);
	ck_assert_uint_eq(got, credit); /* exactly the credit, not a byte more */
	/* The guest read half: 5000 more. */
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_CREDIT_UPDATE, 1234, 6000, NULL, 0, 0,
				 credit, 5000), 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	got += drain_rx(out + got, sizeof(out) - got, &ctl);
	ck_assert_uint_eq(got, credit + 5000);
	/* A larger buffer (every packet carries it): the rest. */
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_CREDIT_UPDATE, 1234, 6000, NULL, 0, 0,
				 1u << 20, (uint32_t)got), 0);
	for (int i = 0; i < 64 && got < sizeof(in); i++) {
		ck_assert_int_eq(vd_pump(&d), 0);
		got += drain_rx(out + got, sizeof(out) - got, &ctl);
	}
	ck_assert_uint_eq(got, sizeof(in));
	ck_assert(!memcmp(in, out, sizeof(in)));
	close(hs);
}
END_TEST

/* A fwd_cnt ahead of what was sent (hostile) gives no credit at all. */
START_TEST(test_bogus_fwd_cnt)
{
	unsigned int ctl = 0;
	static uint8_t out[4096];
	int hs = vd_guest_connect(&d, lfd, 1234, 6000, 4096);

	ck_assert_int_ge(hs, 0);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_CREDIT_UPDATE, 1234, 6000, NULL, 0, 0,
				 4096, 100000), 0);
	ck_assert_int_eq(write(hs, "x", 1), 1);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_uint_eq(drain_rx(out, sizeof(out), &ctl), 0);
	close(hs);
}
END_TEST

/* The guest posts buffers but never reads (no fwd_cnt moves): the host
 * writer blocks after the socket's buffer, the device took the credit. */
START_TEST(test_guest_never_reads)
{
	static uint8_t chunk[65536], out[1 << 20];
	struct vsock_stats st;
	unsigned int ctl = 0;
	size_t written = 0;
	int hs = vd_guest_connect(&d, lfd, 1234, 6000, 65536);

	ck_assert_int_ge(hs, 0);
	ck_assert_int_eq(fcntl(hs, F_SETFL, O_NONBLOCK), 0);
	for (int round = 0; round < 200; round++) {
		ssize_t n = write(hs, chunk, sizeof(chunk));

		if (n > 0)
			written += (size_t)n;
		ck_assert_int_eq(vd_pump(&d), 0);
		drain_rx(out, sizeof(out), &ctl);
	}
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.bytes_to_guest, 65536);
	/* The writer stopped at the socket's buffer (EAGAIN), not at 13 MB. */
	ck_assert_uint_lt(written, 8u << 20);
	ck_assert_int_eq(write(hs, chunk, sizeof(chunk)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(hs);
}
END_TEST

/* Guest -> host with a host that does not read: the guest (following the
 * credit as a driver must) stops; once the host reads, CREDIT_UPDATEs
 * bring everything through in order. */
START_TEST(test_host_never_reads)
{
	static uint8_t in[4u << 20], out[sizeof(in)];
	uint32_t peer_alloc = BUF, peer_fwd = 0, sent = 0;
	size_t got = 0;
	int hs = vd_guest_connect(&d, lfd, 1234, 6000, 65536);
	struct vsock_hdr h;
	int stalls = 0;

	ck_assert_int_ge(hs, 0);
	ck_assert_int_eq(fcntl(hs, F_SETFL, O_NONBLOCK), 0);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i ^ (i >> 9));
	while (sent < sizeof(in)) {
		uint32_t credit = peer_alloc - (sent - peer_fwd);
		uint32_t n = MIN(MIN(credit, 4096u), (uint32_t)sizeof(in) - sent);

		if (n) {
			ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 1234, 6000, in + sent,
						 n, 0, 65536, 0), 0);
			sent += n;
		}
		ck_assert_int_eq(vd_pump(&d), 0);
		while (vd_recv(&d, &h, NULL, 0) == 1) {
			vd_post_rx(&d, 1);
			ck_assert_uint_ne(h.op, VSOCK_OP_RST);
			peer_alloc = h.buf_alloc;
			ck_assert_uint_le(h.fwd_cnt - peer_fwd, sent - peer_fwd);
			peer_fwd = h.fwd_cnt;
		}
		if (n)
			continue;
		/* No credit: the host reads a little only every few rounds,
		 * and the device never holds more than BUF of it meanwhile. */
		ck_assert_uint_le(sent - peer_fwd, BUF);
		if (++stalls % 4 == 0) {
			ssize_t r = read(hs, out + got, sizeof(out) - got);

			if (r > 0)
				got += (size_t)r;
		}
		vsock_host_events(d.v);
	}
	for (int i = 0; i < 1000 && got < sizeof(in); i++) {
		ssize_t r = read(hs, out + got, sizeof(out) - got);

		if (r > 0)
			got += (size_t)r;
		ck_assert_int_eq(vd_pump(&d), 0);
		while (vd_recv(&d, &h, NULL, 0) == 1)
			vd_post_rx(&d, 1);
	}
	ck_assert_uint_eq(got, sizeof(in));
	ck_assert(!memcmp(in, out, sizeof(in)));
	ck_assert_int_gt(stalls, 0);
	close(hs);
}
END_TEST

/* More than the credit we advertised: the connection is reset. */
START_TEST(test_guest_beyond_credit)
{
	static uint8_t big[65536];
	struct vsock_stats st;
	struct vsock_hdr h;
	uint32_t sent = 0;
	int hs = vd_guest_connect(&d, lfd, 1234, 6000, 65536);
	bool rst = false;

	ck_assert_int_ge(hs, 0);
	/* The host reads nothing: after the socket's buffer and BUF more,
	 * the next packet is beyond the credit. */
	for (int i = 0; i < 200 && !rst; i++) {
		ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 1234, 6000, big, 4096, 0,
					 65536, 0), 0);
		sent += 4096;
		ck_assert_int_eq(vd_pump(&d), 0);
		while (vd_recv(&d, &h, NULL, 0) == 1) {
			vd_post_rx(&d, 1);
			rst |= h.op == VSOCK_OP_RST;
		}
	}
	ck_assert(rst);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.bad_packets, 1);
	ck_assert_uint_eq(st.conns_open, 0);
	close(hs);
}
END_TEST

START_TEST(test_credit_request)
{
	struct vsock_hdr h;
	int hs = vd_guest_connect(&d, lfd, 1234, 6000, 65536);

	ck_assert_int_ge(hs, 0);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 1234, 6000, "abc", 3, 0, 65536, 0), 0);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_CREDIT_REQUEST, 1234, 6000, NULL, 0, 0,
				 65536, 0), 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_CREDIT_UPDATE);
	ck_assert_uint_eq(h.buf_alloc, BUF);
	ck_assert_uint_eq(h.fwd_cnt, 3);
	close(hs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_credit");
	TCase *tc = tcase_create("credit");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_never_beyond_guest_credit);
	tcase_add_test(tc, test_bogus_fwd_cnt);
	tcase_add_test(tc, test_guest_never_reads);
	tcase_add_test(tc, test_host_never_reads);
	tcase_add_test(tc, test_guest_beyond_credit);
	tcase_add_test(tc, test_credit_request);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
