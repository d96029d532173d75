/* SPDX-License-Identifier: MIT */
/*
 * Files minivmm-oci creates as root in directories another user may write
 * (issue 31, 3.4): console_dir/ID.console.log (guest-chosen bytes) and the
 * pid file's PATH.tmp.  A symlink (or hard link) planted there is removed,
 * never followed: the file it points at keeps its content.  (Symlinks
 * inside an image: check_oci_spec's test_executable_image_links.)
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

static char dir[64], victim[128];

static void setup(void)
{
	FILE *f;

	strcpy(dir, "/tmp/check_oci_links.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	f = fopen(victim, "w");
	ck_assert_ptr_nonnull(f);
	fputs("SECRET\n", f);
	fclose(f);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void victim_intact(void)
{
	char buf[32] = "";
	FILE *f = fopen(victim, "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "SECRET\n");
}

static void regular_file(const char *path)
{
	struct stat st;

	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_nlink, 1);
}

/* A link planted at console_dir/c1.console.log by @plant. */
static void console_log_planted(int (*plant)(const char *target, const char *path))
{
	struct oci_settings set = { .console_dir = dir, .console_max = 1 << 20 };
	char state[128], planted[160], err[256];
	struct oci_conlog c;

	snprintf(state, sizeof(state), "%s/c1", dir);
	snprintf(planted, sizeof(planted), "%s/c1.console.log", dir);
	ck_assert_int_eq(plant(victim, planted), 0);
	ck_assert_int_eq(oci_conlog_open(&c, &set, state, err, sizeof(err)), 0);
	ck_assert_int_eq(write(c.pipe_w, "guest bytes\n", 12), 12);
	oci_conlog_finish(&c);
	close(c.pipe_w);
	victim_intact();
	regular_file(planted);
}

START_TEST(test_console_log_planted_symlink)
{
	console_log_planted(symlink);
}
END_TEST

START_TEST(test_console_log_planted_hardlink)
{
	console_log_planted(link);
}
END_TEST

START_TEST(test_pid_file_planted_symlink)
{
	char pid[128], tmp[160], buf[16] = "";
	FILE *f;

	snprintf(pid, sizeof(pid), "%s/c1.pid", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", pid);
	ck_assert_int_eq(symlink(victim, tmp), 0);
	ck_assert_int_eq(oci_file_write_atomic(pid, "4242"), 0);
	victim_intact();
	regular_file(pid);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	f = fopen(pid, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "4242");
	/* A symlink at the pid file itself is replaced, not followed. */
	ck_assert_int_eq(unlink(pid), 0);
	ck_assert_int_eq(symlink(victim, pid), 0);
	ck_assert_int_eq(oci_file_write_atomic(pid, "4243"), 0);
	victim_intact();
	regular_file(pid);
}
END_TEST

START_TEST(test_planted_directory_refused)
{
	char p[128];

	/* Something we cannot remove with unlink(): an error, not a follow. */
	snprintf(p, sizeof(p), "%s/d", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_int_lt(oci_file_create(p, 0600), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_symlinks");
	TCase *tc = tcase_create("links");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_console_log_planted_symlink);
	tcase_add_test(tc, test_console_log_planted_hardlink);
	tcase_add_test(tc, test_pid_file_planted_symlink);
	tcase_add_test(tc, test_planted_directory_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
