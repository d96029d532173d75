/* SPDX-License-Identifier: MIT */
/*
 * Hybrid vsock set-ups that never finish give their places back, KVM-free
 * (tests/harness/vsock_drv.h), with a limit of 4 connections and a 1 s
 * set-up timeout:
 *  - host clients that never send their CONNECT line fill the table; a
 *    fifth is refused while they are young, and accepted once they are
 *    older than the timeout: they are closed (EOF) and counted refused;
 *  - host clients whose REQUEST the guest never answers: the same, and the
 *    guest gets an RST for each reclaimed REQUEST (through the RST queue,
 *    whether or not it takes its rx buffers);
 *  - a guest REQUEST to the host also reclaims late set-ups;
 *  - established connections are never reclaimed, however old.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vsock_drv.h"

#define LIMIT 4u
#define TIMEOUT_MS 1000u /* well above a loaded machine's scheduling stalls */

static struct vsock_drv d;
static int lfd;

static void setup(void)
{
	vd_init_timeout(&d, LIMIT, 0, TIMEOUT_MS);
	vd_post_rx(&d, 64);
	lfd = vd_host_listen(&d, 7000);
}

static void teardown(void)
{
	close(lfd);
	vd_fini(&d);
}

static void past_timeout(void)
{
	struct timespec ts = { (TIMEOUT_MS + 50) / 1000, (long)((TIMEOUT_MS + 50) % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t refused(void)
{
	struct vsock_stats st;

	vsock_get_stats(d.v, &st);
	return st.conns_refused;
}

/* A host client that only connects (and sends @line if not NULL). */
static int client(const char *line)
{
	int fd = vd_host_connect(&d);

	ck_assert_int_ge(fd, 0);
	if (line)
		ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	ck_assert_int_eq(vd_pump(&d), 0);
	return fd;
}

/* @fd was closed by the device: EOF, or a reset where the device left
 * bytes the client sent unread. */
static void assert_closed(int fd)
{
	char c;
	ssize_t n = vd_host_read(fd, &c, 1);

	ck_assert(n == 0 || (n < 0 && errno == ECONNRESET));
}

START_TEST(test_line_never_sent)
{
	int fd[LIMIT], late;
	uint64_t r0 = refused();
	char buf[32];

	for (unsigned int i = 0; i < LIMIT; i++)
		fd[i] = client(i % 2 ? "CONN" : NULL); /* none finishes a line */
	late = client(NULL); /* young ones hold the table: refused */
	assert_closed(late);
	close(late);
	ck_assert_uint_eq(refused(), r0 + 1);
	past_timeout();
	late = client("CONNECT 5000\n"); /* now they give way */
	for (unsigned int i = 0; i < LIMIT; i++) {
		assert_closed(fd[i]);
		close(fd[i]);
	}
	ck_assert_uint_eq(refused(), r0 + 1 + LIMIT);
	/* The late client's REQUEST reached the guest. */
	{
		struct vsock_hdr h;

		ck_assert_int_eq(vd_recv(&d, &h, buf, sizeof(buf)), 1);
		ck_assert_uint_eq(h.op, VSOCK_OP_REQUEST);
		ck_assert_uint_eq(h.dst_port, 5000);
	}
	close(late);
}
END_TEST

START_TEST(test_request_never_answered)
{
	int fd[LIMIT], late;
	uint32_t port[LIMIT];
	struct vsock_hdr h;
	unsigned int rsts = 0;
	bool response = false;
	uint64_t r0 = refused();

	for (unsigned int i = 0; i < LIMIT; i++) {
		fd[i] = client("CONNECT 6000\n");
		ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
		ck_assert_uint_eq(h.op, VSOCK_OP_REQUEST);
		port[i] = h.src_port;
	}
	past_timeout();
	/* A guest REQUEST to the host reclaims them too: RSTs for the guest's
	 * unanswered REQUESTs, and the RESPONSE to its own. */
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_REQUEST, 100, 7000, NULL, 0, 0, 65536, 0), 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	while (vd_recv(&d, &h, NULL, 0) == 1) {
		if (h.op == VSOCK_OP_RESPONSE && h.src_port == 7000 && h.dst_port == 100)
			response = true;
		if (h.op != VSOCK_OP_RST || h.dst_port != 6000)
			continue;
		for (unsigned int i = 0; i < LIMIT; i++)
			if (h.src_port == port[i]) {
				port[i] = 0;
				rsts++;
			}
	}
	ck_assert_uint_eq(rsts, LIMIT);
	ck_assert(response);
	late = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(late, 0);
	for (unsigned int i = 0; i < LIMIT; i++) {
		assert_closed(fd[i]);
		close(fd[i]);
	}
	ck_assert_uint_eq(refused(), r0 + LIMIT);
	close(late);
}
END_TEST

START_TEST(test_open_never_reclaimed)
{
	int hs[LIMIT], late;
	uint64_t r0 = refused();

	for (unsigned int i = 0; i < LIMIT; i++) {
		hs[i] = vd_guest_connect(&d, lfd, 200 + i, 7000, 65536);
		ck_assert_int_ge(hs[i], 0);
	}
	past_timeout();
	late = client(NULL);
	assert_closed(late);
	close(late);
	ck_assert_int_eq(vd_guest_connect(&d, lfd, 999, 7000, 65536), -1);
	ck_assert_uint_eq(refused(), r0 + 2);
	for (unsigned int i = 0; i < LIMIT; i++) {
		char c = 'x';

		/* Each still carries data. */
		ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 200 + i, 7000, &c, 1, 0, 65536, 0),
				 0);
		ck_assert_int_eq(vd_host_read(hs[i], &c, 1), 1);
		close(hs[i]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_setup_timeout");
	TCase *tc = tcase_create("timeout");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_line_never_sent);
	tcase_add_test(tc, test_request_never_answered);
	tcase_add_test(tc, test_open_never_reclaimed);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
