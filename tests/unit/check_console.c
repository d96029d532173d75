/* SPDX-License-Identifier: MIT */
/*
 * Console back-pressure: guest output through the 8250 UART and the host
 * console (libvmm/core/serial-host.c) never blocks the "vCPU", whatever the console
 * fd does (a pipe nobody reads, a blocking socket nobody reads, a slow
 * reader); what the fd cannot take is dropped and counted, never reordered;
 * serial_host_stop() is bounded; the embedder's file description keeps its
 * flags; input is read without blocking and reaches the UART.
 *
 * A blocked write would hang the test: each test has a Check timeout (a
 * failure, not a pass).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serial-host.h"
#include "iobus.h"
#include "serial/uart8250.h"

#define COM1 0x3f8

struct rig {
	struct iobus pio;
	struct uart8250 *uart;
	struct serial_host *con;
	/* The console thread pauses this long right after the device took
	 * input (as a loaded machine may deschedule it there). */
	unsigned int push_pause_us;
};

static size_t push_input(void *opaque, const void *buf, size_t len)
{
	struct rig *r = opaque;
	size_t n = uart8250_push_input(r->uart, buf, len);

	if (r->push_pause_us)
		usleep(r->push_pause_us);
	return n;
}

static void tx(void *opaque, const uint8_t *buf, size_t len)
{
	serial_host_write(opaque, buf, len);
}

static void rig_up(struct rig *r, int in_fd, int out_fd)
{
	struct serial_host_params p = {
		.in_fd = in_fd,
		.out_fd = out_fd,
		.push_input = push_input,
		.opaque = r,
	};

	ck_assert_int_eq(iobus_init(&r->pio, "pio"), 0);
	ck_assert_int_eq(serial_host_create(&p, &r->con), 0);
	ck_assert_int_eq(uart8250_create(&r->pio, COM1, NULL, NULL, tx, r->con,
					 &r->uart), 0);
	ck_assert_int_eq(serial_host_start(r->con), 0);
}

static void rig_down(struct rig *r)
{
	serial_host_stop(r->con);
	uart8250_destroy(r->uart);
	serial_host_destroy(r->con);
	iobus_destroy(&r->pio);
}

/* What the guest's driver does: one OUT to THR per byte.  (One assertion
 * at the end: Check records every assertion's location in a file.) */
static void guest_print(struct rig *r, uint64_t first, uint64_t n)
{
	int bad = 0;

	for (uint64_t i = first; i < first + n; i++) {
		uint8_t b = (uint8_t)(i % 251);

		bad |= iobus_dispatch(&r->pio, COM1, &b, 1, true);
	}
	ck_assert_int_eq(bad, 0);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct serial_host_stats stats(struct rig *r)
{
	struct serial_host_stats st;

	serial_host_get_stats(r->con, &st);
	return st;
}

/* The bytes read back are guest_print()'s sequence from 0, in order. */
static void check_sequence(const uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != (uint8_t)(i % 251))
			ck_abort_msg("byte %zu reordered or corrupted", i);
}

static size_t drain(int fd, uint8_t *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)n;
	return got;
}

#define FLOOD (512u << 10) /* > pipe (64 KiB) + buffer */
#define STEADY (192u << 10) /* > pipe + buffer, less time */

/*
 * A blocking pipe nobody reads (a stalled log collector): 512 KiB of guest
 * output goes through without the vCPU ever blocking; the pipe holds the
 * first bytes, the rest is dropped and counted; stop is bounded; the
 * embedder's pipe is still blocking afterwards.
 */
START_TEST(stalled_pipe)
{
	struct rig r = { 0 };
	struct serial_host_stats st;
	uint8_t *buf = malloc(FLOOD);
	int p[2], fl;
	size_t got;
	double t;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pipe(p), 0);
	fl = fcntl(p[1], F_GETFL);
	rig_up(&r, -1, p[1]);
	guest_print(&r, 0, FLOOD);
	st = stats(&r);
	ck_assert_uint_gt(st.bytes_dropped, 0);
	ck_assert_uint_le(st.bytes_out + st.bytes_dropped, FLOOD);
	ck_assert_uint_ge(st.bytes_out + st.bytes_dropped + SERIAL_HOST_OUT_BUF, FLOOD);
	ck_assert_int_eq(fcntl(p[1], F_GETFL), fl); /* not made O_NONBLOCK */
	t = now_s();
	serial_host_stop(r.con);
	/* The final flush gives up after SERIAL_HOST_FLUSH_MS; this is only a
	 * hang detector with a wide margin, not a timing claim. */
	ck_assert_msg(now_s() - t < 30, "serial_host_stop() took %.1f s", now_s() - t);
	st = stats(&r);
	ck_assert_uint_eq(st.bytes_out + st.bytes_dropped, FLOOD);
	ck_assert_uint_gt(st.bytes_out, 0);
	ck_assert_int_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	got = drain(p[0], buf, FLOOD);
	ck_assert_uint_eq(got, st.bytes_out);
	check_sequence(buf, got);
	rig_down(&r);
	ck_assert_int_eq(fcntl(p[1], F_GETFL), fl);
	close(p[0]);
	close(p[1]);
	free(buf);
}
END_TEST

/*
 * A blocking stream socket nobody reads: it cannot be reopened through
 * /proc, so the console thread writes it in small chunks after poll().
 * Same guarantees.
 */
START_TEST(stalled_socket)
{
	struct rig r = { 0 };
	struct serial_host_stats st;
	int sv[2];
	double t;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	rig_up(&r, -1, sv[1]);
	guest_print(&r, 0, FLOOD);
	t = now_s();
	serial_host_stop(r.con);
	ck_assert_msg(now_s() - t < 30, "serial_host_stop() took %.1f s", now_s() - t);
	st = stats(&r);
	ck_assert_uint_eq(st.bytes_out + st.bytes_dropped, FLOOD);
	ck_assert_uint_gt(st.bytes_dropped, 0);
	ck_assert_int_eq(fcntl(sv[1], F_GETFL) & O_NONBLOCK, 0);
	rig_down(&r);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

struct reader {
	int fd;
	uint8_t *buf;
	size_t want, got;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;

	while (rd->got < rd->want) {
		ssize_t n = read(rd->fd, rd->buf + rd->got, rd->want - rd->got);

		if (n <= 0)
			break;
		rd->got += (size_t)n;
	}
	return NULL;
}

/*
 * A reader that keeps up loses nothing: 192 KiB in 16 KiB bursts (each
 * smaller than the buffer), each waited for; the reader gets every byte in
 * order and nothing is dropped.
 */
START_TEST(reader_keeps_up)
{
	struct rig r = { 0 };
	struct reader rd = { .want = STEADY };
	pthread_t t;
	int p[2];

	rd.buf = malloc(STEADY);
	ck_assert_ptr_nonnull(rd.buf);
	ck_assert_int_eq(pipe(p), 0);
	rd.fd = p[0];
	ck_assert_int_eq(pthread_create(&t, NULL, reader_main, &rd), 0);
	rig_up(&r, -1, p[1]);
	for (uint64_t off = 0; off < STEADY; off += 16384) {
		guest_print(&r, off, 16384);
		while (stats(&r).bytes_out < off + 16384)
			usleep(200);
	}
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(rd.got, STEADY);
	check_sequence(rd.buf, STEADY);
	ck_assert_uint_eq(stats(&r).bytes_dropped, 0);
	rig_down(&r);
	close(p[0]);
	close(p[1]);
	free(rd.buf);
}
END_TEST

/* A reader that stalls and then resumes gets the output from before the
 * stall intact and what came after it resumed; only what overflowed
 * while it stalled is missing (counted). */
START_TEST(reader_resumes)
{
	struct rig r = { 0 };
	struct serial_host_stats st;
	uint8_t *buf = malloc(4 * FLOOD);
	int p[2];
	size_t got;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pipe(p), 0);
	rig_up(&r, -1, p[1]);
	guest_print(&r, 0, FLOOD); /* overflows: nobody reads yet */
	st = stats(&r);
	ck_assert_uint_gt(st.bytes_dropped, 0);
	ck_assert_int_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	got = 0;
	/* The reader catches up: the buffer drains. */
	for (int i = 0; i < 10000; i++) {
		got += drain(p[0], buf + got, 4 * FLOOD - got);
		st = stats(&r);
		if (got == st.bytes_out && st.bytes_out + st.bytes_dropped == FLOOD)
			break;
		usleep(1000);
	}
	ck_assert_uint_eq(st.bytes_out + st.bytes_dropped, FLOOD);
	ck_assert_uint_eq(got, st.bytes_out);
	check_sequence(buf, (size_t)got); /* a prefix, in order */
	rig_down(&r);
	close(p[0]);
	close(p[1]);
	free(buf);
}
END_TEST

/* Regular files are written as they are (they never wait for a reader):
 * nothing is dropped. */
START_TEST(regular_file)
{
	struct rig r = { 0 };
	char path[] = "/tmp/check_console.XXXXXX";
	uint8_t *buf = malloc(STEADY);
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(buf);
	unlink(path);
	rig_up(&r, -1, fd);
	guest_print(&r, 0, STEADY);
	serial_host_stop(r.con);
	ck_assert_uint_eq(stats(&r).bytes_out, STEADY);
	ck_assert_uint_eq(stats(&r).bytes_dropped, 0);
	ck_assert_int_eq(pread(fd, buf, STEADY, 0), STEADY);
	check_sequence(buf, STEADY);
	rig_down(&r);
	close(fd);
	free(buf);
}
END_TEST

/* The reader went away: EPIPE (no SIGPIPE kills the process: the console
 * thread blocks it, and the vCPU here is this thread, which blocks it as
 * VMM threads do), output is dropped from then on, never blocks. */
START_TEST(reader_gone)
{
	struct rig r = { 0 };
	sigset_t set;
	int p[2];

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
	ck_assert_int_eq(pipe(p), 0);
	close(p[0]);
	rig_up(&r, -1, p[1]);
	guest_print(&r, 0, 200000);
	serial_host_stop(r.con);
	ck_assert_uint_eq(stats(&r).bytes_dropped, 200000);
	ck_assert_uint_eq(stats(&r).bytes_out, 0);
	rig_down(&r);
	close(p[1]);
}
END_TEST

/*
 * Input: a blocking pipe; bytes reach the UART's receiver in order, and
 * stop is prompt whether input is pending, idle or at EOF.  A second
 * reader of the same pipe (the embedder) cannot make the console thread
 * block in read(): it reads through its own non-blocking description.
 */
START_TEST(input)
{
	struct rig r = { 0 };
	int p[2], fl;
	uint8_t b, lsr;
	char steal[16];
	double t;

	ck_assert_int_eq(pipe(p), 0);
	fl = fcntl(p[0], F_GETFL);
	/* The guest reads the last byte while the console thread is still
	 * right after the push: the count must already say 5 (it once said
	 * 4 here, on a loaded machine, before serial_host_get_stats() waited
	 * for the push's count). */
	r.push_pause_us = 200000;
	rig_up(&r, p[0], -1);
	ck_assert_int_eq(write(p[1], "hello", 5), 5);
	for (int i = 0; i < 5; i++) {
		for (int k = 0; k < 5000; k++) {
			ck_assert_int_eq(iobus_dispatch(&r.pio, COM1 + 5, &lsr, 1, false), 0);
			if (lsr & 1)
				break;
			usleep(1000);
		}
		ck_assert_uint_eq(lsr & 1, 1);
		ck_assert_int_eq(iobus_dispatch(&r.pio, COM1, &b, 1, false), 0);
		ck_assert_int_eq(b, "hello"[i]);
	}
	ck_assert_uint_eq(stats(&r).bytes_in, 5);
	/* Competing reader: data arrives and someone else takes it. */
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(write(p[1], "x", 1), 1);
		ck_assert_int_eq(fcntl(p[0], F_SETFL, fl | O_NONBLOCK), 0);
		if (read(p[0], steal, sizeof(steal)) < 0)
			ck_assert_int_eq(errno, EAGAIN);
		ck_assert_int_eq(fcntl(p[0], F_SETFL, fl), 0);
	}
	t = now_s();
	serial_host_stop(r.con);
	ck_assert_msg(now_s() - t < 30, "serial_host_stop() took %.1f s", now_s() - t);
	ck_assert_int_eq(fcntl(p[0], F_GETFL), fl);
	rig_down(&r);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* One case per test, so that CK_RUN_CASE=NAME runs one. */
#define ADD(s, t)                                     \
	do {                                          \
		TCase *tc = tcase_create(#t);         \
		tcase_set_timeout(tc, 60);            \
		tcase_add_test(tc, t);                \
		suite_add_tcase(s, tc);               \
	} while (0)

static Suite *console_suite(void)
{
	Suite *s = suite_create("console");

	ADD(s, stalled_pipe);
	ADD(s, stalled_socket);
	ADD(s, reader_keeps_up);
	ADD(s, reader_resumes);
	ADD(s, regular_file);
	ADD(s, reader_gone);
	ADD(s, input);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(console_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
