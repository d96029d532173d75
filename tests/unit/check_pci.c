/* SPDX-License-Identifier: MIT */
/* PCI bus: configuration mechanism #1, config space, BARs, capabilities. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"
#include "pci/pci.h"

#define WIN_BASE 0xe0000000ull
#define WIN_SIZE 0x10000000ull

static struct iobus pio, mmio;
static struct pci_bus *bus;

struct tdev {
	struct pci_device pci;
	int mmio_calls;
	uint64_t last_off;
	unsigned int bar_hit;
	int moves;
	unsigned int moved_bar;
	uint64_t moved_old, moved_new;
	int cfg_writes;
	uint32_t cw_off, cw_len;
};

static void tdev_mmio(void *opaque, uint64_t off, void *data, uint32_t len,
		      bool is_write)
{
	struct tdev *d = opaque;

	d->mmio_calls++;
	d->last_off = off;
	if (!is_write)
		memset(data, 0xab, len);
}

static void tdev_bar_moved(struct pci_device *dev, unsigned int bar,
			   uint64_t old_gpa, uint64_t new_gpa)
{
	struct tdev *d = dev->priv;

	d->moves++;
	d->moved_bar = bar;
	d->moved_old = old_gpa;
	d->moved_new = new_gpa;
}

static void tdev_cfg_write(struct pci_device *dev, uint32_t off, uint32_t len)
{
	struct tdev *d = dev->priv;

	d->cfg_writes++;
	d->cw_off = off;
	d->cw_len = len;
}

static void tdev_cfg_read(struct pci_device *dev, uint32_t off, uint32_t len,
			  uint32_t *val)
{
	if (off == 0x40 && len == 4)
		*val = 0xdeadbeef; /* device-specific register */
}

static const struct pci_device_ops tdev_ops = {
	.cfg_write = tdev_cfg_write,
	.cfg_read = tdev_cfg_read,
	.bar_moved = tdev_bar_moved,
};

static void tdev_init(struct tdev *d, uint16_t devid)
{
	memset(d, 0, sizeof(*d));
	pci_device_init(&d->pci, 0x1af4, devid, 0x018000, 1, &tdev_ops, d);
}

static uint32_t cfa(unsigned int busno, unsigned int slot, unsigned int fn,
		    unsigned int reg)
{
	return 0x80000000u | busno << 16 | slot << 11 | fn << 8 | (reg & 0xfc);
}

static void set_cfa(uint32_t v)
{
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, true), 0);
}

static uint32_t cfg_read(unsigned int slot, unsigned int reg, uint32_t len)
{
	uint32_t v = 0;

	set_cfa(cfa(0, slot, 0, reg));
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc + (reg & 3), &v, len,
					false),
			 0);
	return v;
}

static void cfg_write(unsigned int slot, unsigned int reg, uint32_t len,
		      uint32_t v)
{
	set_cfa(cfa(0, slot, 0, reg));
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc + (reg & 3), &v, len, true),
			 0);
}

static bool mmio_hits(uint64_t addr)
{
	uint32_t v;

	return iobus_dispatch(&mmio, addr, &v, 4, false) == 0;
}

static void setup(void)
{
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(iobus_init(&mmio, "mmio"), 0);
	ck_assert_int_eq(pci_bus_create(&pio, &mmio, WIN_BASE, WIN_SIZE, &bus),
			 0);
}

static void teardown(void)
{
	pci_bus_destroy(bus);
	iobus_destroy(&mmio);
	iobus_destroy(&pio);
}

START_TEST(test_host_bridge)
{
	ck_assert_uint_eq(cfg_read(0, 0x00, 4), 0x0d578086);
	ck_assert_uint_eq(cfg_read(0, 0x08, 4), 0x06000000);
	ck_assert_uint_eq(cfg_read(0, 0x0e, 1), 0); /* type 0, single fn */
	ck_assert_uint_eq(cfg_read(0, 0x10, 4), 0); /* no BARs */
	/* Linux pci_check_type1(): CONFIG_ADDRESS reads back */
	set_cfa(0x80000000);
	{
		uint32_t v = 0;

		ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, false), 0);
		ck_assert_uint_eq(v, 0x80000000);
		/* low two bits are hardwired to 0 */
		set_cfa(0x80000003);
		ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 4, false), 0);
		ck_assert_uint_eq(v, 0x80000000);
		/* byte reads of 0xCF8/0xCFA are not config cycles (type 2
		 * probe must fail) */
		v = 0;
		ck_assert_int_eq(iobus_dispatch(&pio, 0xcf8, &v, 1, false), 0);
		ck_assert_uint_eq(v, 0xff);
	}
}
END_TEST

START_TEST(test_create_errors)
{
	struct pci_bus *b2;

	ck_assert_int_eq(pci_bus_create(&pio, &mmio, 0, 0, &b2), -EINVAL);
	ck_assert_int_eq(pci_bus_create(&pio, &mmio, 0xf0000000, 0x20000000,
					&b2),
			 -EINVAL); /* above 4 GiB */
	ck_assert_int_eq(pci_bus_create(NULL, &mmio, WIN_BASE, WIN_SIZE, &b2),
			 -EINVAL);
	ck_assert_int_eq(pci_bus_create(&pio, &mmio, WIN_BASE, WIN_SIZE, &b2),
			 -EEXIST); /* 0xCF8 taken */
	pci_bus_destroy(NULL);
}
END_TEST

START_TEST(test_empty_and_invalid)
{
	uint32_t v = 0;

	/* empty slot */
	ck_assert_uint_eq(cfg_read(5, 0x00, 4), 0xffffffff);
	ck_assert_uint_eq(cfg_read(31, 0x00, 2), 0xffff);
	/* bus 1, function 1 of the host bridge */
	set_cfa(cfa(1, 0, 0, 0));
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc, &v, 4, false), 0);
	ck_assert_uint_eq(v, 0xffffffff);
	set_cfa(cfa(0, 0, 1, 0));
	v = 0;
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc, &v, 4, false), 0);
	ck_assert_uint_eq(v, 0xffffffff);
	/* enable bit clear */
	set_cfa(0x00000000);
	v = 0;
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc, &v, 4, false), 0);
	ck_assert_uint_eq(v, 0xffffffff);
	/* writes to nothing are dropped without harm */
	set_cfa(cfa(0, 7, 0, 0x04));
	v = 0xffff;
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc, &v, 4, true), 0);
	ck_assert_uint_eq(cfg_read(7, 0x00, 4), 0xffffffff);
}
END_TEST

START_TEST(test_byte_word_access)
{
	ck_assert_uint_eq(cfg_read(0, 0x00, 1), 0x86);
	ck_assert_uint_eq(cfg_read(0, 0x01, 1), 0x80);
	ck_assert_uint_eq(cfg_read(0, 0x02, 2), 0x0d57);
	ck_assert_uint_eq(cfg_read(0, 0x03, 1), 0x0d);
	ck_assert_uint_eq(cfg_read(0, 0x0b, 1), 0x06); /* base class */
	ck_assert_uint_eq(cfg_read(0, 0x0a, 2), 0x0600);
	/* writable byte: cache line size; neighbours untouched */
	cfg_write(0, 0x0c, 1, 0x10);
	ck_assert_uint_eq(cfg_read(0, 0x0c, 4) & 0xffff, 0x0010);
	cfg_write(0, 0x0d, 1, 0x40);
	ck_assert_uint_eq(cfg_read(0, 0x0c, 2), 0x4010);
	/* read-only: IDs, class, header type */
	cfg_write(0, 0x00, 4, 0x12345678);
	cfg_write(0, 0x08, 4, 0xffffffff);
	cfg_write(0, 0x0e, 1, 0x80);
	ck_assert_uint_eq(cfg_read(0, 0x00, 4), 0x0d578086);
	ck_assert_uint_eq(cfg_read(0, 0x08, 4), 0x06000000);
	ck_assert_uint_eq(cfg_read(0, 0x0e, 1), 0);
	/* COMMAND: only the implemented bits stick */
	cfg_write(0, 0x04, 2, 0xffff);
	ck_assert_uint_eq(cfg_read(0, 0x04, 2), 0x0547);
	/* status is read-only here */
	cfg_write(0, 0x06, 2, 0xffff);
	ck_assert_uint_eq(cfg_read(0, 0x06, 2), 0);
}
END_TEST

START_TEST(test_register_and_bars)
{
	struct tdev d;
	uint32_t lo, hi;
	uint64_t b0, b2, b4;

	tdev_init(&d, 0x1042);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0, tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 2, 0x100000,
					    PCI_BAR_64 | PCI_BAR_PREFETCH,
					    tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 4, 16, 0, tdev_mmio, &d), 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	ck_assert_uint_eq(d.pci.slot, 1);
	ck_assert_int_eq(d.moves, 3); /* each BAR mapped for the first time */
	ck_assert_uint_eq(d.moved_old, PCI_BAR_UNMAPPED);
	ck_assert_uint_eq(cfg_read(1, 0x00, 4), 0x10421af4);
	ck_assert_uint_eq(cfg_read(1, 0x08, 4), 0x01800001);
	ck_assert(cfg_read(1, 0x04, 2) & PCI_CMD_MEM);

	lo = cfg_read(1, 0x10, 4);
	b0 = lo & ~0xfu;
	ck_assert_uint_eq(lo & 0xf, 0);
	lo = cfg_read(1, 0x18, 4);
	hi = cfg_read(1, 0x1c, 4);
	ck_assert_uint_eq(lo & 0xf, 0x0c); /* 64-bit, prefetchable */
	b2 = ((uint64_t)hi << 32) | (lo & ~0xfu);
	b4 = cfg_read(1, 0x20, 4) & ~0xfu;
	/* inside the window, naturally aligned, disjoint */
	ck_assert(b0 >= WIN_BASE && b0 + 0x1000 <= WIN_BASE + WIN_SIZE);
	ck_assert(b2 >= WIN_BASE && b2 + 0x100000 <= WIN_BASE + WIN_SIZE);
	ck_assert(b4 >= WIN_BASE && b4 + 16 <= WIN_BASE + WIN_SIZE);
	ck_assert_uint_eq(b0 % 0x1000, 0);
	ck_assert_uint_eq(b2 % 0x100000, 0);
	ck_assert_uint_eq(b4 % 16, 0);
	ck_assert(b0 + 0x1000 <= b2 || b2 + 0x100000 <= b0);
	ck_assert(b4 + 16 <= b0 || b0 + 0x1000 <= b4);
	ck_assert(b4 + 16 <= b2 || b2 + 0x100000 <= b4);
	ck_assert_uint_eq(pci_bar_gpa(&d.pci, 0), b0);
	ck_assert_uint_eq(pci_bar_gpa(&d.pci, 2), b2);
	ck_assert_uint_eq(pci_bar_gpa(&d.pci, 3), PCI_BAR_UNMAPPED);
	/* MMIO reaches the handler with offsets into the BAR */
	ck_assert(mmio_hits(b2 + 0xffffc));
	ck_assert_uint_eq(d.last_off, 0xffffc);
	ck_assert(mmio_hits(b0));
	ck_assert_uint_eq(d.last_off, 0);
	ck_assert(!mmio_hits(b0 + 0x1000) || b0 + 0x1000 == b4 ||
		  b0 + 0x1000 == b2);
	/* the unused BARs and the ROM BAR read 0 and stay 0 */
	cfg_write(1, 0x24, 4, 0xffffffff);
	cfg_write(1, 0x30, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(1, 0x24, 4), 0);
	ck_assert_uint_eq(cfg_read(1, 0x30, 4), 0);
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

START_TEST(test_bar_sizing)
{
	struct tdev d;
	uint32_t o0, o2, o3;
	uint16_t cmd;

	tdev_init(&d, 1);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x4000, 0, tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 2, 0x200000,
					    PCI_BAR_64 | PCI_BAR_PREFETCH,
					    tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	o0 = cfg_read(1, 0x10, 4);
	o2 = cfg_read(1, 0x18, 4);
	o3 = cfg_read(1, 0x1c, 4);
	/* Linux __pci_read_base(): decode off, write ~0, read, restore */
	cmd = (uint16_t)cfg_read(1, 0x04, 2);
	cfg_write(1, 0x04, 2, cmd & ~PCI_CMD_MEM);
	cfg_write(1, 0x10, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(1, 0x10, 4), 0xffffc000);
	cfg_write(1, 0x10, 4, o0);
	cfg_write(1, 0x18, 4, 0xffffffff);
	cfg_write(1, 0x1c, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(1, 0x18, 4), 0xffe0000c);
	ck_assert_uint_eq(cfg_read(1, 0x1c, 4), 0xffffffff);
	cfg_write(1, 0x18, 4, o2);
	cfg_write(1, 0x1c, 4, o3);
	cfg_write(1, 0x04, 2, cmd);
	ck_assert_uint_eq(cfg_read(1, 0x10, 4), o0);
	ck_assert(mmio_hits(o0 & ~0xfu));
	ck_assert(mmio_hits((o2 & ~0xfu) | (uint64_t)o3 << 32));
	/* sizing with decode left on (some guests): the all-ones pattern is
	 * never mapped, and restoring maps the BAR back */
	cfg_write(1, 0x10, 4, 0xffffffff);
	ck_assert(!mmio_hits(0xffffc000));
	ck_assert(!mmio_hits(o0 & ~0xfu));
	ck_assert_uint_eq(pci_bar_gpa(&d.pci, 0), PCI_BAR_UNMAPPED);
	cfg_write(1, 0x10, 4, o0);
	ck_assert(mmio_hits(o0 & ~0xfu));
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

START_TEST(test_bar_move)
{
	struct tdev d;
	uint64_t old, nw = 0xe8000000;

	tdev_init(&d, 1);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0, tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	old = cfg_read(1, 0x10, 4) & ~0xfu;
	ck_assert(mmio_hits(old));
	d.moves = 0;
	cfg_write(1, 0x10, 4, (uint32_t)nw);
	ck_assert(!mmio_hits(old));
	ck_assert(mmio_hits(nw + 0x10));
	ck_assert_uint_eq(d.last_off, 0x10);
	ck_assert_int_eq(d.moves, 1);
	ck_assert_uint_eq(d.moved_bar, 0);
	ck_assert_uint_eq(d.moved_old, old);
	ck_assert_uint_eq(d.moved_new, nw);
	/* rewriting the same address is not a move */
	cfg_write(1, 0x10, 4, (uint32_t)nw);
	ck_assert_int_eq(d.moves, 1);
	/* byte-wise reprogramming (odd but legal) */
	cfg_write(1, 0x13, 1, 0xe9);
	ck_assert(mmio_hits(0xe9000000));
	ck_assert(!mmio_hits(nw));
	ck_assert_int_eq(d.moves, 2);
	ck_assert_uint_eq(d.moved_new, 0xe9000000);
	/* the config write hook saw every write */
	ck_assert_int_eq(d.cfg_writes, 3);
	ck_assert_uint_eq(d.cw_off, 0x13);
	ck_assert_uint_eq(d.cw_len, 1);
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

START_TEST(test_command_mem)
{
	struct tdev d;
	uint64_t b;

	tdev_init(&d, 1);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 1, 0x2000, 0, tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	b = cfg_read(1, 0x14, 4) & ~0xfu;
	d.moves = 0;
	cfg_write(1, 0x04, 2, PCI_CMD_MASTER); /* MEM off */
	ck_assert(!mmio_hits(b));
	ck_assert_int_eq(d.moves, 1);
	ck_assert_uint_eq(d.moved_bar, 1);
	ck_assert_uint_eq(d.moved_old, b);
	ck_assert_uint_eq(d.moved_new, PCI_BAR_UNMAPPED);
	ck_assert_uint_eq(pci_bar_gpa(&d.pci, 1), PCI_BAR_UNMAPPED);
	/* moving while decode is off only changes the register */
	cfg_write(1, 0x14, 4, 0xea000000);
	ck_assert_int_eq(d.moves, 1);
	ck_assert(!mmio_hits(0xea000000));
	cfg_write(1, 0x04, 2, PCI_CMD_MASTER | PCI_CMD_MEM);
	ck_assert(mmio_hits(0xea000000));
	ck_assert(!mmio_hits(b));
	ck_assert_int_eq(d.moves, 2);
	ck_assert_uint_eq(d.moved_old, PCI_BAR_UNMAPPED);
	ck_assert_uint_eq(d.moved_new, 0xea000000);
	/* a byte write to COMMAND's high byte (INTx disable) keeps MEM */
	cfg_write(1, 0x05, 1, 0x04);
	ck_assert(mmio_hits(0xea000000));
	ck_assert_int_eq(d.moves, 2);
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
	ck_assert_int_eq(d.moves, 3); /* unmapped on unregister */
	ck_assert(!mmio_hits(0xea000000));
}
END_TEST

static int other_calls;

static void other_mmio(void *opaque, uint64_t off, void *data, uint32_t len,
		       bool is_write)
{
	other_calls++;
}

START_TEST(test_overlap_rejected)
{
	struct tdev a, b;
	uint64_t ba, bb;

	tdev_init(&a, 1);
	tdev_init(&b, 2);
	ck_assert_int_eq(pci_device_set_bar(&a.pci, 0, 0x1000, 0, tdev_mmio, &a),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&b.pci, 0, 0x1000, 0, tdev_mmio, &b),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &a.pci), 0);
	ck_assert_int_eq(pci_register_device(bus, &b.pci), 0);
	ck_assert_uint_eq(b.pci.slot, 2);
	ba = cfg_read(1, 0x10, 4) & ~0xfu;
	bb = cfg_read(2, 0x10, 4) & ~0xfu;
	ck_assert_uint_ne(ba, bb);
	/* B onto A: refused (B unmapped), A keeps its range */
	b.moves = 0;
	cfg_write(2, 0x10, 4, (uint32_t)ba);
	ck_assert_uint_eq(cfg_read(2, 0x10, 4) & ~0xfu, ba); /* reg holds it */
	ck_assert_uint_eq(pci_bar_gpa(&b.pci, 0), PCI_BAR_UNMAPPED);
	ck_assert_int_eq(b.moves, 1);
	ck_assert_uint_eq(b.moved_new, PCI_BAR_UNMAPPED);
	a.mmio_calls = b.mmio_calls = 0;
	ck_assert(mmio_hits(ba));
	ck_assert_int_eq(a.mmio_calls, 1);
	ck_assert_int_eq(b.mmio_calls, 0);
	ck_assert(!mmio_hits(bb));
	/* retrying is quiet and harmless */
	cfg_write(2, 0x10, 4, (uint32_t)ba);
	/* A moves away: B's pending address becomes mappable */
	cfg_write(1, 0x10, 4, 0xec000000);
	ck_assert_uint_eq(pci_bar_gpa(&a.pci, 0), 0xec000000);
	ck_assert_uint_eq(pci_bar_gpa(&b.pci, 0), ba);
	ck_assert_int_eq(b.moves, 2);
	ck_assert_uint_eq(b.moved_new, ba);
	a.mmio_calls = b.mmio_calls = 0;
	ck_assert(mmio_hits(ba));
	ck_assert_int_eq(b.mmio_calls, 1);
	/* a non-PCI range on the MMIO bus also blocks a BAR */
	ck_assert_int_eq(iobus_register(&mmio, 0xed000000, 0x100, other_mmio,
					NULL),
			 0);
	cfg_write(1, 0x10, 4, 0xed000000);
	ck_assert_uint_eq(pci_bar_gpa(&a.pci, 0), PCI_BAR_UNMAPPED);
	ck_assert(mmio_hits(0xed000000));
	ck_assert_int_eq(other_calls, 1);
	ck_assert_int_eq(pci_unregister_device(bus, &b.pci), 0);
	ck_assert_int_eq(pci_unregister_device(bus, &a.pci), 0);
	ck_assert_int_eq(pci_unregister_device(bus, &a.pci), -ENOENT);
	/* the non-PCI range survived */
	ck_assert(mmio_hits(0xed000000));
	ck_assert_int_eq(iobus_unregister(&mmio, 0xed000000), 0);
}
END_TEST

START_TEST(test_slots_full)
{
	static struct tdev d[PCI_MAX_SLOTS];

	for (unsigned int i = 0; i < PCI_MAX_SLOTS - 1; i++) {
		tdev_init(&d[i], (uint16_t)i);
		ck_assert_int_eq(pci_device_set_bar(&d[i].pci, 0, 0x1000, 0,
						    tdev_mmio, &d[i]),
				 0);
		ck_assert_int_eq(pci_register_device(bus, &d[i].pci), 0);
		ck_assert_uint_eq(d[i].pci.slot, i + 1);
	}
	/* host bridge + 31 devices: the 33rd function 0 has no slot */
	tdev_init(&d[31], 99);
	ck_assert_int_eq(pci_register_device(bus, &d[31].pci), -ENOSPC);
	ck_assert_ptr_null(d[31].pci.bus);
	/* freeing a slot makes room, and the lowest free slot is reused */
	ck_assert_int_eq(pci_unregister_device(bus, &d[9].pci), 0);
	ck_assert_uint_eq(cfg_read(10, 0, 4), 0xffffffff);
	ck_assert_int_eq(pci_register_device(bus, &d[31].pci), 0);
	ck_assert_uint_eq(d[31].pci.slot, 10);
	ck_assert_uint_eq(cfg_read(10, 0, 4), 0x00631af4);
	ck_assert_int_eq(pci_register_device(bus, &d[31].pci), -EINVAL);
	for (unsigned int i = 0; i < PCI_MAX_SLOTS; i++)
		if (i != 9)
			ck_assert_int_eq(pci_unregister_device(bus, &d[i].pci),
					 0);
}
END_TEST

static uint32_t cfg_read_fn(unsigned int slot, unsigned int fn,
			    unsigned int reg, uint32_t len)
{
	uint32_t v = 0;

	set_cfa(cfa(0, slot, fn, reg));
	ck_assert_int_eq(iobus_dispatch(&pio, 0xcfc + (reg & 3), &v, len,
					false),
			 0);
	return v;
}

/* More devices than slots: 8 functions a slot, in registration order
 * (slot-major), function 0 marked multi-function once a slot has more;
 * each function's config space and BARs its own; 248 in all. */
START_TEST(test_multifunction)
{
	static struct tdev d[PCI_MAX_DEVFNS];
	const unsigned int n = (PCI_MAX_SLOTS - 1) * PCI_MAX_FUNCTIONS;

	ck_assert_int_eq(pci_bus_set_functions_per_slot(bus, 0), -EINVAL);
	ck_assert_int_eq(pci_bus_set_functions_per_slot(bus, 9), -EINVAL);
	ck_assert_int_eq(pci_bus_set_functions_per_slot(NULL, 8), -EINVAL);
	ck_assert_int_eq(pci_bus_set_functions_per_slot(bus, 8), 0);
	for (unsigned int i = 0; i < n; i++) {
		tdev_init(&d[i], (uint16_t)i);
		ck_assert_int_eq(pci_device_set_bar(&d[i].pci, 0, 0x1000, 0,
						    tdev_mmio, &d[i]),
				 0);
		ck_assert_int_eq(pci_register_device(bus, &d[i].pci), 0);
		ck_assert_uint_eq(d[i].pci.slot, 1 + i / 8);
		ck_assert_uint_eq(d[i].pci.fn, i % 8);
	}
	tdev_init(&d[n], 999);
	ck_assert_int_eq(pci_register_device(bus, &d[n].pci), -ENOSPC);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int slot = 1 + i / 8, fn = i % 8;
		uint32_t bar = cfg_read_fn(slot, fn, PCI_CFG_BAR0, 4);

		/* device id = i (tdev_init), vendor 0x1af4 */
		ck_assert_uint_eq(cfg_read_fn(slot, fn, 0, 4),
				  (uint32_t)i << 16 | 0x1af4);
		ck_assert_uint_eq(cfg_read_fn(slot, fn, PCI_CFG_HEADER_TYPE, 1),
				  fn == 0 ? PCI_HEADER_MULTI_FUNCTION : 0);
		ck_assert(mmio_hits(bar & ~0xfu));
	}
	/* Unregistered functions vanish; back to one device a slot, function 0
	 * is single-function again. */
	for (unsigned int i = n; i-- > n - 7;)
		ck_assert_int_eq(pci_unregister_device(bus, &d[i].pci), 0);
	ck_assert_uint_eq(cfg_read_fn(31, 1, 0, 4), 0xffffffff);
	for (unsigned int i = 0; i < n - 7; i++)
		ck_assert_int_eq(pci_unregister_device(bus, &d[i].pci), 0);
	ck_assert_int_eq(pci_bus_set_functions_per_slot(bus, 1), 0);
	tdev_init(&d[0], 1);
	ck_assert_int_eq(pci_register_device(bus, &d[0].pci), 0);
	tdev_init(&d[1], 2);
	ck_assert_int_eq(pci_register_device(bus, &d[1].pci), 0);
	ck_assert_uint_eq(d[1].pci.slot, 2);
	ck_assert_uint_eq(d[1].pci.fn, 0);
	ck_assert_uint_eq(cfg_read_fn(1, 0, PCI_CFG_HEADER_TYPE, 1), 0);
	ck_assert_int_eq(pci_unregister_device(bus, &d[0].pci), 0);
	ck_assert_int_eq(pci_unregister_device(bus, &d[1].pci), 0);
}
END_TEST

START_TEST(test_window_full)
{
	struct tdev a, b, c;

	tdev_init(&a, 1);
	tdev_init(&b, 2);
	tdev_init(&c, 3);
	/* the window is 256 MiB: two 128 MiB BARs fill it */
	ck_assert_int_eq(pci_device_set_bar(&a.pci, 0, 0x8000000, 0, tdev_mmio,
					    &a),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&b.pci, 0, 0x8000000, 0, tdev_mmio,
					    &b),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&c.pci, 0, 0x1000, 0, tdev_mmio, &c),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &a.pci), 0);
	ck_assert_int_eq(pci_register_device(bus, &b.pci), 0);
	ck_assert_int_eq(pci_register_device(bus, &c.pci), -ENOSPC);
	ck_assert_uint_eq(cfg_read(3, 0, 4), 0xffffffff);
	ck_assert_int_eq(pci_unregister_device(bus, &a.pci), 0);
	/* first fit reuses the freed space */
	ck_assert_int_eq(pci_register_device(bus, &c.pci), 0);
	ck_assert_uint_eq(pci_bar_gpa(&c.pci, 0), WIN_BASE);
	ck_assert_int_eq(pci_unregister_device(bus, &c.pci), 0);
	ck_assert_int_eq(pci_unregister_device(bus, &b.pci), 0);
}
END_TEST

START_TEST(test_mmio64_window)
{
	struct tdev d;
	uint64_t gpa;

	ck_assert_int_eq(pci_bus_set_mmio64_window(bus, 1ull << 40, 1ull << 36),
			 0);
	ck_assert_int_eq(pci_bus_set_mmio64_window(bus, UINT64_MAX, 2),
			 -EINVAL);
	tdev_init(&d, 1);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0, tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 2, 1ull << 33,
					    PCI_BAR_64 | PCI_BAR_PREFETCH,
					    tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	gpa = pci_bar_gpa(&d.pci, 2);
	ck_assert_uint_eq(gpa, 1ull << 40);
	ck_assert_uint_eq(cfg_read(1, 0x1c, 4), 1u << 8);
	ck_assert(pci_bar_gpa(&d.pci, 0) < (1ull << 32));
	ck_assert(mmio_hits(gpa + (1ull << 33) - 4));
	/* an 8 GiB BAR: the low dword has no writable address bits */
	cfg_write(1, 0x18, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(1, 0x18, 4), 0x0000000c);
	cfg_write(1, 0x1c, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(1, 0x1c, 4), 0xfffffffe);
	ck_assert(!mmio_hits(gpa));
	cfg_write(1, 0x1c, 4, 1u << 8);
	ck_assert(mmio_hits(gpa));
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

START_TEST(test_set_bar_errors)
{
	struct tdev d;

	tdev_init(&d, 1);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 6, 0x1000, 0, tdev_mmio, &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 5, 0x1000, PCI_BAR_64,
					    tdev_mmio, &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1800, 0, tdev_mmio, &d),
			 -EINVAL); /* not a power of two */
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 8, 0, tdev_mmio, &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 1ull << 32, 0, tdev_mmio,
					    &d),
			 -EINVAL); /* too big for 32-bit */
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0, NULL, &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0x80, tdev_mmio,
					    &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, PCI_BAR_64,
					    tdev_mmio, &d),
			 0);
	/* BAR1 is the upper half now; BAR0 is taken */
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 1, 0x1000, 0, tdev_mmio, &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0, tdev_mmio, &d),
			 -EINVAL);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 2, 0x1000, 0, tdev_mmio, &d),
			 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 3, 0x1000, 0, tdev_mmio, &d),
			 -EINVAL); /* registered */
	ck_assert_int_eq(pci_register_device(bus, NULL), -EINVAL);
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

START_TEST(test_capabilities)
{
	struct tdev d;
	unsigned int o1, o2, o3, ptr, n = 0;
	uint8_t ids[8];

	tdev_init(&d, 1);
	ck_assert_int_eq(pci_add_capability(&d.pci, 0x09, 1, &o1), -EINVAL);
	ck_assert_int_eq(pci_add_capability(&d.pci, 0x09, 16, &o1), 0);
	ck_assert_int_eq(pci_add_capability(&d.pci, 0x11, 12, &o2), 0);
	ck_assert_int_eq(pci_add_capability(&d.pci, 0x09, 19, &o3), 0);
	ck_assert_uint_eq(o1, 0x40 + 0x04 * 0); /* after the header */
	ck_assert_uint_eq(o1, 0x40);
	ck_assert_uint_eq(o2, 0x50);
	ck_assert_uint_eq(o3, 0x5c);
	pci_cfg_set8(&d.pci, o3 + 3, 0x77); /* body filled by the owner */
	/* room is finite */
	ck_assert_int_eq(pci_add_capability(&d.pci, 0x09, 200, NULL), -ENOSPC);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	ck_assert_int_eq(pci_add_capability(&d.pci, 0x09, 4, NULL), -EINVAL);
	/* status bit 4 and the list, as the guest walks it */
	ck_assert(cfg_read(1, 0x06, 2) & 0x10);
	ptr = cfg_read(1, 0x34, 1);
	while (ptr && n < 8) {
		ck_assert_uint_eq(ptr & 3, 0);
		ids[n++] = (uint8_t)cfg_read(1, ptr, 1);
		ptr = cfg_read(1, ptr + 1, 1);
	}
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ids[0], 0x09);
	ck_assert_uint_eq(ids[1], 0x11);
	ck_assert_uint_eq(ids[2], 0x09);
	ck_assert_uint_eq(cfg_read(1, o3 + 3, 1), 0x77);
	/* capabilities are read-only unless the owner sets write masks */
	cfg_write(1, o1, 4, 0xffffffff);
	ck_assert_uint_eq(cfg_read(1, o1, 2), 0x5009);
	/* a device without capabilities has bit 4 clear */
	ck_assert_uint_eq(cfg_read(0, 0x06, 2) & 0x10, 0);
	ck_assert_uint_eq(cfg_read(0, 0x34, 1), 0);
	/* the cfg_read hook can override device-specific registers */
	ck_assert_uint_eq(cfg_read(1, 0x40, 4), 0xdeadbeef);
	ck_assert_uint_eq(cfg_read(1, 0x40, 1), 0x09);
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

/* Interrupt line is writable scratch, pin is the device's. */
START_TEST(test_interrupt_regs)
{
	struct tdev d;

	tdev_init(&d, 1);
	pci_cfg_set8(&d.pci, PCI_CFG_INT_PIN, 1);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);
	cfg_write(1, 0x3c, 2, 0xff0b);
	ck_assert_uint_eq(cfg_read(1, 0x3c, 2), 0x010b);
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

/* ---- ECAM: the same configuration space through MMIO ---- */

#define ECAM_BASE 0x30000000ull

static uint32_t ecam_rd(unsigned int devfn, unsigned int reg, uint32_t len)
{
	uint32_t v = 0;

	ck_assert_int_eq(iobus_dispatch(&mmio, ECAM_BASE + (devfn << 12) + reg,
					&v, len, false), 0);
	return v;
}

static void ecam_wr(unsigned int devfn, unsigned int reg, uint32_t len,
		    uint32_t v)
{
	ck_assert_int_eq(iobus_dispatch(&mmio, ECAM_BASE + (devfn << 12) + reg,
					&v, len, true), 0);
}

START_TEST(test_ecam)
{
	struct tdev d;
	uint64_t b0, v8 = 0;

	ck_assert_int_eq(pci_bus_set_ecam(bus, ECAM_BASE), 0);
	ck_assert_int_eq(pci_bus_set_ecam(bus, ECAM_BASE), -EINVAL); /* once */
	tdev_init(&d, 0x1042);
	ck_assert_int_eq(pci_device_set_bar(&d.pci, 0, 0x1000, 0, tdev_mmio, &d), 0);
	ck_assert_int_eq(pci_register_device(bus, &d.pci), 0);

	/* Host bridge and device identity, as through 0xCF8/0xCFC. */
	ck_assert_uint_eq(ecam_rd(0, 0x00, 4), cfg_read(0, 0x00, 4));
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0x00, 4), 0x10421af4);
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0x02, 2), 0x1042);
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0x40, 4), 0xdeadbeef);
	/* Empty functions and slots: master abort. */
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 1), 0x00, 4), 0xffffffff);
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(31, 7), 0x00, 2), 0xffff);
	/* Extended space of a conventional function: 0, writes dropped. */
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0x100, 4), 0);
	ecam_wr(PCI_DEVFN(1, 0), 0xffc, 4, 0x12345678);
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0xffc, 4), 0);
	/* Not a configuration cycle: 8 bytes, or across a dword. */
	ck_assert_int_eq(iobus_dispatch(&mmio, ECAM_BASE + (PCI_DEVFN(1, 0) << 12),
					&v8, 8, false), 0);
	ck_assert_uint_eq(v8, UINT64_MAX);
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0x03, 2), 0xffff);

	/* A BAR move written through ECAM: the write runs on the MMIO bus
	 * and maps the BAR on that same bus (iobus_register_unlocked()). */
	b0 = ecam_rd(PCI_DEVFN(1, 0), 0x10, 4) & ~0xfu;
	ck_assert(mmio_hits(b0));
	ecam_wr(PCI_DEVFN(1, 0), 0x10, 4, (uint32_t)(b0 + 0x10000));
	ck_assert_uint_eq(ecam_rd(PCI_DEVFN(1, 0), 0x10, 4) & ~0xfu, b0 + 0x10000);
	ck_assert(!mmio_hits(b0));
	ck_assert(mmio_hits(b0 + 0x10000));
	ck_assert_uint_eq(d.moved_new, b0 + 0x10000);
	/* Decode off and on again through ECAM, seen by conf1 too. */
	ecam_wr(PCI_DEVFN(1, 0), PCI_CFG_COMMAND, 2, 0);
	ck_assert(!mmio_hits(b0 + 0x10000));
	ck_assert_uint_eq(cfg_read(1, PCI_CFG_COMMAND, 2) & PCI_CMD_MEM, 0);
	ecam_wr(PCI_DEVFN(1, 0), PCI_CFG_COMMAND, 2, PCI_CMD_MEM);
	ck_assert(mmio_hits(b0 + 0x10000));
	ck_assert_int_eq(pci_unregister_device(bus, &d.pci), 0);
}
END_TEST

START_TEST(test_ecam_errors)
{
	/* Not 1 MiB aligned, wrapping, over the BAR window, over a range. */
	ck_assert_int_eq(pci_bus_set_ecam(bus, ECAM_BASE + 0x1000), -EINVAL);
	ck_assert_int_eq(pci_bus_set_ecam(bus, UINT64_MAX & ~(PCI_ECAM_BUS_SIZE - 1)),
			 -EINVAL);
	ck_assert_int_eq(pci_bus_set_ecam(bus, WIN_BASE), -EINVAL);
	ck_assert_int_eq(pci_bus_set_ecam(NULL, ECAM_BASE), -EINVAL);
	ck_assert_int_eq(iobus_register(&mmio, ECAM_BASE + 0x800, 4, tdev_mmio, NULL), 0);
	ck_assert_int_eq(pci_bus_set_ecam(bus, ECAM_BASE), -EEXIST);
	ck_assert_int_eq(iobus_unregister(&mmio, ECAM_BASE + 0x800), 0);
	ck_assert_int_eq(pci_bus_set_ecam(bus, ECAM_BASE), 0);
}
END_TEST

static Suite *pci_suite(void)
{
	Suite *s = suite_create("pci");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_host_bridge);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_empty_and_invalid);
	tcase_add_test(tc, test_byte_word_access);
	tcase_add_test(tc, test_register_and_bars);
	tcase_add_test(tc, test_bar_sizing);
	tcase_add_test(tc, test_bar_move);
	tcase_add_test(tc, test_command_mem);
	tcase_add_test(tc, test_overlap_rejected);
	tcase_add_test(tc, test_slots_full);
	tcase_add_test(tc, test_multifunction);
	tcase_add_test(tc, test_window_full);
	tcase_add_test(tc, test_mmio64_window);
	tcase_add_test(tc, test_set_bar_errors);
	tcase_add_test(tc, test_capabilities);
	tcase_add_test(tc, test_interrupt_regs);
	tcase_add_test(tc, test_ecam);
	tcase_add_test(tc, test_ecam_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pci_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
