/* SPDX-License-Identifier: MIT */
/* MSI-X capability, table and PBA emulation. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"
#include "pci/msix.h"
#include "pci/pci.h"

#define WIN_BASE 0xe0000000ull
#define TABLE_OFF 0x0
#define PBA_OFF 0x8000 /* room for 2048 entries */
#define BAR_SIZE 0x10000

static struct iobus pio, mmio;
static struct pci_bus *bus;

/* A device owning MSI-X, wired up the way a transport would be. */
struct mdev {
	struct pci_device pci;
	struct msix msix;
	int changed_calls;
	unsigned int last_vec;
	int delivered; /* atomics: bumped from two threads in one test */
	int other_mmio;
};

static struct mdev d;

static void mdev_bar(void *opaque, uint64_t off, void *data, uint32_t len,
		     bool is_write)
{
	struct mdev *m = opaque;

	if (!msix_bar_access(&m->msix, off, data, len, is_write)) {
		m->other_mmio++;
		if (!is_write)
			memset(data, 0, len);
	}
}

static void mdev_cfg_write(struct pci_device *dev, uint32_t off, uint32_t len)
{
	struct mdev *m = dev->priv;

	msix_cfg_write(&m->msix, off, len);
}

static const struct pci_device_ops mdev_ops = {
	.cfg_write = mdev_cfg_write,
};

/* What a transport does on a change: deliver what became deliverable. */
static void mdev_vector_changed(void *opaque, unsigned int vec)
{
	struct mdev *m = opaque;

	m->changed_calls++;
	m->last_vec = vec;
	if (!msix_vector_masked(&m->msix, vec) &&
	    msix_take_pending(&m->msix, vec))
		__atomic_fetch_add(&m->delivered, 1, __ATOMIC_SEQ_CST);
}

static int mdev_setup(unsigned int nr)
{
	int ret;

	memset(&d, 0, sizeof(d));
	pci_device_init(&d.pci, 0x1af4, 0x1041, 0x020000, 1, &mdev_ops, &d);
	ret = pci_device_set_bar(&d.pci, 1, BAR_SIZE, PCI_BAR_64, mdev_bar, &d);
	if (ret)
		return ret;
	ret = msix_init(&d.msix, &d.pci, nr, 1, TABLE_OFF, PBA_OFF);
	if (ret)
		return ret;
	msix_set_notifier(&d.msix, mdev_vector_changed, &d);
	return pci_register_device(bus, &d.pci);
}

static void set_cfa(unsigned int reg)
{
	uint32_t v = 0x80000000u | d.pci.slot << 11 | (reg & 0xfc);

	ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, true), 0);
}

static uint32_t cfg_read(unsigned int reg, uint32_t len)
{
	uint32_t v = 0;

	set_cfa(reg);
	iobus_dispatch(&pio, 0xcfc + (reg & 3), &v, len, false);
	return v;
}

static void cfg_write(unsigned int reg, uint32_t len, uint32_t v)
{
	set_cfa(reg);
	iobus_dispatch(&pio, 0xcfc + (reg & 3), &v, len, true);
}

static uint64_t bar(void)
{
	return pci_bar_gpa(&d.pci, 1);
}

static uint32_t rd32(uint64_t off)
{
	uint32_t v = 0x12345678;

	ck_assert_int_eq(iobus_dispatch(&mmio, bar() + off, &v, 4, false), 0);
	return v;
}

static void wr32(uint64_t off, uint32_t v)
{
	ck_assert_int_eq(iobus_dispatch(&mmio, bar() + off, &v, 4, true), 0);
}

static void wr(uint64_t off, uint64_t v, uint32_t len)
{
	ck_assert_int_eq(iobus_dispatch(&mmio, bar() + off, &v, len, true), 0);
}

static uint64_t entry(unsigned int vec, unsigned int field)
{
	return TABLE_OFF + vec * 16 + field;
}

static void set_ctrl(uint16_t bits)
{
	unsigned int cap = d.msix.cap_off;
	uint16_t c = (uint16_t)cfg_read(cap + 2, 2);

	cfg_write(cap + 2, 2, (c & 0x3fff) | bits);
}

static void setup(void)
{
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(iobus_init(&mmio, "mmio"), 0);
	ck_assert_int_eq(pci_bus_create(&pio, &mmio, WIN_BASE, 0x10000000, &bus),
			 0);
}

static void teardown(void)
{
	if (d.pci.bus)
		pci_unregister_device(bus, &d.pci);
	msix_exit(&d.msix);
	pci_bus_destroy(bus);
	iobus_destroy(&mmio);
	iobus_destroy(&pio);
}

START_TEST(test_capability)
{
	unsigned int cap, ptr;

	ck_assert_int_eq(mdev_setup(8), 0);
	ptr = cfg_read(0x34, 1);
	ck_assert_uint_eq(ptr, d.msix.cap_off);
	cap = ptr;
	ck_assert_uint_eq(cfg_read(cap, 1), 0x11);
	ck_assert_uint_eq(cfg_read(cap + 1, 1), 0);
	ck_assert_uint_eq(cfg_read(cap + 2, 2), 7); /* N - 1, off, unmasked */
	ck_assert_uint_eq(cfg_read(cap + 4, 4), TABLE_OFF | 1);
	ck_assert_uint_eq(cfg_read(cap + 8, 4), PBA_OFF | 1);
	/* only enable and function mask are writable */
	cfg_write(cap + 2, 2, 0xffff);
	ck_assert_uint_eq(cfg_read(cap + 2, 2), 0xc007);
	cfg_write(cap + 4, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(cap + 4, 4), TABLE_OFF | 1);
	cfg_write(cap + 2, 2, 0);
	ck_assert(!msix_enabled(&d.msix));
	/* byte write to the high byte of message control works too */
	cfg_write(cap + 3, 1, 0x80);
	ck_assert(msix_enabled(&d.msix));
	ck_assert_uint_eq(cfg_read(cap + 2, 2), 0x8007);
}
END_TEST

START_TEST(test_table_rw)
{
	uint64_t addr;
	uint32_t data;

	ck_assert_int_eq(mdev_setup(8), 0);
	/* reset state: every vector masked, zero message */
	for (unsigned int v = 0; v < 8; v++) {
		ck_assert_uint_eq(rd32(entry(v, 12)), 1);
		ck_assert_uint_eq(rd32(entry(v, 0)), 0);
	}
	wr32(entry(3, 0), 0xfee01000);
	wr32(entry(3, 4), 0x1);
	wr32(entry(3, 8), 0x4041);
	ck_assert_uint_eq(rd32(entry(3, 0)), 0xfee01000);
	ck_assert_uint_eq(rd32(entry(3, 4)), 0x1);
	ck_assert_uint_eq(rd32(entry(3, 8)), 0x4041);
	msix_get_msg(&d.msix, 3, &addr, &data);
	ck_assert_uint_eq(addr, 0x1fee01000ull);
	ck_assert_uint_eq(data, 0x4041);
	/* 8-byte access to address lo+hi */
	wr(entry(5, 0), 0x00000002fee02000ull, 8);
	msix_get_msg(&d.msix, 5, &addr, &data);
	ck_assert_uint_eq(addr, 0x2fee02000ull);
	{
		uint64_t q = 0;

		ck_assert_int_eq(iobus_dispatch(&mmio, bar() + entry(5, 0), &q,
						8, false),
				 0);
		ck_assert_uint_eq(q, 0x00000002fee02000ull);
	}
	/* reserved bits: vector control keeps bit 0 only, address bits 1:0
	 * read as 0 */
	wr32(entry(4, 12), 0xfffffffe);
	ck_assert_uint_eq(rd32(entry(4, 12)), 0);
	wr32(entry(4, 0), 0xfee00003);
	ck_assert_uint_eq(rd32(entry(4, 0)), 0xfee00000);
	/* other parts of the BAR go to the owner */
	d.other_mmio = 0;
	ck_assert_uint_eq(rd32(0x9000), 0);
	ck_assert_int_eq(d.other_mmio, 1);
	msix_get_msg(&d.msix, 8, &addr, &data); /* out of range */
	ck_assert_uint_eq(addr, 0);
}
END_TEST

START_TEST(test_masks)
{
	ck_assert_int_eq(mdev_setup(4), 0);
	/* disabled: everything masked */
	wr32(entry(0, 12), 0);
	ck_assert(msix_vector_masked(&d.msix, 0));
	/* enabled: entry mask decides */
	d.changed_calls = 0;
	set_ctrl(0x8000);
	ck_assert_int_eq(d.changed_calls, 4); /* every vector */
	ck_assert(!msix_vector_masked(&d.msix, 0));
	ck_assert(msix_vector_masked(&d.msix, 1));
	/* function mask overrides */
	d.changed_calls = 0;
	set_ctrl(0x8000 | 0x4000);
	ck_assert_int_eq(d.changed_calls, 4);
	ck_assert(msix_vector_masked(&d.msix, 0));
	/* rewriting the same control value is not a change */
	set_ctrl(0x8000 | 0x4000);
	ck_assert_int_eq(d.changed_calls, 4);
	set_ctrl(0x8000);
	ck_assert_int_eq(d.changed_calls, 8);
	ck_assert(!msix_vector_masked(&d.msix, 0));
	/* entry mask */
	d.changed_calls = 0;
	wr32(entry(0, 12), 1);
	ck_assert(msix_vector_masked(&d.msix, 0));
	ck_assert_int_eq(d.changed_calls, 1);
	ck_assert_uint_eq(d.last_vec, 0);
	/* out-of-range vectors are always masked */
	ck_assert(msix_vector_masked(&d.msix, 4));
	ck_assert(msix_vector_masked(&d.msix, 100000));
	/* config writes elsewhere do not disturb MSI-X */
	d.changed_calls = 0;
	cfg_write(0x0c, 1, 0x10);
	ck_assert_int_eq(d.changed_calls, 0);
}
END_TEST

START_TEST(test_vector_changed)
{
	ck_assert_int_eq(mdev_setup(4), 0);
	d.changed_calls = 0;
	wr32(entry(2, 0), 0xfee00000);
	ck_assert_int_eq(d.changed_calls, 1);
	ck_assert_uint_eq(d.last_vec, 2);
	wr32(entry(2, 0), 0xfee00000); /* same value: no call */
	ck_assert_int_eq(d.changed_calls, 1);
	wr32(entry(2, 8), 0x31);
	ck_assert_int_eq(d.changed_calls, 2);
	wr(entry(1, 0), 0x00000001fee00000ull, 8); /* lo + hi: one call */
	ck_assert_int_eq(d.changed_calls, 3);
	ck_assert_uint_eq(d.last_vec, 1);
	wr(entry(1, 8), 0x0000000000000055ull, 8); /* data + unmask */
	ck_assert_int_eq(d.changed_calls, 4);
	ck_assert_uint_eq(rd32(entry(1, 12)), 0);
	wr32(entry(1, 12), 1);
	ck_assert_int_eq(d.changed_calls, 5);
}
END_TEST

START_TEST(test_pending)
{
	uint32_t pba;

	ck_assert_int_eq(mdev_setup(40), 0);
	set_ctrl(0x8000);
	/* masked vector 33: the interrupt becomes pending */
	ck_assert(!msix_try_fire(&d.msix, 33));
	pba = rd32(PBA_OFF + 4);
	ck_assert_uint_eq(pba, 1u << 1);
	ck_assert_uint_eq(rd32(PBA_OFF), 0);
	/* the PBA is read-only */
	wr32(PBA_OFF + 4, 0);
	ck_assert_uint_eq(rd32(PBA_OFF + 4), 1u << 1);
	/* a second fire while masked coalesces */
	ck_assert(!msix_try_fire(&d.msix, 33));
	/* unmask: vector_changed lets the owner deliver it once */
	d.delivered = 0;
	wr32(entry(33, 12), 0);
	ck_assert_int_eq(d.delivered, 1);
	ck_assert_uint_eq(rd32(PBA_OFF + 4), 0);
	ck_assert(!msix_take_pending(&d.msix, 33));
	/* unmasked: fires directly, nothing pending */
	ck_assert(msix_try_fire(&d.msix, 33));
	ck_assert_uint_eq(rd32(PBA_OFF + 4), 0);
	/* function mask: pending, delivered when the mask is lifted */
	set_ctrl(0x8000 | 0x4000);
	ck_assert(!msix_try_fire(&d.msix, 33));
	ck_assert_uint_eq(rd32(PBA_OFF + 4), 1u << 1);
	d.delivered = 0;
	set_ctrl(0x8000);
	ck_assert_int_eq(d.delivered, 1);
	ck_assert_uint_eq(rd32(PBA_OFF + 4), 0);
	/* set/take primitives */
	msix_set_pending(&d.msix, 0);
	msix_set_pending(&d.msix, 39);
	msix_set_pending(&d.msix, 40); /* out of range: ignored */
	{
		uint64_t q = 0;

		ck_assert_int_eq(iobus_dispatch(&mmio, bar() + PBA_OFF, &q, 8,
						false),
				 0);
		ck_assert_uint_eq(q, 1ull | 1ull << 39);
	}
	ck_assert(msix_take_pending(&d.msix, 39));
	ck_assert(!msix_take_pending(&d.msix, 39));
	ck_assert(!msix_take_pending(&d.msix, 40));
	ck_assert(!msix_try_fire(&d.msix, 40));
}
END_TEST

START_TEST(test_2048)
{
	unsigned int cap;
	uint64_t addr;
	uint32_t data;

	ck_assert_int_eq(mdev_setup(2048), 0);
	cap = d.msix.cap_off;
	ck_assert_uint_eq(cfg_read(cap + 2, 2), 0x7ff);
	wr32(entry(2047, 8), 0xabcd);
	wr32(entry(2047, 12), 0);
	msix_get_msg(&d.msix, 2047, &addr, &data);
	ck_assert_uint_eq(data, 0xabcd);
	ck_assert_uint_eq(rd32(entry(2047, 12)), 0);
	/* just past the table is the (read-only) PBA, just past the PBA is
	 * the owner's space */
	d.other_mmio = 0;
	wr32(entry(2048, 0), 0xffffffff);
	ck_assert_uint_eq(rd32(PBA_OFF), 0);
	ck_assert_int_eq(d.other_mmio, 0);
	wr32(PBA_OFF + 256, 0x1);
	ck_assert_int_eq(d.other_mmio, 1);
	/* last PBA dword */
	msix_set_pending(&d.msix, 2047);
	ck_assert_uint_eq(rd32(PBA_OFF + 252), 0x80000000u);
	ck_assert_uint_eq(msix_pba_size(2048), 256);
	ck_assert_uint_eq(msix_table_size(2048), 0x8000);
}
END_TEST

START_TEST(test_misaligned)
{
	uint8_t b[8];

	ck_assert_int_eq(mdev_setup(4), 0);
	d.changed_calls = 0;
	wr(entry(0, 0), 0xffff, 2); /* 2-byte */
	wr(entry(0, 1), 0xff, 1); /* 1-byte */
	wr(entry(0, 2), 0xffffffff, 4); /* unaligned dword */
	wr(entry(0, 4), 0xffffffffffffffffull, 8); /* unaligned qword */
	wr(entry(0, 12), 0x0, 2); /* sub-dword unmask attempt */
	ck_assert_int_eq(d.changed_calls, 0);
	ck_assert_uint_eq(rd32(entry(0, 0)), 0);
	ck_assert_uint_eq(rd32(entry(0, 4)), 0);
	ck_assert_uint_eq(rd32(entry(0, 12)), 1);
	/* misaligned / partial reads return 0 */
	memset(b, 0xee, sizeof(b));
	ck_assert_int_eq(iobus_dispatch(&mmio, bar() + entry(0, 12), b, 1,
					false),
			 0);
	ck_assert_uint_eq(b[0], 0);
	memset(b, 0xee, sizeof(b));
	ck_assert_int_eq(iobus_dispatch(&mmio, bar() + entry(0, 10), b, 4,
					false),
			 0);
	ck_assert_uint_eq(b[0] | b[1] | b[2] | b[3], 0);
	/* the direct helpers reject out-of-table accesses */
	msix_table_write(&d.msix, 4 * 16, "\0\0\0\0", 4);
	msix_table_read(&d.msix, 4 * 16 - 4, b, 8);
	ck_assert_uint_eq(b[0] | b[7], 0);
	msix_pba_read(&d.msix, 8, b, 4);
	ck_assert_uint_eq(b[0], 0);
	ck_assert_int_eq(d.changed_calls, 0);
}
END_TEST

START_TEST(test_init_errors)
{
	struct pci_device p;
	struct msix m;

	pci_device_init(&p, 1, 2, 0, 0, NULL, NULL);
	ck_assert_int_eq(pci_device_set_bar(&p, 0, 0x1000, 0, mdev_bar, &d), 0);
	ck_assert_int_eq(msix_init(&m, &p, 0, 0, 0, 0x800), -EINVAL);
	ck_assert_int_eq(msix_init(&m, &p, 2049, 0, 0, 0x800), -EINVAL);
	ck_assert_int_eq(msix_init(&m, &p, 4, 6, 0, 0x800), -EINVAL);
	ck_assert_int_eq(msix_init(&m, &p, 4, 0, 4, 0x800), -EINVAL);
	ck_assert_int_eq(msix_init(&m, &p, 4, 0, 0, 0x804), -EINVAL);
	ck_assert_int_eq(msix_init(&m, &p, 4, 0, 0, 0x38), -EINVAL); /* overlap */
	ck_assert_int_eq(msix_init(&m, &p, 4, 0, 0, 0x1000), -EINVAL); /* BAR */
	ck_assert_int_eq(msix_init(&m, &p, 256, 0, 0, 0x800), -EINVAL);
	ck_assert_int_eq(msix_init(&m, &p, 4, 0, 0x800, 0), 0); /* PBA first */
	ck_assert_uint_eq(pci_cfg_get8(&p, PCI_CAP_START), 0x11);
	msix_exit(&m);
	msix_exit(NULL);
}
END_TEST

#define FIRES 200000

static void *firer(void *arg)
{
	(void)arg;
	for (int i = 0; i < FIRES; i++)
		if (msix_try_fire(&d.msix, 1))
			__atomic_fetch_add(&d.delivered, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* An I/O thread fires while a vCPU masks and unmasks: once the vector is
 * finally unmasked, nothing may be left stuck in the PBA. */
START_TEST(test_race_unmask)
{
	pthread_t t;

	ck_assert_int_eq(mdev_setup(4), 0);
	set_ctrl(0x8000);
	d.delivered = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, firer, NULL), 0);
	for (int i = 0; i < 20000; i++) {
		msix_table_write(&d.msix, 16 + 12, "\1\0\0\0", 4);
		msix_table_write(&d.msix, 16 + 12, "\0\0\0\0", 4);
	}
	pthread_join(t, NULL);
	ck_assert(!msix_vector_masked(&d.msix, 1));
	ck_assert(!msix_take_pending(&d.msix, 1));
	ck_assert_int_gt(d.delivered, 0);
	ck_assert_int_le(d.delivered, FIRES);
}
END_TEST

static Suite *msix_suite(void)
{
	Suite *s = suite_create("msix");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_capability);
	tcase_add_test(tc, test_table_rw);
	tcase_add_test(tc, test_masks);
	tcase_add_test(tc, test_vector_changed);
	tcase_add_test(tc, test_pending);
	tcase_add_test(tc, test_2048);
	tcase_add_test(tc, test_misaligned);
	tcase_add_test(tc, test_init_errors);
	tcase_add_test(tc, test_race_unmask);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(msix_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
