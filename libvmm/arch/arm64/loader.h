/* SPDX-License-Identifier: MIT */
/*
 * The arm64 boot image from files into guest RAM, per
 * Documentation/arm64/booting.rst: the Image at its 2 MiB-aligned base
 * plus text_offset (image.h), the initrd right above the kernel's whole
 * footprint (BSS included; the initrd must share a 1 GiB-aligned window of
 * at most 32 GiB with the kernel, which "right above" always does), and
 * the device tree's room at the top of RAM, alone in its 2 MiB block (the
 * kernel maps it cacheable in blocks of up to 2 MiB).
 */
#ifndef VMM_ARM64_LOADER_H
#define VMM_ARM64_LOADER_H

#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"

struct arm64_boot {
	uint64_t entry;	      /* the Image's load address: where it starts */
	uint64_t kernel_end;  /* past its image_size */
	uint64_t initrd_gpa;  /* 0 with no initrd */
	uint64_t initrd_size;
	uint64_t fdt_gpa;     /* ARM64_FDT_MAX_SIZE bytes of room */
};

/*
 * arm64_load_files() - load @kernel (an arm64 Image) and @initrd (NULL:
 * none) into @mem's RAM, which starts at @ram_base (one region), and say
 * where everything went.  Returns 0, -EINVAL (not an arm64 Image: e.g. an
 * x86 bzImage or a compressed vmlinuz; or a malformed header),
 * -ENOSPC (RAM too small), or the file's -errno; each with a message.
 */
int arm64_load_files(struct guest_mem *mem, uint64_t ram_base,
		     const char *kernel, const char *initrd,
		     struct arm64_boot *out) __must_check;

#endif
