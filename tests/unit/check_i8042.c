/* SPDX-License-Identifier: MIT */
/* i8042 reset (command 0xFE), status register, and 0xCF9 reset control
 * through the PCI host bridge. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"
#include "legacy/i8042.h"
#include "pci/pci.h"

static struct iobus pio, mmio;
static int resets;

static void on_reset(void *opaque)
{
	ck_assert_ptr_eq(opaque, &resets);
	resets++;
}

static uint8_t in8(uint16_t port)
{
	uint8_t v = 0;

	iobus_dispatch(&pio, port, &v, 1, false);
	return v;
}

static void out8(uint16_t port, uint8_t v)
{
	ck_assert_int_eq(iobus_dispatch(&pio, port, &v, 1, true), 0);
}

static void setup(void)
{
	resets = 0;
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(iobus_init(&mmio, "mmio"), 0);
}

static void teardown(void)
{
	iobus_destroy(&mmio);
	iobus_destroy(&pio);
}

START_TEST(test_reset_once)
{
	struct i8042 *k;

	ck_assert_int_eq(i8042_create(&pio, on_reset, &resets, &k), 0);
	out8(0x64, 0xfe);
	ck_assert_int_eq(resets, 1);
	i8042_destroy(k);
}
END_TEST

START_TEST(test_other_commands)
{
	struct i8042 *k;

	ck_assert_int_eq(i8042_create(&pio, on_reset, &resets, &k), 0);
	/* controller commands Linux's probe sends, keyboard bytes, and
	 * 0xFE on the data port: none resets */
	out8(0x64, 0x20);
	out8(0x64, 0x60);
	out8(0x60, 0x47);
	out8(0x64, 0xaa);
	out8(0x64, 0xf0); /* pulse no output line */
	out8(0x60, 0xfe);
	out8(0x60, 0xff);
	ck_assert_int_eq(resets, 0);
	out8(0x64, 0xfe);
	out8(0x64, 0xfe);
	ck_assert_int_eq(resets, 2); /* one call per command */
	i8042_destroy(k);
}
END_TEST

START_TEST(test_status)
{
	struct i8042 *k;
	uint8_t st;
	int i, n;

	ck_assert_int_eq(i8042_create(&pio, on_reset, &resets, &k), 0);
	st = in8(0x64);
	ck_assert_uint_eq(st & 0x02, 0); /* input buffer empty */
	ck_assert_uint_ne(st, 0xff);
	/* arch/x86/kernel/reboot.c kb_wait(): exits on the first read */
	for (i = 0; i < 0x10000; i++)
		if ((in8(0x64) & 0x02) == 0)
			break;
	ck_assert_int_eq(i, 0);
	/* drivers/input/serio/i8042.c i8042_flush(): OBF never clears, so
	 * it gives up after I8042_BUFFER_SIZE (16) reads: "No controller" */
	n = 0;
	while (in8(0x64) & 0x01) {
		if (n++ >= 16)
			break;
		(void)in8(0x60);
	}
	ck_assert_int_eq(n, 17);
	/* status reads do not change anything */
	ck_assert_uint_eq(in8(0x64), st);
	ck_assert_int_eq(resets, 0);
	i8042_destroy(k);
}
END_TEST

START_TEST(test_ports)
{
	struct i8042 *k, *k2;
	uint8_t d;

	ck_assert_int_eq(i8042_create(&pio, NULL, NULL, &k), 0);
	out8(0x64, 0xfe); /* no handler: ignored */
	/* 0x61 belongs to KVM's in-kernel PIT speaker, not to us */
	ck_assert_int_eq(iobus_dispatch(&pio, 0x61, &d, 1, false), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&pio, 0x62, &d, 1, false), -ENOENT);
	ck_assert_int_eq(i8042_create(&pio, NULL, NULL, &k2), -EEXIST);
	ck_assert_int_eq(i8042_create(NULL, NULL, NULL, &k2), -EINVAL);
	i8042_destroy(k);
	ck_assert_int_eq(iobus_dispatch(&pio, 0x64, &d, 1, false), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&pio, 0x60, &d, 1, false), -ENOENT);
	ck_assert_int_eq(i8042_create(&pio, NULL, NULL, &k), 0);
	i8042_destroy(k);
	i8042_destroy(NULL);
}
END_TEST

/* Linux reboot=pci: cf9 = inb(0xcf9) & ~0x0e; outb(cf9|2); outb(cf9|0x0e) */
START_TEST(test_cf9_reset)
{
	struct pci_bus *bus;
	uint8_t cf9;
	uint32_t v;

	ck_assert_int_eq(pci_bus_create(&pio, &mmio, 0xe0000000, 0x10000000,
					&bus),
			 0);
	pci_bus_set_reset_handler(bus, on_reset, &resets);
	cf9 = in8(0xcf9) & ~0x0e;
	ck_assert_uint_eq(cf9, 0);
	out8(0xcf9, cf9 | 0x02); /* request hard reset: nothing yet */
	ck_assert_int_eq(resets, 0);
	ck_assert_uint_eq(in8(0xcf9), 0x02);
	out8(0xcf9, cf9 | 0x0e);
	ck_assert_int_eq(resets, 1);
	ck_assert_uint_eq(in8(0xcf9), 0x0a); /* RST_CPU is not stored */
	out8(0xcf9, 0x06); /* warm reboot code */
	ck_assert_int_eq(resets, 2);
	/* a dword at 0xCF8 is CONFIG_ADDRESS, not a reset */
	v = 0x80000004;
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, true), 0);
	v = 0;
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, false), 0);
	ck_assert_uint_eq(v, 0x80000004);
	/* other byte ports of the window do not reset */
	out8(0xcf8, 0x04);
	out8(0xcfa, 0x04);
	out8(0xcfb, 0x04);
	ck_assert_int_eq(resets, 2);
	/* ... and did not disturb CONFIG_ADDRESS */
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, false), 0);
	ck_assert_uint_eq(v, 0x80000004);
	/* without a handler, 0xCF9 is inert */
	pci_bus_set_reset_handler(bus, NULL, NULL);
	out8(0xcf9, 0x06);
	ck_assert_int_eq(resets, 2);
	pci_bus_destroy(bus);
}
END_TEST

static Suite *i8042_suite(void)
{
	Suite *s = suite_create("i8042");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reset_once);
	tcase_add_test(tc, test_other_commands);
	tcase_add_test(tc, test_status);
	tcase_add_test(tc, test_ports);
	tcase_add_test(tc, test_cf9_reset);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(i8042_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
