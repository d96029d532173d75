/* SPDX-License-Identifier: MIT */
/*
 * unix_listen() (examples/common/unix-listen.h), the listening socket of
 * minivmm's API and minivmm-blkd: its path appears only once it listens
 * (a watcher that connects the moment it appears is accepted), a stale
 * socket is replaced, a file is left alone, the umask given applies, no
 * temporary name stays behind, and a path with no room for the temporary
 * name is bound in place.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen_race.h"
#include "unix-listen.h"

static char dir[] = "/tmp/unix_listen.XXXXXX", sock[64];

static void dir_make(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s", dir);
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

static int listen_default(const char *path)
{
	int fd;

	return unix_listen(path, SOCK_CLOEXEC, 4, -1, &fd);
}

START_TEST(listening_when_it_appears)
{
	int err = 0, round = listen_race_rounds(sock, listen_default, 50, &err);

	ck_assert_msg(round < 0, "round %d: connect as it appeared: %s", round, strerror(-err));
}
END_TEST

START_TEST(stale_socket_replaced)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int old = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ck_assert_int_eq(bind(old, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(old); /* bound, never listened: what a killed program leaves */
	ck_assert_int_eq(listen_race_connect(sock), -ECONNREFUSED);
	ck_assert_int_eq(unix_listen(sock, SOCK_CLOEXEC, 4, -1, &fd), 0);
	ck_assert_int_eq(listen_race_connect(sock), 0);
	ck_assert_int_eq(listen_race_entries(dir), 1);
	close(fd);
}
END_TEST

START_TEST(file_left_alone)
{
	int f = open(sock, O_CREAT | O_WRONLY, 0600), fd = -1;
	struct stat st;

	ck_assert_int_ge(f, 0);
	ck_assert_int_eq(write(f, "x", 1), 1);
	close(f);
	ck_assert_int_eq(unix_listen(sock, SOCK_CLOEXEC, 4, -1, &fd), -EEXIST);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(lstat(sock, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_size, 1);
	ck_assert_int_eq(listen_race_entries(dir), 1);
}
END_TEST

START_TEST(mask_applies)
{
	struct stat st;
	int fd;

	ck_assert_int_eq(unix_listen(sock, SOCK_CLOEXEC, 4, 0177, &fd), 0);
	ck_assert_int_eq(lstat(sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	close(fd);
}
END_TEST

START_TEST(path_lengths)
{
	struct sockaddr_un sa;
	char name[sizeof(sa.sun_path) + 8];
	size_t len;
	int fd = -1;

	/* The longest path there is: no room for ".PID~", bound in place. */
	len = snprintf(name, sizeof(name), "%s/", dir);
	memset(name + len, 'n', sizeof(sa.sun_path) - 1 - len);
	name[sizeof(sa.sun_path) - 1] = '\0';
	ck_assert_int_eq(unix_listen(name, SOCK_CLOEXEC, 4, -1, &fd), 0);
	ck_assert_int_eq(listen_race_connect(name), 0);
	ck_assert_int_eq(listen_race_entries(dir), 1);
	close(fd);
	unlink(name);
	/* One byte more does not fit at all. */
	name[sizeof(sa.sun_path) - 1] = 'n';
	name[sizeof(sa.sun_path)] = '\0';
	ck_assert_int_eq(unix_listen(name, SOCK_CLOEXEC, 4, -1, &fd), -ENAMETOOLONG);
	ck_assert_int_eq(listen_race_entries(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("unix_listen");
	TCase *tc = tcase_create("listen");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, dir_make, dir_remove);
	tcase_add_test(tc, listening_when_it_appears);
	tcase_add_test(tc, stale_socket_replaced);
	tcase_add_test(tc, file_left_alone);
	tcase_add_test(tc, mask_applies);
	tcase_add_test(tc, path_lengths);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
