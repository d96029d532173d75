/* SPDX-License-Identifier: MIT */
/* The Linux arm64 Image header (see image.h). */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "arm64/image.h"

/* flags (booting.rst): bit 0 big-endian kernel, bits 1-2 page size,
 * bit 3 "may be placed anywhere in physical memory". */
#define IMAGE_FLAG_BE (1ull << 0)
#define IMAGE_FLAG_ANYWHERE (1ull << 3)
/* No Image is near this; anything bigger is a corrupt header. */
#define IMAGE_MAX_SIZE (1ull << 30)

static uint64_t le64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint32_t le32_at(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

int arm64_image_parse(const void *hdr, size_t len, uint64_t file_size,
		      struct arm64_image *out)
{
	const unsigned char *h = hdr;
	uint64_t flags;

	if (!hdr || !out || len < ARM64_IMAGE_HEADER_SIZE ||
	    file_size < ARM64_IMAGE_HEADER_SIZE)
		return -ENOEXEC;
	if (le32_at(h + 56) != ARM64_IMAGE_MAGIC)
		return -ENOEXEC;
	out->text_offset = le64_at(h + 8);
	out->image_size = le64_at(h + 16);
	flags = le64_at(h + 24);
	if (flags & IMAGE_FLAG_BE)
		return -EINVAL;
	if (file_size > IMAGE_MAX_SIZE)
		return -EINVAL;
	if (!out->image_size) {
		/* Before 3.17: text_offset is meaningful only as 0x80000. */
		out->text_offset = ARM64_IMAGE_LEGACY_TEXT_OFFSET;
		out->image_size = ARM64_IMAGE_LEGACY_SIZE(file_size);
		out->anywhere = false;
		return 0;
	}
	if (out->text_offset >= ARM64_IMAGE_BASE_ALIGN ||
	    out->image_size < file_size || out->image_size > IMAGE_MAX_SIZE)
		return -EINVAL;
	out->anywhere = flags & IMAGE_FLAG_ANYWHERE;
	return 0;
}

int arm64_image_place(const struct arm64_image *img, uint64_t ram_base,
		      uint64_t ram_size, uint64_t *load_gpa)
{
	uint64_t base, end = ram_base + ram_size;

	if (!img || !load_gpa || end < ram_base)
		return -EINVAL;
	/* The lowest 2 MiB-aligned base in RAM; without the "anywhere" flag
	 * booting.rst wants the base at RAM's start, so RAM must start
	 * aligned. */
	base = (ram_base + ARM64_IMAGE_BASE_ALIGN - 1) & ~(ARM64_IMAGE_BASE_ALIGN - 1);
	if (!img->anywhere && base != ram_base)
		return -ENOSPC;
	/* Overflow-safe: neither field is bounded for a caller-built img. */
	if (base < ram_base || base > end || img->text_offset > end - base ||
	    img->image_size > end - base - img->text_offset)
		return -ENOSPC;
	*load_gpa = base + img->text_offset;
	return 0;
}
