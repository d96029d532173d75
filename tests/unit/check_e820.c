/* SPDX-License-Identifier: MIT */
/* e820_build(): layout invariants for several RAM sizes. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "memory.h"
#include "x86/e820.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static const uint64_t sizes[] = {
	16 * MiB, 256 * MiB, 3 * GiB, 3 * GiB + 4096, 8 * GiB, 1 * MiB,
};

static bool has(const struct boot_e820_entry *t, int n, uint64_t addr,
		uint64_t size, uint32_t type)
{
	for (int i = 0; i < n; i++)
		if (t[i].addr == addr && t[i].size == size && t[i].type == type)
			return true;
	return false;
}

START_TEST(test_layout)
{
	uint64_t ram = sizes[_i];
	struct boot_e820_entry t[E820_MAX_ENTRIES_ZEROPAGE];
	uint64_t total = 0;
	int n = e820_build(ram, t, E820_MAX_ENTRIES_ZEROPAGE);

	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		uint64_t end = t[i].addr + t[i].size;

		ck_assert_uint_gt(t[i].size, 0);
		ck_assert(t[i].type == E820_TYPE_RAM ||
			  t[i].type == E820_TYPE_RESERVED);
		/* Sorted, non-overlapping. */
		if (i > 0)
			ck_assert_uint_le(t[i - 1].addr + t[i - 1].size, t[i].addr);
		/* Nothing in the PCI hole. */
		ck_assert(end <= X86_PCI_HOLE_START ||
			  t[i].addr >= X86_PCI_HOLE_END);
		if (t[i].type == E820_TYPE_RAM)
			total += t[i].size;
	}
	/*
	 * All RAM is reported except the legacy window [0x9fc00, 1 MiB),
	 * which is backed by RAM but reserved (EBDA, BIOS) or not listed
	 * (VGA/option ROM hole), as on a PC.
	 */
	ck_assert_uint_eq(total, ram - (E820_HIGH_MEM - E820_EBDA_START));
	ck_assert(has(t, n, 0, 0x9fc00, E820_TYPE_RAM));
	ck_assert(has(t, n, 0x9fc00, 0x400, E820_TYPE_RESERVED));
	ck_assert(has(t, n, 0xe0000, 0x20000, E820_TYPE_RESERVED));
	if (ram > MiB)
		ck_assert(has(t, n, MiB, MIN(ram, 3 * GiB) - MiB, E820_TYPE_RAM));
	if (ram > 3 * GiB)
		ck_assert(has(t, n, 4 * GiB, ram - 3 * GiB, E820_TYPE_RAM));
	else
		ck_assert_int_eq(n, ram > MiB ? 4 : 3);
}
END_TEST

START_TEST(test_nospc)
{
	struct boot_e820_entry t[4];

	ck_assert_int_eq(e820_build(256 * MiB, t, 0), -ENOSPC);
	ck_assert_int_eq(e820_build(256 * MiB, t, 2), -ENOSPC);
	ck_assert_int_eq(e820_build(256 * MiB, t, 4), 4);
	ck_assert_int_eq(e820_build(8 * GiB, t, 4), -ENOSPC);
}
END_TEST

START_TEST(test_invalid)
{
	struct boot_e820_entry t[8];

	ck_assert_int_eq(e820_build(256 * MiB, NULL, 8), -EINVAL);
	ck_assert_int_eq(e820_build(MiB - 1, t, 8), -EINVAL);
	ck_assert_int_eq(e820_build(0, t, 8), -EINVAL);
}
END_TEST

static Suite *e820_suite(void)
{
	Suite *s = suite_create("e820");
	TCase *tc = tcase_create("build");

	tcase_add_loop_test(tc, test_layout, 0, sizeof(sizes) / sizeof(sizes[0]));
	tcase_add_test(tc, test_nospc);
	tcase_add_test(tc, test_invalid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(e820_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
