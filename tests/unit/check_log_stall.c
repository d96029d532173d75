/* SPDX-License-Identifier: MIT */
/*
 * A stalled stderr never blocks a thread that logs (libvmm/core/log.c):
 * what operators do (conmon, systemd, `2>&1 | tee` that stopped) is give
 * stdout and stderr one pipe that may stop draining; a VMM thread blocked
 * in write(2) there (a vCPU, an I/O thread, the control thread stopping the
 * VM) made the VM unstoppable.  Here fd 2 is a pipe or a socket that is
 * full, as the embedder left it (blocking), and many threads log at once:
 * they all return, every line is either written whole or counted as
 * dropped, and the count comes out once the reader drains.  Also: the
 * embedder's file description keeps its flags, a redirected stderr is
 * followed (and the old one not held open) even while threads log, a
 * description whose shared O_NONBLOCK is cleared later, a terminal, a
 * pipe that cannot be reopened (no /proc: written after poll(), 32
 * threads), and seccomp-confined threads (the vCPU allow-list) reach a
 * socket and a poll()-first fd.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "nbfd.h"
#include "sandbox.h"
#include "vmm/vmm.h"

#define THREADS 8
#define LINES 1000

static int saved_stderr = -1;

/* Put @fd at fd 2 (the test's own stderr saved for the teardown) and let
 * the library look at it again, as vmm_create() does. */
static void stderr_to(int fd)
{
	if (saved_stderr < 0)
		saved_stderr = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	ck_assert_int_eq(vmm_set_log(NULL, NULL, VMM_LOG_DEBUG), 0);
}

static void stderr_restore(void)
{
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	vmm_set_log(NULL, NULL, VMM_LOG_WARN);
}

/* Fill @wfd (pipe or socket) until it takes nothing more, through a
 * private non-blocking description, leaving @wfd's own flags as they
 * were (blocking, as a supervisor's pipe is). */
static size_t fill(int wfd)
{
	static char junk[4096];
	struct nbfd e;
	size_t total = 0;

	memset(junk, 'x', sizeof(junk));
	nbfd_open(wfd, O_WRONLY, &e); /* without /proc: after poll() */
	for (;;) {
		ssize_t n = nbfd_write(&e, junk, sizeof(junk));

		if (n == -EAGAIN) {
			/* A pipe may still have room for less than a page. */
			n = nbfd_write(&e, junk, 1);
			if (n == -EAGAIN)
				break;
		}
		ck_assert_int_gt(n, 0);
		total += (size_t)n;
	}
	nbfd_close(&e);
	return total;
}

/* Read whatever @rfd has now (non-blocking) into @buf; returns the bytes. */
static size_t drain(int rfd, char *buf, size_t cap)
{
	size_t got = 0;
	char sink[4096];

	for (;;) {
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			break;
		n = read(rfd, sink, sizeof(sink));
		if (n <= 0)
			break;
		if (buf && got + (size_t)n < cap) {
			memcpy(buf + got, sink, (size_t)n);
			buf[got + (size_t)n] = '\0';
		}
		got += (size_t)n;
	}
	return got;
}

static long logger_pause_ns; /* between two lines of a logger */

static void *logger(void *arg)
{
	struct timespec ts = { 0, logger_pause_ns };
	long id = (long)arg;

	for (int i = 0; i < LINES; i++) {
		vmm_logf(VMM_LOG_ERROR, "thread %ld line %d", id, i);
		if (logger_pause_ns)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Start THREADS loggers and join them, failing (not hanging) if one is
 * still stuck after 20 s: the old sink blocked here for good. */
static void run_loggers(void)
{
	pthread_t t[THREADS];
	struct timespec dl;

	for (long i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, logger, (void *)i), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	for (int i = 0; i < THREADS; i++)
		ck_assert_msg(pthread_timedjoin_np(t[i], NULL, &dl) == 0,
			      "logging thread %d blocked on a full stderr", i);
}

/* Sum of N over "libvmm: N log lines dropped" notices in @text, and the
 * count of "thread T line I" lines (each checked whole). */
static void tally(const char *text, unsigned long *notices, unsigned long *lines)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		unsigned long n;
		long t;
		int i, used = 0;

		ck_assert_msg(nl, "an unterminated line: '%.60s'", p);
		if (sscanf(p, "libvmm: %lu log lines dropped: standard error would block%n",
			   &n, &used) == 1 && p + used == nl) {
			*notices += n;
		} else {
			ck_assert_msg(sscanf(p, "libvmm: thread %ld line %d%n", &t, &i,
					     &used) == 2 && p + used == nl,
				      "not a whole line: '%.*s'", (int)(nl - p), p);
			(*lines)++;
		}
		p = nl + 1;
	}
}

START_TEST(full_pipe_never_blocks)
{
	int pfd[2], fl;
	uint64_t before;
	static char out[1 << 16];
	unsigned long notices = 0, lines = 0;

	ck_assert_int_eq(pipe(pfd), 0);
	fill(pfd[1]);
	stderr_to(pfd[1]);
	before = vmm_log_dropped();
	run_loggers();
	ck_assert_uint_eq(vmm_log_dropped() - before, THREADS * LINES);
	/* The embedder's description is as it was: blocking. */
	fl = fcntl(STDERR_FILENO, F_GETFL);
	ck_assert(fl >= 0 && !(fl & O_NONBLOCK));
	/* The reader catches up: the next line says what was lost. */
	drain(pfd[0], NULL, 0);
	vmm_logf(VMM_LOG_ERROR, "thread 99 line 0");
	drain(pfd[0], out, sizeof(out));
	stderr_restore();
	tally(out, &notices, &lines);
	ck_assert_uint_eq(notices, THREADS * LINES);
	ck_assert_uint_eq(lines, 1);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/* A slow reader: every line that arrives is whole, and the lines that
 * arrive plus the ones the notices count are all the lines logged. */
static volatile int reader_stop;
static char *slow_buf;
static size_t slow_len;

static void *slow_reader(void *arg)
{
	int rfd = *(int *)arg;
	const size_t cap = (size_t)THREADS * LINES * 64 + 4096;

	slow_buf = calloc(1, cap);
	while (!reader_stop) {
		struct timespec ts = { 0, 2000000 };
		ssize_t n = read(rfd, slow_buf + slow_len,
				 cap - 1 - slow_len < 512 ? cap - 1 - slow_len : 512);

		if (n > 0)
			slow_len += (size_t)n;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Stop the slow reader @r of @rfd, take what is left and one more line
 * (which flushes the last notice out), restore stderr and tally what came
 * (after the pipe's initial junk, fill()'s). */
static void slow_reader_end(pthread_t r, int rfd, unsigned long *notices,
			    unsigned long *lines)
{
	const size_t cap = (size_t)THREADS * LINES * 64 + 4096;
	char *p;

	reader_stop = 1;
	pthread_join(r, NULL);
	slow_len += drain(rfd, slow_buf + slow_len, cap - slow_len);
	vmm_logf(VMM_LOG_ERROR, "thread 99 line 0");
	slow_len += drain(rfd, slow_buf + slow_len, cap - slow_len);
	stderr_restore();
	p = strstr(slow_buf, "libvmm: ");
	ck_assert_ptr_nonnull(p);
	tally(p, notices, lines);
}

START_TEST(slow_reader_whole_lines_exact_count)
{
	int pfd[2];
	pthread_t r;
	uint64_t before;
	unsigned long notices = 0, lines = 0;

	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
	fill(pfd[1]);
	stderr_to(pfd[1]);
	before = vmm_log_dropped();
	reader_stop = 0;
	slow_len = 0;
	ck_assert_int_eq(pthread_create(&r, NULL, slow_reader, &pfd[0]), 0);
	logger_pause_ns = 100000; /* the reader drains some of it meanwhile */
	run_loggers();
	logger_pause_ns = 0;
	slow_reader_end(r, pfd[0], &notices, &lines);
	printf("log_stall: slow reader: %lu lines written, %lu dropped (%llu counted)\n",
	       lines, notices, (unsigned long long)(vmm_log_dropped() - before));
	ck_assert_uint_eq(notices, vmm_log_dropped() - before);
	ck_assert_uint_eq(lines + notices, THREADS * LINES + 1);
	ck_assert_uint_gt(notices, 0); /* the pipe was full at first */
	ck_assert_uint_gt(lines, 1);   /* and the reader took some */
	free(slow_buf);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/* systemd gives services a Unix stream socket to the journal. */
START_TEST(full_socket_never_blocks)
{
	int sv[2];
	uint64_t before;
	static char out[1 << 16];
	unsigned long notices = 0, lines = 0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fill(sv[1]);
	stderr_to(sv[1]);
	before = vmm_log_dropped();
	run_loggers();
	ck_assert_uint_eq(vmm_log_dropped() - before, THREADS * LINES);
	drain(sv[0], NULL, 0);
	vmm_logf(VMM_LOG_ERROR, "thread 99 line 0");
	drain(sv[0], out, sizeof(out));
	stderr_restore();
	tally(out, &notices, &lines);
	ck_assert_uint_eq(notices, THREADS * LINES);
	ck_assert_uint_eq(lines, 1);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* vmm_log_write(): the embedder's own text, same rules. */
START_TEST(log_write_api)
{
	int pfd[2];
	char out[256];
	uint64_t before;

	ck_assert_int_eq(vmm_log_write(NULL, 1, 0), -EINVAL);
	ck_assert_int_eq(pipe(pfd), 0);
	stderr_to(pfd[1]);
	ck_assert_int_eq(vmm_log_write("prog: hello\n", 12, 0), 0);
	ck_assert_uint_eq(drain(pfd[0], out, sizeof(out)), 12);
	ck_assert_str_eq(out, "prog: hello\n");
	fill(pfd[1]);
	before = vmm_log_dropped();
	ck_assert_int_eq(vmm_log_write("prog: lost\n", 11, 0), -EAGAIN);
	ck_assert_uint_eq(vmm_log_dropped() - before, 1);
	close(pfd[0]); /* no reader: EPIPE (SIGPIPE ignored here) */
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(vmm_log_write("prog: gone\n", 11, 0), -EPIPE);
	stderr_restore();
	close(pfd[1]);
}
END_TEST

/* A text bigger than the pipe, read as it comes: with a timeout it goes
 * through whole (minivmm's --stats-json of 101 disks is one long line);
 * nobody reading: it gives up, dropped and counted. */
static void *big_reader(void *arg)
{
	int rfd = *(int *)arg;
	size_t *got = malloc(sizeof(*got));
	char buf[4096];
	ssize_t n;

	*got = 0;
	while ((n = read(rfd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			ck_assert_int_eq(buf[i], (*got + (size_t)i) % 64 == 63 ? '\n' : 'a' + (char)((*got + (size_t)i) % 26));
		*got += (size_t)n;
	}
	return got;
}

START_TEST(long_text_with_timeout)
{
	const size_t len = 1 << 20;
	char *text = malloc(len);
	int pfd[2];
	pthread_t r;
	size_t *got;
	uint64_t before;

	for (size_t i = 0; i < len; i++)
		text[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
	ck_assert_int_eq(pipe(pfd), 0);
	stderr_to(pfd[1]);
	ck_assert_int_eq(pthread_create(&r, NULL, big_reader, &pfd[0]), 0);
	ck_assert_int_eq(vmm_log_write(text, len, 5000), 0);
	stderr_restore(); /* closes fd 2's copy; the reopen goes with it */
	close(pfd[1]);
	pthread_join(r, (void **)&got);
	ck_assert_uint_eq(*got, len);
	free(got);
	close(pfd[0]);

	ck_assert_int_eq(pipe(pfd), 0);
	fill(pfd[1]);
	stderr_to(pfd[1]);
	before = vmm_log_dropped();
	ck_assert_int_eq(vmm_log_write(text, len, 100), -EAGAIN);
	ck_assert_uint_eq(vmm_log_dropped() - before, 1);
	stderr_restore();
	close(pfd[0]);
	close(pfd[1]);
	free(text);
}
END_TEST

/*
 * fd 2 redirected (dup2) between VMs: vmm_create()/vmm_set_log() follow
 * it, and the old pipe is not held open by the library's reopen (its
 * reader sees the end once the embedder closes its copies).
 */
START_TEST(redirect_followed_old_released)
{
	int a[2], b[2];
	char out[256], c;

	ck_assert_int_eq(pipe(a), 0);
	ck_assert_int_eq(pipe(b), 0);
	stderr_to(a[1]);
	vmm_logf(VMM_LOG_ERROR, "to a");
	ck_assert_uint_gt(drain(a[0], out, sizeof(out)), 0);
	ck_assert_str_eq(out, "libvmm: to a\n");
	close(a[1]);
	stderr_to(b[1]); /* fd 2 was a's last write end but the reopen */
	vmm_logf(VMM_LOG_ERROR, "to b");
	ck_assert_uint_gt(drain(b[0], out, sizeof(out)), 0);
	ck_assert_str_eq(out, "libvmm: to b\n");
	ck_assert_int_eq(read(a[0], &c, 1), 0); /* EOF: nobody holds a */
	/* fd 2 closed altogether: b is released too, and text has nowhere
	 * to go (-EBADF, counted). */
	close(b[1]);
	close(STDERR_FILENO);
	ck_assert_int_eq(vmm_set_log(NULL, NULL, VMM_LOG_DEBUG), 0);
	ck_assert_int_eq(read(b[0], &c, 1), 0);
	ck_assert_int_eq(vmm_log_write("lost\n", 5, 0), -EBADF);
	stderr_restore();
	close(a[0]);
	close(b[0]);
}
END_TEST

/*
 * vmm_create()/vmm_set_log() after a redirect while another VM's threads
 * log: fd 2 flips between a full pipe (written through the library's
 * reopen) and a full socket, a prepare each time, with 8 writers going.
 * None may block: a prepare that put the embedder's blocking description
 * under the reopen's number before switching the writers over made them
 * block in write() there.
 */
static volatile int flip_stop;

static void *flip_writer(void *arg)
{
	(void)arg;
	while (!flip_stop)
		vmm_log_write("libvmm: thread 7 line 7\n", 24, 0);
	return NULL;
}

START_TEST(prepare_races_writers)
{
	int pfd[2], sv[2];
	pthread_t t[THREADS];
	struct timespec dl;

	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fill(pfd[1]);
	fill(sv[1]);
	stderr_to(pfd[1]);
	flip_stop = 0;
	for (long i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, flip_writer, NULL), 0);
	for (int i = 0; i < 400; i++) {
		ck_assert_int_eq(dup2(i % 2 ? pfd[1] : sv[1], STDERR_FILENO),
				 STDERR_FILENO);
		ck_assert_int_eq(vmm_set_log(NULL, NULL, VMM_LOG_DEBUG), 0);
	}
	flip_stop = 1;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	for (int i = 0; i < THREADS; i++)
		ck_assert_msg(pthread_timedjoin_np(t[i], NULL, &dl) == 0,
			      "writer %d blocked while stderr was redirected", i);
	stderr_restore();
	close(pfd[0]);
	close(pfd[1]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * The embedder's description is non-blocking when the library looks at
 * it, and someone clears the flag later (it is shared: node.js sets and
 * clears it on its children's stdio): still never blocks.
 */
static void *one_write(void *arg)
{
	*(int *)arg = vmm_log_write("libvmm: thread 5 line 5\n", 24, 0);
	return NULL;
}

START_TEST(nonblocking_flag_cleared_later)
{
	int pfd[2], fl, ret = 1;
	pthread_t t;
	struct timespec dl;

	ck_assert_int_eq(pipe(pfd), 0);
	fl = fcntl(pfd[1], F_GETFL);
	ck_assert_int_eq(fcntl(pfd[1], F_SETFL, fl | O_NONBLOCK), 0);
	stderr_to(pfd[1]);
	ck_assert_int_eq(fcntl(pfd[1], F_SETFL, fl), 0); /* cleared */
	fill(pfd[1]);
	ck_assert_int_eq(pthread_create(&t, NULL, one_write, &ret), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	ck_assert_msg(pthread_timedjoin_np(t, NULL, &dl) == 0,
		      "a write blocked once the shared O_NONBLOCK was cleared");
	ck_assert_int_eq(ret, -EAGAIN);
	stderr_restore();
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/*
 * No /proc (a sandbox, a chroot): the pipe cannot be reopened, and is
 * written after poll().  32 threads log into a pipe with room for a few
 * pages, a slow reader draining it: none blocks (one of our writers at a
 * time), every line arrives whole, and lines + notices = lines logged.
 * Needs a private mount namespace (root): /proc hidden under a tmpfs.
 */
#define POLL_THREADS 32

static void *poll_logger(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < 200; i++)
		vmm_logf(VMM_LOG_ERROR, "thread %ld line %d", id, i);
	return NULL;
}

START_TEST(no_proc_poll_first_many_threads)
{
	int pfd[2];
	pthread_t t[POLL_THREADS], r;
	struct timespec dl;
	unsigned long notices = 0, lines = 0;
	char junk[4096];

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("none", "/proc", "tmpfs", 0, NULL)) {
		printf("log_stall: no private mount namespace here (%s); "
		       "poll-first case not run\n", strerror(errno));
		return;
	}
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
	fill(pfd[1]); /* through the poll-first path itself: no reopen */
	ck_assert_uint_gt(read(pfd[0], junk, sizeof(junk)), 0);
	stderr_to(pfd[1]);
	reader_stop = 0;
	slow_len = 0;
	ck_assert_int_eq(pthread_create(&r, NULL, slow_reader, &pfd[0]), 0);
	for (long i = 0; i < POLL_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, poll_logger, (void *)i), 0);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	for (int i = 0; i < POLL_THREADS; i++)
		ck_assert_msg(pthread_timedjoin_np(t[i], NULL, &dl) == 0,
			      "poll-first: thread %d blocked", i);
	slow_reader_end(r, pfd[0], &notices, &lines);
	/* /proc back: LeakSanitizer reads it when the test's process ends. */
	ck_assert_int_eq(umount2("/proc", MNT_DETACH), 0);
	printf("log_stall: poll-first: %lu lines written, %lu dropped\n", lines,
	       notices);
	ck_assert_uint_eq(lines + notices, POLL_THREADS * 200 + 1);
	free(slow_buf);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/* A terminal nobody reads (after Ctrl-S, a stalled ssh): loggers return;
 * once it drains, a line goes through whole. */
START_TEST(stalled_terminal)
{
	int master, slave;
	struct termios tio;
	static char out[1 << 16];
	uint64_t before;

	ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
	ck_assert_int_eq(tcgetattr(slave, &tio), 0);
	cfmakeraw(&tio);
	ck_assert_int_eq(tcsetattr(slave, TCSANOW, &tio), 0);
	ck_assert_int_eq(fcntl(master, F_SETFL, O_NONBLOCK), 0);
	stderr_to(slave);
	before = vmm_log_dropped();
	run_loggers();
	ck_assert_uint_gt(vmm_log_dropped() - before, 0);
	drain(master, NULL, 0);
	usleep(100000);
	drain(master, NULL, 0);
	ck_assert_int_eq(vmm_log_write("libvmm: thread 98 line 0\n", 25, 0), 0);
	usleep(100000);
	drain(master, out, sizeof(out));
	stderr_restore();
	ck_assert_msg(strstr(out, "libvmm: thread 98 line 0\n"), "got: %s", out);
	close(master);
	close(slave);
}
END_TEST

/* Confined like a vCPU thread, a logger reaches a socket stderr (sendto
 * with MSG_DONTWAIT) and a poll()-first fd: the allow-lists have the calls
 * (VMM_SECCOMP_ERRNO: a refused call would make the write fail). */
static const struct sandbox *confined_filter;
static int confined_ret[2];

static void *confined_logger(void *arg)
{
	struct nbfd *polled = arg;

	if (sandbox_install(confined_filter, SANDBOX_CLASS_VCPU)) {
		/* No seccomp in this kernel (user-mode QEMU): said below. */
		confined_ret[0] = confined_ret[1] = -ENOSYS;
		return NULL;
	}
	confined_ret[0] = vmm_log_write("libvmm: thread 1 line 1\n", 24, 0);
	confined_ret[1] = (int)nbfd_write(polled, "polled\n", 7);
	return NULL;
}

START_TEST(confined_thread_reaches_socket)
{
	struct sandbox *f;
	struct nbfd polled;
	int sv[2], pfd[2];
	pthread_t t;
	char out[256];
	int ret = sandbox_build(VMM_SECCOMP_ERRNO, &f);

	if (ret == -ENOTSUP) {
		printf("log_stall: no seccomp here; confined case not run\n");
		return;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	stderr_to(sv[1]);
	polled = (struct nbfd){ .fd = pfd[1], .mode = NBFD_POLL };
	confined_filter = f;
	ck_assert_int_eq(pthread_create(&t, NULL, confined_logger, &polled), 0);
	pthread_join(t, NULL);
	stderr_restore();
	if (confined_ret[0] == -ENOSYS) {
		printf("log_stall: seccomp filters unavailable; confined case not run\n");
		sandbox_free(f);
		return;
	}
	ck_assert_int_eq(confined_ret[0], 0);
	ck_assert_int_eq(confined_ret[1], 7);
	ck_assert_uint_gt(drain(sv[0], out, sizeof(out)), 0);
	ck_assert_str_eq(out, "libvmm: thread 1 line 1\n");
	ck_assert_uint_eq(drain(pfd[0], out, sizeof(out)), 7);
	sandbox_free(f);
	close(sv[0]);
	close(sv[1]);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log_stall");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, full_pipe_never_blocks);
	tcase_add_test(tc, slow_reader_whole_lines_exact_count);
	tcase_add_test(tc, full_socket_never_blocks);
	tcase_add_test(tc, log_write_api);
	tcase_add_test(tc, long_text_with_timeout);
	tcase_add_test(tc, redirect_followed_old_released);
	tcase_add_test(tc, prepare_races_writers);
	tcase_add_test(tc, nonblocking_flag_cleared_later);
	tcase_add_test(tc, no_proc_poll_first_many_threads);
	tcase_add_test(tc, stalled_terminal);
	tcase_add_test(tc, confined_thread_reaches_socket);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
