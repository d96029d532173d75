/* SPDX-License-Identifier: MIT */
/*
 * What vblk_open() takes as a disk image: a regular file or a block device.
 * A FIFO (read-only or not), a character device or a directory is refused
 * with -EINVAL at once and a message naming it -- an O_RDONLY open of a
 * FIFO without a writer used to block vmm_start() forever.  The image fd
 * it keeps is blocking; a caller's fd keeps its own flags.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "fake_guest.h"
#include "log_capture.h"

static char dir[64], fifo[96];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check_blk_image_types.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(log_capture_start(), 0);
	alarm(30); /* a blocking open would hang: make it a failure */
}

static void teardown(void)
{
	alarm(0);
	unlink(fifo);
	rmdir(dir);
}

static int open_path(const char *path, uint32_t flags)
{
	struct vblk_options o = { .path = path, .fd = -1, .flags = flags,
				  .num_queues = 1 };
	struct vblk *b = NULL;
	int ret = vblk_open(&o, &b);

	vblk_close(b);
	return ret;
}

START_TEST(fifo_refused)
{
	ck_assert_int_eq(open_path(fifo, VBLK_OPT_READONLY), -EINVAL);
	ck_assert_int_eq(open_path(fifo, 0), -EINVAL);
	ck_assert_int_eq(open_path(fifo, VBLK_OPT_READONLY | VBLK_OPT_NO_LOCK), -EINVAL);
	ck_assert_uint_eq(log_capture_count("is neither a regular file nor a block "
					    "device (a FIFO)"), 3);
	ck_assert_uint_ge(log_capture_count(fifo), 3);
}
END_TEST

START_TEST(devices_and_dirs_refused)
{
	ck_assert_int_eq(open_path("/dev/null", VBLK_OPT_READONLY), -EINVAL);
	ck_assert_int_eq(open_path("/dev/zero", 0), -EINVAL);
	ck_assert_uint_eq(log_capture_count("(a character device)"), 2);
	/* A directory does not even open read-write; read-only it does. */
	ck_assert_int_eq(open_path(dir, VBLK_OPT_READONLY), -EINVAL);
	ck_assert_uint_eq(log_capture_count("(a directory)"), 1);
	ck_assert_int_lt(open_path(dir, 0), 0);
}
END_TEST

/* The caller's fd of a FIFO: refused as well. */
START_TEST(fifo_fd_refused)
{
	int fd = open(fifo, O_RDWR | O_NONBLOCK);
	struct vblk_options o = { .fd = fd, .num_queues = 1 };
	struct vblk *b = NULL;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(vblk_open(&o, &b), -EINVAL);
	ck_assert_ptr_null(b);
	close(fd);
}
END_TEST

/* A regular file: accepted, its fd blocking; a caller's fd with
 * O_NONBLOCK keeps it (the open file description is the caller's). */
START_TEST(regular_file_blocking_fd)
{
	char path[128];
	struct vblk_options o = { .fd = -1, .num_queues = 1 };
	struct vblk *b = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/img", dir);
	fd = open(path, O_RDWR | O_CREAT | O_NONBLOCK, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	o.path = path;
	ck_assert_int_eq(vblk_open(&o, &b), 0);
	ck_assert_uint_eq(disk_capacity(vblk_disk(b)), (1 << 20) / 512);
	ck_assert_int_eq(fcntl(disk_fd(vblk_disk(b)), F_GETFL) & O_NONBLOCK, 0);
	vblk_close(b);
	b = NULL;
	o.path = NULL;
	o.fd = fd;
	ck_assert_int_eq(vblk_open(&o, &b), 0);
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	vblk_close(b);
	close(fd);
	unlink(path);
}
END_TEST

static Suite *image_types_suite(void)
{
	Suite *s = suite_create("blk_image_types");
	TCase *tc = tcase_create("blk_image_types");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fifo_refused);
	tcase_add_test(tc, devices_and_dirs_refused);
	tcase_add_test(tc, fifo_fd_refused);
	tcase_add_test(tc, regular_file_blocking_fd);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(image_types_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
