/* SPDX-License-Identifier: MIT */
/*
 * Linux x86 bzImage parsing (Documentation/arch/x86/boot.rst).  Only the
 * 64-bit boot protocol is supported: the image must advertise
 * XLF_KERNEL_64, which implies boot protocol 2.12 or newer.
 */
#ifndef VMM_X86_BZIMAGE_H
#define VMM_X86_BZIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Offsets into the real-mode boot sector / setup header (boot.rst). */
#define BZ_SETUP_HDR_OFFSET 0x1f1	/* struct setup_header starts here */
#define BZ_BOOT_FLAG_OFFSET 0x1fe	/* 0xAA55 */
#define BZ_JUMP_OFFSET 0x200		/* 2-byte jump; byte 0x201 = header length */
#define BZ_HEADER_OFFSET 0x202		/* "HdrS" */
#define BZ_SECTOR_SIZE 512
/* setup_sects is one byte: boot sector + setup never exceed this. */
#define BZ_MAX_SETUP_SIZE ((255 + 1) * BZ_SECTOR_SIZE)

/* What the loader needs from a parsed bzImage. */
struct bzimage {
	uint16_t version;	   /* boot protocol, e.g. 0x020f */
	uint8_t setup_sects;	   /* as found; 0 means 4 */
	uint16_t xloadflags;
	bool relocatable;
	uint64_t pref_address;
	uint32_t init_size;
	uint32_t kernel_alignment;
	uint32_t cmdline_size;	   /* max command line length without NUL */
	uint32_t initrd_addr_max;
	const uint8_t *image;	   /* the bytes parsed (borrowed): the whole
				      file, or its head (bzimage_parse_head) */
	size_t image_size;
	size_t setup_size;	   /* (setup_sects + 1) * 512 */
	const uint8_t *kernel;	   /* protected-mode part following the setup,
				      NULL if not within image_size */
	size_t kernel_size;
};

/**
 * bzimage_parse() - validate a bzImage held in memory
 * @buf: the whole kernel file; it must outlive @bz (@bz borrows it)
 * @len: bytes in @buf
 * @bz: filled on success
 * @why: on failure, set to a static English reason (never NULL then);
 *       may itself be NULL if the caller does not want it
 *
 * Every field is read with a bounds check, so any @buf/@len is safe.
 *
 * Returns: 0 on success; -EINVAL if @buf is not a bzImage this loader can
 * boot (too small, no signature, protocol older than 2.06, no 64-bit entry
 * point, truncated kernel, bad alignment) or an argument is NULL.
 */
int bzimage_parse(const void *buf, size_t len, struct bzimage *bz,
		  const char **why);

/**
 * bzimage_parse_head() - the same, from the first @len bytes of a file of
 * @file_len bytes (read them with pread; BZ_MAX_SETUP_SIZE bytes, or the
 * whole file if smaller, always hold the setup).  bz->image is @buf,
 * bz->kernel NULL when the protected-mode part is not in it: the loader
 * then copies it from the file (x86_boot_setup_files()).  Parsing never
 * touches a mapping of the file, so a file truncated meanwhile cannot
 * fault the caller.
 *
 * Returns: as bzimage_parse(); -EINVAL also if @len > @file_len or the
 * setup is not within @len.
 */
int bzimage_parse_head(const void *buf, size_t len, uint64_t file_len,
		       struct bzimage *bz, const char **why);

#endif
