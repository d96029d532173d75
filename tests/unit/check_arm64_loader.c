/* SPDX-License-Identifier: MIT */
/*
 * The arm64 boot image into guest RAM (libvmm/arch/arm64/loader.c), KVM-free
 * on any host: an Image file and an initrd land where booting.rst says
 * (kernel at its 2 MiB base + text_offset, initrd above the kernel's whole
 * footprint, the device tree's 2 MiB block at the top of RAM), byte for
 * byte; what is not an arm64 Image, or does not fit, is refused with a
 * message before the guest could run.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arm64/fdt.h"
#include "arm64/image.h"
#include "arm64/loader.h"
#include "memory.h"

#define MiB (1ull << 20)
#define RAM_BASE 0x40000000ull /* the arm64 machine's */

static const struct guest_layout layout = { RAM_BASE, 0, 0 };

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

/* A file of @len bytes: an Image header (text_offset, image_size, flags
 * 0xa: little-endian, 4K pages, anywhere) unless @magic is false, then a
 * byte pattern. */
static char *image_file(size_t len, uint64_t text_offset, uint64_t image_size,
			bool magic)
{
	static char path[64];
	uint8_t *buf = malloc(len);
	int fd;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	memset(buf, 0, 64);
	buf[0] = 'M';
	buf[1] = 'Z';
	put64(buf, 8, text_offset);
	put64(buf, 16, image_size);
	put64(buf, 24, 0xa);
	if (magic)
		memcpy(buf + 56, "ARM\x64", 4);
	snprintf(path, sizeof(path), "/tmp/arm64-loader-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
	return strdup(path);
}

static char *plain_file(size_t len, uint8_t fill)
{
	char path[] = "/tmp/arm64-initrd-XXXXXX";
	uint8_t *buf = malloc(len);
	int fd = mkstemp(path);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_ge(fd, 0);
	memset(buf, fill, len);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
	return strdup(path);
}

/* The file's bytes at @gpa. */
static void assert_loaded(struct guest_mem *mem, uint64_t gpa, const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t buf[4096];
	size_t n;

	ck_assert_ptr_nonnull(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		uint8_t *p = guest_mem_ptr(mem, gpa, n);

		ck_assert_ptr_nonnull(p);
		ck_assert_msg(!memcmp(p, buf, n), "%s differs at 0x%llx", path,
			      (unsigned long long)gpa);
		gpa += n;
	}
	fclose(f);
}

START_TEST(kernel_initrd_fdt)
{
	/* 3 MiB of file, 5 MiB with its BSS, text_offset 0. */
	char *k = image_file(3 * MiB, 0, 5 * MiB, true);
	char *i = plain_file(MiB + 123, 0x5a);
	struct guest_mem mem;
	struct arm64_boot b;

	ck_assert_int_eq(guest_mem_init(&mem, 64 * MiB, GUEST_MEM_ANON, &layout), 0);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, i, &b), 0);
	ck_assert_uint_eq(b.entry, RAM_BASE);
	ck_assert_uint_eq(b.kernel_end, RAM_BASE + 5 * MiB);
	ck_assert_uint_eq(b.initrd_gpa, RAM_BASE + 5 * MiB);
	ck_assert_uint_eq(b.initrd_size, MiB + 123);
	/* The device tree: the last 2 MiB block, clear of the initrd. */
	ck_assert_uint_eq(b.fdt_gpa, RAM_BASE + 62 * MiB);
	ck_assert_uint_eq(b.fdt_gpa % (2 * MiB), 0);
	ck_assert_uint_le(b.initrd_gpa + b.initrd_size, b.fdt_gpa);
	ck_assert_ptr_nonnull(guest_mem_ptr(&mem, b.fdt_gpa, ARM64_FDT_MAX_SIZE));
	assert_loaded(&mem, b.entry, k);
	assert_loaded(&mem, b.initrd_gpa, i);
	guest_mem_destroy(&mem);
	unlink(k);
	unlink(i);
	free(k);
	free(i);
}
END_TEST

START_TEST(text_offset_and_no_initrd)
{
	char *k = image_file(MiB, 0x80000, 3 * MiB, true);
	struct guest_mem mem;
	struct arm64_boot b;

	ck_assert_int_eq(guest_mem_init(&mem, 32 * MiB, GUEST_MEM_ANON, &layout), 0);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, NULL, &b), 0);
	ck_assert_uint_eq(b.entry, RAM_BASE + 0x80000);
	ck_assert_uint_eq(b.initrd_gpa, 0);
	ck_assert_uint_eq(b.initrd_size, 0);
	assert_loaded(&mem, b.entry, k);
	guest_mem_destroy(&mem);
	unlink(k);
	free(k);
}
END_TEST

/* An x86 bzImage, a gzipped vmlinuz, anything without the magic. */
START_TEST(not_an_image)
{
	char *k = image_file(MiB, 0, 2 * MiB, false);
	struct guest_mem mem;
	struct arm64_boot b;

	ck_assert_int_eq(guest_mem_init(&mem, 32 * MiB, GUEST_MEM_ANON, &layout), 0);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, NULL, &b), -EINVAL);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, "/nonexistent/Image", NULL, &b),
			 -ENOENT);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, "/tmp", NULL, &b), -EINVAL);
	guest_mem_destroy(&mem);
	unlink(k);
	free(k);
}
END_TEST

START_TEST(does_not_fit)
{
	char *big = image_file(MiB, 0, 40 * MiB, true);
	char *k = image_file(MiB, 0, 20 * MiB, true);
	char *i = plain_file(12 * MiB, 1);
	struct guest_mem mem;
	struct arm64_boot b;

	ck_assert_int_eq(guest_mem_init(&mem, 32 * MiB, GUEST_MEM_ANON, &layout), 0);
	/* More BSS than RAM. */
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, big, NULL, &b), -ENOSPC);
	/* The kernel fits, the initrd would run into the device tree. */
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, NULL, &b), 0);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, i, &b), -ENOSPC);
	/* A kernel that reaches the device tree's block. */
	unlink(k);
	free(k);
	k = image_file(MiB, 0, 31 * MiB, true);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, NULL, &b), -ENOSPC);
	guest_mem_destroy(&mem);
	/* Less RAM than two 2 MiB blocks. */
	ck_assert_int_eq(guest_mem_init(&mem, 2 * MiB, GUEST_MEM_ANON, &layout), 0);
	ck_assert_int_eq(arm64_load_files(&mem, RAM_BASE, k, NULL, &b), -ENOSPC);
	guest_mem_destroy(&mem);
	unlink(big);
	unlink(k);
	unlink(i);
	free(big);
	free(k);
	free(i);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("arm64_loader");
	TCase *tc = tcase_create("loader");

	tcase_add_test(tc, kernel_initrd_fdt);
	tcase_add_test(tc, text_offset_and_no_initrd);
	tcase_add_test(tc, not_an_image);
	tcase_add_test(tc, does_not_fit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
