/* SPDX-License-Identifier: MIT */
/* The guest's BIOS-style (e820) memory map. */
#ifndef VMM_X86_E820_H
#define VMM_X86_E820_H

#include <stdint.h>
#include <asm/bootparam.h>

#include "memory.h"

/* Guest-physical layout of RAM on x86_64 (the PC's usual one):
 *   [0, min(ram, 3 GiB))           low RAM
 *   [3 GiB, 4 GiB)                 PCI hole (MMIO BARs, IOAPIC, LAPIC)
 *   [4 GiB, 4 GiB + ram - 3 GiB)   high RAM, only when ram > 3 GiB */
#define X86_PCI_HOLE_START 0xC0000000ull /* 3 GiB */
#define X86_PCI_HOLE_END 0x100000000ull  /* 4 GiB */
/* That layout, for guest_mem_init(). */
extern const struct guest_layout x86_guest_layout;

/* e820 types (asm/e820.h is no longer part of every uapi install). */
#define E820_TYPE_RAM 1
#define E820_TYPE_RESERVED 2

/* Legacy areas that are backed by RAM but not offered to the guest as RAM. */
#define E820_EBDA_START 0x9fc00ull	/* extended BIOS data area, 1 KiB */
#define E820_LEGACY_HOLE 0xa0000ull	/* VGA window + option ROMs */
#define E820_BIOS_START 0xe0000ull	/* BIOS area: ACPI tables, MP table */
#define E820_HIGH_MEM 0x100000ull	/* 1 MiB */

/**
 * e820_build() - RAM map for a VM with @ram_size bytes of RAM
 * @ram_size: bytes of guest RAM, laid out as above (low RAM below
 *            3 GiB, the rest from 4 GiB); at least 1 MiB
 * @tab: output table
 * @max: entries available in @tab
 *
 * The map, sorted by address: [0, 0x9fc00) RAM, [0x9fc00, 0xa0000) reserved
 * (EBDA), [0xe0000, 0x100000) reserved (BIOS area: ACPI tables at
 * 0xe0000, MP table at 0xf0000),
 * [0x100000, low_end) RAM, and [4 GiB, 4 GiB + high) RAM when
 * @ram_size > 3 GiB.  [0xa0000, 0xe0000) is left out, as on a PC.
 *
 * Returns: the number of entries written; -EINVAL if @tab is NULL or
 * @ram_size is below 1 MiB (the fixed legacy layout does not fit);
 * -ENOSPC if @max is too small.
 */
int e820_build(uint64_t ram_size, struct boot_e820_entry *tab,
	       unsigned int max);

#endif
