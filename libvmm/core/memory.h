/* SPDX-License-Identifier: MIT */
/*
 * Guest physical memory.  RAM is one mapping: anonymous by default, or a
 * shareable memfd (shmem or hugetlbfs) for a process that must map it too
 * (memory.c says what each costs), laid out in guest-physical space as
 * the platform says (struct guest_layout): from ram_base up, around one
 * hole if the platform has one (x86: the PCI hole below 4 GiB, the PC's
 * usual layout; arm64: none, RAM above the devices).
 * Every access to guest memory from the VMM goes through guest_mem_ptr(),
 * which checks the whole [gpa, gpa+len) range against RAM.
 */
#ifndef VMM_MEMORY_H
#define VMM_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

/* Where RAM goes: [ram_base, hole_start) then, for what is left, from
 * hole_end on (hole_start == hole_end: no hole, one region). */
struct guest_layout {
	uint64_t ram_base;
	uint64_t hole_start, hole_end;
};

/* A VM's own RAM has at most 2 regions (low, high); a vhost-user back end
 * (devices/vhost-user/) maps up to 8 from its front end's memory table. */
#define GUEST_MAX_REGIONS 8

struct guest_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
};

/* Backing of guest RAM (guest_mem_init()): the values of enum
 * vmm_memory_backend (vmm.h), checked in memory.c. */
#define GUEST_MEM_ANON 0    /* private anonymous memory, THP */
#define GUEST_MEM_MEMFD 1   /* shared memfd (shmem) */
#define GUEST_MEM_HUGETLB 2 /* shared memfd on hugetlbfs, 2 MiB pages */

struct guest_mem {
	uint8_t *base;	/* the whole RAM mapping (below the hole, then above) */
	uint64_t size;	/* bytes of RAM */
	bool mapped;	/* base was mapped by guest_mem_init() */
	int fd;		/* the memfd of a shared backend, else -1 (or 0 when
			   zero-initialised and never mapped) */
	uint64_t map_size; /* bytes mapped at base (size, or rounded up) */
	unsigned int nr_regions;
	struct guest_region regions[GUEST_MAX_REGIONS];
};

/*
 * Map @size bytes of RAM, 2 MiB aligned, and lay out regions as @layout
 * says.  @backend:
 *   GUEST_MEM_ANON     private anonymous memory with MADV_HUGEPAGE;
 *   GUEST_MEM_MEMFD    a memfd (shmem), sealed against shrinking and
 *                      growing, mapped shared, MADV_HUGEPAGE (huge pages
 *                      only where shmem_enabled allows: see memory.c);
 *   GUEST_MEM_HUGETLB  a memfd on hugetlbfs with 2 MiB pages, sealed,
 *                      every page reserved at the mmap (@size is rounded
 *                      up to 2 MiB; the mapping fails, rather than the
 *                      guest being killed later, when the pool is short).
 * Returns 0; -EINVAL (size 0 or absurd, unknown backend, a layout
 * whose RAM would wrap or start inside its hole); -ENOMEM (no
 * memory, or too few huge pages in the pool); -ENOTSUP (no memfd or no
 * hugetlbfs memfd on this kernel); another -errno of memfd_create, ftruncate
 * or mmap.
 */
int guest_mem_init(struct guest_mem *mem, uint64_t size, int backend,
		   const struct guest_layout *layout) __must_check;
/* Lay out regions over caller-provided memory (unit tests): one region
 * from guest-physical 0. */
void guest_mem_init_buf(struct guest_mem *mem, void *buf, uint64_t size);
void guest_mem_destroy(struct guest_mem *mem);

/*
 * Host pointer for [gpa, gpa+len) if the whole range is RAM inside one
 * region (len may be 0: then gpa must still be inside a region or at its
 * end), else NULL.  Overflow-safe for any guest-controlled gpa/len.
 */
static inline void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa,
				  uint64_t len)
{
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->regions[i];
		uint64_t off;

		if (gpa < r->gpa)
			continue;
		off = gpa - r->gpa;
		if (off > r->size || len > r->size - off)
			continue;
		return r->hva + off;
	}
	return NULL;
}

/*
 * guest_mem_load_fd() - read @len bytes of file @fd, from file offset @off,
 * into guest RAM at @gpa (boot images).  pread(2) straight into RAM rather
 * than memcpy() from a mapping of the file: no page faults on a source
 * mapping, no munmap() of it.
 *
 * Returns 0; -EFAULT when the range is not RAM; -EIO when the file ends
 * before @len bytes; or -errno of the failed read.
 */
int guest_mem_load_fd(const struct guest_mem *mem, uint64_t gpa, int fd,
		      uint64_t off, uint64_t len) __must_check;

/* Copy out of guest RAM; returns 0 or -EFAULT when the range is not RAM. */
int guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst,
		   uint64_t len);

#endif
