/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the PCI bus itself (devices/pci/pci.c) with many devices,
 * where fuzz_virtio_pci has one virtio function in slot 1: up to 24
 * devices of up to six BARs each (32- and 64-bit, prefetchable, 16 bytes
 * to 128 MiB), capabilities, packed 1 to 8 functions per slot
 * (multi-function slots), a 32-bit window from 1 to 128 MiB (full windows,
 * failed registrations), optionally a 64-bit window, an ECAM window and a
 * foreign MMIO range in the 32-bit window.  The guest side: configuration
 * mechanism #1 at 0xCF8-0xCFF (CONFIG_ADDRESS, CONFIG_DATA at every byte,
 * 0xCF9's reset control, non-dword accesses), ECAM accesses of 1 to 8
 * bytes, Linux's BAR sizing protocol, BAR moves onto each other, onto the
 * foreign range or anywhere, COMMAND.MEM toggles and MMIO accesses at BAR
 * addresses.  The devices are fakes whose callbacks check the bus's
 * contract.
 *
 * Input: [setup u8][ndev u8] then per device [bars u8 x 6][ncaps u8]
 * [cap size u8 x ncaps], then action records [action u8][fields] (fuzz.h).
 *
 * Checked beyond the sanitizers (abort()):
 *  - bar_moved() reports every move with the old address the device last
 *    heard of, and the new one is where the BAR is mapped, a range no other
 *    BAR's owner believes mapped or parked there; bar_range_taken()
 *    comes at most once per parking, for a BAR whose owner last heard it
 *    is unmapped, with the address where it was last mapped; callbacks
 *    see offsets and lengths inside one dword of the 256 bytes; BAR
 *    handlers see offsets inside the BAR;
 *  - after every action, each BAR is mapped exactly where its registers
 *    and COMMAND.MEM say, or unmapped because that range overlaps another
 *    range on the MMIO bus (never for no reason), and an access at either
 *    end of a mapped BAR reaches that BAR;
 *  - what 0xCF8-0xCFF read back is what a model of the host bridge
 *    predicts: CONFIG_ADDRESS, RST_CNT, all-ones elsewhere and for absent
 *    functions, and a function's configuration bytes for CONFIG_DATA; a
 *    configuration write changes exactly the bytes its write mask allows;
 *    the IDs and class never change; the reset handler runs once per
 *    RST_CPU write;
 *  - function 0 of a slot with more functions says multi-function.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "iobus.h"
#include "pci/pci.h"

#define MAX_DEVS 24
#define MAX_ACTIONS 512
#define WIN32_BASE 0xc0000000ull
#define WIN64_BASE (1ull << 36)
#define WIN64_SIZE (1ull << 32)
#define ECAM_BASE 0xb0000000ull
#define FOREIGN_LEN 0x1000u

struct fdev {
	struct pci_device pci;
	struct fz *f;
	bool registered;
	/* What the device heard through bar_moved() / bar_range_taken(). */
	uint64_t at[PCI_NUM_BARS];
	uint64_t parked[PCI_NUM_BARS];
	uint8_t ids[12]; /* config bytes 0x00-0x0b as registered (IDs, class) */
};

struct bar_ref {
	struct fdev *d;
	unsigned int bar;
};

struct fz {
	struct fuzz_in in;
	struct iobus pio, mmio;
	struct pci_bus *bus;
	struct fdev devs[MAX_DEVS];
	struct bar_ref refs[MAX_DEVS][PCI_NUM_BARS];
	unsigned int ndev;
	bool ecam, foreign;
	uint64_t win32_size;
	/* The host bridge's registers, as the model sees them. */
	uint32_t cfa;
	uint8_t rst;
	unsigned int resets, expected_resets;
	/* The last BAR access that reached a handler. */
	const struct bar_ref *hit;
	uint64_t hit_off;
};

static void fail(const char *what, const struct fdev *d, int bar)
{
	fprintf(stderr, "fuzz_pci_bus: %s (device %02x.%u, BAR %d)\n", what,
		d ? d->pci.slot : 0, d ? d->pci.fn : 0, bar);
	abort();
}

/* ---- the fake devices' callbacks ----------------------------------------- */

static void check_cfg_range(const struct pci_device *dev, uint32_t off,
			    uint32_t len)
{
	if (!len || len > 4 || off + len > PCI_CFG_SIZE || (off & 3) + len > 4)
		fail("config callback outside one dword", dev->priv, -1);
}

static void dev_cfg_write(struct pci_device *dev, uint32_t off, uint32_t len)
{
	check_cfg_range(dev, off, len);
}

static void dev_cfg_read(struct pci_device *dev, uint32_t off, uint32_t len,
			 uint32_t *val)
{
	(void)val; /* left as is: the model predicts the plain bytes */
	check_cfg_range(dev, off, len);
}

static bool ranges_meet(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static void dev_bar_moved(struct pci_device *dev, unsigned int bar,
			  uint64_t old_gpa, uint64_t new_gpa)
{
	struct fdev *d = dev->priv;

	if (bar >= PCI_NUM_BARS || !dev->bars[bar].size || dev->bars[bar].upper)
		fail("bar_moved for no BAR", d, (int)bar);
	if (old_gpa != d->at[bar])
		fail("bar_moved from where the BAR was not", d, (int)bar);
	if (new_gpa != dev->bars[bar].mapped_gpa || old_gpa == new_gpa)
		fail("bar_moved to where the BAR is not, or nowhere new", d, (int)bar);
	/* No two owners ever believe they decode one range, nor that one
	 * holds what they parked (pci.h): an owner's ioeventfds would
	 * collide with or catch the other's accesses. */
	for (unsigned int k = 0; new_gpa != PCI_BAR_UNMAPPED && k < d->f->ndev; k++) {
		const struct fdev *o = &d->f->devs[k];

		for (unsigned int i = 0; i < PCI_NUM_BARS; i++) {
			uint64_t osz = o->pci.bars[i].size;

			if ((o == d && i == bar) || !osz)
				continue;
			if ((o->at[i] != PCI_BAR_UNMAPPED &&
			     ranges_meet(new_gpa, dev->bars[bar].size, o->at[i], osz)) ||
			    (o->parked[i] != PCI_BAR_UNMAPPED &&
			     ranges_meet(new_gpa, dev->bars[bar].size, o->parked[i], osz)))
				fail("bar_moved onto a range another BAR's owner still holds",
				     d, (int)bar);
		}
	}
	if (new_gpa == PCI_BAR_UNMAPPED)
		d->parked[bar] = old_gpa;
	else
		d->parked[bar] = PCI_BAR_UNMAPPED;
	d->at[bar] = new_gpa;
}

static void dev_bar_range_taken(struct pci_device *dev, unsigned int bar,
				uint64_t gpa)
{
	struct fdev *d = dev->priv;

	if (bar >= PCI_NUM_BARS || d->parked[bar] == PCI_BAR_UNMAPPED ||
	    d->parked[bar] != gpa || d->at[bar] != PCI_BAR_UNMAPPED)
		fail("bar_range_taken for a BAR not parked there", d, (int)bar);
	d->parked[bar] = PCI_BAR_UNMAPPED;
}

static const struct pci_device_ops dev_ops = {
	.cfg_write = dev_cfg_write,
	.cfg_read = dev_cfg_read,
	.bar_moved = dev_bar_moved,
	.bar_range_taken = dev_bar_range_taken,
};

static void bar_io(void *opaque, uint64_t off, void *data, uint32_t len,
		   bool is_write)
{
	const struct bar_ref *r = opaque;

	if (off + len > r->d->pci.bars[r->bar].size)
		fail("BAR access past its end", r->d, (int)r->bar);
	if (!is_write)
		memset(data, 0x5a, len);
	r->d->f->hit = r;
	r->d->f->hit_off = off;
}

static void foreign_io(void *opaque, uint64_t off, void *data, uint32_t len,
		       bool is_write)
{
	(void)opaque;
	(void)off;
	if (!is_write)
		memset(data, 0, len);
}

static void reset_handler(void *opaque)
{
	((struct fz *)opaque)->resets++;
}

/* ---- the model and the checks --------------------------------------------- */

static struct fdev *dev_at(struct fz *f, unsigned int devfn)
{
	for (unsigned int i = 0; i < f->ndev; i++) {
		struct fdev *d = &f->devs[i];

		if (d->registered && PCI_DEVFN(d->pci.slot, d->pci.fn) == devfn)
			return d;
	}
	return NULL;
}

/* The address BAR @i decodes to, from the registers, or UNMAPPED. */
static uint64_t bar_wanted(const struct pci_device *dev, unsigned int i)
{
	const struct pci_bar *b = &dev->bars[i];
	uint32_t lo = pci_cfg_get32(dev, PCI_CFG_BAR0 + 4 * i) & ~0xfu;
	uint32_t lo_mask = (uint32_t)~(b->size - 1) & ~0xfu;
	uint64_t a = lo;

	if (!(pci_cfg_get16(dev, PCI_CFG_COMMAND) & PCI_CMD_MEM))
		return PCI_BAR_UNMAPPED;
	if (lo_mask && lo == lo_mask)
		return PCI_BAR_UNMAPPED; /* mid-sizing */
	if (b->flags & PCI_BAR_64) {
		uint32_t hi = pci_cfg_get32(dev, PCI_CFG_BAR0 + 4 * i + 4);

		if (hi == 0xffffffffu)
			return PCI_BAR_UNMAPPED;
		a |= (uint64_t)hi << 32;
	}
	if (!a || a + b->size < a)
		return PCI_BAR_UNMAPPED;
	return a;
}

static bool overlaps_any(struct fz *f, uint64_t a, uint64_t len)
{
	for (unsigned int i = 0; i < f->mmio.nr; i++) {
		const struct iobus_range *r = &f->mmio.ranges[i];

		if (ranges_meet(a, len, r->base, r->len))
			return true;
	}
	return false;
}

static void check_bars(struct fz *f)
{
	for (unsigned int k = 0; k < f->ndev; k++) {
		struct fdev *d = &f->devs[k];

		if (!d->registered)
			continue;
		if (memcmp(d->pci.cfg, d->ids, 4) || memcmp(d->pci.cfg + 8, d->ids + 8, 4))
			fail("IDs or class changed", d, -1);
		for (unsigned int i = 0; i < PCI_NUM_BARS; i++) {
			const struct pci_bar *b = &d->pci.bars[i];
			uint64_t want, at = b->mapped_gpa, v;

			if (!b->size)
				continue;
			want = bar_wanted(&d->pci, i);
			if (d->at[i] != at)
				fail("bar_moved missed a move", d, (int)i);
			if (at != PCI_BAR_UNMAPPED && at != want)
				fail("BAR mapped where its registers do not say", d, (int)i);
			if (at == PCI_BAR_UNMAPPED && want != PCI_BAR_UNMAPPED &&
			    !overlaps_any(f, want, b->size))
				fail("BAR left unmapped over a free range", d, (int)i);
			if (at == PCI_BAR_UNMAPPED)
				continue;
			for (int end = 0; end < 2; end++) {
				uint64_t off = end ? b->size - 1 : 0;

				f->hit = NULL;
				if (iobus_dispatch(&f->mmio, at + off, &v, 1, false) ||
				    !f->hit || f->hit->d != d || f->hit->bar != i ||
				    f->hit_off != off)
					fail("a mapped BAR's address does not reach it", d,
					     (int)i);
			}
		}
	}
	for (unsigned int k = 0; k < f->ndev; k++) {
		struct fdev *d = &f->devs[k], *fn0;

		if (!d->registered || !d->pci.fn)
			continue;
		fn0 = dev_at(f, PCI_DEVFN(d->pci.slot, 0));
		if (!fn0 || !(pci_cfg_get8(&fn0->pci, PCI_CFG_HEADER_TYPE) &
			      PCI_HEADER_MULTI_FUNCTION))
			fail("function 0 of a multi-function slot", d, -1);
	}
}

/*
 * One access in 0xCF8-0xCFF (@off 0..7) with the model's prediction: what a
 * read returns, what a configuration write leaves.
 */
static void pio_access(struct fz *f, unsigned int off, uint32_t len,
		       bool write, uint32_t val)
{
	uint8_t data[4], before[PCI_CFG_SIZE], want[4];
	struct fdev *d = NULL;
	unsigned int reg = 0;
	bool cfg = false;

	memcpy(data, &val, 4);
	if (off >= 4) {
		unsigned int bus = (f->cfa >> 16) & 0xff, devfn = (f->cfa >> 8) & 0xff;

		cfg = true;
		reg = (f->cfa & 0xfc) + off - 4;
		if ((f->cfa & 0x80000000u) && !bus)
			d = devfn ? dev_at(f, devfn) : NULL;
		/* devfn 0 is the host bridge: not modelled, not checked. */
		if (!devfn && (f->cfa & 0x80000000u) && !bus)
			cfg = false;
		if (d)
			memcpy(before, d->pci.cfg, sizeof(before));
	}
	if (iobus_dispatch(&f->pio, 0xcf8 + off, data, len, write)) {
		if (off + len <= 8)
			fail("0xCF8-0xCFF refused an access inside it", NULL, -1);
		return;
	}
	if (off == 0 && len == 4) {
		if (write)
			f->cfa = val & 0x80fffffcu;
		else if (memcmp(data, &f->cfa, 4))
			fail("CONFIG_ADDRESS reads back wrong", NULL, -1);
		return;
	}
	if (off == 1 && len == 1) {
		if (write) {
			f->rst = data[0] & 0x0a;
			if (data[0] & 0x04)
				f->expected_resets++;
		} else if (data[0] != f->rst) {
			fail("RST_CNT reads back wrong", NULL, -1);
		}
		return;
	}
	if (off < 4) {
		if (!write && memcmp(data, "\xff\xff\xff\xff", len))
			fail("a non-dword access at 0xCF8 read something", NULL, -1);
		return;
	}
	if (!cfg)
		return;
	if (!d) {
		if (!write && memcmp(data, "\xff\xff\xff\xff", len))
			fail("an absent function read something", NULL, -1);
		return;
	}
	if (!write) {
		if (memcmp(data, before + reg, len))
			fail("CONFIG_DATA read is not the function's bytes", d, -1);
		return;
	}
	for (uint32_t i = 0; i < len; i++) {
		uint8_t m = d->pci.wmask[reg + i];

		want[i] = (uint8_t)((before[reg + i] & ~m) | (data[i] & m));
	}
	if (memcmp(d->pci.cfg + reg, want, len) ||
	    memcmp(d->pci.cfg, before, reg) ||
	    memcmp(d->pci.cfg + reg + len, before + reg + len,
		   PCI_CFG_SIZE - reg - len))
		fail("a configuration write changed what its mask does not allow", d,
		     -1);
}

/* ---- actions ---------------------------------------------------------------- */

enum {
	A_CFG,	    /* CONFIG_ADDRESS for a function, then CONFIG_DATA */
	A_PIO_RAW,  /* any access in 0xCF8-0xCFF */
	A_ECAM,	    /* ECAM access, 1 to 8 bytes */
	A_BAR_SIZE, /* Linux's sizing: all-ones, read, restore */
	A_BAR_MOVE,
	A_CMD,	    /* COMMAND (MEM on/off) */
	A_MMIO,	    /* an access at a BAR's (last) address */
	A_NR,
};

static const uint32_t lens[] = { 1, 2, 4, 4 };

/* A registered device (mostly) or NULL, and its devfn. */
static struct fdev *pick(struct fz *f, unsigned int *devfn)
{
	uint8_t sel = fi_u8(&f->in);

	if (sel < 0xf0 && f->ndev) {
		struct fdev *d = &f->devs[sel % f->ndev];

		if (d->registered) {
			*devfn = PCI_DEVFN(d->pci.slot, d->pci.fn);
			return d;
		}
	}
	*devfn = fi_u8(&f->in);
	return dev_at(f, *devfn);
}

static void set_cfa(struct fz *f, unsigned int devfn, unsigned int reg)
{
	pio_access(f, 0, 4, true, 0x80000000u | devfn << 8 | (reg & 0xfc));
}

/* A dword configuration access to @devfn through 0xCF8/0xCFC. */
static uint32_t cfg32(struct fz *f, unsigned int devfn, unsigned int reg,
		      bool write, uint32_t v)
{
	uint32_t data = v;

	set_cfa(f, devfn, reg);
	if (!write) {
		if (iobus_dispatch(&f->pio, 0xcfc, &data, 4, false))
			fail("0xCFC refused a read", NULL, -1);
		return data;
	}
	pio_access(f, 4, 4, true, v);
	return v;
}

static void do_cfg(struct fz *f)
{
	unsigned int devfn, reg = fi_u8(&f->in);
	uint8_t m = fi_u8(&f->in);
	uint32_t len = lens[m & 3], v = fi_u32(&f->in), byte;

	(void)pick(f, &devfn);
	byte = len == 4 ? 0 : len == 2 ? reg & 2 : reg & 3;
	set_cfa(f, devfn, reg);
	pio_access(f, 4 + byte, len, m & 4, v);
}

static void do_pio_raw(struct fz *f)
{
	uint8_t off = fi_u8(&f->in), m = fi_u8(&f->in);
	uint32_t v = fi_u32(&f->in);

	pio_access(f, off & 7, lens[m & 3], m & 4, m & 8 ? v : v & 0x80fffffcu);
}

static void do_ecam(struct fz *f)
{
	static const uint32_t elens[] = { 1, 2, 4, 8 };
	unsigned int devfn;
	uint16_t reg = fi_u16(&f->in) & 0xfff;
	uint8_t m = fi_u8(&f->in);
	uint64_t v = fi_u64(&f->in);
	uint32_t len = elens[m & 3];

	(void)pick(f, &devfn);
	if (!f->ecam)
		return;
	if (reg > 4096 - len)
		reg = (uint16_t)(4096 - len);
	(void)iobus_dispatch(&f->mmio, ECAM_BASE + ((uint64_t)devfn << 12) + reg,
			     &v, len, m & 4);
}

/* A BAR of a registered device (its lower half for a 64-bit one). */
static bool pick_bar(struct fz *f, struct fdev **dp, unsigned int *bar,
		     unsigned int *devfn)
{
	struct fdev *d = pick(f, devfn);
	uint8_t b = fi_u8(&f->in);

	if (!d)
		return false;
	for (unsigned int i = 0; i < PCI_NUM_BARS; i++) {
		unsigned int k = (b + i) % PCI_NUM_BARS;

		if (d->pci.bars[k].size) {
			*dp = d;
			*bar = k;
			return true;
		}
	}
	return false;
}

static void do_bar_size(struct fz *f)
{
	struct fdev *d;
	unsigned int bar, devfn, reg;
	uint8_t m = fi_u8(&f->in);
	uint32_t cmd, lo, hi = 0;
	bool is64;

	if (!pick_bar(f, &d, &bar, &devfn))
		return;
	reg = PCI_CFG_BAR0 + 4 * bar;
	is64 = d->pci.bars[bar].flags & PCI_BAR_64;
	cmd = cfg32(f, devfn, PCI_CFG_COMMAND, false, 0);
	if (m & 1) /* Linux turns decoding off around it (pci_read_bases) */
		cfg32(f, devfn, PCI_CFG_COMMAND, true, cmd & ~(uint32_t)PCI_CMD_MEM);
	lo = cfg32(f, devfn, reg, false, 0);
	cfg32(f, devfn, reg, true, 0xffffffffu);
	if (is64 && !(m & 2)) {
		hi = cfg32(f, devfn, reg + 4, false, 0);
		cfg32(f, devfn, reg + 4, true, 0xffffffffu);
	}
	check_bars(f); /* sized with decoding on: unmapped meanwhile */
	(void)cfg32(f, devfn, reg, false, 0);
	if (m & 4)
		return; /* never restored */
	cfg32(f, devfn, reg, true, lo);
	if (is64 && !(m & 2))
		cfg32(f, devfn, reg + 4, true, hi);
	if (m & 1)
		cfg32(f, devfn, PCI_CFG_COMMAND, true, cmd);
}

static void do_bar_move(struct fz *f)
{
	struct fdev *d;
	unsigned int bar, devfn;
	uint8_t m = fi_u8(&f->in);
	uint32_t v = fi_u32(&f->in);
	uint64_t size, a;

	if (!pick_bar(f, &d, &bar, &devfn))
		return;
	size = d->pci.bars[bar].size;
	switch (m & 3) {
	case 0: /* somewhere in the 32-bit window, aligned */
		a = WIN32_BASE + (v * size) % f->win32_size;
		break;
	case 1: { /* onto another BAR (a swap, or an overlap) */
		const struct fdev *o = &f->devs[v % f->ndev];
		unsigned int ob = (v >> 8) % PCI_NUM_BARS;

		a = o->registered ? bar_wanted(&o->pci, ob) : 0;
		if (a == PCI_BAR_UNMAPPED || !o->pci.bars[ob].size)
			a = WIN32_BASE;
		break;
	}
	case 2: /* onto the foreign range, or the ECAM window */
		a = v & 1 ? ECAM_BASE : WIN32_BASE + f->win32_size / 2;
		break;
	default: /* anything */
		a = (uint64_t)fi_u32(&f->in) << 32 | v;
		break;
	}
	cfg32(f, devfn, PCI_CFG_BAR0 + 4 * bar, true, (uint32_t)a);
	if (d->pci.bars[bar].flags & PCI_BAR_64 && !(m & 4))
		cfg32(f, devfn, PCI_CFG_BAR0 + 4 * bar + 4, true, (uint32_t)(a >> 32));
}

static void do_cmd(struct fz *f)
{
	unsigned int devfn;
	uint16_t v = fi_u16(&f->in);

	(void)pick(f, &devfn);
	set_cfa(f, devfn, PCI_CFG_COMMAND);
	pio_access(f, 4, 2, true, v);
}

static void do_mmio(struct fz *f)
{
	static const uint32_t mlens[] = { 1, 2, 4, 8 };
	struct fdev *d;
	unsigned int bar, devfn;
	uint8_t m = fi_u8(&f->in);
	uint32_t off = fi_u32(&f->in);
	uint64_t v = 0, a;

	if (!pick_bar(f, &d, &bar, &devfn))
		return;
	a = d->pci.bars[bar].mapped_gpa;
	if (a == PCI_BAR_UNMAPPED)
		a = bar_wanted(&d->pci, bar);
	if (a == PCI_BAR_UNMAPPED)
		return;
	(void)iobus_dispatch(&f->mmio, a + off % (d->pci.bars[bar].size + 8),
			     &v, mlens[m & 3], m & 4);
}

/* ---- set-up ------------------------------------------------------------------- */

static void add_device(struct fz *f, struct fdev *d, unsigned int idx)
{
	uint8_t ncaps;

	pci_device_init(&d->pci, 0x1af4, (uint16_t)(0x1000 + idx), 0x018000,
			(uint8_t)idx, &dev_ops, d);
	d->f = f;
	for (unsigned int i = 0; i < PCI_NUM_BARS; i++) {
		uint8_t b = fi_u8(&f->in);
		unsigned int flags = (b & 0x40 ? PCI_BAR_64 : 0) |
				     (b & 0x80 ? PCI_BAR_PREFETCH : 0);

		d->at[i] = d->parked[i] = PCI_BAR_UNMAPPED;
		f->refs[idx][i] = (struct bar_ref){ d, i };
		if (!(b & 0x20))
			continue; /* no BAR here (refused if the slot is taken) */
		(void)pci_device_set_bar(&d->pci, i, 16ull << (b & 0x1f) % 24, flags,
					 bar_io, &f->refs[idx][i]);
	}
	ncaps = fi_u8(&f->in) % 4;
	for (unsigned int i = 0; i < ncaps; i++) {
		unsigned int off, size = 2 + fi_u8(&f->in) % 64;

		if (pci_add_capability(&d->pci, PCI_CAPID_VNDR, size, &off))
			break;
		pci_cfg_set8(&d->pci, off + 2, (uint8_t)size);
		/* A writable body, as a device's own registers. */
		pci_cfg_set_wmask(&d->pci, off + 2, size > 2 ? 2 : 0, 0xffff);
	}
	d->registered = pci_register_device(f->bus, &d->pci) == 0;
	memcpy(d->ids, d->pci.cfg, sizeof(d->ids));
}

int fuzz_pci_bus(const uint8_t *data, size_t size)
{
	struct fz *f = calloc(1, sizeof(*f));
	uint8_t setup;

	fuzz_quiet_logs();
	if (!f)
		abort();
	f->in = (struct fuzz_in){ data, size };
	setup = fi_u8(&f->in);
	f->ndev = 1 + fi_u8(&f->in) % MAX_DEVS;
	f->win32_size = (1ull << 20) << ((setup >> 5) & 7);
	f->ecam = setup & 0x10;
	f->foreign = setup & 0x08;
	if (iobus_init(&f->pio, "pio") || iobus_init(&f->mmio, "mmio") ||
	    pci_bus_create(&f->pio, &f->mmio, WIN32_BASE, f->win32_size, &f->bus) ||
	    pci_bus_set_functions_per_slot(f->bus, 1 + (setup & 7)))
		abort();
	pci_bus_set_reset_handler(f->bus, reset_handler, f);
	if (f->ecam && pci_bus_set_ecam(f->bus, ECAM_BASE))
		abort();
	if ((setup & 0x80) && pci_bus_set_mmio64_window(f->bus, WIN64_BASE, WIN64_SIZE))
		abort();
	/* Something else in the window (what an IOAPIC is in a real one). */
	if (f->foreign && iobus_register(&f->mmio, WIN32_BASE + f->win32_size / 2,
					 FOREIGN_LEN, foreign_io, NULL))
		abort();
	for (unsigned int i = 0; i < f->ndev; i++)
		add_device(f, &f->devs[i], i);
	check_bars(f);

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f->in); i++) {
		switch (fi_u8(&f->in) % A_NR) {
		case A_CFG:
			do_cfg(f);
			break;
		case A_PIO_RAW:
			do_pio_raw(f);
			break;
		case A_ECAM:
			do_ecam(f);
			break;
		case A_BAR_SIZE:
			do_bar_size(f);
			break;
		case A_BAR_MOVE:
			do_bar_move(f);
			break;
		case A_CMD:
			do_cmd(f);
			break;
		case A_MMIO:
			do_mmio(f);
			break;
		}
		check_bars(f);
	}
	if (f->resets != f->expected_resets)
		fail("reset handler calls are not the RST_CPU writes", NULL, -1);

	/* Unregistering tells every device its BARs went. */
	for (unsigned int i = 0; i < f->ndev; i++) {
		struct fdev *d = &f->devs[i];

		if (d->registered && pci_unregister_device(f->bus, &d->pci))
			fail("unregister", d, -1);
		for (unsigned int b = 0; b < PCI_NUM_BARS; b++)
			if (d->at[b] != PCI_BAR_UNMAPPED)
				fail("a BAR still mapped after unregister", d, (int)b);
		d->registered = false;
	}
	pci_bus_destroy(f->bus);
	if (f->foreign)
		iobus_unregister(&f->mmio, WIN32_BASE + f->win32_size / 2);
	if (f->mmio.nr || f->pio.nr)
		fail("ranges left on the buses", NULL, -1);
	iobus_destroy(&f->pio);
	iobus_destroy(&f->mmio);
	free(f);
	return 0;
}

FUZZ_TARGET(fuzz_pci_bus)
