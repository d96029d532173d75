/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci exec's host relay without a VM (issue 32, item 2):
 * oci_exec_relay() (examples/oci/exec-cmd.c) against a fake guest on a
 * socketpair, as the process's stdio relay runs after STARTED:
 *  - stdin (a pipe, then EOF) arrives as STDIN frames and one STDIN_EOF;
 *    STDOUT/STDERR frames go to their own fds byte-exact; a forwarded
 *    signal (SIGUSR1 through the signalfd) arrives as SIGNAL; EXIT's code
 *    is the return value, a killed process's 128 + N;
 *  - frames already in the reader when the relay starts are handled;
 *  - back pressure: a guest that reads nothing makes the relay stop
 *    reading its stdin (the feeding pipe fills) and the relay still ends
 *    at EXIT;
 *  - a terminal resized before the relay started: one RESIZE at once;
 *  - a hostile frame (a huge length) and a connection closed without
 *    EXIT both give 255 with a reason, without hanging;
 *  - a guest that sent its output and EXIT and closed the connection
 *    before the relay's STDIN_EOF could go (a command that ends at once:
 *    `podman top`'s ps): the write fails (EPIPE), the relay reads on and
 *    returns EXIT's code, every byte of the output delivered.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exec-cmd.h"
#include "exec-proto.h"

static struct exec_reader RD;

static void send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		ck_assert_int_gt(w, 0);
		b += w;
		n -= (size_t)w;
	}
}

static void guest_send(int fd, uint8_t type, const void *p, size_t n)
{
	static struct exec_outq q;

	q.off = q.len = 0;
	ck_assert_int_eq(exec_outq_put(&q, type, p, n), 0);
	send_all(fd, q.buf, q.len);
}

/* The fake guest: reads the host's frames until STDIN_EOF and a SIGNAL
 * came, answers output and EXIT. */
struct guest {
	int fd;
	size_t stdin_bytes;
	int eofs, signo;
	uint8_t exit[5];
};

static void *guest_main(void *arg)
{
	struct guest *g = arg;
	static struct exec_reader r;
	const uint8_t *p;
	uint32_t len;
	uint8_t type;

	exec_reader_init(&r, EXEC_SIDE_GUEST);
	while (!g->eofs || !g->signo) {
		size_t room;
		uint8_t *d = exec_reader_space(&r, &room);
		ssize_t n = read(g->fd, d, room);
		int got;

		if (n <= 0)
			return NULL;
		exec_reader_commit(&r, (size_t)n);
		while ((got = exec_reader_next(&r, &type, &p, &len)) > 0) {
			if (type == EXEC_MSG_STDIN)
				g->stdin_bytes += len;
			else if (type == EXEC_MSG_STDIN_EOF)
				g->eofs++;
			else if (type == EXEC_MSG_SIGNAL)
				g->signo = p[0];
		}
		if (got < 0)
			return NULL;
	}
	guest_send(g->fd, EXEC_MSG_STDOUT, "hello\n", 6);
	guest_send(g->fd, EXEC_MSG_STDERR, "oops\n", 5);
	guest_send(g->fd, EXEC_MSG_EXIT, g->exit, 5);
	return NULL;
}

static int sigusr1_fd(void)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigprocmask(SIG_BLOCK, &m, NULL);
	return signalfd(-1, &m, SFD_CLOEXEC | SFD_NONBLOCK);
}

static size_t drain(int fd, char *buf, size_t cap)
{
	ssize_t n = read(fd, buf, cap - 1);

	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

START_TEST(test_relay)
{
	int sp[2], in[2], out[2], err[2], code;
	struct guest g = { .exit = { 0, 3, 0, 0, 0 } };
	struct oci_exec_io io;
	char why[256] = "", buf[64];
	pthread_t t;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(pipe(err), 0);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	ck_assert_int_eq(write(in[1], "abcdef", 6), 6);
	close(in[1]);
	g.fd = sp[1];
	io = (struct oci_exec_io){ .conn = sp[0], .in = in[0], .out = out[1],
				   .err = err[1], .sigfd = sigusr1_fd(), .tty = -1,
				   .rd = &RD };
	exec_reader_init(&RD, EXEC_SIDE_HOST);
	ck_assert_int_eq(pthread_create(&t, NULL, guest_main, &g), 0);
	kill(getpid(), SIGUSR1);
	code = oci_exec_relay(&io, why, sizeof(why));
	pthread_join(t, NULL);
	ck_assert_msg(code == 3, "code %d (%s)", code, why);
	ck_assert_uint_eq(g.stdin_bytes, 6);
	ck_assert_int_eq(g.eofs, 1);
	ck_assert_int_eq(g.signo, SIGUSR1);
	drain(out[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "hello\n");
	drain(err[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "oops\n");
	close(io.sigfd);
	for (int i = 0; i < 2; i++)
		close(sp[i]), close(out[i]), close(err[i]);
	close(in[0]);
}
END_TEST

/* Frames that came with STARTED (already in the reader), a killed
 * process. */
START_TEST(test_buffered_and_killed)
{
	int sp[2], out[2];
	struct oci_exec_io io;
	char why[256] = "", buf[64];
	uint8_t ex[5] = { 1, 9, 0, 0, 0 };
	size_t room;
	uint8_t *d;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	ck_assert_int_eq(pipe(out), 0);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	exec_reader_init(&RD, EXEC_SIDE_HOST);
	{
		static struct exec_outq q;

		q.off = q.len = 0;
		exec_outq_put(&q, EXEC_MSG_STDOUT, "early", 5);
		exec_outq_put(&q, EXEC_MSG_EXIT, ex, 5);
		d = exec_reader_space(&RD, &room);
		memcpy(d, q.buf, q.len);
		exec_reader_commit(&RD, q.len);
	}
	io = (struct oci_exec_io){ .conn = sp[0], .in = -1, .out = out[1], .err = out[1],
				   .sigfd = -1, .tty = -1, .rd = &RD };
	ck_assert_int_eq(oci_exec_relay(&io, why, sizeof(why)), 137);
	drain(out[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "early");
	for (int i = 0; i < 2; i++)
		close(sp[i]), close(out[i]);
}
END_TEST

struct slow_guest {
	int fd, feed;
	size_t fed;
	bool full;
};

/* Feed the relay's stdin while the "guest" reads nothing, until the pipe
 * is full (the relay stopped reading), then read it all and send EXIT. */
static void *slow_main(void *arg)
{
	struct slow_guest *s = arg;
	static uint8_t chunk[65536];
	uint8_t ex[5] = { 0, 0, 0, 0, 0 };
	int idle = 0;

	fcntl(s->feed, F_SETFL, O_NONBLOCK);
	while (idle < 20 && s->fed < (256u << 20)) {
		ssize_t w = write(s->feed, chunk, sizeof(chunk));

		if (w > 0) {
			s->fed += (size_t)w;
			idle = 0;
		} else {
			idle++;
			usleep(10000);
		}
	}
	s->full = idle >= 20;
	close(s->feed);
	/* Now read what was sent (so the relay's queue drains), then end. */
	fcntl(s->fd, F_SETFL, O_NONBLOCK);
	for (int quiet = 0; quiet < 20;) {
		ssize_t n = read(s->fd, chunk, sizeof(chunk));

		if (n > 0) {
			quiet = 0;
		} else {
			quiet++;
			usleep(10000);
		}
	}
	guest_send(s->fd, EXEC_MSG_EXIT, ex, 5);
	return NULL;
}

START_TEST(test_back_pressure)
{
	int sp[2], in[2], out[2];
	struct slow_guest s;
	struct oci_exec_io io;
	char why[256] = "";
	pthread_t t;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	s = (struct slow_guest){ .fd = sp[1], .feed = in[1] };
	exec_reader_init(&RD, EXEC_SIDE_HOST);
	io = (struct oci_exec_io){ .conn = sp[0], .in = in[0], .out = out[1], .err = out[1],
				   .sigfd = -1, .tty = -1, .rd = &RD };
	ck_assert_int_eq(pthread_create(&t, NULL, slow_main, &s), 0);
	ck_assert_int_eq(oci_exec_relay(&io, why, sizeof(why)), 0);
	pthread_join(t, NULL);
	/* The relay stopped taking stdin well before 256 MiB. */
	ck_assert_msg(s.full, "fed %zu bytes without the pipe filling", s.fed);
	ck_assert_uint_lt(s.fed, 64u << 20);
	for (int i = 0; i < 2; i++)
		close(sp[i]), close(out[i]);
	close(in[0]);
}
END_TEST

static uint8_t resize_seen[EXEC_HDR + 4];

/* Read the first frame (the RESIZE), then end the session. */
static void *resize_guest(void *arg)
{
	int fd = *(int *)arg;
	uint8_t ex[5] = { 0, 0, 0, 0, 0 };
	size_t have = 0;

	while (have < sizeof(resize_seen)) {
		ssize_t n = read(fd, resize_seen + have, sizeof(resize_seen) - have);

		if (n <= 0)
			return NULL;
		have += (size_t)n;
	}
	guest_send(fd, EXEC_MSG_EXIT, ex, 5);
	return NULL;
}

/* A terminal whose size changed before the relay started (since the
 * request was sent): a RESIZE goes out at once. */
START_TEST(test_initial_resize)
{
	struct winsize ws = { .ws_row = 10, .ws_col = 20 };
	int sp[2], m = posix_openpt(O_RDWR | O_NOCTTY), t;
	struct oci_exec_io io;
	char why[256] = "";
	pthread_t th;

	ck_assert_int_ge(m, 0);
	ck_assert_int_eq(grantpt(m) | unlockpt(m), 0);
	t = open(ptsname(m), O_RDWR | O_NOCTTY);
	ck_assert_int_ge(t, 0);
	ck_assert_int_eq(ioctl(m, TIOCSWINSZ, &ws), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	ck_assert_int_eq(pthread_create(&th, NULL, resize_guest, &sp[1]), 0);
	exec_reader_init(&RD, EXEC_SIDE_HOST);
	io = (struct oci_exec_io){ .conn = sp[0], .in = -1, .out = t, .err = t,
				   .sigfd = -1, .tty = t, .rows = 0, .cols = 0,
				   .rd = &RD };
	ck_assert_int_eq(oci_exec_relay(&io, why, sizeof(why)), 0);
	pthread_join(th, NULL);
	ck_assert_uint_eq(resize_seen[4], EXEC_MSG_RESIZE);
	ck_assert_uint_eq(resize_seen[5] | resize_seen[6] << 8, 10);
	ck_assert_uint_eq(resize_seen[7] | resize_seen[8] << 8, 20);
	close(sp[0]);
	close(sp[1]);
	close(t);
	close(m);
}
END_TEST

START_TEST(test_hostile_and_closed)
{
	static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0x7f, EXEC_MSG_STDOUT };
	struct oci_exec_io io;
	char why[256] = "";
	int sp[2], out[2];

	ck_assert_int_eq(pipe(out), 0);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
		fcntl(sp[0], F_SETFL, O_NONBLOCK);
		if (round == 0)
			send_all(sp[1], huge, sizeof(huge));
		else
			guest_send(sp[1], EXEC_MSG_STDOUT, "x", 1);
		close(sp[1]);
		exec_reader_init(&RD, EXEC_SIDE_HOST);
		io = (struct oci_exec_io){ .conn = sp[0], .in = -1, .out = out[1],
					   .err = out[1], .sigfd = -1, .tty = -1,
					   .rd = &RD };
		ck_assert_int_eq(oci_exec_relay(&io, why, sizeof(why)), 255);
		ck_assert_ptr_nonnull(strstr(why, round ? "closed" : "malformed"));
		close(sp[0]);
	}
	close(out[0]);
	close(out[1]);
}
END_TEST

/* The guest closed the connection after EXIT; our stdin is at EOF: the
 * relay's first read takes only part of the output (the reader holds one
 * frame at most), then its STDIN_EOF meets the closed socket. */
START_TEST(test_exit_before_stdin_eof)
{
	static char chunk[EXEC_MAX_DATA], buf[EXEC_MAX_DATA];
	uint8_t ex[5] = { 0, 5, 0, 0, 0 };
	struct oci_exec_io io;
	char why[256] = "";
	int sp[2], in[2], out[2];
	size_t got = 0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	/* Room for all the output: the relay writes it blocking. */
	ck_assert_int_ge(fcntl(out[1], F_SETPIPE_SZ, 4 * EXEC_MAX_DATA), 4 * (int)EXEC_MAX_DATA);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	close(in[1]);
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)('a' + i % 26);
	for (int i = 0; i < 3; i++)
		guest_send(sp[1], EXEC_MSG_STDOUT, chunk, sizeof(chunk));
	guest_send(sp[1], EXEC_MSG_EXIT, ex, 5);
	close(sp[1]);
	exec_reader_init(&RD, EXEC_SIDE_HOST);
	io = (struct oci_exec_io){ .conn = sp[0], .in = in[0], .out = out[1], .err = out[1],
				   .sigfd = -1, .tty = -1, .rd = &RD };
	ck_assert_msg(oci_exec_relay(&io, why, sizeof(why)) == 5, "relay: %s", why);
	close(out[1]);
	for (;;) {
		ssize_t n = read(out[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			ck_assert_int_eq(buf[i], 'a' + (got + (size_t)i) % sizeof(chunk) % 26);
		got += (size_t)n;
	}
	ck_assert_uint_eq(got, 3 * sizeof(chunk));
	close(sp[0]);
	close(in[0]);
	close(out[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_exec_relay");
	TCase *tc = tcase_create("relay");
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	tcase_add_test(tc, test_relay);
	tcase_add_test(tc, test_buffered_and_killed);
	tcase_add_test(tc, test_back_pressure);
	tcase_add_test(tc, test_initial_resize);
	tcase_add_test(tc, test_hostile_and_closed);
	tcase_add_test(tc, test_exit_before_stdin_eof);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
