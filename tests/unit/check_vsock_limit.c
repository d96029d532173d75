/* SPDX-License-Identifier: MIT */
/*
 * Hybrid vsock connection limit, KVM-free (tests/harness/vsock_drv.h):
 * connections both ways up to the device's limit all work at once, each
 * with its own data; one more guest REQUEST gets an RST and one more host
 * client is closed; a closed connection frees its place; 1,000
 * connections opened and closed one after the other leave nothing behind.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vsock_drv.h"

#define LIMIT 64u

static struct vsock_drv d;
static int lfd;

static void setup(void)
{
	vd_init(&d, LIMIT, 0);
	vd_post_rx(&d, 128);
	lfd = vd_host_listen(&d, 7000);
}

static void teardown(void)
{
	close(lfd);
	vd_fini(&d);
}

START_TEST(test_up_to_the_limit)
{
	int hs[LIMIT], hc[LIMIT / 2];
	uint32_t hp[LIMIT / 2];
	struct vsock_stats st;
	struct vsock_hdr h;
	char buf[32];
	int fd;

	/* Half from the guest, half from the host. */
	for (unsigned int i = 0; i < LIMIT / 2; i++) {
		hs[i] = vd_guest_connect(&d, lfd, 100 + i, 7000, 65536);
		ck_assert_int_ge(hs[i], 0);
	}
	for (unsigned int i = 0; i < LIMIT / 2; i++)
		hc[i] = vd_host_open(&d, 9000, 65536, &hp[i]);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_open, LIMIT);
	/* Each carries its own bytes. */
	for (unsigned int i = 0; i < LIMIT / 2; i++) {
		int n = snprintf(buf, sizeof(buf), "conn %u", i);

		ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 100 + i, 7000, buf,
					 (uint32_t)n, 0, 65536, 0), 0);
		ck_assert_int_eq(vd_host_read(hs[i], buf + 16, 16), n);
		ck_assert(!memcmp(buf, buf + 16, (size_t)n));
		ck_assert_int_eq(write(hc[i], buf, (size_t)n), n);
	}
	ck_assert_int_eq(vd_pump(&d), 0);
	for (unsigned int i = 0; i < LIMIT / 2; i++) {
		unsigned int k = 0;

		ck_assert_int_eq(vd_recv(&d, &h, buf, sizeof(buf)), 1);
		ck_assert_uint_eq(h.op, VSOCK_OP_RW);
		ck_assert_uint_eq(h.dst_port, 9000);
		while (k < LIMIT / 2 && hp[k] != h.src_port)
			k++;
		ck_assert_uint_lt(k, LIMIT / 2);
		ck_assert_int_eq(snprintf(buf + 16, 16, "conn %u", k), (int)h.len);
		ck_assert(!memcmp(buf, buf + 16, h.len));
		hp[k] = 0; /* once each */
	}
	vd_post_rx(&d, LIMIT / 2);
	/* Full: a guest REQUEST gets an RST, a host client is closed. */
	ck_assert_int_eq(vd_guest_connect(&d, lfd, 999, 7000, 65536), -1);
	fd = vd_host_connect(&d);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_refused, 2);
	/* One ends (the guest resets it): there is room again. */
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RST, 100, 7000, NULL, 0, 0, 0, 0), 0);
	fd = vd_guest_connect(&d, lfd, 999, 7000, 65536);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (unsigned int i = 0; i < LIMIT / 2; i++) {
		close(hs[i]);
		close(hc[i]);
	}
}
END_TEST

START_TEST(test_thousand_in_turn)
{
	struct vsock_stats st;
	struct vsock_hdr h;

	for (unsigned int i = 0; i < 1000; i++) {
		int hs = vd_guest_connect(&d, lfd, 30000 + i, 7000, 65536);

		ck_assert_int_ge(hs, 0);
		vd_post_rx(&d, 1); /* for the RESPONSE taken */
		close(hs);
		ck_assert_int_eq(vd_pump(&d), 0);
		/* Host EOF: SHUTDOWN; the guest closes: RST. */
		ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
		ck_assert_uint_eq(h.op, VSOCK_OP_SHUTDOWN);
		vd_post_rx(&d, 1);
		ck_assert_int_eq(vd_send(&d, VSOCK_OP_SHUTDOWN, 30000 + i, 7000, NULL,
					 0, 3, 65536, 0), 0);
		ck_assert_int_eq(vd_pump(&d), 0);
		ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
		ck_assert_uint_eq(h.op, VSOCK_OP_RST);
		vd_post_rx(&d, 1);
	}
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_total, 1000);
	ck_assert_uint_eq(st.conns_open, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_limit");
	TCase *tc = tcase_create("limit");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_up_to_the_limit);
	tcase_add_test(tc, test_thousand_in_turn);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
