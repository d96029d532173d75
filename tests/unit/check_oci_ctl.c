/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's commands against a VMM process that does not answer, and
 * the state they derive (issue 31, 3.1/3.5), with fake VMM processes (a
 * child of the test, alive, with its ctl.sock served -- or not -- by the
 * test):
 *  - oci_ctl_request() and `minivmm-oci kill` time out against a peer that
 *    accepts and never answers, or never accepts (both used to wait
 *    forever);
 *  - `start` that fails records nothing: the container stays "created"
 *    (it used to write "started" first: "running");
 *  - a state.json whose starttime is 0 with its VMM gone is "stopped"
 *    (0 == 0 made a dead VMM look alive).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci.h"

static struct {
	char root[64], dir[80];
	int listen_fd;
	pid_t vmm; /* the fake VMM process: sleeps */
} T;

static void setup(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct oci_state st = { 0 };

	memset(&T, 0, sizeof(T));
	strcpy(T.root, "/tmp/check_oci_ctl.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(T.root));
	oci_state_dir(T.root, "c1", T.dir, sizeof(T.dir));
	ck_assert_int_eq(mkdir(T.dir, 0700), 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", T.dir);
	T.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(T.listen_fd, 0);
	ck_assert_int_eq(bind(T.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(T.listen_fd, 1), 0);
	T.vmm = fork();
	ck_assert_int_ge(T.vmm, 0);
	if (!T.vmm) {
		close(T.listen_fd);
		pause();
		_exit(0);
	}
	snprintf(st.id, sizeof(st.id), "c1");
	snprintf(st.dir, sizeof(st.dir), "%s", T.dir);
	snprintf(st.bundle, sizeof(st.bundle), "/b");
	st.pid = T.vmm;
	st.starttime = oci_proc_starttime(T.vmm);
	ck_assert_uint_ne(st.starttime, 0);
	ck_assert_int_eq(oci_state_write(&st), 0);
}

static void teardown(void)
{
	char cmd[128];

	kill(T.vmm, SIGKILL);
	waitpid(T.vmm, NULL, 0);
	close(T.listen_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", T.root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Run the runtime with @args; its exit status (stderr in @out). */
static int run_oci(const char *const *args, char *out, size_t len)
{
	char *argv[16];
	int p[2], status, argc = 0;
	size_t have = 0;
	pid_t pid;

	argv[argc++] = (char *)OCI_BIN;
	argv[argc++] = (char *)"--root";
	argv[argc++] = T.root;
	while (*args)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		dup2(p[1], 2);
		dup2(p[1], 1);
		setenv("MINIVMM_OCI_CONFIG", "/dev/null", 1);
		execv(OCI_BIN, argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], out + have, len - 1 - have);

		if (n <= 0)
			break;
		have += (size_t)n;
	}
	out[have] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* The peer accepts and never answers; or never even accepts. */
START_TEST(test_request_times_out)
{
	char ans[64];
	int c;

	ck_assert_int_eq(oci_ctl_request(T.dir, "signal 15\n", ans, sizeof(ans), 300),
			 -ETIMEDOUT);
	/* Now accepted (it was in the backlog): still no answer. */
	c = accept4(T.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(c, 0);
	ck_assert_int_eq(oci_ctl_request(T.dir, "signal 15\n", ans, sizeof(ans), 300),
			 -ETIMEDOUT);
	close(c);
	/* Nobody listens: at once. */
	close(T.listen_fd);
	T.listen_fd = -1;
	ck_assert_int_eq(oci_ctl_request(T.dir, "signal 15\n", ans, sizeof(ans), 300),
			 -ECONNREFUSED);
}
END_TEST

/* `minivmm-oci kill` against a VMM that does not answer: an error after
 * OCI_CTL_SIGNAL_TIMEOUT_MS, not a hang. */
START_TEST(test_kill_cli_times_out)
{
	const char *a[] = { "kill", "c1", "15", NULL };
	char out[1024];

	ck_assert_int_eq(run_oci(a, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "does not answer"), "%s", out);
}
END_TEST

/* Context: a thread of the test: the fake VMM's loop, which accepts one
 * request and closes without answering (it died meanwhile). */
static void *close_one(void *arg)
{
	int c = accept4(T.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	char buf[64];

	(void)arg;
	if (c >= 0) {
		if (read(c, buf, sizeof(buf)) < 0)
			buf[0] = 0;
		close(c);
	}
	return NULL;
}

START_TEST(test_failed_start_stays_created)
{
	const char *a[] = { "start", "c1", NULL };
	const char *s[] = { "state", "c1", NULL };
	char out[2048], p[256];
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, close_one, NULL), 0);
	ck_assert_int_eq(run_oci(a, out, sizeof(out)), 1);
	pthread_join(th, NULL);
	ck_assert_msg(strstr(out, "does not answer"), "%s", out);
	snprintf(p, sizeof(p), "%s/started", T.dir);
	ck_assert_int_eq(access(p, F_OK), -1);
	ck_assert_int_eq(run_oci(s, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "\"status\": \"created\""), "%s", out);
}
END_TEST

START_TEST(test_starttime_zero_is_stopped)
{
	const char *s[] = { "state", "c1", NULL };
	struct oci_state st;
	char out[2048];
	pid_t dead = fork();

	ck_assert_int_ge(dead, 0);
	if (!dead)
		_exit(0);
	ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
	ck_assert_int_eq(oci_state_read(T.root, "c1", &st), 0);
	st.pid = dead; /* gone: /proc has no stat for it */
	st.starttime = 0;
	ck_assert_int_eq(oci_state_write(&st), 0);
	ck_assert_int_eq(oci_state_status(&st), OCI_STOPPED);
	ck_assert_int_eq(run_oci(s, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "\"status\": \"stopped\""), "%s", out);
	oci_state_free(&st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("oci_ctl");
	TCase *tc = tcase_create("ctl");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_request_times_out);
	tcase_add_test(tc, test_kill_cli_times_out);
	tcase_add_test(tc, test_failed_start_stays_created);
	tcase_add_test(tc, test_starttime_zero_is_stopped);
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
