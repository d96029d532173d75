/* SPDX-License-Identifier: MIT */
/*
 * The arm64 Image header (libvmm/arch/arm64/image.c) on synthetic headers,
 * KVM-free on any host: what booting.rst allows is taken and placed as it
 * says, everything else is refused before anything is loaded.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arm64/image.h"

#define MiB (1ull << 20)
#define RAM_BASE 0x80000000ull

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

/* A 6.1-style header: EFI stub ("MZ"), text_offset 0, image_size, flags
 * = little-endian, 4K pages, anywhere. */
static void header(uint8_t h[64], uint64_t text_offset, uint64_t image_size,
		   uint64_t flags)
{
	memset(h, 0, 64);
	h[0] = 'M';
	h[1] = 'Z';
	put64(h, 8, text_offset);
	put64(h, 16, image_size);
	put64(h, 24, flags);
	put32(h, 56, ARM64_IMAGE_MAGIC);
	put32(h, 60, 0x40); /* PE header offset */
}

START_TEST(modern_anywhere)
{
	uint8_t h[64];
	struct arm64_image img;
	uint64_t gpa;

	header(h, 0, 40 * MiB, 0xa);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), 0);
	ck_assert_uint_eq(img.text_offset, 0);
	ck_assert_uint_eq(img.image_size, 40 * MiB);
	ck_assert(img.anywhere);
	ck_assert_int_eq(arm64_image_place(&img, RAM_BASE, 512 * MiB, &gpa), 0);
	ck_assert_uint_eq(gpa, RAM_BASE);
	/* RAM not 2 MiB aligned: the next aligned base. */
	ck_assert_int_eq(arm64_image_place(&img, RAM_BASE + 0x1000, 512 * MiB, &gpa), 0);
	ck_assert_uint_eq(gpa, RAM_BASE + 2 * MiB);
	/* Exactly enough RAM, then one page short. */
	ck_assert_int_eq(arm64_image_place(&img, RAM_BASE, 40 * MiB, &gpa), 0);
	ck_assert_int_eq(arm64_image_place(&img, RAM_BASE, 40 * MiB - 4096, &gpa),
			 -ENOSPC);
}
END_TEST

START_TEST(text_offset_and_fixed_base)
{
	uint8_t h[64];
	struct arm64_image img;
	uint64_t gpa;

	header(h, 0x80000, 20 * MiB, 0x2); /* 4K pages, not "anywhere" */
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 16 * MiB, &img), 0);
	ck_assert(!img.anywhere);
	ck_assert_int_eq(arm64_image_place(&img, RAM_BASE, 64 * MiB, &gpa), 0);
	ck_assert_uint_eq(gpa, RAM_BASE + 0x80000);
	/* Without "anywhere" the base is RAM's start: it must be aligned. */
	ck_assert_int_eq(arm64_image_place(&img, RAM_BASE + 0x1000, 64 * MiB, &gpa),
			 -ENOSPC);
}
END_TEST

/* Before 3.17: image_size 0 means text_offset 0x80000, size unknown. */
START_TEST(legacy_header)
{
	uint8_t h[64];
	struct arm64_image img;

	header(h, 0x12345, 0, 0);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 8 * MiB, &img), 0);
	ck_assert_uint_eq(img.text_offset, ARM64_IMAGE_LEGACY_TEXT_OFFSET);
	/* Room for the BSS after the file (the initrd goes beyond it). */
	ck_assert_uint_eq(img.image_size, 16 * MiB);
	ck_assert(!img.anywhere);
}
END_TEST

START_TEST(refused)
{
	uint8_t h[64];
	struct arm64_image img;
	uint64_t gpa;

	header(h, 0, 40 * MiB, 0xa);
	/* Too short, or no magic (a gzip'ed vmlinuz, an x86 bzImage). */
	ck_assert_int_eq(arm64_image_parse(h, 63, 30 * MiB, &img), -ENOEXEC);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 32, &img), -ENOEXEC);
	h[56] ^= 1;
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -ENOEXEC);
	memset(h, 0, sizeof(h));
	h[0] = 0x1f;
	h[1] = 0x8b;
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -ENOEXEC);
	/* A big-endian kernel. */
	header(h, 0, 40 * MiB, 0xb);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -EINVAL);
	/* image_size smaller than the file, or absurd. */
	header(h, 0, 10 * MiB, 0xa);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -EINVAL);
	header(h, 0, UINT64_MAX - 4096, 0xa);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -EINVAL);
	/* text_offset must stay inside the 2 MiB alignment. */
	header(h, 2 * MiB, 40 * MiB, 0xa);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -EINVAL);
	header(h, UINT64_MAX, 40 * MiB, 0xa);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), -EINVAL);
	/* Placement: RAM that wraps. */
	header(h, 0, 40 * MiB, 0xa);
	ck_assert_int_eq(arm64_image_parse(h, sizeof(h), 30 * MiB, &img), 0);
	ck_assert_int_eq(arm64_image_place(&img, UINT64_MAX - MiB, 4 * MiB, &gpa),
			 -EINVAL);
	/* Rounding the base up to 2 MiB would wrap. */
	ck_assert_int_eq(arm64_image_place(&img, UINT64_MAX - MiB + 1, MiB - 1,
					   &gpa), -ENOSPC);
	/* At the very top of the address space it still fits exactly. */
	ck_assert_int_eq(arm64_image_place(&img, UINT64_MAX - 64 * MiB + 1,
					   64 * MiB - 1, &gpa), 0);
	ck_assert_uint_eq(gpa, UINT64_MAX - 64 * MiB + 1);
	ck_assert_int_eq(arm64_image_parse(NULL, 64, 30 * MiB, &img), -ENOEXEC);
}
END_TEST

static Suite *image_suite(void)
{
	Suite *s = suite_create("arm64-image");
	TCase *tc = tcase_create("image");

	tcase_add_test(tc, modern_anywhere);
	tcase_add_test(tc, text_offset_and_fixed_base);
	tcase_add_test(tc, legacy_header);
	tcase_add_test(tc, refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(image_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
