/* SPDX-License-Identifier: MIT */
/* The PL061 GPIO controller (devices/gpio/pl061.c), the arm64 machine's
 * power key: the AMBA IDs Linux matches it by, direction and the
 * address-masked GPIODATA, edge (rising, falling, both) and level
 * detection, IE masking, IC clearing, RIS/MIS, the interrupt output's
 * transitions, the press-and-release pulse, and odd guest accesses. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "gpio/pl061.h"
#include "iobus.h"

#define BASE 0x09030000ull

static struct iobus mmio;
static struct pl061 *dev;
static int level = -1;		/* the interrupt output as last driven */
static unsigned int changes;	/* calls of the callback */

static void on_irq(void *opaque, int l)
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
	ck_assert_int_eq(iobus_init(&mmio, "mmio"), 0);
	ck_assert_int_eq(pl061_create(&mmio, BASE, on_irq, &level, &dev), 0);
}

static void teardown(void)
{
	pl061_destroy(dev);
	iobus_destroy(&mmio);
}

static void wr(uint32_t off, uint64_t v, uint32_t len)
{
	ck_assert_int_eq(iobus_dispatch(&mmio, BASE + off, &v, len, true), 0);
}

static uint64_t rd(uint32_t off, uint32_t len)
{
	uint64_t v = 0;

	ck_assert_int_eq(iobus_dispatch(&mmio, BASE + off, &v, len, false), 0);
	return v;
}

/* GPIODATA with every line in the mask. */
#define DATA_ALL 0x3fcu

START_TEST(ids)
{
	static const uint8_t want[8] = { 0x61, 0x10, 0x04, 0x00,
					 0x0d, 0xf0, 0x05, 0xb1 };

	for (unsigned int i = 0; i < 8; i++)
		ck_assert_uint_eq(rd(PL061_ID_BASE + 4 * i, 4), want[i]);
	/* Byte reads of the ID words' upper bytes: 0. */
	ck_assert_uint_eq(rd(PL061_ID_BASE + 1, 1), 0);
	/* Writes to the IDs change nothing. */
	wr(PL061_ID_BASE, 0xff, 4);
	ck_assert_uint_eq(rd(PL061_ID_BASE, 4), 0x61);
}
END_TEST

START_TEST(direction_and_data_mask)
{
	ck_assert_uint_eq(rd(PL061_DIR, 4), 0);
	ck_assert_int_eq(pl061_set_input(dev, 1, 1), 0);
	ck_assert_uint_eq(rd(DATA_ALL, 4), 0x02);
	/* Writes to input lines do not show. */
	wr(DATA_ALL, 0xf0, 4);
	ck_assert_uint_eq(rd(DATA_ALL, 4), 0x02);
	/* Lines 4-7 outputs: the latch shows. */
	wr(PL061_DIR, 0xf0, 4);
	ck_assert_uint_eq(rd(PL061_DIR, 4), 0xf0);
	ck_assert_uint_eq(rd(DATA_ALL, 4), 0xf2);
	/* Address bits 9:2 mask: only line 4 (offset 0x10 << 2 = 0x40). */
	ck_assert_uint_eq(rd(0x40, 4), 0x10);
	ck_assert_uint_eq(rd(0x04 << 2, 4), 0x00); /* line 2: low */
	ck_assert_uint_eq(rd(0x02 << 2, 4), 0x02); /* line 1: high */
	/* A masked write changes line 5 only. */
	wr(0x20 << 2, 0x00, 4);
	ck_assert_uint_eq(rd(DATA_ALL, 4), 0xd2);
	wr(0, 0xff, 4); /* empty mask: no change */
	ck_assert_uint_eq(rd(DATA_ALL, 4), 0xd2);
	ck_assert_int_eq(level, 0);
}
END_TEST

START_TEST(edge_rising)
{
	wr(PL061_IEV, 0x08, 4);
	wr(PL061_IE, 0x08, 4);
	ck_assert_int_eq(level, 0);
	pl061_set_input(dev, 3, 1);
	ck_assert_int_eq(level, 1);
	ck_assert_uint_eq(rd(PL061_RIS, 4), 0x08);
	ck_assert_uint_eq(rd(PL061_MIS, 4), 0x08);
	/* The falling edge is not latched, the rising one stays. */
	pl061_set_input(dev, 3, 0);
	ck_assert_int_eq(level, 1);
	wr(PL061_IC, 0x08, 4);
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(rd(PL061_RIS, 4), 0);
	pl061_set_input(dev, 3, 0);
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(changes, 2);
}
END_TEST

START_TEST(edge_falling)
{
	pl061_set_input(dev, 0, 1);
	wr(PL061_IE, 0x01, 4); /* IEV 0: falling */
	ck_assert_int_eq(level, 0);
	pl061_set_input(dev, 0, 0);
	ck_assert_int_eq(level, 1);
	wr(PL061_IC, 0x01, 1);
	ck_assert_int_eq(level, 0);
	pl061_set_input(dev, 0, 1);
	ck_assert_int_eq(level, 0);
}
END_TEST

START_TEST(edge_both_and_masking)
{
	wr(PL061_IBE, 0x08, 4);
	/* Not enabled: latched in RIS, not in MIS, output low. */
	pl061_set_input(dev, 3, 1);
	ck_assert_uint_eq(rd(PL061_RIS, 4), 0x08);
	ck_assert_uint_eq(rd(PL061_MIS, 4), 0);
	ck_assert_int_eq(level, 0);
	/* Enabling shows the latched edge. */
	wr(PL061_IE, 0x08, 4);
	ck_assert_int_eq(level, 1);
	wr(PL061_IC, 0x08, 4);
	ck_assert_int_eq(level, 0);
	pl061_set_input(dev, 3, 0); /* the falling edge too */
	ck_assert_int_eq(level, 1);
	wr(PL061_IE, 0, 4);
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(rd(PL061_RIS, 4), 0x08);
	/* IC of other lines leaves it. */
	wr(PL061_IC, 0xf7, 4);
	ck_assert_uint_eq(rd(PL061_RIS, 4), 0x08);
}
END_TEST

START_TEST(level_high_and_low)
{
	wr(PL061_IS, 0x04, 4);
	wr(PL061_IEV, 0x04, 4);
	wr(PL061_IE, 0x04, 4);
	ck_assert_int_eq(level, 0);
	pl061_set_input(dev, 2, 1);
	ck_assert_int_eq(level, 1);
	/* IC does not clear a level interrupt. */
	wr(PL061_IC, 0x04, 4);
	ck_assert_int_eq(level, 1);
	ck_assert_uint_eq(rd(PL061_MIS, 4), 0x04);
	pl061_set_input(dev, 2, 0);
	ck_assert_int_eq(level, 0);
	/* Active low: up while the line is low. */
	wr(PL061_IEV, 0, 4);
	ck_assert_int_eq(level, 1);
	pl061_set_input(dev, 2, 1);
	ck_assert_int_eq(level, 0);
}
END_TEST

/* The power key: high now, low once the guest read it high; with both
 * edges enabled (gpio-keys) the guest takes two interrupts. */
START_TEST(pulse_press_release)
{
	wr(PL061_IBE, 0x08, 4);
	wr(PL061_IE, 0x08, 4);
	ck_assert_int_eq(pl061_pulse_input(dev, 3), 0);
	ck_assert_int_eq(level, 1);
	wr(PL061_IC, 0x08, 4); /* the guest's handler acks */
	ck_assert_int_eq(level, 0);
	/* A read of other lines does not release it. */
	ck_assert_uint_eq(rd(0x01 << 2, 4), 0);
	ck_assert_int_eq(level, 0);
	/* The driver samples it pressed: the release edge follows. */
	ck_assert_uint_eq(rd(0x08 << 2, 4), 0x08);
	ck_assert_int_eq(level, 1);
	wr(PL061_IC, 0x08, 4);
	ck_assert_uint_eq(rd(0x08 << 2, 4), 0);
	ck_assert_int_eq(level, 0);
	ck_assert_uint_eq(changes, 4);
	/* Pressed again: seen again. */
	pl061_pulse_input(dev, 3);
	ck_assert_int_eq(level, 1);
}
END_TEST

START_TEST(bad_input)
{
	ck_assert_int_eq(pl061_set_input(dev, 8, 1), -EINVAL);
	ck_assert_int_eq(pl061_pulse_input(dev, 8), -EINVAL);
	ck_assert_int_eq(pl061_pulse_input(NULL, 0), -EINVAL);
	ck_assert_int_eq(pl061_create(&mmio, BASE, on_irq, NULL, &(struct pl061 *){ NULL }),
			 -EEXIST);
	ck_assert_int_eq(pl061_create(&mmio, 0, NULL, NULL, &(struct pl061 *){ NULL }),
			 -EINVAL);
	pl061_destroy(NULL);
}
END_TEST

/* Every width at every offset, reads and writes of all-ones: no crash;
 * reserved words read 0; the last byte of the range is reachable. */
START_TEST(odd_accesses)
{
	static const uint32_t lens[] = { 1, 2, 4, 8 };

	ck_assert_uint_eq(rd(0x424, 4), 0);
	ck_assert_uint_eq(rd(0x800, 4), 0);
	ck_assert_uint_eq(rd(PL061_IC, 4), 0); /* write-only */
	wr(PL061_RIS, 0xff, 4); /* read-only */
	ck_assert_uint_eq(rd(PL061_RIS, 4), 0);
	ck_assert_uint_eq(rd(PL061_MIS, 1), 0);
	wr(PL061_AFSEL, 0x5a, 4);
	ck_assert_uint_eq(rd(PL061_AFSEL, 4), 0x5a);
	ck_assert_uint_eq(rd(PL061_AFSEL + 1, 1), 0);
	for (uint32_t off = 0; off < PL061_SIZE; off++)
		for (unsigned int i = 0; i < 4; i++) {
			if (off + lens[i] > PL061_SIZE)
				continue;
			(void)rd(off, lens[i]);
			if (off < PL061_ID_BASE)
				wr(off, ~0ull, lens[i]);
		}
	/* An 8-byte read over two registers: each in its own word. */
	wr(PL061_IS, 0, 4);
	wr(PL061_IBE, 0, 4);
	wr(PL061_DIR, 0x0f, 4);
	ck_assert_uint_eq(rd(PL061_DIR, 8), 0x0f);
	ck_assert_uint_eq(rd(PL061_ID_BASE + 0x18, 8), 0xb1ull << 32 | 0x05);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pl061");
	TCase *tc = tcase_create("pl061");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, ids);
	tcase_add_test(tc, direction_and_data_mask);
	tcase_add_test(tc, edge_rising);
	tcase_add_test(tc, edge_falling);
	tcase_add_test(tc, edge_both_and_masking);
	tcase_add_test(tc, level_high_and_low);
	tcase_add_test(tc, pulse_press_release);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, odd_accesses);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
