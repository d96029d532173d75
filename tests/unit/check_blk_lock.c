/* SPDX-License-Identifier: MIT */
/*
 * Image locking in vblk_open() (OFD locks, like QEMU's file.locking):
 * writable opens exclude every other open of the image, read-only opens
 * share with each other, VBLK_OPT_NO_LOCK turns it off, the conflict is
 * -EBUSY with a message that names the image and the override, and the
 * lock is held per open file description: across processes, within one
 * process (two disks), released by close and by the death of the holder.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "log_capture.h"
#include "vmm/vmm.h"

#define RW 0u
#define RO VBLK_OPT_READONLY
#define NOLOCK VBLK_OPT_NO_LOCK

static char path[64];
static void setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/libvmm-lock-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	ck_assert_int_eq(log_capture_start(), 0);
}

static void teardown(void)
{
	unlink(path);
	vmm_set_log(NULL, NULL, VMM_LOG_WARN);
}

static int open_img(uint32_t flags, struct vblk **out)
{
	struct vblk_options o = { .path = path, .fd = -1, .flags = flags, .num_queues = 1 };

	*out = NULL;
	return vblk_open(&o, out);
}

static struct vblk *must_open(uint32_t flags)
{
	struct vblk *b;

	ck_assert_int_eq(open_img(flags, &b), 0);
	return b;
}

static void must_fail(uint32_t flags)
{
	struct vblk *b;

	ck_assert_int_eq(open_img(flags, &b), -EBUSY);
	ck_assert_ptr_null(b);
}

/* rw + rw: the second fails with a message naming the image and the way
 * out; once the first is closed the image is free again. */
START_TEST(rw_rw_conflict)
{
	struct vblk *a = must_open(RW);
	char want[160];

	must_fail(RW);
	snprintf(want, sizeof(want), "disk image %s is locked by another process "
		 "or disk (opened writable elsewhere)", path);
	ck_assert_uint_ge(log_capture_count(want), 1);
	ck_assert_uint_ge(log_capture_count("use lock=off"), 1);
	vblk_close(a);
	a = must_open(RW);
	vblk_close(a);
}
END_TEST

/* Read-only opens share; a writer is refused while any reader holds it,
 * and the message then says "read-only elsewhere". */
START_TEST(ro_ro_shared)
{
	struct vblk *a = must_open(RO), *b = must_open(RO), *c = must_open(RO);

	must_fail(RW);
	ck_assert_uint_ge(log_capture_count("(opened read-only elsewhere)"), 1);
	vblk_close(a);
	vblk_close(b);
	must_fail(RW);
	vblk_close(c);
	vblk_close(must_open(RW));
}
END_TEST

/* rw then ro: the reader is refused (it would see a moving image). */
START_TEST(rw_then_ro)
{
	struct vblk *a = must_open(RW);

	must_fail(RO);
	ck_assert_uint_ge(log_capture_count("(opened writable elsewhere)"), 1);
	vblk_close(a);
	vblk_close(must_open(RO));
}
END_TEST

/* lock=off on either side: no lock is taken or checked. */
START_TEST(no_lock_option)
{
	struct vblk *a = must_open(RW), *b, *c;

	b = must_open(RW | NOLOCK);
	c = must_open(RO | NOLOCK);
	vblk_close(c);
	vblk_close(b);
	vblk_close(a);
	/* An unlocked writer does not block a locked one either. */
	a = must_open(RW | NOLOCK);
	b = must_open(RW);
	must_fail(RO);
	vblk_close(b);
	vblk_close(a);
	ck_assert_int_eq(VBLK_OPT_NO_LOCK, VMM_DISK_NO_LOCK);
}
END_TEST

/* A caller's fd: the lock sits on the caller's open file description and
 * is released by vblk_close() although the caller keeps its fd. */
START_TEST(caller_fd)
{
	struct vblk_options o = { .fd = open(path, O_RDWR), .num_queues = 1 };
	struct vblk *a;

	ck_assert_int_ge(o.fd, 0);
	ck_assert_int_eq(vblk_open(&o, &a), 0);
	must_fail(RW);
	must_fail(RO);
	vblk_close(a);
	vblk_close(must_open(RW));
	close(o.fd);
}
END_TEST

/*
 * Another process: it holds the image open writable; we get -EBUSY for rw
 * and ro.  When it is SIGKILLed (a crashed VMM) the kernel drops the lock:
 * no stale lock survives a crash.
 */
START_TEST(cross_process)
{
	int ready[2], status;
	char c;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct vblk *b;

		close(ready[0]);
		if (open_img(RW, &b) != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	must_fail(RW);
	must_fail(RO);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	close(ready[0]);
	vblk_close(must_open(RW));
}
END_TEST

/* Readers in two processes share the image. */
START_TEST(cross_process_readers)
{
	int ready[2], status;
	char c;
	pid_t pid;
	struct vblk *b;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		if (open_img(RO, &b) != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	b = must_open(RO);
	must_fail(RW);
	vblk_close(b);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	close(ready[0]);
}
END_TEST

static Suite *lock_suite(void)
{
	Suite *s = suite_create("blk-lock");
	TCase *tc = tcase_create("ofd locks");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, rw_rw_conflict);
	tcase_add_test(tc, ro_ro_shared);
	tcase_add_test(tc, rw_then_ro);
	tcase_add_test(tc, no_lock_option);
	tcase_add_test(tc, caller_fd);
	tcase_add_test(tc, cross_process);
	tcase_add_test(tc, cross_process_readers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(lock_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
