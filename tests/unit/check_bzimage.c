/* SPDX-License-Identifier: MIT */
/* bzimage_parse(): synthetic images, broken files, and a real kernel if any. */
#include <check.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/bootparam.h>

#include "x86/bzimage.h"

#define SETUP_SECTS 4
#define PAYLOAD (64 * 1024)

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

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

#define HDR(f) (0x1f1 + offsetof(struct setup_header, f))

/* A minimal well-formed bzImage: setup sectors then PAYLOAD bytes. */
static uint8_t *make_image(size_t *len)
{
	size_t setup = (SETUP_SECTS + 1) * 512;
	uint8_t *p = calloc(1, setup + PAYLOAD);

	ck_assert_ptr_nonnull(p);
	p[HDR(setup_sects)] = SETUP_SECTS;
	put32(p, HDR(syssize), PAYLOAD / 16);
	put16(p, HDR(boot_flag), 0xAA55);
	p[0x200] = 0xeb;			/* jmp */
	p[0x201] = 0x6a;			/* header ends at 0x26c */
	memcpy(p + 0x202, "HdrS", 4);
	put16(p, HDR(version), 0x020f);
	p[HDR(loadflags)] = LOADED_HIGH;
	put32(p, HDR(initrd_addr_max), 0x7fffffff);
	put32(p, HDR(kernel_alignment), 0x200000);
	p[HDR(relocatable_kernel)] = 1;
	put16(p, HDR(xloadflags), XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G);
	put32(p, HDR(cmdline_size), 2047);
	put64(p, HDR(pref_address), 0x1000000);
	put32(p, HDR(init_size), 0x400000);
	for (size_t i = 0; i < PAYLOAD; i++)
		p[setup + i] = (uint8_t)(i * 7 + 3);
	*len = setup + PAYLOAD;
	return p;
}

static void expect_invalid(const void *buf, size_t len)
{
	struct bzimage bz;
	const char *why = NULL;

	ck_assert_int_eq(bzimage_parse(buf, len, &bz, &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
	ck_assert_uint_gt(strlen(why), 0);
}

START_TEST(test_good)
{
	size_t len;
	uint8_t *p = make_image(&len);
	struct bzimage bz;
	const char *why = NULL;

	ck_assert_int_eq(bzimage_parse(p, len, &bz, &why), 0);
	ck_assert_uint_eq(bz.version, 0x020f);
	ck_assert_uint_eq(bz.setup_sects, SETUP_SECTS);
	ck_assert_uint_eq(bz.setup_size, (SETUP_SECTS + 1) * 512);
	ck_assert(bz.xloadflags & XLF_KERNEL_64);
	ck_assert(bz.relocatable);
	ck_assert_uint_eq(bz.pref_address, 0x1000000);
	ck_assert_uint_eq(bz.init_size, 0x400000);
	ck_assert_uint_eq(bz.kernel_alignment, 0x200000);
	ck_assert_uint_eq(bz.cmdline_size, 2047);
	ck_assert_uint_eq(bz.initrd_addr_max, 0x7fffffff);
	ck_assert_ptr_eq(bz.image, p);
	ck_assert_uint_eq(bz.image_size, len);
	ck_assert_ptr_eq(bz.kernel, p + bz.setup_size);
	ck_assert_uint_eq(bz.kernel_size, PAYLOAD);
	/* A NULL why is allowed. */
	ck_assert_int_eq(bzimage_parse(p, len, &bz, NULL), 0);
	free(p);
}
END_TEST

START_TEST(test_setup_sects_zero_means_4)
{
	size_t len;
	uint8_t *p = make_image(&len);
	struct bzimage bz;

	p[HDR(setup_sects)] = 0;
	ck_assert_int_eq(bzimage_parse(p, len, &bz, NULL), 0);
	ck_assert_uint_eq(bz.setup_size, 5 * 512);
	free(p);
}
END_TEST

START_TEST(test_trailing_bytes_ignored)
{
	/* Signed distribution kernels carry data after syssize paragraphs. */
	size_t len;
	uint8_t *p = make_image(&len);
	struct bzimage bz;

	put32(p, HDR(syssize), PAYLOAD / 16 - 10);
	ck_assert_int_eq(bzimage_parse(p, len, &bz, NULL), 0);
	ck_assert_uint_eq(bz.kernel_size, PAYLOAD - 160);
	free(p);
}
END_TEST

START_TEST(test_truncated)
{
	size_t len;
	uint8_t *p = make_image(&len);

	expect_invalid(p, (SETUP_SECTS + 1) * 512 - 1);	/* short of setup */
	expect_invalid(p, len - 1);			/* short of syssize */
	expect_invalid(p, (SETUP_SECTS + 1) * 512);	/* no kernel at all */
	/* Setup claims more sectors than the file has. */
	p[HDR(setup_sects)] = 255;
	expect_invalid(p, len);
	free(p);
}
END_TEST

START_TEST(test_garbage)
{
	size_t len;
	uint8_t *p = make_image(&len);
	static const uint8_t elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };

	/* Zeroes */
	memset(p, 0, len);
	expect_invalid(p, len);
	/* Random bytes (fixed seed, so the test is reproducible) */
	srand(1234);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rand();
	expect_invalid(p, len);
	/* An ELF file (e.g. vmlinux instead of bzImage) */
	memset(p, 0, len);
	memcpy(p, elf, sizeof(elf));
	expect_invalid(p, len);
	free(p);
}
END_TEST

START_TEST(test_no_boot_flag)
{
	size_t len;
	uint8_t *p = make_image(&len);

	put16(p, HDR(boot_flag), 0);
	expect_invalid(p, len);
	free(p);
}
END_TEST

START_TEST(test_old_protocol)
{
	static const uint16_t versions[] = { 0x0200, 0x0204, 0x0205 };
	size_t len;
	uint8_t *p = make_image(&len);

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		put16(p, HDR(version), versions[i]);
		expect_invalid(p, len);
	}
	/* 2.06 .. 2.11 have no xloadflags, hence no 64-bit entry point. */
	put16(p, HDR(version), 0x020a);
	expect_invalid(p, len);
	free(p);
}
END_TEST

START_TEST(test_no_64bit_entry)
{
	size_t len;
	uint8_t *p = make_image(&len);

	put16(p, HDR(xloadflags), XLF_CAN_BE_LOADED_ABOVE_4G);
	expect_invalid(p, len);
	free(p);
}
END_TEST

START_TEST(test_bad_alignment)
{
	size_t len;
	uint8_t *p = make_image(&len);

	put32(p, HDR(kernel_alignment), 0x300000);
	expect_invalid(p, len);
	put32(p, HDR(kernel_alignment), 0);
	expect_invalid(p, len);
	free(p);
}
END_TEST

START_TEST(test_tiny)
{
	static const size_t sizes[] = { 0, 1, 511, 512, 1023 };
	uint8_t *p = calloc(1, 1024);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		expect_invalid(p, sizes[i]);
	expect_invalid(NULL, 0);
	free(p);
}
END_TEST

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size))) {
		if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)size;
	}
	fclose(f);
	return buf;
}

/* A real kernel, if this host has one readable; skipped silently if not. */
START_TEST(test_real_kernel)
{
	const char *home = getenv("HOME");
	char rig[4096];
	glob_t g;
	int found = 0;

	memset(&g, 0, sizeof(g));
	glob("/boot/vmlinuz-*", 0, NULL, &g);
	if (home) {
		snprintf(rig, sizeof(rig), "%s/.cache/minivmm-rig/kernel/*/vmlinuz", home);
		glob(rig, g.gl_pathc ? GLOB_APPEND : 0, NULL, &g);
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct bzimage bz;
		const char *why = NULL;
		size_t len = 0;
		uint8_t *buf = slurp(g.gl_pathv[i], &len);
		int ret;

		if (!buf)
			continue;	/* e.g. /boot/vmlinuz-* is root-only */
		ret = bzimage_parse(buf, len, &bz, &why);
		ck_assert_msg(ret == 0, "%s: %s", g.gl_pathv[i], why);
		ck_assert_uint_ge(bz.version, 0x020c);
		ck_assert(bz.xloadflags & XLF_KERNEL_64);
		ck_assert_uint_gt(bz.kernel_size, 0);
		ck_assert_uint_le(bz.setup_size + bz.kernel_size, len);
		ck_assert_uint_ge(bz.init_size, bz.kernel_size);
		ck_assert_uint_ge(bz.cmdline_size, 255);
		found++;
		free(buf);
	}
	globfree(&g);
	(void)found;
}
END_TEST

static Suite *bzimage_suite(void)
{
	Suite *s = suite_create("bzimage");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_good);
	tcase_add_test(tc, test_setup_sects_zero_means_4);
	tcase_add_test(tc, test_trailing_bytes_ignored);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_no_boot_flag);
	tcase_add_test(tc, test_old_protocol);
	tcase_add_test(tc, test_no_64bit_entry);
	tcase_add_test(tc, test_bad_alignment);
	tcase_add_test(tc, test_tiny);
	tcase_add_test(tc, test_real_kernel);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bzimage_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
