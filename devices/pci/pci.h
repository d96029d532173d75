/* SPDX-License-Identifier: MIT */
/*
 * PCI bus 0 with configuration mechanism #1 (ports 0xCF8-0xCFF), a host
 * bridge at 00.0, up to 31 more slots of up to 8 functions each
 * (pci_bus_set_functions_per_slot()), and a generic type-0
 * configuration space that devices reuse: 256 bytes + per-bit write masks,
 * a capability list, memory BARs (32/64-bit, prefetchable) that the bus
 * allocates in an MMIO window and maps on the MMIO iobus while
 * COMMAND.MEM is set.  Configuration space is also reachable through an
 * ECAM window on the MMIO bus (pci_bus_set_ecam(): what an arm64 host
 * bridge, pci-host-ecam-generic, offers).  I/O BARs, bridges and INTx
 * routing are not implemented.
 *
 * The host bridge also owns the reset control register at 0xCF9 (a byte
 * access there is the chipset's RST_CNT, a dword access at 0xCF8 is
 * CONFIG_ADDRESS): writing a value with bit 2 (RST_CPU) set calls the reset
 * handler; bits 1 and 3 (hard/full reset) are stored and read back, as
 * Linux's `reboot=pci` sequence (write cf9|2, then cf9|6 or cf9|0xE) expects.
 *
 * Locking: config accesses arrive from any vCPU thread.  One mutex per bus
 * protects CONFIG_ADDRESS, RST_CNT, the slot table and, for every registered
 * device, its config space, write masks and BAR mapping state.  While
 * holding it the bus takes the MMIO bus's write lock to move BARs, so a
 * BAR's MMIO handler (run under the MMIO bus's read lock) must never call
 * into the PCI bus.  Device callbacks (cfg_write, cfg_read, bar_moved) run
 * with the bus mutex held and must not call pci_* functions other than the
 * pci_cfg_* accessors on their own device.
 *
 * Errors: 0 on success, -errno on failure, as listed per function.
 */
#ifndef VMM_PCI_PCI_H
#define VMM_PCI_PCI_H

#include <stdbool.h>
#include <stdint.h>

#include "iobus.h"
#include "util/compiler.h"

#define PCI_MAX_SLOTS 32 /* slot 0 is the host bridge */
#define PCI_MAX_FUNCTIONS 8
#define PCI_MAX_DEVFNS (PCI_MAX_SLOTS * PCI_MAX_FUNCTIONS)
#define PCI_DEVFN(slot, fn) ((slot) << 3 | (fn))
#define PCI_HEADER_MULTI_FUNCTION 0x80 /* HEADER_TYPE bit 7, function 0 */
#define PCI_NUM_BARS 6
#define PCI_CFG_SIZE 256
#define PCI_CAP_START 0x40 /* first byte after the type-0 header */

/* Type-0 header offsets (named apart from <linux/pci_regs.h> on purpose, so
 * both may be included). */
#define PCI_CFG_VENDOR_ID 0x00
#define PCI_CFG_DEVICE_ID 0x02
#define PCI_CFG_COMMAND 0x04
#define PCI_CFG_STATUS 0x06
#define PCI_CFG_REVISION 0x08
#define PCI_CFG_CLASS_PROG 0x09 /* 24-bit class code starts here */
#define PCI_CFG_CACHE_LINE 0x0c
#define PCI_CFG_LATENCY 0x0d
#define PCI_CFG_HEADER_TYPE 0x0e
#define PCI_CFG_BAR0 0x10 /* BAR n at 0x10 + 4 * n */
#define PCI_CFG_SUBSYS_VENDOR 0x2c
#define PCI_CFG_SUBSYS_ID 0x2e
#define PCI_CFG_ROM 0x30
#define PCI_CFG_CAP_PTR 0x34
#define PCI_CFG_INT_LINE 0x3c
#define PCI_CFG_INT_PIN 0x3d

#define PCI_CMD_IO 0x0001
#define PCI_CMD_MEM 0x0002
#define PCI_CMD_MASTER 0x0004
#define PCI_CMD_PARITY 0x0040
#define PCI_CMD_SERR 0x0100
#define PCI_CMD_INTX_DISABLE 0x0400
#define PCI_STS_CAP_LIST 0x0010

#define PCI_BAR_MEM_64 0x04 /* BAR register type bits 2:1 = 10b */
#define PCI_BAR_MEM_PREFETCH 0x08

#define PCI_CAPID_VNDR 0x09
#define PCI_CAPID_MSIX 0x11

/* Host bridge identity: Intel's "virtual PCIe host" IDs (any vendor works;
 * Linux's pci_sanity_check() accepts a bus whose device has class HOST
 * bridge). */
#define PCI_HOST_VENDOR 0x8086
#define PCI_HOST_DEVICE 0x0d57
#define PCI_CLASS_HOST_BRIDGE 0x060000

/* pci_device_set_bar() flags */
#define PCI_BAR_64 (1u << 0)
#define PCI_BAR_PREFETCH (1u << 1)

/* A BAR that is not on the MMIO bus (bar_moved's old/new address). */
#define PCI_BAR_UNMAPPED UINT64_MAX

struct pci_bus;
struct pci_device;

struct pci_device_ops {
	/*
	 * Optional.  A guest wrote @len bytes at @off; the write has already
	 * been applied through the write masks (read the result from
	 * dev->cfg) and BAR mappings updated.  Device-specific registers
	 * (capabilities) react here.  Context: vCPU thread, bus lock held.
	 */
	void (*cfg_write)(struct pci_device *dev, uint32_t off, uint32_t len);
	/*
	 * Optional.  May replace *val (the @len bytes at @off, little-endian
	 * in the low bytes) before the guest sees it.  Same context.
	 */
	void (*cfg_read)(struct pci_device *dev, uint32_t off, uint32_t len,
			 uint32_t *val);
	/*
	 * Optional.  BAR @bar's MMIO range moved from @old_gpa to @new_gpa;
	 * either may be PCI_BAR_UNMAPPED (mapped for the first time, or
	 * unmapped because COMMAND.MEM was cleared, the BAR was moved onto
	 * another range, or the device is being unregistered).  The virtio
	 * transport moves its ioeventfds here.  Owners never believe two BARs
	 * decode overlapping ranges: when one configuration write changes
	 * several mappings, they hear first of every BAR unmapped, then
	 * (bar_range_taken) of parked ranges now taken, then of every BAR
	 * moved, last of every BAR newly mapped.  Context: vCPU thread, or
	 * the thread calling pci_register_device()/pci_unregister_device();
	 * bus lock held.
	 */
	void (*bar_moved)(struct pci_device *dev, unsigned int bar,
			  uint64_t old_gpa, uint64_t new_gpa);
	/*
	 * Optional.  BAR @bar is unmapped, as bar_moved() last told (its
	 * decoding is off, or it overlapped another range), and another BAR
	 * has just been mapped over @gpa, where @bar was last mapped:
	 * anything the device left registered there for a quick return (the
	 * virtio transport's notify ioeventfds, "parked" while Linux sizes
	 * BARs with decoding off) must go now, before the new owner's
	 * bar_moved() runs.  (The same write may have mapped @bar elsewhere:
	 * its own bar_moved() follows.)  Called at most once per parking.
	 * Same context as bar_moved.
	 */
	void (*bar_range_taken)(struct pci_device *dev, unsigned int bar,
				uint64_t gpa);
};

struct pci_bar {
	uint64_t size; /* power of two >= 16; 0: not implemented */
	unsigned int flags; /* PCI_BAR_64, PCI_BAR_PREFETCH */
	bool upper; /* upper half of the 64-bit BAR below it */
	iobus_fn fn; /* MMIO handler; called with offsets into the BAR */
	void *opaque;
	/* Owned by the bus (bus lock). */
	uint64_t mapped_gpa; /* PCI_BAR_UNMAPPED when not on the MMIO bus */
	uint64_t failed_gpa; /* last address that could not be mapped */
	/* Where the BAR was last mapped while it is unmapped, until another
	 * BAR is mapped over it (bar_range_taken) or it is mapped again;
	 * else PCI_BAR_UNMAPPED. */
	uint64_t parked_gpa;
};

/*
 * A device embeds this (container_of to get back) and fills it with
 * pci_device_init(), pci_device_set_bar() and pci_add_capability() before
 * pci_register_device().  Fields are the bus's while registered.
 */
struct pci_device {
	uint8_t cfg[PCI_CFG_SIZE]; /* little-endian, as the guest sees it */
	uint8_t wmask[PCI_CFG_SIZE]; /* 1 = guest-writable bit */
	struct pci_bar bars[PCI_NUM_BARS];
	const struct pci_device_ops *ops; /* may be NULL */
	void *priv; /* the owner's */
	/* Set by the bus. */
	struct pci_bus *bus;
	unsigned int slot;
	unsigned int fn; /* function in the slot */
	unsigned int cap_end; /* next free config byte for capabilities */
	unsigned int cap_last; /* offset of the last capability, 0 if none */
};

/*
 * pci_bus_create - create bus 0 and register 0xCF8-0xCFF on @pio.
 * @mmio: the bus BARs are mapped on.
 * @mmio32_base, @mmio32_size: window for BAR allocation, below 4 GiB.
 * Returns 0, -EINVAL (NULL pointer, empty or wrapping window, window above
 * 4 GiB), -ENOMEM, -EEXIST (ports taken).
 */
int pci_bus_create(struct iobus *pio, struct iobus *mmio, uint64_t mmio32_base,
		   uint64_t mmio32_size, struct pci_bus **out) __must_check;

/* ECAM (PCIe enhanced configuration access): 4 KiB per function, 1 MiB
 * per bus; bus 0 only here. */
#define PCI_ECAM_BUS_SIZE (1ull << 20)

/*
 * pci_bus_set_ecam - offer configuration space at [@base, @base +
 * PCI_ECAM_BUS_SIZE) on the MMIO bus too, as ECAM for bus 0 (the device
 * tree's pci-host-ecam-generic "reg").  Call once, before vCPUs run.
 * Returns 0, -EINVAL (NULL bus, already set, @base not 1 MiB aligned,
 * wrapping, or over a BAR window), -EEXIST (range taken), -ENOMEM.
 */
int pci_bus_set_ecam(struct pci_bus *bus, uint64_t base) __must_check;

/*
 * Unregisters the ports, unmaps the BARs of devices still registered
 * (without bar_moved calls; those devices must still be alive) and frees the
 * bus.  NULL-safe.  No vCPU may be running.
 */
void pci_bus_destroy(struct pci_bus *bus);

/*
 * Optional window above RAM for 64-bit BARs; without one they are placed in
 * the 32-bit window.  Call before registering devices.
 * Returns 0, -EINVAL (empty or wrapping window, or over the ECAM window).
 */
int pci_bus_set_mmio64_window(struct pci_bus *bus, uint64_t base,
			      uint64_t size);

/*
 * pci_bus_set_functions_per_slot - how many functions pci_register_device()
 * fills in a slot before it takes the next one: 1 (the default: one device
 * per slot, 31 at most) up to 8 (248 devices; function 0 of a slot that
 * gets more is marked multi-function).  A machine that knows it has more
 * devices than slots packs them; fewer keep the one-per-slot layout.  Call
 * before registering devices.  Returns 0, -EINVAL (NULL, n out of 1..8).
 */
int pci_bus_set_functions_per_slot(struct pci_bus *bus, unsigned int n);

/* The 0xCF9 reset handler (called on a vCPU thread without the bus lock;
 * must be idempotent).  NULL disables reset through 0xCF9. */
void pci_bus_set_reset_handler(struct pci_bus *bus, void (*fn)(void *opaque),
			       void *opaque);

/*
 * pci_device_init - zero @dev and fill the IDs and the default write masks
 * (COMMAND IO/MEM/MASTER/PARITY/SERR/INTX_DISABLE, cache line, latency,
 * interrupt line).  @class_code is 24-bit (base class, subclass, prog-if).
 */
void pci_device_init(struct pci_device *dev, uint16_t vendor, uint16_t device,
		     uint32_t class_code, uint8_t revision,
		     const struct pci_device_ops *ops, void *priv);

/*
 * pci_device_set_bar - declare memory BAR @bar of @size bytes (power of two,
 * at least 16; at most 2 GiB unless 64-bit).  A 64-bit BAR also uses slot
 * @bar + 1.  @fn/@opaque receive the accesses (offsets into the BAR).
 * Returns 0 or -EINVAL (bad index or size, slot in use, NULL @fn, device
 * already registered).
 */
int pci_device_set_bar(struct pci_device *dev, unsigned int bar, uint64_t size,
		       unsigned int flags, iobus_fn fn, void *opaque);

/*
 * pci_add_capability - append a capability of @size bytes (header included)
 * to the list, dword aligned, and set its ID and the status bit.  The caller
 * fills the body and its write masks.  *@offset receives its config offset.
 * Returns 0, -EINVAL (size < 2, device registered), -ENOSPC (no room).
 */
int pci_add_capability(struct pci_device *dev, uint8_t cap_id,
		       unsigned int size, unsigned int *offset);

/*
 * pci_register_device - put @dev in the lowest free slot (or function:
 * pci_bus_set_functions_per_slot()), allocate its BARs
 * (naturally aligned) in the bus windows, set COMMAND.MEM and
 * COMMAND.MASTER (firmware's job for a direct kernel boot) and map them
 * (bar_moved is called for each).
 * Returns 0, -EINVAL (NULL, already registered), -ENOSPC (every slot used
 * or no room in the window), -ENOMEM, -EEXIST (a BAR collided with a non-PCI
 * range on the MMIO bus).
 */
int pci_register_device(struct pci_bus *bus, struct pci_device *dev)
	__must_check;

/* Unmaps the BARs (bar_moved called) and frees the slot.  Returns 0 or
 * -ENOENT (not registered on @bus). */
int pci_unregister_device(struct pci_bus *bus, struct pci_device *dev);

/*
 * Raw host-side config accessors (no write masks, no hooks).  Before
 * registration, or from a device callback (bus lock held).  @off must leave
 * room for the access inside the 256 bytes.
 */
uint8_t pci_cfg_get8(const struct pci_device *dev, unsigned int off);
uint16_t pci_cfg_get16(const struct pci_device *dev, unsigned int off);
uint32_t pci_cfg_get32(const struct pci_device *dev, unsigned int off);
void pci_cfg_set8(struct pci_device *dev, unsigned int off, uint8_t v);
void pci_cfg_set16(struct pci_device *dev, unsigned int off, uint16_t v);
void pci_cfg_set32(struct pci_device *dev, unsigned int off, uint32_t v);
/* Sets the guest-writable bits of the @len (1, 2, 4) bytes at @off. */
void pci_cfg_set_wmask(struct pci_device *dev, unsigned int off,
		       unsigned int len, uint32_t mask);

/* Current MMIO address of @bar, or PCI_BAR_UNMAPPED.  Takes the bus lock:
 * not from device callbacks (they get the address as an argument). */
uint64_t pci_bar_gpa(struct pci_device *dev, unsigned int bar);

#endif
