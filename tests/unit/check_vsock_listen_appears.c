/* SPDX-License-Identifier: MIT */
/*
 * The hybrid vsock's host socket (vsock_host_listen(), devices/vsock/
 * vsock-host.c) appears only once it listens: a host program that
 * connects the moment the path appears (inotify) is accepted, 50 starts in
 * a row; no temporary name stays behind; a stale socket is replaced.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsock/vsock-host.h"

static char dir[] = "/tmp/vsock_listen.XXXXXX", sock[64];

static void dir_make(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/v", dir);
}

static void dir_remove(void)
{
	unlink(sock);
	rmdir(dir);
}

/* 0, or -errno of connect() to @path. */
static int try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	close(fd);
	return ret;
}

/* Entries of the directory. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(listening_when_it_appears)
{
	for (int round = 0; round < 50; round++) {
		char buf[4096] __attribute__((aligned(8)));
		int in = inotify_init1(IN_CLOEXEC), ret, fd;
		struct pollfd p;
		bool seen = false;
		pid_t pid;
		ssize_t n;

		ck_assert_int_ge(in, 0);
		unlink(sock);
		ck_assert_int_ge(inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO), 0);
		/* The VMM's side in a child: this process connects the moment
		 * the name appears, while the child may still be between
		 * bind() and listen(). */
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (!pid) {
			if (vsock_host_listen(sock, &fd))
				_exit(1);
			pause();
			_exit(0);
		}
		while (!seen) {
			p = (struct pollfd){ .fd = in, .events = POLLIN };
			ck_assert_int_eq(poll(&p, 1, 30000), 1);
			n = read(in, buf, sizeof(buf));
			for (char *c = buf; n > 0 && c < buf + n;) {
				struct inotify_event *ev = (struct inotify_event *)c;

				seen |= ev->len && !strcmp(ev->name, "v");
				c += sizeof(*ev) + ev->len;
			}
		}
		ret = try_connect(sock);
		ck_assert_msg(!ret, "round %d: connect as it appeared: %s", round, strerror(-ret));
		ck_assert_int_eq(entries(), 1);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(in);
	}
}
END_TEST

START_TEST(stale_socket_replaced)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int old = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ck_assert_int_eq(bind(old, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(old); /* bound, never listened: what a killed VMM leaves */
	ck_assert_int_eq(try_connect(sock), -ECONNREFUSED);
	ck_assert_int_eq(vsock_host_listen(sock, &fd), 0);
	ck_assert_int_eq(try_connect(sock), 0);
	ck_assert_int_eq(entries(), 1);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_listen_appears");
	TCase *tc = tcase_create("listen");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, dir_make, dir_remove);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, listening_when_it_appears);
	tcase_add_test(tc, stale_socket_replaced);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
