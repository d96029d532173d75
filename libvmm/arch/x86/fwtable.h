/* SPDX-License-Identifier: MIT */
/*
 * What the firmware-table writers (mptable.c, acpi.c) share: the 8-bit
 * checksum both specifications use and the copy of a locally built entry
 * into the table.
 */
#ifndef VMM_X86_FWTABLE_H
#define VMM_X86_FWTABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Value that makes the @len bytes at @p sum to 0 (mod 256) once stored in
 * a byte of them that is 0 now. */
static inline uint8_t fwtable_checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return (uint8_t)-sum;
}

/*
 * Entries are built in local structs and copied with memcpy, so the table
 * needs no particular alignment.  Returns the byte after the entry.
 */
static inline uint8_t *fwtable_put(uint8_t *pos, const void *entry,
				   size_t size)
{
	memcpy(pos, entry, size);
	return pos + size;
}

#endif
