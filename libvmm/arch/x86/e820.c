/* SPDX-License-Identifier: MIT */
/*
 * The e820 map mirrors x86_guest_layout (e820.h).  The legacy areas below 1 MiB are
 * backed by RAM in the memslot but reported as they are on a PC, so that
 * the guest does not allocate over the MP table (in the BIOS area) and
 * does not complain about a missing EBDA.
 */
#include <errno.h>

#include "memory.h"
#include "x86/e820.h"

const struct guest_layout x86_guest_layout = {
	0, X86_PCI_HOLE_START, X86_PCI_HOLE_END,
};

static int add(struct boot_e820_entry *tab, unsigned int max, unsigned int *n,
	       uint64_t addr, uint64_t size, uint32_t type)
{
	if (*n >= max)
		return -ENOSPC;
	tab[*n].addr = addr;
	tab[*n].size = size;
	tab[*n].type = type;
	(*n)++;
	return 0;
}

int e820_build(uint64_t ram_size, struct boot_e820_entry *tab,
	       unsigned int max)
{
	uint64_t low_end = MIN(ram_size, X86_PCI_HOLE_START);
	unsigned int n = 0;
	int ret;

	if (!tab || ram_size < E820_HIGH_MEM)
		return -EINVAL;

	ret = add(tab, max, &n, 0, E820_EBDA_START, E820_TYPE_RAM);
	if (!ret)
		ret = add(tab, max, &n, E820_EBDA_START,
			  E820_LEGACY_HOLE - E820_EBDA_START, E820_TYPE_RESERVED);
	if (!ret)
		ret = add(tab, max, &n, E820_BIOS_START,
			  E820_HIGH_MEM - E820_BIOS_START, E820_TYPE_RESERVED);
	if (!ret && low_end > E820_HIGH_MEM)
		ret = add(tab, max, &n, E820_HIGH_MEM, low_end - E820_HIGH_MEM,
			  E820_TYPE_RAM);
	if (!ret && ram_size > low_end)
		ret = add(tab, max, &n, X86_PCI_HOLE_END, ram_size - low_end,
			  E820_TYPE_RAM);
	return ret ? ret : (int)n;
}
