/* SPDX-License-Identifier: MIT */
/*
 * PVH direct boot of an uncompressed Linux vmlinux (ELF64): the kernel's
 * PT_LOAD segments go to their physical addresses, and the BSP enters the
 * 32-bit entry point the image names in an XEN_ELFNOTE_PHYS32_ENTRY note,
 * in flat protected mode with paging off and %ebx pointing at an
 * hvm_start_info structure (command line, initrd as module 0, memory map,
 * RSDP).  Linux has it with CONFIG_PVH=y (Debian's kernels do).  Why: the
 * bzImage's decompressor (xz for Debian) is skipped -- seconds of a boot in
 * a slow guest, and the bulk of a small one's.
 *
 * Layout: as boot.h, with hvm_start_info where the zero page would be
 * (X86_BOOT_ZERO_PAGE_GPA), the module list and memory map right after it.
 *
 * The image is untrusted: the ELF and program headers are parsed from a
 * copy of the file's head, notes from copies of their segments, and every
 * segment is range-checked against the file and guest RAM before anything
 * is read into RAM (x86_boot_setup_files()).
 */
#ifndef VMM_X86_PVH_H
#define VMM_X86_PVH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PVH_MAX_SEGS 16		/* PT_LOAD segments (Linux has 4 or 5) */
#define PVH_MAX_NOTES 4		/* PT_NOTE segments searched */
#define PVH_MAX_NOTE_SIZE 0x10000u /* bytes read per PT_NOTE segment */

/* hvm_start_info (Xen's public start_info.h, version 1): the PVH ABI.
 * Little-endian, naturally aligned fields: no padding. */
#define PVH_START_MAGIC 0x336ec578u
#define XEN_ELFNOTE_PHYS32_ENTRY 18

struct pvh_start_info {
	uint32_t magic;		 /* PVH_START_MAGIC */
	uint32_t version;	 /* 1: has the memory map */
	uint32_t flags;
	uint32_t nr_modules;	 /* the initrd is module 0 */
	uint64_t modlist_paddr;	 /* struct pvh_modlist_entry[nr_modules] */
	uint64_t cmdline_paddr;	 /* NUL-terminated */
	uint64_t rsdp_paddr;	 /* 0: none */
	uint64_t memmap_paddr;	 /* struct pvh_memmap_entry[memmap_entries] */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct pvh_modlist_entry {
	uint64_t paddr, size, cmdline_paddr, reserved;
};

struct pvh_memmap_entry {
	uint64_t addr, size;
	uint32_t type;		 /* e820 types */
	uint32_t reserved;
};

_Static_assert(sizeof(struct pvh_start_info) == 56, "hvm_start_info");
_Static_assert(sizeof(struct pvh_modlist_entry) == 32, "hvm_modlist_entry");
_Static_assert(sizeof(struct pvh_memmap_entry) == 24, "hvm_memmap_table_entry");

struct pvh_seg {
	uint64_t offset; /* in the file */
	uint64_t filesz; /* bytes from the file; the rest up to memsz is 0 */
	uint64_t memsz;
	uint64_t paddr;	 /* guest-physical load address */
};

struct pvh_kernel {
	uint32_t entry;			/* 32-bit entry (found in a note) */
	unsigned int nr_segs;
	struct pvh_seg segs[PVH_MAX_SEGS];
	uint64_t start, end;		/* lowest paddr, highest paddr + memsz */
	unsigned int nr_notes;
	struct { uint64_t offset, size; } notes[PVH_MAX_NOTES]; /* size capped */
};

/* Does @head (the file's first @len bytes) start with the ELF magic? */
bool pvh_is_elf(const uint8_t *head, size_t len);

/**
 * pvh_parse_head() - ELF header and program headers of a vmlinux
 * @head: the file's first @len bytes
 * @file_len: the file's length (segments must lie inside it)
 * @k: filled: segments, span, the PT_NOTE segments to search (entry 0)
 * @why: on failure, what is wrong (static string)
 *
 * Requires ELFCLASS64, little-endian, EM_X86_64, ET_EXEC, program headers
 * inside @head, 1..PVH_MAX_SEGS PT_LOAD segments with filesz <= memsz, each
 * inside the file and loaded at or above 1 MiB without wrapping, and at
 * least one PT_NOTE segment inside the file.
 * Returns: 0, or -EINVAL with *@why set.
 */
int pvh_parse_head(const uint8_t *head, size_t len, uint64_t file_len,
		   struct pvh_kernel *k, const char **why);

/**
 * pvh_find_entry() - the XEN_ELFNOTE_PHYS32_ENTRY value in a PT_NOTE
 * segment's bytes (@note, @len)
 * Returns: 0 with *@entry set; -ENOENT if the segment has no such note;
 * -EINVAL if a note runs past the segment or the entry note is malformed.
 */
int pvh_find_entry(const uint8_t *note, size_t len, uint32_t *entry);

#endif
