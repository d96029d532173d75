/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's copy of the guest's serial console (examples/oci/conlog.c):
 * whatever the guest writes to COM1 (a root container can, with ioperm and
 * `rep outsb`), the file on the host keeps console_max bytes plus one line
 * saying the rest was dropped; the count is logged (issue 31, 3.2: it grew
 * without a bound on /run before).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

START_TEST(test_console_capped)
{
	enum { MAX = 1 << 20, TOTAL = 6 << 20, CHUNK = 32768 };
	char dir[] = "/tmp/check_oci_con.XXXXXX", state[128], err[256], cmd[128];
	struct oci_settings set = { .console_max = MAX };
	struct oci_conlog c;
	static char chunk[CHUNK];
	struct stat st;
	size_t written = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(state, sizeof(state), "%s/c1", dir);
	ck_assert_int_eq(mkdir(state, 0700), 0);
	ck_assert_int_eq(oci_conlog_open(&c, &set, state, err, sizeof(err)), 0);
	fcntl(c.pipe_w, F_SETFL, O_NONBLOCK);
	memset(chunk, 'c', sizeof(chunk));
	/* The guest writes faster than the loop turns: the pipe takes what
	 * it can, the loop copies a turn's worth at a time. */
	while (written < TOTAL) {
		ssize_t n = write(c.pipe_w, chunk, CHUNK);

		if (n > 0)
			written += (size_t)n;
		else
			oci_conlog_pump(&c, OCI_CONLOG_TURN);
	}
	oci_conlog_finish(&c);
	ck_assert_int_eq(stat(c.path, &st), 0);
	ck_assert_uint_ge((uint64_t)st.st_size, MAX);
	ck_assert_uint_le((uint64_t)st.st_size, MAX + 200); /* + the one line */
	ck_assert_uint_eq(c.dropped, TOTAL - MAX);
	{
		char tail[200];
		FILE *f = fopen(c.path, "r");

		ck_assert_ptr_nonnull(f);
		fseek(f, MAX, SEEK_SET);
		ck_assert_ptr_nonnull(fgets(tail, sizeof(tail), f));
		ck_assert_ptr_nonnull(fgets(tail, sizeof(tail), f));
		ck_assert_ptr_nonnull(strstr(tail, "console_max (1048576 bytes) reached"));
		fclose(f);
	}
	printf("console: %d bytes from the guest -> %lld bytes in %s\n", TOTAL,
	       (long long)st.st_size, c.path);
	close(c.pipe_w);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_console_cap");
	TCase *tc = tcase_create("cap");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_console_capped);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
