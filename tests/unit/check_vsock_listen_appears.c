/* SPDX-License-Identifier: MIT */
/*
 * The hybrid vsock's host socket (vsock_host_listen(), devices/vsock/
 * vsock-host.c) appears only once it listens: a host program that
 * connects the moment the path appears (inotify) is accepted, 50 starts in
 * a row; no temporary name stays behind (a stale socket replaced:
 * check_vsock_connect's test_listen_path).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	Suite *s = suite_create("vsock_listen_appears");
	TCase *tc = tcase_create("listen");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, dir_make, dir_remove);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, listening_when_it_appears);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
