/* SPDX-License-Identifier: MIT */
/*
 * Boot images from files (libvmm/arch/x86/loader.c), over malloc'd guest RAM:
 * a kernel and initrd are read into place; a FIFO, a character device or
 * a directory named as kernel or initrd is refused at once (an O_RDONLY
 * open of a FIFO used to block vmm_start() for good); and a kernel
 * truncated and rewritten by another thread while it is loaded again and
 * again only ever makes the load fail (-EINVAL, -EIO), never the process
 * (the header used to be parsed through a mapping of the file: SIGBUS).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <asm/bootparam.h>

#include "memory.h"
#include "vmm/vmm.h"
#include "x86/boot.h"
#include "x86/loader.h"

#define MiB (1ull << 20)
#define RAM_SIZE (64 * MiB)
#define SETUP (5 * 512)
#define PAYLOAD (256 * 1024)
#define INITRD_LEN (64 * 1024 + 123)
#define KERNEL_GPA 0x1000000ull
#define HDR(f) (0x1f1 + offsetof(struct setup_header, f))

static char dir[64];
static char kpath[128], ipath[128], fifo[128];
static uint8_t *image;
static struct guest_mem mem;
static uint8_t *ram;

static void put16(uint8_t *p, size_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	put16(p, off, (uint16_t)v);
	put16(p, off + 2, (uint16_t)(v >> 16));
}

/* A synthetic 64-bit bzImage (as check_x86boot.c builds it). */
static uint8_t *make_image(void)
{
	uint8_t *p = calloc(1, SETUP + PAYLOAD);

	ck_assert_ptr_nonnull(p);
	p[HDR(setup_sects)] = 4;
	put32(p, HDR(syssize), PAYLOAD / 16);
	put16(p, HDR(boot_flag), 0xAA55);
	p[0x200] = 0xeb;
	p[0x201] = 0x6a;
	memcpy(p + 0x202, "HdrS", 4);
	put16(p, HDR(version), 0x020f);
	p[HDR(loadflags)] = LOADED_HIGH;
	put32(p, HDR(initrd_addr_max), 0x7fffffff);
	put32(p, HDR(kernel_alignment), 0x200000);
	p[HDR(relocatable_kernel)] = 1;
	put16(p, HDR(xloadflags), XLF_KERNEL_64);
	put32(p, HDR(cmdline_size), 2047);
	put32(p, HDR(pref_address), (uint32_t)KERNEL_GPA);
	put32(p, HDR(init_size), 8 * MiB);
	for (size_t i = 0; i < PAYLOAD; i++)
		p[SETUP + i] = (uint8_t)(i * 13 + 1);
	return p;
}

static void quiet(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void setup(void)
{
	uint8_t initrd[INITRD_LEN];

	/* The refusals are logged at error level: not on the test's stderr. */
	ck_assert_int_eq(vmm_set_log(quiet, NULL, VMM_LOG_ERROR), 0);
	snprintf(dir, sizeof(dir), "/tmp/check_boot_files.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(kpath, sizeof(kpath), "%s/bzImage", dir);
	snprintf(ipath, sizeof(ipath), "%s/initrd", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	image = make_image();
	write_file(kpath, image, SETUP + PAYLOAD);
	for (size_t i = 0; i < sizeof(initrd); i++)
		initrd[i] = (uint8_t)(i * 7 + 3);
	write_file(ipath, initrd, sizeof(initrd));
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ram = calloc(1, RAM_SIZE);
	ck_assert_ptr_nonnull(ram);
	guest_mem_init_buf(&mem, ram, RAM_SIZE);
	/* A blocking open would hang the test: make that a failure. */
	alarm(30);
}

static void teardown(void)
{
	alarm(0);
	unlink(kpath);
	unlink(ipath);
	unlink(fifo);
	rmdir(dir);
	free(image);
	free(ram);
}

START_TEST(loads_kernel_and_initrd)
{
	struct x86_boot_entry e;
	const uint8_t *p;

	ck_assert_int_eq(x86_load_files(&mem, kpath, ipath, "console=ttyS0", 2, 0, &e), 0);
	ck_assert_uint_eq(e.kernel_gpa, KERNEL_GPA);
	p = guest_mem_ptr(&mem, e.kernel_gpa, PAYLOAD);
	ck_assert_mem_eq(p, image + SETUP, PAYLOAD);
	ck_assert_uint_ne(e.initrd_gpa, 0);
	p = guest_mem_ptr(&mem, e.initrd_gpa, INITRD_LEN);
	for (size_t i = 0; i < INITRD_LEN; i++)
		ck_assert_uint_eq(p[i], (uint8_t)(i * 7 + 3));
	/* No initrd at all. */
	ck_assert_int_eq(x86_load_files(&mem, kpath, NULL, NULL, 1, 0, &e), 0);
	ck_assert_uint_eq(e.initrd_gpa, 0);
}
END_TEST

/* Not regular files: refused with -EINVAL, without blocking (the FIFO
 * has no writer: a plain O_RDONLY open would wait forever). */
START_TEST(non_regular_files_refused)
{
	struct x86_boot_entry e;

	ck_assert_int_eq(x86_load_files(&mem, fifo, NULL, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(x86_load_files(&mem, kpath, fifo, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(x86_load_files(&mem, "/dev/null", NULL, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(x86_load_files(&mem, kpath, "/dev/zero", NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(x86_load_files(&mem, dir, NULL, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(x86_load_files(&mem, kpath, dir, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(x86_load_files(&mem, "/nonexistent/bz", NULL, NULL, 1, 0, &e),
			 -ENOENT);
}
END_TEST

/* A kernel cut short (the header says more than the file holds). */
START_TEST(truncated_kernel_refused)
{
	struct x86_boot_entry e;

	ck_assert_int_eq(truncate(kpath, SETUP + PAYLOAD / 2), 0);
	ck_assert_int_eq(x86_load_files(&mem, kpath, NULL, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(truncate(kpath, 300), 0); /* not even a header */
	ck_assert_int_eq(x86_load_files(&mem, kpath, NULL, NULL, 1, 0, &e), -EINVAL);
	ck_assert_int_eq(truncate(kpath, 0), 0);
	ck_assert_int_eq(x86_load_files(&mem, kpath, NULL, NULL, 1, 0, &e), -EINVAL);
}
END_TEST

static volatile int stop_churn;

/* Truncate the kernel to nothing and write it back, over and over. */
static void *churn(void *arg)
{
	int fd = open(kpath, O_WRONLY);

	(void)arg;
	if (fd < 0)
		return NULL;
	while (!__atomic_load_n(&stop_churn, __ATOMIC_RELAXED)) {
		if (ftruncate(fd, 0) < 0 ||
		    pwrite(fd, image, SETUP + PAYLOAD, 0) != SETUP + PAYLOAD)
			break;
	}
	close(fd);
	return NULL;
}

START_TEST(kernel_truncated_while_loading)
{
	unsigned int ok = 0, inval = 0, eio = 0;
	struct x86_boot_entry e;
	pthread_t th;

	stop_churn = 0;
	ck_assert_int_eq(pthread_create(&th, NULL, churn, NULL), 0);
	for (unsigned int i = 0; i < 2000; i++) {
		int ret = x86_load_files(&mem, kpath, NULL, NULL, 1, 0, &e);

		if (ret == 0)
			ok++;
		else if (ret == -EINVAL)
			inval++;
		else if (ret == -EIO)
			eio++;
		else
			ck_abort_msg("load returned %d", ret);
	}
	__atomic_store_n(&stop_churn, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	printf("boot_files: 2000 loads of a kernel truncated meanwhile: %u ok, "
	       "%u -EINVAL, %u -EIO\n", ok, inval, eio);
}
END_TEST

static Suite *boot_files_suite(void)
{
	Suite *s = suite_create("boot_files");
	TCase *tc = tcase_create("boot_files");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, loads_kernel_and_initrd);
	tcase_add_test(tc, non_regular_files_refused);
	tcase_add_test(tc, truncated_kernel_refused);
	tcase_add_test(tc, kernel_truncated_while_loading);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(boot_files_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
