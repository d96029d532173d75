/* SPDX-License-Identifier: MIT */
/*
 * bzImage parsing.  The file is untrusted input (a user may point the VMM
 * at anything), so every header field is read through rd8/rd16/rd32/rd64,
 * which check the offset against the file length, and every size derived
 * from the header is checked before it is used.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <asm/bootparam.h>

#include "x86/bzimage.h"

/* Setup header field offsets in the file (0x1f1 + offsetof in the header). */
#define HDR(field) (BZ_SETUP_HDR_OFFSET + offsetof(struct setup_header, field))

/*
 * The smallest file that can hold the boot sector and the setup header,
 * which runs into the first setup sector (up to kernel_info_offset, 0x268).
 */
#define BZ_MIN_SIZE (BZ_SECTOR_SIZE + BZ_SECTOR_SIZE)

#define BZ_MIN_VERSION 0x0206	/* cmdline_size, 32-bit syssize */

/*
 * Reasons carry numbers, so they are formatted into a per-thread buffer:
 * it stays valid until the next bzimage_parse() on the same thread, needs
 * no freeing, and parses on different threads do not interfere.
 */
static __thread char why_buf[160];

static int fail(const char **why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(const char **why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
	va_end(ap);
	if (why)
		*why = why_buf;
	return -EINVAL;
}

/* Little-endian reads; callers have checked off + size <= len. */
static uint8_t rd8(const uint8_t *p, size_t off)
{
	return p[off];
}

static uint16_t rd16(const uint8_t *p, size_t off)
{
	return (uint16_t)(p[off] | p[off + 1] << 8);
}

static uint32_t rd32(const uint8_t *p, size_t off)
{
	return (uint32_t)rd16(p, off) | (uint32_t)rd16(p, off + 2) << 16;
}

static uint64_t rd64(const uint8_t *p, size_t off)
{
	return (uint64_t)rd32(p, off) | (uint64_t)rd32(p, off + 4) << 32;
}

int bzimage_parse(const void *buf, size_t len, struct bzimage *bz,
		  const char **why)
{
	return bzimage_parse_head(buf, len, len, bz, why);
}

/* The boot sector's signatures, bounded by @len (what we hold). */
static int check_signatures(const uint8_t *p, size_t len, const char **why)
{
	if (len < BZ_MIN_SIZE)
		return fail(why, "file too small to be a bzImage (%zu bytes)",
			    len);
	/* From here on every header offset used below is < BZ_MIN_SIZE. */
	if (memcmp(p + BZ_HEADER_OFFSET, "HdrS", 4) != 0)
		return fail(why, "not a bzImage (no \"HdrS\" signature)");
	if (rd16(p, BZ_BOOT_FLAG_OFFSET) != 0xAA55)
		return fail(why, "not a Linux boot sector (0xAA55 missing)");
	return 0;
}

/* The boot protocol version, 64-bit entry and setup size into @bz (cleared
 * first): the real-mode part, which must lie within the @len bytes held. */
static int parse_setup(const uint8_t *p, size_t len, uint64_t file_len,
		       struct bzimage *bz, const char **why)
{
	unsigned int sects;

	memset(bz, 0, sizeof(*bz));
	bz->version = rd16(p, HDR(version));
	if (bz->version < BZ_MIN_VERSION)
		return fail(why, "boot protocol %u.%02u is too old (need >= 2.06)",
			    bz->version >> 8, bz->version & 0xff);

	/* xloadflags only exists from 2.12; before that the bytes are padding. */
	if (bz->version >= 0x020c)
		bz->xloadflags = rd16(p, HDR(xloadflags));
	if (!(bz->xloadflags & XLF_KERNEL_64))
		return fail(why, "kernel has no 64-bit entry point (XLF_KERNEL_64 not set)");

	bz->setup_sects = rd8(p, HDR(setup_sects));
	sects = bz->setup_sects ? bz->setup_sects : 4;	/* boot.rst: 0 means 4 */
	bz->setup_size = (size_t)(sects + 1) * BZ_SECTOR_SIZE;
	if (bz->setup_size > file_len)
		return fail(why, "truncated: setup is %zu bytes but file has %llu",
			    bz->setup_size, (unsigned long long)file_len);
	if (bz->setup_size > len)
		return fail(why, "setup of %zu bytes not in the %zu bytes read",
			    bz->setup_size, len);
	/* The header proper must lie within the setup code it describes. */
	if (BZ_HEADER_OFFSET + (size_t)rd8(p, BZ_JUMP_OFFSET + 1) > bz->setup_size)
		return fail(why, "setup header runs past the setup code");
	return 0;
}

int bzimage_parse_head(const void *buf, size_t len, uint64_t file_len,
		       struct bzimage *bz, const char **why)
{
	const uint8_t *p = buf;
	uint64_t syssize_bytes;
	uint64_t avail;
	int ret;

	if (!bz || (!buf && len) || len > file_len)
		return fail(why, "invalid arguments");
	/* Every header read below is bounded by @len (what we hold); only
	 * the size checks of the protected-mode part use @file_len. */
	ret = check_signatures(p, len, why);
	if (!ret)
		ret = parse_setup(p, len, file_len, bz, why);
	if (ret)
		return ret;

	/* syssize counts 16-byte paragraphs of protected-mode code. */
	syssize_bytes = (uint64_t)rd32(p, HDR(syssize)) * 16;
	avail = file_len - bz->setup_size;
	if (syssize_bytes == 0)
		return fail(why, "kernel is empty (syssize is 0)");
	if (syssize_bytes > avail)
		return fail(why, "truncated: setup says %llu bytes of kernel but file has %llu",
			    (unsigned long long)syssize_bytes,
			    (unsigned long long)avail);

	bz->relocatable = rd8(p, HDR(relocatable_kernel)) != 0;
	bz->kernel_alignment = rd32(p, HDR(kernel_alignment));
	bz->cmdline_size = rd32(p, HDR(cmdline_size));
	bz->initrd_addr_max = rd32(p, HDR(initrd_addr_max));
	/* pref_address and init_size exist from 2.10; XLF_KERNEL_64 implies 2.12. */
	bz->pref_address = rd64(p, HDR(pref_address));
	bz->init_size = rd32(p, HDR(init_size));

	/* The loader rounds the load address up to kernel_alignment. */
	if (bz->relocatable && (bz->kernel_alignment == 0 ||
				(bz->kernel_alignment & (bz->kernel_alignment - 1))))
		return fail(why, "kernel_alignment 0x%x is not a power of two",
			    bz->kernel_alignment);

	bz->image = p;
	bz->image_size = len;
	/*
	 * Anything after syssize paragraphs (e.g. an appended Authenticode
	 * signature on distribution kernels) is not kernel code.
	 */
	bz->kernel_size = (size_t)syssize_bytes;
	bz->kernel = syssize_bytes <= len - bz->setup_size ? p + bz->setup_size
							    : NULL;
	return 0;
}
