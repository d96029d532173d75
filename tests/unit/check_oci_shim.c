/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's VMM process against a hostile guest and stuck clients,
 * without a VM: the real control plane (examples/oci/shim-ctl.c, which
 * shim.c's loop drives) with the test as the guest init on the other end
 * of the minivmm.ctl socket and as ctl.sock clients (issue 31, 3.1/3.2):
 *  - 40,000 ERROR frames cost the --log file a bounded number of lines
 *    (it grew by 23 MB before);
 *  - a guest that never reads its control port: forwarding SIGTERM (and
 *    everything else) never blocks the loop; what does not fit the bounded
 *    queue is dropped and counted, the rest arrives intact once it reads;
 *  - a client that connects and sends nothing does not hold up another
 *    (the loop used to block reading it for up to 5 s); too many clients
 *    are refused; a silent one is closed after SHIM_CLIENT_READ_MS;
 *  - start / READY / CONFIG / STARTED, a malformed frame stopping the VM,
 *    the end of the VM answering a waiting start.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "oci.h"
#include "proto.h"
#include "shimctl.h"

static struct {
	char dir[64];
	struct oci_settings set;
	struct oci_spec spec;
	struct oci_shim_params p;
	struct shim_ctl s;
	int guest;     /* the guest init's end of minivmm.ctl */
	int stops;     /* stop_vm() calls */
	char *args[2];
} T;

static void stop_vm(void *opaque)
{
	(*(int *)opaque)++;
}

static void setup(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int sp[2], l;

	memset(&T, 0, sizeof(T));
	strcpy(T.dir, "/tmp/check_oci_shim.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(T.dir));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", T.dir);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(l, 64), 0);
	T.args[0] = (char *)"/bin/sh";
	T.spec.args = T.args;
	T.spec.nargs = 1;
	T.spec.cwd = (char *)"/";
	T.p = (struct oci_shim_params){ .spec = &T.spec, .set = &T.set,
					.state_dir = T.dir, .listen_fd = l,
					.tty_slave = -1, .ready_fd = -1 };
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	T.guest = sp[1];
	shim_ctl_init(&T.s, &T.p, sp[0], stop_vm, &T.stops);
}

static void teardown(void)
{
	char cmd[128];

	close(T.guest);
	close(T.s.ctl);
	close(T.p.listen_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", T.dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* One turn of shim.c's loop, minus the VM: poll (no wait), handle. */
static int turn(void)
{
	struct pollfd pfd[SHIM_CTL_NFDS];
	int n = shim_ctl_pollfds(&T.s, pfd), r = poll(pfd, (nfds_t)n, 0);

	ck_assert_int_ge(r, 0);
	shim_ctl_handle(&T.s, pfd);
	return r;
}

static void turns(void)
{
	while (turn() > 0)
		;
}

static void guest_send(uint8_t type, const void *p, size_t n)
{
	struct proto_buf b = { 0 };

	proto_frame(&b, type, p, n);
	ck_assert_int_eq(b.err, 0);
	ck_assert_int_eq(write(T.guest, b.data, b.len), (ssize_t)b.len);
	proto_buf_free(&b);
}

static int client(const char *req)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", T.dir);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (req)
		ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	return fd;
}

/* What the client has been answered so far ("" if nothing, "EOF" once
 * closed without an answer). */
static const char *answer(int fd)
{
	static char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (n < 0)
		return "";
	buf[n] = 0;
	return n ? buf : "EOF";
}

static size_t file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (size_t)st.st_size;
}

START_TEST(test_error_flood_bounded)
{
	enum { FRAMES = 40000, PER_ROUND = 20 };
	char log[128], text[500], line[4096];
	unsigned int lines = 0, summaries = 0;
	FILE *f;

	snprintf(log, sizeof(log), "%s/log.json", T.dir);
	oci_log_init(log, true);
	oci_log_quiet_stderr(true);
	memset(text, 'A', sizeof(text));
	for (int round = 0; round < FRAMES / PER_ROUND; round++) {
		for (int k = 0; k < PER_ROUND; k++)
			guest_send(PROTO_MSG_ERROR, text, sizeof(text));
		turns();
	}
	shim_ctl_finish(&T.s);
	ck_assert_uint_eq(oci_limit_total(&T.s.guest_log), FRAMES);
	ck_assert_uint_eq(strlen(T.s.guest_error), sizeof(text));
	f = fopen(log, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		summaries += strstr(line, "more messages caused by the guest") != NULL;
	}
	fclose(f);
	/* At most OCI_LIMIT_LINES lines, the count of the rest in one. */
	ck_assert_uint_le(lines, OCI_LIMIT_LINES + 1);
	ck_assert_uint_eq(summaries, 1);
	ck_assert_uint_le(file_size(log), (OCI_LIMIT_LINES + 1) * 700);
	printf("error flood: %d frames -> %u lines, %zu bytes of log\n", FRAMES,
	       lines, file_size(log));
}
END_TEST

START_TEST(test_guest_not_reading)
{
	enum { SIGNALS = 600000 }; /* 5.4 MB of frames: more than the queue */
	struct proto_reader rd = { 0 };
	uint64_t got = 0, dropped;
	uint8_t buf[65536];

	guest_send(PROTO_MSG_STARTED, NULL, 0);
	turns();
	ck_assert(T.s.started);
	/* The guest never reads: every signal still returns at once. */
	for (int i = 0; i < SIGNALS; i++)
		shim_ctl_signal(&T.s, SIGTERM);
	ck_assert_uint_le(T.s.out_len - T.s.out_off, SHIM_OUT_MAX);
	dropped = T.s.frames_dropped;
	ck_assert_uint_gt(dropped, 0);
	ck_assert_uint_lt(dropped, SIGNALS);
	/* Once it reads, the queued frames arrive whole, in order. */
	for (;;) {
		ssize_t n;

		turn();
		n = recv(T.guest, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0 && T.s.out_len == T.s.out_off)
			break;
		for (ssize_t off = 0; n > 0 && off < n;) {
			const uint8_t *pl;
			uint32_t len;
			uint8_t type;
			int g;

			off += (ssize_t)proto_reader_feed(&rd, buf + off, (size_t)(n - off),
							  &g, &type, &pl, &len);
			ck_assert_int_eq(rd.err, 0);
			if (g) {
				ck_assert_uint_eq(type, PROTO_MSG_SIGNAL);
				ck_assert_uint_eq(proto_get_u32(pl), SIGTERM);
				got++;
			}
		}
	}
	ck_assert_uint_eq(got + dropped, SIGNALS);
	proto_reader_free(&rd);
	shim_ctl_finish(&T.s);
	printf("guest not reading: %d signals, %llu queued and delivered, %llu dropped\n",
	       SIGNALS, (unsigned long long)got, (unsigned long long)dropped);
}
END_TEST

START_TEST(test_silent_client_does_not_block)
{
	int silent = client(NULL), busy;

	turns(); /* accepted: nothing to read yet */
	busy = client("signal 15\n");
	for (int i = 0; i < 1000; i++) {
		struct pollfd p = { .fd = busy, .events = POLLIN };

		turns();
		if (poll(&p, 1, 1) == 1)
			break;
	}
	/* Answered while the silent one is still connected, still waiting. */
	ck_assert_str_eq(answer(busy), "ok\n");
	ck_assert_str_eq(answer(silent), "");
	ck_assert_int_eq(T.stops, 1); /* SIGTERM before start: the VM stops */
	ck_assert_int_eq(T.s.exit_code, 128 + SIGTERM);
	/* Its line is late: closed after SHIM_CLIENT_READ_MS. */
	for (int i = 0; i < 4 * SHIM_CLIENT_READ_MS / 10; i++) {
		struct pollfd pfd[SHIM_CTL_NFDS], p = { .fd = silent, .events = POLLIN };
		int n = shim_ctl_pollfds(&T.s, pfd);

		poll(pfd, (nfds_t)n, 10);
		shim_ctl_handle(&T.s, pfd);
		if (poll(&p, 1, 0) == 1)
			break;
	}
	ck_assert_str_eq(answer(silent), "EOF");
	ck_assert_uint_eq(T.s.nclients, 0);
	close(silent);
	close(busy);
	shim_ctl_finish(&T.s);
}
END_TEST

START_TEST(test_clients_bounded)
{
	int fds[SHIM_MAX_CLIENTS + 4];
	unsigned int busy = 0;

	for (unsigned int i = 0; i < SHIM_MAX_CLIENTS + 4; i++) {
		fds[i] = client(NULL);
		turns();
	}
	ck_assert_uint_eq(T.s.nclients, SHIM_MAX_CLIENTS);
	for (unsigned int i = 0; i < SHIM_MAX_CLIENTS + 4; i++) {
		busy += !strcmp(answer(fds[i]), "error: busy\n");
		close(fds[i]);
	}
	ck_assert_uint_eq(busy, 4);
	turns();
	ck_assert_uint_eq(T.s.nclients, 0);
	shim_ctl_finish(&T.s);
}
END_TEST

START_TEST(test_start_flow)
{
	struct proto_reader rd = { 0 };
	const uint8_t *pl;
	uint8_t buf[4096], type = 0;
	uint32_t len;
	int c = client("start\n"), g = 0;
	ssize_t n;

	turns();
	ck_assert(T.s.start_wanted && !T.s.config_sent);
	guest_send(PROTO_MSG_READY, NULL, 0);
	turns();
	ck_assert(T.s.config_sent);
	n = recv(T.guest, buf, sizeof(buf), MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	proto_reader_feed(&rd, buf, (size_t)n, &g, &type, &pl, &len);
	ck_assert(g && type == PROTO_MSG_CONFIG);
	proto_reader_free(&rd);
	ck_assert_str_eq(answer(c), "");
	guest_send(PROTO_MSG_STARTED, NULL, 0);
	turns();
	ck_assert_str_eq(answer(c), "ok\n");
	close(c);
	c = client("start\n"); /* again: already started */
	turns();
	ck_assert_str_eq(answer(c), "ok\n");
	close(c);
	shim_ctl_finish(&T.s);
}
END_TEST

START_TEST(test_malformed_and_end)
{
	static const uint8_t bad[5] = { 0, 0, 0, 0, 1 }; /* length 0 */
	int c = client("start\n");

	turns();
	guest_send(PROTO_MSG_ERROR, "no such file", 12);
	ck_assert_int_eq(write(T.guest, bad, sizeof(bad)), (ssize_t)sizeof(bad));
	turns();
	ck_assert_int_eq(T.stops, 1);
	ck_assert(T.s.broken);
	/* The VM ended: the waiting start gets the guest's error. */
	shim_ctl_finish(&T.s);
	ck_assert_str_eq(answer(c), "error: no such file\n");
	close(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("oci_shim");
	TCase *tc = tcase_create("ctl");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_error_flood_bounded);
	tcase_add_test(tc, test_guest_not_reading);
	tcase_add_test(tc, test_silent_client_does_not_block);
	tcase_add_test(tc, test_clients_bounded);
	tcase_add_test(tc, test_start_flow);
	tcase_add_test(tc, test_malformed_and_end);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
