/* SPDX-License-Identifier: MIT */
/* ACPI PM1 registers: Linux's S5 sequence powers off (word and byte
 * writes), other sleep types and stray bits do not, PM1_STS is write-1-
 * to-clear, SCI_EN always reads 1, accesses past the range are harmless. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"
#include "legacy/acpipm.h"

#define BASE 0x600
#define S5 5u

static struct iobus pio;
static unsigned int offs;

static void on_poweroff(void *opaque)
{
	ck_assert_ptr_eq(opaque, &offs);
	offs++;
}

static struct acpipm *dev;

static void setup(void)
{
	offs = 0;
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(acpipm_create(&pio, BASE, S5, on_poweroff, &offs, &dev), 0);
}

static void teardown(void)
{
	acpipm_destroy(dev);
	iobus_destroy(&pio);
}

static void out(uint16_t port, uint32_t v, uint32_t len)
{
	ck_assert_int_eq(iobus_dispatch(&pio, port, &v, len, true), 0);
}

static uint32_t in(uint16_t port, uint32_t len)
{
	uint32_t v = 0;

	ck_assert_int_eq(iobus_dispatch(&pio, port, &v, len, false), 0);
	return v;
}

/* ACPICA's legacy sleep: clear status, SLP_TYP alone, then with SLP_EN. */
START_TEST(test_linux_s5_word)
{
	out(BASE + ACPIPM_PM1_STS, 0xffff, 2);
	out(BASE + ACPIPM_PM1_CNT, ACPIPM_SCI_EN | S5 << ACPIPM_SLP_TYP_SHIFT, 2);
	ck_assert_uint_eq(offs, 0);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_CNT, 2),
			  ACPIPM_SCI_EN | S5 << ACPIPM_SLP_TYP_SHIFT);
	out(BASE + ACPIPM_PM1_CNT,
	    ACPIPM_SCI_EN | S5 << ACPIPM_SLP_TYP_SHIFT | ACPIPM_SLP_EN, 2);
	ck_assert_uint_eq(offs, 1);
	/* SLP_EN is a command: it reads 0. */
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_CNT, 2) & ACPIPM_SLP_EN, 0);
}
END_TEST

/* The high byte alone holds SLP_TYP and SLP_EN. */
START_TEST(test_s5_byte)
{
	out(BASE + ACPIPM_PM1_CNT + 1, (S5 << ACPIPM_SLP_TYP_SHIFT | ACPIPM_SLP_EN) >> 8, 1);
	ck_assert_uint_eq(offs, 1);
	/* And as part of a dword at the event block's base. */
	out(BASE + ACPIPM_PM1_EN, (S5 << ACPIPM_SLP_TYP_SHIFT | ACPIPM_SLP_EN) << 16, 4);
	ck_assert_uint_eq(offs, 2);
}
END_TEST

START_TEST(test_other_states)
{
	for (uint32_t typ = 0; typ < 8; typ++) {
		if (typ == S5)
			continue;
		out(BASE + ACPIPM_PM1_CNT, typ << ACPIPM_SLP_TYP_SHIFT | ACPIPM_SLP_EN, 2);
	}
	/* S5 typed but without SLP_EN, and SLP_EN in a write of the low byte
	 * only (bit 13 is not in it). */
	out(BASE + ACPIPM_PM1_CNT, S5 << ACPIPM_SLP_TYP_SHIFT, 2);
	out(BASE + ACPIPM_PM1_CNT, 0xff, 1);
	ck_assert_uint_eq(offs, 0);
	/* The byte write left SLP_TYP alone; SCI_EN stays 1 whatever is written. */
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_CNT, 2),
			  ACPIPM_SCI_EN | S5 << ACPIPM_SLP_TYP_SHIFT);
	out(BASE + ACPIPM_PM1_CNT, 0, 2);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_CNT, 2), ACPIPM_SCI_EN);
}
END_TEST

START_TEST(test_status_enable)
{
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_STS, 2), 0);
	out(BASE + ACPIPM_PM1_EN, 0x0121, 2);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_EN, 2), 0x0121);
	out(BASE + ACPIPM_PM1_EN + 1, 0, 1);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_EN, 2), 0x0021);
	out(BASE + ACPIPM_PM1_STS, 0xffff, 2); /* nothing set: stays 0 */
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_STS, 2), 0);
	ck_assert_uint_eq(in(BASE, 4), 0x0021u << 16);
}
END_TEST

/* A dword at the last register runs past the range: reads 0xff there,
 * writes there are dropped, and nothing crashes. */
START_TEST(test_past_end)
{
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_CNT, 4), 0xffff0000u | ACPIPM_SCI_EN);
	out(BASE + ACPIPM_PM1_CNT, 0xffffffffu & ~ACPIPM_SLP_EN, 4);
	ck_assert_uint_eq(offs, 0);
}
END_TEST

START_TEST(test_errors)
{
	struct acpipm *d;

	ck_assert_int_eq(acpipm_create(NULL, BASE, S5, on_poweroff, NULL, &d), -EINVAL);
	ck_assert_int_eq(acpipm_create(&pio, BASE, S5, NULL, NULL, &d), -EINVAL);
	ck_assert_int_eq(acpipm_create(&pio, BASE, 8, on_poweroff, NULL, &d), -EINVAL);
	ck_assert_int_eq(acpipm_create(&pio, BASE, S5, on_poweroff, NULL, NULL), -EINVAL);
	/* The range is taken by the fixture's device. */
	ck_assert_int_eq(acpipm_create(&pio, BASE + 2, S5, on_poweroff, NULL, &d), -EEXIST);
	acpipm_destroy(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acpipm");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_linux_s5_word);
	tcase_add_test(tc, test_s5_byte);
	tcase_add_test(tc, test_other_states);
	tcase_add_test(tc, test_status_enable);
	tcase_add_test(tc, test_past_end);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
