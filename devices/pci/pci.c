/* SPDX-License-Identifier: MIT */
/*
 * PCI bus 0, configuration mechanism #1, BAR allocation and mapping (see
 * pci.h).  Config space is an array of bytes plus a write mask: a guest
 * write only changes the bits its mask allows, which gives
 * read-only registers and the BAR sizing protocol (all-ones reads back the
 * size mask) for free.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pci/pci.h"

#define PCI_CONFIG_ADDRESS 0xcf8
#define PCI_IO_LEN 8 /* 0xCF8-0xCFF */
#define PCI_RST_CNT_OFF 1 /* 0xCF9 */

#define CFA_ENABLE 0x80000000u
/* Writable CONFIG_ADDRESS bits: enable, bus, device, function, register
 * (bits 1:0 are hardwired to 0; 30:24 reserved). */
#define CFA_MASK 0x80fffffcu

#define RST_CNT_SYS_RST 0x02 /* hard reset when RST_CPU is set */
#define RST_CNT_RST_CPU 0x04 /* 0->1 starts the reset */
#define RST_CNT_FULL_RST 0x08
#define RST_CNT_STORED (RST_CNT_SYS_RST | RST_CNT_FULL_RST)

struct pci_bus {
	/* Constant after create (mmio64 until the first registration). */
	struct iobus *pio, *mmio;
	uint64_t mmio32_base, mmio32_size;
	uint64_t mmio64_base, mmio64_size;
	uint64_t ecam_base, ecam_size; /* pci_bus_set_ecam(); size 0: none */

	/* Protects everything below and the registered devices (see pci.h). */
	pthread_mutex_t lock;
	uint32_t config_address;
	uint8_t rst_cnt;
	void (*reset)(void *opaque);
	void *reset_opaque;
	/* Indexed by devfn (slot << 3 | function). */
	struct pci_device *devs[PCI_MAX_DEVFNS];
	unsigned int fns_per_slot; /* 1..8: pci_bus_set_functions_per_slot() */
	struct pci_device host_bridge;
	/* BARs the guest placed where they cannot be mapped: its choice, as
	 * often as it likes, so rate-limited (own lock; log.h). */
	struct log_limit bar_log;
};

uint8_t pci_cfg_get8(const struct pci_device *dev, unsigned int off)
{
	return dev->cfg[off];
}

uint16_t pci_cfg_get16(const struct pci_device *dev, unsigned int off)
{
	return (uint16_t)(dev->cfg[off] | dev->cfg[off + 1] << 8);
}

uint32_t pci_cfg_get32(const struct pci_device *dev, unsigned int off)
{
	return (uint32_t)pci_cfg_get16(dev, off) |
	       (uint32_t)pci_cfg_get16(dev, off + 2) << 16;
}

void pci_cfg_set8(struct pci_device *dev, unsigned int off, uint8_t v)
{
	dev->cfg[off] = v;
}

void pci_cfg_set16(struct pci_device *dev, unsigned int off, uint16_t v)
{
	dev->cfg[off] = (uint8_t)v;
	dev->cfg[off + 1] = (uint8_t)(v >> 8);
}

void pci_cfg_set32(struct pci_device *dev, unsigned int off, uint32_t v)
{
	pci_cfg_set16(dev, off, (uint16_t)v);
	pci_cfg_set16(dev, off + 2, (uint16_t)(v >> 16));
}

void pci_cfg_set_wmask(struct pci_device *dev, unsigned int off,
		       unsigned int len, uint32_t mask)
{
	for (unsigned int i = 0; i < len && off + i < PCI_CFG_SIZE; i++)
		dev->wmask[off + i] = (uint8_t)(mask >> (8 * i));
}

void pci_device_init(struct pci_device *dev, uint16_t vendor, uint16_t device,
		     uint32_t class_code, uint8_t revision,
		     const struct pci_device_ops *ops, void *priv)
{
	memset(dev, 0, sizeof(*dev));
	pci_cfg_set16(dev, PCI_CFG_VENDOR_ID, vendor);
	pci_cfg_set16(dev, PCI_CFG_DEVICE_ID, device);
	pci_cfg_set8(dev, PCI_CFG_REVISION, revision);
	pci_cfg_set8(dev, PCI_CFG_CLASS_PROG, (uint8_t)class_code);
	pci_cfg_set16(dev, PCI_CFG_CLASS_PROG + 1, (uint16_t)(class_code >> 8));
	pci_cfg_set_wmask(dev, PCI_CFG_COMMAND, 2,
			  PCI_CMD_IO | PCI_CMD_MEM | PCI_CMD_MASTER |
				  PCI_CMD_PARITY | PCI_CMD_SERR |
				  PCI_CMD_INTX_DISABLE);
	pci_cfg_set_wmask(dev, PCI_CFG_CACHE_LINE, 1, 0xff);
	pci_cfg_set_wmask(dev, PCI_CFG_LATENCY, 1, 0xff);
	pci_cfg_set_wmask(dev, PCI_CFG_INT_LINE, 1, 0xff);
	dev->ops = ops;
	dev->priv = priv;
	dev->cap_end = PCI_CAP_START;
	for (unsigned int i = 0; i < PCI_NUM_BARS; i++) {
		dev->bars[i].mapped_gpa = PCI_BAR_UNMAPPED;
		dev->bars[i].failed_gpa = PCI_BAR_UNMAPPED;
		dev->bars[i].parked_gpa = PCI_BAR_UNMAPPED;
	}
}

int pci_device_set_bar(struct pci_device *dev, unsigned int bar, uint64_t size,
		       unsigned int flags, iobus_fn fn, void *opaque)
{
	bool is64 = flags & PCI_BAR_64;
	struct pci_bar *b;
	uint64_t mask;
	uint8_t type;

	if (!dev || dev->bus || !fn || bar >= PCI_NUM_BARS ||
	    (is64 && bar + 1 >= PCI_NUM_BARS) ||
	    (flags & ~(PCI_BAR_64 | PCI_BAR_PREFETCH)))
		return -EINVAL;
	if (size < 16 || (size & (size - 1)) ||
	    (!is64 && size > (1ull << 31)) || size > (1ull << 63))
		return -EINVAL;
	b = &dev->bars[bar];
	if (b->size || b->upper || (is64 && (dev->bars[bar + 1].size ||
					     dev->bars[bar + 1].upper)))
		return -EINVAL;
	b->size = size;
	b->flags = flags;
	b->fn = fn;
	b->opaque = opaque;
	type = (is64 ? PCI_BAR_MEM_64 : 0) |
	       ((flags & PCI_BAR_PREFETCH) ? PCI_BAR_MEM_PREFETCH : 0);
	mask = ~(size - 1);
	pci_cfg_set32(dev, PCI_CFG_BAR0 + 4 * bar, type);
	pci_cfg_set_wmask(dev, PCI_CFG_BAR0 + 4 * bar, 4,
			  (uint32_t)mask & ~0xfu);
	if (is64) {
		dev->bars[bar + 1].upper = true;
		pci_cfg_set32(dev, PCI_CFG_BAR0 + 4 * (bar + 1), 0);
		pci_cfg_set_wmask(dev, PCI_CFG_BAR0 + 4 * (bar + 1), 4,
				  (uint32_t)(mask >> 32));
	}
	return 0;
}

int pci_add_capability(struct pci_device *dev, uint8_t cap_id,
		       unsigned int size, unsigned int *offset)
{
	unsigned int off;

	if (!dev || dev->bus || size < 2)
		return -EINVAL;
	off = ALIGN_UP(dev->cap_end, 4u);
	if (off + size > PCI_CFG_SIZE)
		return -ENOSPC;
	memset(&dev->cfg[off], 0, size);
	memset(&dev->wmask[off], 0, size);
	dev->cfg[off] = cap_id;
	dev->cfg[off + 1] = 0; /* end of list */
	if (dev->cap_last)
		dev->cfg[dev->cap_last + 1] = (uint8_t)off;
	else
		dev->cfg[PCI_CFG_CAP_PTR] = (uint8_t)off;
	pci_cfg_set16(dev, PCI_CFG_STATUS,
		      pci_cfg_get16(dev, PCI_CFG_STATUS) | PCI_STS_CAP_LIST);
	dev->cap_last = off;
	dev->cap_end = off + size;
	if (offset)
		*offset = off;
	return 0;
}

/*
 * The address BAR @i decodes, from the config registers (guest-controlled,
 * validated here): PCI_BAR_UNMAPPED for 0 and for a BAR whose writable bits
 * are all ones, i.e. in the middle of the sizing protocol.
 */
static uint64_t pci_bar_addr(const struct pci_device *dev, unsigned int i)
{
	const struct pci_bar *b = &dev->bars[i];
	unsigned int reg = PCI_CFG_BAR0 + 4 * i;
	uint32_t lo_mask = (uint32_t)~(b->size - 1) & ~0xfu;
	uint32_t lo = pci_cfg_get32(dev, reg) & ~0xfu;
	uint64_t addr = lo;

	if (lo_mask && lo == lo_mask)
		return PCI_BAR_UNMAPPED;
	if (b->flags & PCI_BAR_64) {
		uint32_t hi = pci_cfg_get32(dev, reg + 4);

		if (hi == 0xffffffffu)
			return PCI_BAR_UNMAPPED;
		addr |= (uint64_t)hi << 32;
	}
	if (addr == 0 || addr + b->size < addr)
		return PCI_BAR_UNMAPPED;
	return addr;
}

static void pci_set_bar_addr(struct pci_device *dev, unsigned int i,
			     uint64_t addr)
{
	unsigned int reg = PCI_CFG_BAR0 + 4 * i;
	uint32_t type = pci_cfg_get32(dev, reg) & 0xfu;

	pci_cfg_set32(dev, reg, (uint32_t)addr | type);
	if (dev->bars[i].flags & PCI_BAR_64)
		pci_cfg_set32(dev, reg + 4, (uint32_t)(addr >> 32));
}

/* Where BAR @i should be on the MMIO bus now (caller holds the lock). */
static uint64_t pci_bar_wanted(const struct pci_device *dev, unsigned int i)
{
	if (!(pci_cfg_get16(dev, PCI_CFG_COMMAND) & PCI_CMD_MEM))
		return PCI_BAR_UNMAPPED;
	return pci_bar_addr(dev, i);
}

/*
 * [@gpa, @gpa + @size) has just been mapped for @self: tell every unmapped
 * BAR last mapped over it that its parked range is taken (pci.h,
 * bar_range_taken).  A linear scan, only when a BAR is (re)mapped.  Caller
 * holds the lock.
 */
static void pci_take_parked(struct pci_bus *bus, const struct pci_bar *self,
			    uint64_t gpa, uint64_t size)
{
	for (unsigned int s = 0; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++) {
			struct pci_bar *b = &dev->bars[i];
			uint64_t p = b->parked_gpa;

			if (b == self || p == PCI_BAR_UNMAPPED ||
			    p >= gpa + size || gpa >= p + b->size)
				continue;
			b->parked_gpa = PCI_BAR_UNMAPPED;
			if (dev->ops && dev->ops->bar_range_taken)
				dev->ops->bar_range_taken(dev, i, p);
		}
	}
}

/* Which changes pci_notify_moves() reports. */
enum bar_change { BAR_UNMAPPED, BAR_MOVED, BAR_MAPPED };

/* Tell the owner of every BAR whose mapping changed from @old in the way
 * @what says (from mapped to unmapped, from one address to another, from
 * unmapped to mapped).  Caller holds lock. */
static void pci_notify_moves(struct pci_bus *bus,
			     uint64_t old[PCI_MAX_DEVFNS][PCI_NUM_BARS],
			     enum bar_change what)
{
	for (unsigned int s = 0; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++) {
			uint64_t now = dev->bars[i].mapped_gpa, was = old[s][i];
			enum bar_change c = now == PCI_BAR_UNMAPPED ? BAR_UNMAPPED :
					    was == PCI_BAR_UNMAPPED ? BAR_MAPPED :
								      BAR_MOVED;

			if (!dev->bars[i].size || now == was || c != what)
				continue;
			if (dev->ops && dev->ops->bar_moved)
				dev->ops->bar_moved(dev, i, was, now);
		}
	}
}


/* Map BAR @i of the device at @devfn where its register says, if it is
 * unmapped (it was at @old before this sync).  Bus lock held. */
static void pci_map_wanted(struct pci_bus *bus, unsigned int devfn,
			   unsigned int i, uint64_t old)
{
	struct pci_device *dev = bus->devs[devfn];
	struct pci_bar *b = &dev->bars[i];
	uint64_t want = b->size ? pci_bar_wanted(dev, i) : PCI_BAR_UNMAPPED;
	char subject[16];
	int ret;

	if (want == PCI_BAR_UNMAPPED || b->mapped_gpa != PCI_BAR_UNMAPPED)
		return;
	ret = iobus_register(bus->mmio, want, b->size, b->fn, b->opaque);
	if (!ret) {
		b->mapped_gpa = want;
		b->failed_gpa = PCI_BAR_UNMAPPED;
		/* Moved by this write: its owner never heard it was unmapped
		 * (one bar_moved() moves it), so nothing is parked.  Mapped
		 * again after being parked: it stays parked until the ranges
		 * mapped now are taken (pci_sync_bars()). */
		if (old != PCI_BAR_UNMAPPED)
			b->parked_gpa = PCI_BAR_UNMAPPED;
		return;
	}
	if (b->failed_gpa == want)
		return;
	/* Guest-chosen address: refuse, don't crash.  Logged once per
	 * address, and rate-limited (a guest can try every address). */
	b->failed_gpa = want;
	snprintf(subject, sizeof(subject), "pci 00:%02x.%u", devfn >> 3,
		 devfn & 7);
	log_limited(&bus->bar_log, VMM_LOG_WARN, subject,
		    "BAR%u at 0x%llx+0x%llx overlaps another range (%d); left "
		    "unmapped", i, (unsigned long long)want,
		    (unsigned long long)b->size, ret);
}

/*
 * Bring every BAR's MMIO registration in line with the config registers.
 * All devices are visited, not only the one written: a BAR left unmapped
 * because it overlapped another may become mappable when that one moves.
 * Unmap first, then map, so two BARs may swap places.  The owners hear of
 * it so that no two of them ever believe they decode the same range (what
 * they register there, the virtio transport's ioeventfds, would collide):
 * first every BAR that went unmapped (its owner parks what it has there),
 * then, for each range mapped, every BAR parked over it (bar_range_taken:
 * its owner knows by now that it is unmapped; so does the owner of a
 * parked BAR mapped elsewhere by this write), then every BAR that moved
 * (it leaves a range another BAR may have just been mapped on), last
 * every BAR newly mapped.  Caller holds lock.
 */
static void pci_sync_bars(struct pci_bus *bus)
{
	uint64_t old[PCI_MAX_DEVFNS][PCI_NUM_BARS];

	for (unsigned int s = 0; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++) {
			struct pci_bar *b = &dev->bars[i];

			old[s][i] = b->mapped_gpa;
			if (!b->size || b->mapped_gpa == PCI_BAR_UNMAPPED ||
			    b->mapped_gpa == pci_bar_wanted(dev, i))
				continue;
			iobus_unregister(bus->mmio, b->mapped_gpa);
			b->parked_gpa = b->mapped_gpa;
			b->mapped_gpa = PCI_BAR_UNMAPPED;
		}
	}
	for (unsigned int s = 0; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++)
			pci_map_wanted(bus, s, i, old[s][i]);
	}
	pci_notify_moves(bus, old, BAR_UNMAPPED);
	for (unsigned int s = 0; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++) {
			struct pci_bar *b = &dev->bars[i];

			if (b->size && b->mapped_gpa != old[s][i] &&
			    b->mapped_gpa != PCI_BAR_UNMAPPED)
				pci_take_parked(bus, b, b->mapped_gpa, b->size);
		}
	}
	/* A parked BAR mapped again is parked no more (its range was
	 * reported taken above if another BAR got it). */
	for (unsigned int s = 0; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++)
			if (dev->bars[i].mapped_gpa != PCI_BAR_UNMAPPED)
				dev->bars[i].parked_gpa = PCI_BAR_UNMAPPED;
	}
	pci_notify_moves(bus, old, BAR_MOVED);
	pci_notify_moves(bus, old, BAR_MAPPED);
}

/* Does [a, a+alen) intersect [b, b+blen)?  (No wrap: both validated.) */
static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * First-fit, naturally aligned placement of @size bytes in a window,
 * avoiding every BAR address currently programmed on the bus (mapped or
 * not).  Returns PCI_BAR_UNMAPPED when the window is full.  Caller holds lock.
 */
static uint64_t pci_alloc(struct pci_bus *bus, uint64_t size, bool is64)
{
	bool hi = is64 && bus->mmio64_size;
	uint64_t base = hi ? bus->mmio64_base : bus->mmio32_base;
	uint64_t end = base + (hi ? bus->mmio64_size : bus->mmio32_size);
	uint64_t cand = ALIGN_UP(base, size);

	while (cand >= base && cand < end && size <= end - cand) {
		bool conflict = false;
		uint64_t next = 0;

		for (unsigned int s = 0; s < PCI_MAX_DEVFNS && !conflict; s++) {
			struct pci_device *dev = bus->devs[s];

			for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++) {
				uint64_t a;

				if (!dev->bars[i].size)
					continue;
				a = pci_bar_addr(dev, i);
				if (a == PCI_BAR_UNMAPPED ||
				    !ranges_overlap(cand, size, a,
						    dev->bars[i].size))
					continue;
				conflict = true;
				next = ALIGN_UP(a + dev->bars[i].size, size);
				break;
			}
		}
		if (!conflict)
			return cand;
		if (next <= cand) /* wrapped */
			break;
		cand = next;
	}
	return PCI_BAR_UNMAPPED;
}

/* Context: vCPU thread, bus lock held.  One configuration cycle to @dev
 * (NULL: nothing there, master abort: reads all ones).  The callers keep
 * @reg + @len within PCI_CFG_SIZE and within one dword. */
static void pci_cfg_cycle(struct pci_bus *bus, struct pci_device *dev,
			  unsigned int reg, uint8_t *data, uint32_t len,
			  bool is_write)
{
	bool bars_touched;
	uint32_t val = 0;

	if (!dev) {
		if (!is_write)
			memset(data, 0xff, len);
		return;
	}
	if (!is_write) {
		for (uint32_t i = 0; i < len; i++)
			val |= (uint32_t)dev->cfg[reg + i] << (8 * i);
		if (dev->ops && dev->ops->cfg_read)
			dev->ops->cfg_read(dev, reg, len, &val);
		for (uint32_t i = 0; i < len; i++)
			data[i] = (uint8_t)(val >> (8 * i));
		return;
	}
	for (uint32_t i = 0; i < len; i++) {
		uint8_t m = dev->wmask[reg + i];

		dev->cfg[reg + i] = (uint8_t)((dev->cfg[reg + i] & ~m) |
					      (data[i] & m));
	}
	bars_touched = ranges_overlap(reg, len, PCI_CFG_COMMAND, 2) ||
		       ranges_overlap(reg, len, PCI_CFG_BAR0, 4 * PCI_NUM_BARS);
	if (bars_touched)
		pci_sync_bars(bus);
	if (dev->ops && dev->ops->cfg_write)
		dev->ops->cfg_write(dev, reg, len);
}

/* Context: vCPU thread, bus lock held.  @cfa is the guest's CONFIG_ADDRESS
 * (guest-controlled: every field is masked to its width below, so slot < 32
 * and reg + len <= 256), @byte the offset into CONFIG_DATA (0-3; the iobus
 * checked that the access lies within 0xCF8-0xCFF). */
static void pci_config_access(struct pci_bus *bus, uint32_t cfa,
			      unsigned int byte, uint8_t *data, uint32_t len,
			      bool is_write)
{
	unsigned int busno = (cfa >> 16) & 0xff, slot = (cfa >> 11) & 0x1f;
	unsigned int fn = (cfa >> 8) & 0x7, reg = (cfa & 0xfc) + byte;

	/* Only bus 0 exists: everything else is master abort. */
	pci_cfg_cycle(bus, (cfa & CFA_ENABLE) && !busno ?
				   bus->devs[PCI_DEVFN(slot, fn)] : NULL,
		      reg, data, len, is_write);
}

/*
 * Context: vCPU thread, WITHOUT the MMIO bus's lock (the window is
 * registered with iobus_register_unlocked()): a configuration write may map
 * or move BARs on that bus.  @off (guest-controlled) is bus << 20 | devfn
 * << 12 | register; the window holds bus 0 only, so devfn < 256 and the
 * register < 4096 by the window's size.  Configuration cycles are 1, 2 or
 * 4 bytes inside one dword (PCIe: anything else is unsupported; reads all
 * ones).  These are conventional PCI functions: their extended space
 * (256-4095) reads 0, as "no extended capability", and ignores writes.
 */
static void pci_ecam(void *opaque, uint64_t off, void *data, uint32_t len,
		     bool is_write)
{
	struct pci_bus *bus = opaque;
	unsigned int devfn = (unsigned int)(off >> 12) & 0xff;
	unsigned int reg = (unsigned int)off & 0xfff;

	if (len > 4 || (reg & 3) + len > 4) {
		if (!is_write)
			memset(data, 0xff, len);
		return;
	}
	if (reg >= PCI_CFG_SIZE) {
		if (!is_write)
			memset(data, bus->devs[devfn] ? 0 : 0xff, len);
		return;
	}
	pthread_mutex_lock(&bus->lock);
	pci_cfg_cycle(bus, bus->devs[devfn], reg, data, len, is_write);
	pthread_mutex_unlock(&bus->lock);
}

/* Context: vCPU thread.  Decodes 0xCF8-0xCFF. */
static void pci_pio(void *opaque, uint64_t off, void *data, uint32_t len,
		    bool is_write)
{
	struct pci_bus *bus = opaque;
	void (*reset)(void *) = NULL;
	void *reset_opaque = NULL;
	uint32_t v;

	if (off >= 4) {
		pthread_mutex_lock(&bus->lock);
		pci_config_access(bus, bus->config_address,
				  (unsigned int)(off - 4), data, len, is_write);
		pthread_mutex_unlock(&bus->lock);
		return;
	}
	if (off == 0 && len == 4) {
		pthread_mutex_lock(&bus->lock);
		if (is_write) {
			memcpy(&v, data, 4);
			bus->config_address = v & CFA_MASK;
		} else {
			memcpy(data, &bus->config_address, 4);
		}
		pthread_mutex_unlock(&bus->lock);
		return;
	}
	if (off == PCI_RST_CNT_OFF && len == 1) {
		pthread_mutex_lock(&bus->lock);
		if (!is_write) {
			*(uint8_t *)data = bus->rst_cnt;
		} else {
			uint8_t b = *(uint8_t *)data;

			bus->rst_cnt = b & RST_CNT_STORED;
			if (b & RST_CNT_RST_CPU) {
				reset = bus->reset;
				reset_opaque = bus->reset_opaque;
			}
		}
		pthread_mutex_unlock(&bus->lock);
		/* Outside the lock: the handler may stop vCPUs, one of which
		 * could be waiting for this lock. */
		if (reset)
			reset(reset_opaque);
		return;
	}
	/* Other non-dword accesses to 0xCF8-0xCFB are not config cycles
	 * (Linux's type-1/type-2 probes rely on that). */
	if (!is_write)
		memset(data, 0xff, len);
}

int pci_bus_create(struct iobus *pio, struct iobus *mmio, uint64_t mmio32_base,
		   uint64_t mmio32_size, struct pci_bus **out)
{
	struct pci_bus *bus;
	int ret;

	if (!pio || !mmio || !out || !mmio32_size ||
	    mmio32_base + mmio32_size < mmio32_base ||
	    mmio32_base + mmio32_size > (1ull << 32))
		return -EINVAL;
	bus = calloc(1, sizeof(*bus));
	if (!bus)
		return -ENOMEM;
	bus->pio = pio;
	bus->mmio = mmio;
	bus->mmio32_base = mmio32_base;
	bus->mmio32_size = mmio32_size;
	ret = -pthread_mutex_init(&bus->lock, NULL);
	if (ret)
		goto err_free;
	log_limit_init(&bus->bar_log, "unmappable BARs");
	pci_device_init(&bus->host_bridge, PCI_HOST_VENDOR, PCI_HOST_DEVICE,
			PCI_CLASS_HOST_BRIDGE, 0, NULL, NULL);
	bus->host_bridge.bus = bus;
	bus->host_bridge.slot = 0;
	bus->devs[0] = &bus->host_bridge;
	bus->fns_per_slot = 1;
	ret = iobus_register(pio, PCI_CONFIG_ADDRESS, PCI_IO_LEN, pci_pio, bus);
	if (ret)
		goto err_mutex;
	*out = bus;
	return 0;

err_mutex:
	log_limit_destroy(&bus->bar_log, "");
	pthread_mutex_destroy(&bus->lock);
err_free:
	free(bus);
	return ret;
}

void pci_bus_destroy(struct pci_bus *bus)
{
	if (!bus)
		return;
	iobus_unregister(bus->pio, PCI_CONFIG_ADDRESS);
	if (bus->ecam_size)
		iobus_unregister(bus->mmio, bus->ecam_base);
	for (unsigned int s = 1; s < PCI_MAX_DEVFNS; s++) {
		struct pci_device *dev = bus->devs[s];

		for (unsigned int i = 0; dev && i < PCI_NUM_BARS; i++) {
			if (dev->bars[i].mapped_gpa != PCI_BAR_UNMAPPED)
				iobus_unregister(bus->mmio,
						 dev->bars[i].mapped_gpa);
			dev->bars[i].mapped_gpa = PCI_BAR_UNMAPPED;
		}
		if (dev)
			dev->bus = NULL;
	}
	log_limit_destroy(&bus->bar_log, "until the VM was destroyed");
	pthread_mutex_destroy(&bus->lock);
	free(bus);
}

int pci_bus_set_ecam(struct pci_bus *bus, uint64_t base)
{
	int ret;

	if (!bus || bus->ecam_size || base & (PCI_ECAM_BUS_SIZE - 1) ||
	    base + PCI_ECAM_BUS_SIZE < base ||
	    ranges_overlap(base, PCI_ECAM_BUS_SIZE, bus->mmio32_base,
			   bus->mmio32_size) ||
	    (bus->mmio64_size && ranges_overlap(base, PCI_ECAM_BUS_SIZE,
						bus->mmio64_base,
						bus->mmio64_size)))
		return -EINVAL;
	ret = iobus_register_unlocked(bus->mmio, base, PCI_ECAM_BUS_SIZE,
				      pci_ecam, bus);
	if (ret)
		return ret;
	bus->ecam_base = base;
	bus->ecam_size = PCI_ECAM_BUS_SIZE;
	return 0;
}

int pci_bus_set_mmio64_window(struct pci_bus *bus, uint64_t base, uint64_t size)
{
	if (!bus || !size || base + size < base ||
	    (bus->ecam_size && ranges_overlap(base, size, bus->ecam_base,
					      bus->ecam_size)))
		return -EINVAL;
	pthread_mutex_lock(&bus->lock);
	bus->mmio64_base = base;
	bus->mmio64_size = size;
	pthread_mutex_unlock(&bus->lock);
	return 0;
}

int pci_bus_set_functions_per_slot(struct pci_bus *bus, unsigned int n)
{
	if (!bus || n < 1 || n > PCI_MAX_FUNCTIONS)
		return -EINVAL;
	pthread_mutex_lock(&bus->lock);
	bus->fns_per_slot = n;
	pthread_mutex_unlock(&bus->lock);
	return 0;
}

void pci_bus_set_reset_handler(struct pci_bus *bus, void (*fn)(void *opaque),
			       void *opaque)
{
	pthread_mutex_lock(&bus->lock);
	bus->reset = fn;
	bus->reset_opaque = opaque;
	pthread_mutex_unlock(&bus->lock);
}

/* A free devfn, slot-major: devices registered in order get ascending
 * devfns, the order a guest enumerates (and names) them in.  Function 0 is
 * tried first, so a function > 0 is only used beside a function 0 (a guest
 * scans the others only when function 0 says it is multi-function).
 * Returns it, or -ENOSPC.  Bus lock held. */
static int pci_free_devfn(struct pci_bus *bus)
{
	for (unsigned int slot = 1; slot < PCI_MAX_SLOTS; slot++)
		for (unsigned int fn = 0; fn < bus->fns_per_slot; fn++)
			if (!bus->devs[PCI_DEVFN(slot, fn)])
				return (int)PCI_DEVFN(slot, fn);
	return -ENOSPC;
}

/* Give each of @dev's BARs an address and map it.  By hand rather than
 * through pci_sync_bars(), which would only log a collision with a
 * non-PCI range.  0 or -errno, with nothing left allocated or mapped.
 * Bus lock held. */
static int pci_place_bars(struct pci_bus *bus, struct pci_device *dev)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < PCI_NUM_BARS; i++) {
		struct pci_bar *b = &dev->bars[i];
		uint64_t gpa;

		if (!b->size)
			continue;
		gpa = pci_alloc(bus, b->size, b->flags & PCI_BAR_64);
		if (gpa == PCI_BAR_UNMAPPED) {
			ret = -ENOSPC;
			goto err_addr;
		}
		pci_set_bar_addr(dev, i, gpa);
	}
	for (i = 0; i < PCI_NUM_BARS; i++) {
		struct pci_bar *b = &dev->bars[i];

		if (!b->size)
			continue;
		ret = iobus_register(bus->mmio, pci_bar_addr(dev, i), b->size,
				     b->fn, b->opaque);
		if (ret)
			goto err_unmap;
		b->mapped_gpa = pci_bar_addr(dev, i);
		pci_take_parked(bus, b, b->mapped_gpa, b->size);
	}
	return 0;

err_unmap:
	while (i-- > 0) {
		if (dev->bars[i].mapped_gpa != PCI_BAR_UNMAPPED)
			iobus_unregister(bus->mmio, dev->bars[i].mapped_gpa);
		dev->bars[i].mapped_gpa = PCI_BAR_UNMAPPED;
	}
err_addr:
	for (i = 0; i < PCI_NUM_BARS; i++)
		if (dev->bars[i].size)
			pci_set_bar_addr(dev, i, 0);
	return ret;
}

int pci_register_device(struct pci_bus *bus, struct pci_device *dev)
{
	unsigned int slot, fn;
	int devfn, ret;

	if (!bus || !dev || dev->bus)
		return -EINVAL;
	pthread_mutex_lock(&bus->lock);
	devfn = pci_free_devfn(bus);
	if (devfn < 0) {
		ret = devfn;
		goto out;
	}
	slot = (unsigned int)devfn >> 3;
	fn = (unsigned int)devfn & 7;
	/* BAR registers start at 0 (unallocated), so the device can sit in
	 * its slot while its own BARs are placed one by one. */
	for (unsigned int i = 0; i < PCI_NUM_BARS; i++)
		if (dev->bars[i].size)
			pci_set_bar_addr(dev, i, 0);
	bus->devs[devfn] = dev;
	ret = pci_place_bars(bus, dev);
	if (ret) {
		bus->devs[devfn] = NULL;
		goto out;
	}
	dev->bus = bus;
	dev->slot = slot;
	dev->fn = fn;
	/* HEADER_TYPE bit 7 of function 0: "look at functions 1-7".  Set
	 * before the guest runs (devices register at start). */
	if (fn) {
		struct pci_device *fn0 = bus->devs[PCI_DEVFN(slot, 0)];

		pci_cfg_set8(fn0, PCI_CFG_HEADER_TYPE,
			     pci_cfg_get8(fn0, PCI_CFG_HEADER_TYPE) |
				     PCI_HEADER_MULTI_FUNCTION);
	}
	/* Firmware's job, done here for direct kernel boot: decode and bus
	 * mastering on (Linux's drivers set MASTER themselves anyway; a
	 * device's owner may act on later changes: virtio-pci.c). */
	pci_cfg_set16(dev, PCI_CFG_COMMAND,
		      pci_cfg_get16(dev, PCI_CFG_COMMAND) | PCI_CMD_MEM |
			      PCI_CMD_MASTER);
	for (unsigned int i = 0; i < PCI_NUM_BARS; i++)
		if (dev->bars[i].size && dev->ops && dev->ops->bar_moved)
			dev->ops->bar_moved(dev, i, PCI_BAR_UNMAPPED,
					    dev->bars[i].mapped_gpa);
out:
	pthread_mutex_unlock(&bus->lock);
	return ret;
}

int pci_unregister_device(struct pci_bus *bus, struct pci_device *dev)
{
	if (!bus || !dev)
		return -ENOENT;
	pthread_mutex_lock(&bus->lock);
	if (dev->bus != bus || dev->slot == 0 ||
	    bus->devs[PCI_DEVFN(dev->slot, dev->fn)] != dev) {
		pthread_mutex_unlock(&bus->lock);
		return -ENOENT;
	}
	for (unsigned int i = 0; i < PCI_NUM_BARS; i++) {
		uint64_t old = dev->bars[i].mapped_gpa;

		dev->bars[i].parked_gpa = PCI_BAR_UNMAPPED; /* owner's job */
		if (old == PCI_BAR_UNMAPPED)
			continue;
		iobus_unregister(bus->mmio, old);
		dev->bars[i].mapped_gpa = PCI_BAR_UNMAPPED;
		if (dev->ops && dev->ops->bar_moved)
			dev->ops->bar_moved(dev, i, old, PCI_BAR_UNMAPPED);
	}
	bus->devs[PCI_DEVFN(dev->slot, dev->fn)] = NULL;
	dev->bus = NULL;
	dev->slot = 0;
	dev->fn = 0;
	pthread_mutex_unlock(&bus->lock);
	return 0;
}

uint64_t pci_bar_gpa(struct pci_device *dev, unsigned int bar)
{
	struct pci_bus *bus = dev->bus;
	uint64_t gpa;

	if (bar >= PCI_NUM_BARS)
		return PCI_BAR_UNMAPPED;
	if (!bus)
		return dev->bars[bar].mapped_gpa;
	pthread_mutex_lock(&bus->lock);
	gpa = dev->bars[bar].mapped_gpa;
	pthread_mutex_unlock(&bus->lock);
	return gpa;
}
