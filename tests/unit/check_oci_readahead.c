/* SPDX-License-Identifier: MIT */
/*
 * The guest init's virtio-fs read-ahead (examples/oci/guest-init/
 * readahead.c), against a directory standing for /sys: the value lands in
 * class/bdi/MAJOR:MINOR/read_ahead_kb of the mount point's st_dev (a
 * second directory on another device is told apart), the attribute
 * missing or the mount point missing give their errors, nothing else is
 * written.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "readahead.h"

static char sysfs[64];

/* A fake sysfs with the bdi directory of @dev and its attribute at "128". */
static void make_bdi(dev_t dev, char *attr, size_t len)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/class", sysfs);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/class/bdi", sysfs);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/class/bdi/%u:%u", sysfs, major(dev), minor(dev));
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(attr, len, "%s/read_ahead_kb", p);
	f = fopen(attr, "w");
	ck_assert_ptr_nonnull(f);
	fputs("128\n", f);
	fclose(f);
}

static void read_attr(const char *attr, char *buf, size_t len)
{
	FILE *f = fopen(attr, "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, (int)len, f));
	fclose(f);
}

static void setup(void)
{
	strcpy(sysfs, "/tmp/check_oci_readahead.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(sysfs));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sysfs);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(writes_the_mounts_bdi)
{
	struct stat st;
	char attr[160], buf[32];

	/* The mount point: the fake sysfs directory itself (its device). */
	ck_assert_int_eq(stat(sysfs, &st), 0);
	make_bdi(st.st_dev, attr, sizeof(attr));
	ck_assert_int_eq(init_fs_readahead(sysfs, sysfs, INIT_FS_READAHEAD_KB), 0);
	read_attr(attr, buf, sizeof(buf));
	ck_assert_str_eq(buf, "4096\n");
	ck_assert_int_eq(init_fs_readahead(sysfs, sysfs, 512), 0);
	read_attr(attr, buf, sizeof(buf));
	ck_assert_str_eq(buf, "512\n");
}
END_TEST

START_TEST(other_device_not_touched)
{
	struct stat st, proc;
	char attr[160], buf[32];

	/* /proc is on a device of its own: its bdi is not in the fake sysfs,
	 * and the one that is keeps its value. */
	ck_assert_int_eq(stat(sysfs, &st), 0);
	ck_assert_int_eq(stat("/proc", &proc), 0);
	ck_assert(st.st_dev != proc.st_dev);
	make_bdi(st.st_dev, attr, sizeof(attr));
	ck_assert_int_eq(init_fs_readahead(sysfs, "/proc", 4096), -ENOENT);
	read_attr(attr, buf, sizeof(buf));
	ck_assert_str_eq(buf, "128\n");
}
END_TEST

START_TEST(missing_mount_point)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/no-such-dir", sysfs);
	ck_assert_int_eq(init_fs_readahead(sysfs, p, 4096), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_readahead");
	TCase *tc = tcase_create("readahead");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, writes_the_mounts_bdi);
	tcase_add_test(tc, other_device_not_touched);
	tcase_add_test(tc, missing_mount_point);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
