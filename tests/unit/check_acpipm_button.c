/* SPDX-License-Identifier: MIT */
/* The ACPI fixed-feature power button (vmm_shutdown() on x86): pressing it
 * sets PM1_STS.PWRBTN_STS; the SCI is up exactly while that bit and
 * PM1_EN.PWRBTN_EN are both set (level-triggered: the guest's clear or
 * disable lowers it), whatever the order of press and enable, and for
 * byte as well as word accesses. */
#include <check.h>
#include <string.h>

#include "iobus.h"
#include "legacy/acpipm.h"

#define BASE 0x600

static struct iobus pio;
static struct acpipm *dev;
static int level = -1;		/* the SCI as last driven */
static unsigned int changes;	/* calls of the SCI callback */

static void on_poweroff(void *opaque)
{
	(void)opaque;
}

static void on_sci(void *opaque, int l)
{
	ck_assert_ptr_eq(opaque, &level);
	ck_assert_int_ne(l, level); /* only changes are reported */
	level = l;
	changes++;
}

static void setup(void)
{
	level = 0;
	changes = 0;
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(acpipm_create(&pio, BASE, 5, on_poweroff, NULL, &dev), 0);
	acpipm_set_sci(dev, on_sci, &level);
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

/* Linux: enable the event at boot, then the press, then the handler clears. */
START_TEST(enabled_then_pressed)
{
	out(BASE + ACPIPM_PM1_EN, ACPIPM_PWRBTN, 2);
	ck_assert_int_eq(level, 0);
	acpipm_power_button(dev);
	ck_assert_int_eq(level, 1);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_STS, 2) & ACPIPM_PWRBTN, ACPIPM_PWRBTN);
	acpipm_power_button(dev); /* a second press while up: no change */
	ck_assert_uint_eq(changes, 1);
	out(BASE + ACPIPM_PM1_STS, 0x0001, 2); /* another bit: still up */
	ck_assert_int_eq(level, 1);
	out(BASE + ACPIPM_PM1_STS + 1, ACPIPM_PWRBTN >> 8, 1); /* byte write-1-to-clear */
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_STS, 2), 0);
	ck_assert_uint_eq(changes, 2);
}
END_TEST

/* Pressed before the guest enabled the event: latched, raised at enable;
 * disabling lowers it with the status still set. */
START_TEST(pressed_then_enabled)
{
	acpipm_power_button(dev);
	ck_assert_int_eq(level, 0);
	out(BASE + ACPIPM_PM1_EN + 1, ACPIPM_PWRBTN >> 8, 1);
	ck_assert_int_eq(level, 1);
	out(BASE + ACPIPM_PM1_EN, 0, 2);
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_STS, 2) & ACPIPM_PWRBTN, ACPIPM_PWRBTN);
	/* A dword write across STS and EN: clears and re-enables at once. */
	out(BASE + ACPIPM_PM1_STS, (uint32_t)ACPIPM_PWRBTN << 16 | ACPIPM_PWRBTN, 4);
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(in(BASE + ACPIPM_PM1_EN, 2), ACPIPM_PWRBTN);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acpipm_button");
	TCase *tc = tcase_create("button");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, enabled_then_pressed);
	tcase_add_test(tc, pressed_then_enabled);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
