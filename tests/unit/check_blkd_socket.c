/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd's --socket PATH: PATH appears only once the daemon listens
 * (a supervisor that starts the front end when PATH appears is never
 * refused), a stale socket there is replaced, anything else is left alone
 * with an error, and no temporary name stays behind.  KVM-free: the daemon
 * runs here, the test is its supervisor and front end.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* Made and removed by the runner (an unchecked fixture), so that a test
 * that fails half-way leaves nothing behind. */
static char dir[] = "/tmp/blkd_socket.XXXXXX", sock[64], img[64];

static void dir_make(void)
{
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
	fd = open(img, O_CREAT | O_RDWR | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
}

static void dir_remove(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char p[320];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static pid_t spawn(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		char disk[160];
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		snprintf(disk, sizeof(disk), "path=%s", img);
		execl(BLKD_BIN, BLKD_BIN, "--socket", sock, "--disk", disk, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int stop(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static int try_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	close(fd);
	return ret;
}

/* Names in the directory other than img and sock. */
static int strays(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strcmp(de->d_name, "img") &&
		    strcmp(de->d_name, "sock"))
			n++;
	closedir(d);
	return n;
}

/* Waits (inotify, up to 30 s) for "sock" to be created or renamed into
 * the directory; returns 0 or -ETIMEDOUT. */
static int wait_sock(int in)
{
	char buf[4096] __attribute__((aligned(8)));

	for (;;) {
		struct pollfd p = { .fd = in, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			return -ETIMEDOUT;
		n = read(in, buf, sizeof(buf));
		for (char *c = buf; n > 0 && c < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)c;

			if (ev->len && !strcmp(ev->name, "sock"))
				return 0;
			c += sizeof(*ev) + ev->len;
		}
	}
}

START_TEST(listening_when_it_appears)
{
	/* Connect the moment the name appears, as a supervisor watching
	 * the directory would: 20 starts, every one accepted. */
	for (int round = 0; round < 20; round++) {
		int in = inotify_init1(IN_CLOEXEC), ret;
		pid_t pid;

		ck_assert_int_ge(in, 0);
		ck_assert_int_ge(inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO), 0);
		unlink(sock);
		pid = spawn();
		ck_assert_int_eq(wait_sock(in), 0);
		ret = try_connect();
		ck_assert_msg(!ret, "round %d: connect as %s appeared: %s", round, sock,
			      strerror(-ret));
		ck_assert_int_eq(strays(), 0);
		stop(pid);
		close(in);
	}
}
END_TEST

START_TEST(stale_socket_replaced)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret = -1;
	struct stat st;
	pid_t pid;

	/* A socket nobody listens on: a daemon that was killed. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_int_eq(try_connect(), -ECONNREFUSED);

	pid = spawn();
	for (int i = 0; i < 1500 && ret; i++) {
		/* The stale socket stays until the new one replaces it:
		 * never a moment without a socket at the path. */
		ck_assert_int_eq(lstat(sock, &st), 0);
		ck_assert(S_ISSOCK(st.st_mode));
		ret = try_connect();
		ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0);
		if (ret)
			usleep(20000);
	}
	ck_assert_msg(!ret, "connect after the stale socket was replaced: %s",
		      strerror(-ret));
	ck_assert_int_eq(strays(), 0);
	stop(pid);
}
END_TEST

START_TEST(not_a_socket_left_alone)
{
	int fd = open(sock, O_CREAT | O_WRONLY | O_TRUNC, 0600), status;
	char buf[16] = "";
	pid_t pid;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "precious", 8), 8);
	close(fd);
	pid = spawn();
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "status %#x", status);
	fd = open(sock, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 8);
	close(fd);
	ck_assert_str_eq(buf, "precious");
	ck_assert_int_eq(strays(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blkd_socket");
	TCase *tc = tcase_create("socket");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, dir_make, dir_remove);
	tcase_add_test(tc, listening_when_it_appears);
	tcase_add_test(tc, stale_socket_replaced);
	tcase_add_test(tc, not_a_socket_left_alone);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
