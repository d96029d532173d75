/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd with its stdout and stderr on one pipe that stopped being
 * read (a supervisor's, as conmon and systemd give): the daemon, verbose
 * and with --stats-json, serves a front end that connects, asks for its
 * features and leaves -- every step logs, and the counters line goes to
 * stdout -- and SIGTERM then ends it within 2 s, no thread ever blocked in
 * pipe_write.  Before the fix its control thread blocked writing "front
 * end connected" to fd 2 and SIGTERM (read by that same thread) never
 * ended it.  KVM-free: the daemon runs here, the test is its front end.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nbfd.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Threads of @pid waiting in pipe_write (/proc/PID/task/ T/wchan). */
static int blocked_in_pipe_write(pid_t pid)
{
	char path[64], w[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char p[300];
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/wchan", (int)pid, de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(w, sizeof(w), f) && !strcmp(w, "pipe_write"))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Made and removed by the runner (an unchecked fixture), so that a test
 * that fails half-way leaves nothing behind. */
static char dir[] = "/tmp/blkd_stall.XXXXXX", sock[64], img[64];

static void dir_make(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
}

static void dir_remove(void)
{
	unlink(img);
	unlink(sock);
	rmdir(dir);
}

START_TEST(stalled_output_sigterm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* VHOST_USER_GET_FEATURES (1), version 1, no payload. */
	const uint32_t msg[3] = { 1, 0x1, 0 };
	static char junk[4096];
	struct nbfd e;
	int pfd[2], fd = -1, status, blocked;
	double t0, dt;
	pid_t pid;

	fd = open(img, O_CREAT | O_RDWR | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 16 << 20), 0);
	close(fd);

	/* The supervisor's pipe, full: the test holds the read end and
	 * never reads it. */
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(nbfd_open(pfd[1], O_WRONLY, &e), 0);
	while (nbfd_write(&e, junk, sizeof(junk)) > 0 || nbfd_write(&e, junk, 1) > 0)
		;
	nbfd_close(&e);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		char disk[160];

		/* Gone with the test, whatever assertion ends it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(disk, sizeof(disk), "path=%s", img);
		dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		execl(BLKD_BIN, BLKD_BIN, "-v", "--stats-json", "--socket", sock,
		      "--disk", disk, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);

	/* Its socket appears once it listens (bound under another name and
	 * renamed: no moment where it exists and refuses), "ready" logged
	 * into the full pipe after: already a line that cannot go out.  A
	 * generous deadline: in the arm64 rig the L1 is emulated, and a
	 * loaded CI host stalls it for seconds at a time. */
	t0 = now_s();
	for (;;) {
		struct stat st;

		if (!stat(sock, &st))
			break;
		ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0);
		ck_assert_msg(now_s() - t0 < 40, "no socket %s 40 s after the start", sock);
		usleep(20000);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
		      "connect %s: %s", sock, strerror(errno));
	ck_assert_int_eq(write(fd, msg, sizeof(msg)), (ssize_t)sizeof(msg));
	{
		/* The answer, if the daemon is not stuck logging the
		 * connection (not asserted: the stop below is). */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char ans[64];

		if (poll(&p, 1, 2000) > 0 && read(fd, ans, sizeof(ans)) > 0)
			printf("blkd_stall: the daemon answered GET_FEATURES\n");
	}
	close(fd); /* disconnect: logged, then the counters line on stdout */
	usleep(500000);
	blocked = blocked_in_pipe_write(pid);
	printf("blkd_stall: threads in pipe_write: %d\n", blocked);

	t0 = now_s();
	kill(pid, SIGTERM);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		ck_assert_int_ge(w, 0);
		if (w == pid)
			break;
		if (now_s() - t0 > 10) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			ck_abort_msg("minivmm-blkd still running 10 s after SIGTERM "
				     "with its output stalled");
		}
		usleep(10000);
	}
	dt = now_s() - t0;
	printf("blkd_stall: SIGTERM to exit: %.3f s\n", dt);
	ck_assert_int_eq(blocked, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "status %#x", status);
	ck_assert_msg(dt <= 2.0, "SIGTERM took %.3f s (limit 2 s)", dt);
	close(pfd[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blkd_stall");
	TCase *tc = tcase_create("daemon");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_unchecked_fixture(tc, dir_make, dir_remove);
	tcase_add_test(tc, stalled_output_sigterm);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
