/* SPDX-License-Identifier: MIT */
/* mptable_write(): parse the tables back the way a guest kernel would. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "x86/mptable.h"

#define BIOS_AREA 0x10000	/* [0xF0000, 0x100000) */

static const unsigned int cpu_counts[] = { 1, 2, 3, 8, 64, 254 };

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

START_TEST(test_tables)
{
	unsigned int n = cpu_counts[_i];
	uint8_t *buf = malloc(BIOS_AREA);
	const uint8_t *mpc, *e, *end;
	unsigned int cpus = 0, bsps = 0, buses = 0, ioapics = 0, intsrcs = 0;
	unsigned int lints = 0, entries = 0, ioapic_id = 0;
	bool isa = false, pci = false, seen_apic[256] = { false };
	bool seen_irq[16] = { false };
	long len;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xcc, BIOS_AREA);
	len = mptable_write(buf, BIOS_AREA, MPTABLE_GPA, n);
	ck_assert_int_gt(len, 0);
	ck_assert_uint_eq((size_t)len, mptable_size(n));
	ck_assert_uint_le((size_t)len, BIOS_AREA);

	/* Floating pointer */
	ck_assert_mem_eq(buf, "_MP_", 4);
	ck_assert_uint_eq(rd32(buf + 4), MPTABLE_GPA + 16);
	ck_assert_uint_eq(buf[8], 1);		/* length in paragraphs */
	ck_assert_uint_eq(buf[9], 4);		/* spec 1.4 */
	ck_assert_uint_eq(sum(buf, 16), 0);
	ck_assert_uint_eq(buf[11], 0);		/* a config table follows */

	/* Configuration table header */
	mpc = buf + (rd32(buf + 4) - MPTABLE_GPA);
	ck_assert_mem_eq(mpc, "PCMP", 4);
	ck_assert_uint_eq(mpc[6], 4);
	ck_assert_uint_eq(16 + rd16(mpc + 4), (size_t)len);
	ck_assert_uint_eq(sum(mpc, rd16(mpc + 4)), 0);
	ck_assert_uint_eq(rd32(mpc + 36), MPTABLE_LAPIC_ADDR);
	ck_assert_uint_eq(rd16(mpc + 40), 0);	/* no extended table */

	e = mpc + 44;
	end = mpc + rd16(mpc + 4);
	while (e < end) {
		entries++;
		switch (e[0]) {
		case 0:	/* processor */
			ck_assert_uint_eq(e[1], cpus);	/* APIC ids 0..n-1 in order */
			ck_assert(!seen_apic[e[1]]);
			seen_apic[e[1]] = true;
			ck_assert_uint_eq(e[2], 0x14);
			ck_assert(e[3] & 1);		/* enabled */
			if (e[3] & 2) {
				bsps++;
				ck_assert_uint_eq(e[1], 0);
			}
			cpus++;
			e += 20;
			break;
		case 1:	/* bus */
			if (!memcmp(e + 2, "ISA   ", 6)) {
				isa = true;
				ck_assert_uint_eq(e[1], 1);
			}
			if (!memcmp(e + 2, "PCI   ", 6)) {
				pci = true;
				ck_assert_uint_eq(e[1], 0);
			}
			buses++;
			e += 8;
			break;
		case 2:	/* IOAPIC */
			ioapic_id = e[1];
			ck_assert_uint_eq(e[2], 0x11);
			ck_assert(e[3] & 1);
			ck_assert_uint_eq(rd32(e + 4), MPTABLE_IOAPIC_ADDR);
			ioapics++;
			e += 8;
			break;
		case 3:	/* I/O interrupt */
			ck_assert_uint_eq(e[1], 0);	/* INT */
			ck_assert_uint_eq(e[4], 1);	/* ISA bus */
			ck_assert_uint_lt(e[5], 16);
			ck_assert(!seen_irq[e[5]]);
			seen_irq[e[5]] = true;
			ck_assert_uint_eq(e[7], e[5]);	/* identity, as KVM routes */
			ck_assert_uint_eq(e[6], n);	/* to our IOAPIC */
			intsrcs++;
			e += 8;
			break;
		case 4:	/* local interrupt */
			ck_assert_uint_eq(e[6], 0xff);
			if (e[1] == 3)		/* ExtINT */
				ck_assert_uint_eq(e[7], 0);
			else if (e[1] == 1)	/* NMI */
				ck_assert_uint_eq(e[7], 1);
			else
				ck_abort_msg("unexpected lint type %u", e[1]);
			lints++;
			e += 8;
			break;
		default:
			ck_abort_msg("unknown entry type %u", e[0]);
		}
	}
	ck_assert_ptr_eq(e, end);
	ck_assert_uint_eq(entries, rd16(mpc + 34));
	ck_assert_uint_eq(cpus, n);
	ck_assert_uint_eq(bsps, 1);
	ck_assert(isa && pci);
	ck_assert_uint_eq(buses, 2);
	ck_assert_uint_eq(ioapics, 1);
	ck_assert(!seen_apic[ioapic_id]);
	ck_assert_uint_ne(ioapic_id, 0xff);
	ck_assert_uint_eq(intsrcs, 16);
	ck_assert_uint_eq(lints, 2);
	/* Nothing written past the table. */
	ck_assert_uint_eq(buf[len], 0xcc);
	free(buf);
}
END_TEST

START_TEST(test_fits_bios_area)
{
	ck_assert_uint_le(mptable_size(MPTABLE_MAX_CPUS), 64 * 1024);
	ck_assert_uint_le(MPTABLE_GPA + mptable_size(MPTABLE_MAX_CPUS), 0x100000);
}
END_TEST

START_TEST(test_errors)
{
	uint8_t *buf = malloc(BIOS_AREA);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(mptable_write(buf, BIOS_AREA, MPTABLE_GPA, 0), -EINVAL);
	ck_assert_int_eq(mptable_write(buf, BIOS_AREA, MPTABLE_GPA, 255), -EINVAL);
	ck_assert_int_eq(mptable_write(buf, BIOS_AREA, MPTABLE_GPA, 1000), -EINVAL);
	ck_assert_int_eq(mptable_write(NULL, BIOS_AREA, MPTABLE_GPA, 1), -EINVAL);
	ck_assert_int_eq(mptable_write(buf, BIOS_AREA, MPTABLE_GPA + 4, 1), -EINVAL);
	ck_assert_int_eq(mptable_write(buf, mptable_size(4) - 1, MPTABLE_GPA, 4),
			 -ENOSPC);
	ck_assert_int_eq(mptable_write(buf, 0, MPTABLE_GPA, 1), -ENOSPC);
	ck_assert_int_eq(mptable_write(buf, mptable_size(4), MPTABLE_GPA, 4),
			 (long)mptable_size(4));
	free(buf);
}
END_TEST

static Suite *mptable_suite(void)
{
	Suite *s = suite_create("mptable");
	TCase *tc = tcase_create("write");

	tcase_add_loop_test(tc, test_tables, 0,
			    sizeof(cpu_counts) / sizeof(cpu_counts[0]));
	tcase_add_test(tc, test_fits_bios_area);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mptable_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
