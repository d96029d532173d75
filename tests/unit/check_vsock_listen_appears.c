/* SPDX-License-Identifier: MIT */
/*
 * The hybrid vsock's host socket (vsock_host_listen(), devices/vsock/
 * vsock-host.c) appears only once it listens: a host program that
 * connects the moment the path appears (inotify) is accepted, 50 starts in
 * a row; no temporary name stays behind; a stale socket is replaced.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen_race.h"
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

static int listen_vsock(const char *path)
{
	int fd;

	return vsock_host_listen(path, &fd);
}

START_TEST(listening_when_it_appears)
{
	int err = 0, round = listen_race_rounds(sock, listen_vsock, 50, &err);

	ck_assert_msg(round < 0, "round %d: connect as it appeared: %s", round, strerror(-err));
}
END_TEST

START_TEST(stale_socket_replaced)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int old = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ck_assert_int_eq(bind(old, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(old); /* bound, never listened: what a killed VMM leaves */
	ck_assert_int_eq(listen_race_connect(sock), -ECONNREFUSED);
	ck_assert_int_eq(vsock_host_listen(sock, &fd), 0);
	ck_assert_int_eq(listen_race_connect(sock), 0);
	ck_assert_int_eq(listen_race_entries(dir), 1);
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
