/* SPDX-License-Identifier: MIT */
/*
 * Hybrid vsock handshakes, KVM-free (tests/harness/vsock_drv.h drives the
 * packet layer through fake rings): a host client's "CONNECT <port>\n"
 * becomes a REQUEST to the guest, the guest's RESPONSE an "OK <port>\n",
 * its RST a closed client; a guest REQUEST to host port P reaches the
 * listener at PATH_P, or gets an RST when nobody listens; data both ways
 * and the close sequence; the CONNECT line parser with good, bad,
 * incomplete and oversized lines.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen_race.h"
#include "vsock/vsock-host.h"
#include "vsock_drv.h"

static struct vsock_drv d;

static void setup(void)
{
	vd_init(&d, 0, 0);
	vd_post_rx(&d, 32);
}

static void teardown(void)
{
	vd_fini(&d);
}

START_TEST(test_host_to_guest)
{
	struct vsock_stats st;
	struct vsock_hdr h;
	uint32_t hp;
	char buf[64];
	int fd;

	fd = vd_host_open(&d, 5000, 65536, &hp);
	ck_assert_uint_ge(hp, 1024);
	/* Data both ways. */
	ck_assert_int_eq(write(fd, "hello", 5), 5);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, buf, sizeof(buf)), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_RW);
	ck_assert_uint_eq(h.src_cid, VSOCK_HOST_CID);
	ck_assert_uint_eq(h.dst_cid, VD_CID);
	ck_assert_uint_eq(h.src_port, hp);
	ck_assert_uint_eq(h.dst_port, 5000);
	ck_assert_uint_eq(h.len, 5);
	ck_assert_uint_eq(h.buf_alloc, VSOCK_BUF_ALLOC);
	ck_assert(!memcmp(buf, "hello", 5));
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 5000, hp, "world", 5, 0, 65536, 5), 0);
	ck_assert_int_eq(vd_host_read(fd, buf, sizeof(buf)), 5);
	ck_assert(!memcmp(buf, "world", 5));
	/* The host closes: SHUTDOWN(SEND); the guest closes: RST. */
	close(fd);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_SHUTDOWN);
	ck_assert_uint_eq(h.flags, VSOCK_SHUTDOWN_SEND);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_SHUTDOWN, 5000, hp, NULL, 0, 3, 65536, 5), 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_RST);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 0);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_open, 0);
	ck_assert_uint_eq(st.conns_total, 1);
	ck_assert_uint_eq(st.bytes_to_guest, 5);
	ck_assert_uint_eq(st.bytes_from_guest, 5);
	ck_assert_uint_eq(st.bad_packets, 0);
}
END_TEST

/* Data the client sends right behind its line is not lost. */
START_TEST(test_host_data_after_line)
{
	struct vsock_hdr h;
	char buf[64];
	int fd = vd_host_connect(&d);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "CONNECT 77\r\nearly", 17), 17);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, 77);
	/* No data before the guest answers. */
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 0);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RESPONSE, 77, h.src_port, NULL, 0, 0, 4096, 0), 0);
	ck_assert_int_gt(vd_host_read(fd, buf, 3), 0); /* "OK " */
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, buf, sizeof(buf)), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_RW);
	ck_assert_uint_eq(h.len, 5);
	ck_assert(!memcmp(buf, "early", 5));
	close(fd);
}
END_TEST

START_TEST(test_guest_refuses)
{
	struct vsock_hdr h;
	char buf[8];
	int fd = vd_host_connect(&d);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "CONNECT 9\n", 10), 10);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_REQUEST);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RST, 9, h.src_port, NULL, 0, 0, 0, 0), 0);
	ck_assert_int_eq(vd_host_read(fd, buf, sizeof(buf)), 0); /* closed */
	/* No RST answers an RST. */
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 0);
	close(fd);
}
END_TEST

START_TEST(test_guest_to_host)
{
	int lfd = vd_host_listen(&d, 6000);
	struct vsock_stats st;
	struct vsock_hdr h;
	char buf[64];
	int hs;

	hs = vd_guest_connect(&d, lfd, 1234, 6000, 65536);
	ck_assert_int_ge(hs, 0);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 1234, 6000, "ping", 4, 0, 65536, 0), 0);
	ck_assert_int_eq(vd_host_read(hs, buf, sizeof(buf)), 4);
	ck_assert(!memcmp(buf, "ping", 4));
	ck_assert_int_eq(write(hs, "pong!", 5), 5);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, buf, sizeof(buf)), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_RW);
	ck_assert_uint_eq(h.src_port, 6000);
	ck_assert_uint_eq(h.dst_port, 1234);
	ck_assert(!memcmp(buf, "pong!", 5));
	/* The guest closes: what it sent arrives, then EOF; then its RST. */
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_RW, 1234, 6000, "bye", 3, 0, 65536, 5), 0);
	ck_assert_int_eq(vd_send(&d, VSOCK_OP_SHUTDOWN, 1234, 6000, NULL, 0, 3, 65536, 5), 0);
	ck_assert_int_eq(vd_host_read(hs, buf, sizeof(buf)), 3);
	ck_assert_int_eq(vd_host_read(hs, buf, sizeof(buf)), 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 1);
	ck_assert_uint_eq(h.op, VSOCK_OP_RST);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_open, 0);
	close(hs);
	close(lfd);
}
END_TEST

START_TEST(test_guest_to_nobody)
{
	struct vsock_stats st;

	ck_assert_int_eq(vd_guest_connect(&d, -1, 1234, 6001, 65536), -1);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_refused, 1);
	ck_assert_uint_eq(st.conns_open, 0);
}
END_TEST

START_TEST(test_parse_connect)
{
	static const struct {
		const char *s;
		int ret;
		uint32_t port;
		size_t len;
	} t[] = {
		{ "CONNECT 1234\n", 1, 1234, 13 },
		{ "CONNECT 0\n", 1, 0, 10 },
		{ "CONNECT 4294967295\r\n", 1, 4294967295u, 20 },
		{ "CONNECT 52\nrest", 1, 52, 11 },
		{ "CONNECT 0000000001\n", 1, 1, 19 },
		{ "", 0, 0, 0 },
		{ "CONN", 0, 0, 0 },
		{ "CONNECT ", 0, 0, 0 },
		{ "CONNECT 12", 0, 0, 0 },
		{ "CONNECT 12\r", 0, 0, 0 },
		{ "connect 1\n", -EINVAL, 0, 0 },
		{ "CONNECT\n", -EINVAL, 0, 0 },
		{ "CONNECT \n", -EINVAL, 0, 0 },
		{ "CONNECT  1\n", -EINVAL, 0, 0 },
		{ "CONNECT -1\n", -EINVAL, 0, 0 },
		{ "CONNECT +1\n", -EINVAL, 0, 0 },
		{ "CONNECT 1 \n", -EINVAL, 0, 0 },
		{ "CONNECT 1x\n", -EINVAL, 0, 0 },
		{ "CONNECT 4294967296\n", -EINVAL, 0, 0 },
		{ "CONNECT 99999999999999999999\n", -EINVAL, 0, 0 },
		{ "CONNECT 00000000001\n", -EINVAL, 0, 0 },
		{ "CONNECT 1\r\r\n", -EINVAL, 0, 0 },
		{ "GET / HTTP/1.1\r\n", -EINVAL, 0, 0 },
	};
	char big[VSOCK_LINE_MAX + 8];

	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint32_t port = 0;
		size_t len = 0;
		int r = vsock_parse_connect(t[i].s, strlen(t[i].s), &port, &len);

		ck_assert_msg(r == t[i].ret, "\"%s\": %d", t[i].s, r);
		if (r == 1) {
			ck_assert_uint_eq(port, t[i].port);
			ck_assert_uint_eq(len, t[i].len);
		}
	}
	/* No newline within VSOCK_LINE_MAX bytes: refused, not waited for. */
	memset(big, '0', sizeof(big));
	memcpy(big, "CONNECT ", 8);
	ck_assert_int_eq(vsock_parse_connect(big, VSOCK_LINE_MAX, &(uint32_t){ 0 },
					     &(size_t){ 0 }), -EINVAL);
	ck_assert_int_eq(vsock_parse_connect(big, VSOCK_LINE_MAX - 1, &(uint32_t){ 0 },
					     &(size_t){ 0 }), -EINVAL); /* > 10 digits */
}
END_TEST

/* Bad and oversized lines close the client; nothing reaches the guest. */
START_TEST(test_bad_lines)
{
	static const char *const lines[] = {
		"HELLO\n", "CONNECT x\n", "CONNECT 1 2\n",
		"CONNECT 11111111111111111111111111111111111111111111111111",
	};
	struct vsock_stats st;
	struct vsock_hdr h;
	char buf[8];

	for (unsigned int i = 0; i < 4; i++) {
		int fd = vd_host_connect(&d);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, lines[i], strlen(lines[i])),
				 (ssize_t)strlen(lines[i]));
		ck_assert_int_eq(vd_pump(&d), 0);
		/* Closed with the line unread: EOF or ECONNRESET. */
		errno = 0;
		ck_assert_int_le(vd_host_read(fd, buf, sizeof(buf)), 0);
		ck_assert(errno == 0 || errno == ECONNRESET);
		close(fd);
	}
	/* A client that leaves before its line ends. */
	{
		int fd = vd_host_connect(&d);

		ck_assert_int_eq(write(fd, "CONNECT 1", 9), 9);
		ck_assert_int_eq(vd_pump(&d), 0);
		close(fd);
		ck_assert_int_eq(vd_pump(&d), 0);
	}
	ck_assert_int_eq(vd_recv(&d, &h, NULL, 0), 0);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.conns_refused, 5);
	ck_assert_uint_eq(st.conns_open, 0);
}
END_TEST

/* No driver (before DRIVER_OK, after a reset): clients are closed at once,
 * and a reset ends every connection. */
START_TEST(test_inactive)
{
	int lfd = vd_host_listen(&d, 7000);
	char buf[8];
	int fd, hs;

	hs = vd_guest_connect(&d, lfd, 1, 7000, 4096);
	ck_assert_int_ge(hs, 0);
	vsock_set_active(d.v, false);
	ck_assert_int_eq(vd_host_read(hs, buf, sizeof(buf)), 0);
	fd = vd_host_connect(&d);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	close(hs);
	close(lfd);
}
END_TEST

/* PATH in use, another file, a stale socket. */
START_TEST(test_listen_path)
{
	char p[128];
	int fd, fd2;

	ck_assert_int_eq(vsock_host_listen(d.path, &fd), -EADDRINUSE); /* in use */
	snprintf(p, sizeof(p), "%s/file", d.dir);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(vsock_host_listen(p, &fd), -EADDRINUSE);
	unlink(p);
	snprintf(p, sizeof(p), "%s/stale", d.dir);
	ck_assert_int_eq(vsock_host_listen(p, &fd), 0);
	close(fd); /* the file stays, nobody listens */
	ck_assert_int_eq(vsock_host_listen(p, &fd2), 0);
	ck_assert_int_eq(listen_race_connect(p), 0); /* the new one listens */
	close(fd2);
	unlink(p);
	memset(p, 'x', sizeof(p) - 1);
	p[sizeof(p) - 1] = 0;
	ck_assert_int_eq(vsock_host_listen(p, &fd), -ENAMETOOLONG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_connect");
	TCase *tc = tcase_create("connect");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_host_to_guest);
	tcase_add_test(tc, test_host_data_after_line);
	tcase_add_test(tc, test_guest_refuses);
	tcase_add_test(tc, test_guest_to_host);
	tcase_add_test(tc, test_guest_to_nobody);
	tcase_add_test(tc, test_parse_connect);
	tcase_add_test(tc, test_bad_lines);
	tcase_add_test(tc, test_inactive);
	tcase_add_test(tc, test_listen_path);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
