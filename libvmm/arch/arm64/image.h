/* SPDX-License-Identifier: MIT */
/*
 * The Linux arm64 Image header (Documentation/arm64/booting.rst, "Call
 * the kernel image"): where the image goes in guest RAM.  Debian's
 * vmlinuz-*-arm64 is such an Image (with an EFI stub: code0 is "MZ").
 *
 *   u32 code0, code1; u64 text_offset, image_size, flags;
 *   u64 res2, res3, res4; u32 magic = "ARM\x64"; u32 res5
 *
 * All little-endian.  The image is placed text_offset bytes above a
 * 2 MiB-aligned base; image_size bytes from there (BSS included) must be
 * free RAM.  image_size 0 (kernels before 3.17): text_offset is 0x80000
 * and the size is unknown.
 */
#ifndef VMM_ARM64_IMAGE_H
#define VMM_ARM64_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

#define ARM64_IMAGE_HEADER_SIZE 64
#define ARM64_IMAGE_MAGIC 0x644d5241u /* "ARM\x64" */
#define ARM64_IMAGE_BASE_ALIGN (2ull << 20)
/* Before 3.17 (image_size 0), booting.rst says text_offset is 0x80000 and
 * the kernel's size is unknown: its BSS follows the file.  We reserve
 * twice the file (a guess with room: the BSS of those kernels was a
 * fraction of their text),
 * so that the initrd placed after it is not zeroed by the kernel. */
#define ARM64_IMAGE_LEGACY_TEXT_OFFSET 0x80000ull
#define ARM64_IMAGE_LEGACY_SIZE(file_size) (2 * (file_size))

struct arm64_image {
	uint64_t text_offset;
	uint64_t image_size; /* bytes from the load address the kernel uses
				(before 3.17: ARM64_IMAGE_LEGACY_SIZE) */
	bool anywhere;	     /* flags bit 3: any 2 MiB-aligned base in RAM */
};

/*
 * arm64_image_parse() - read @len bytes of a file's start as an Image.
 * @file_size: the whole file (image_size must cover it).
 * Returns 0, or -ENOEXEC (no magic: not an arm64 Image, e.g. still
 * compressed), -EINVAL (big-endian kernel, a text_offset not below 2 MiB,
 * an image_size smaller than the file, the file or image_size absurdly
 * large: over 1 GiB, image_size 0 included).
 */
int arm64_image_parse(const void *hdr, size_t len, uint64_t file_size,
		      struct arm64_image *out) __must_check;

/*
 * arm64_image_place() - the load address of @img in RAM [@ram_base,
 * @ram_base + @ram_size): the lowest 2 MiB-aligned base (RAM's own start
 * when flags bit 3 is clear: older kernels must sit near the start of RAM)
 * plus text_offset.  Returns 0, -ENOSPC (it does not fit) or -EINVAL (a
 * NULL argument, RAM that wraps past 2^64).
 */
int arm64_image_place(const struct arm64_image *img, uint64_t ram_base,
		      uint64_t ram_size, uint64_t *load_gpa) __must_check;

#endif
