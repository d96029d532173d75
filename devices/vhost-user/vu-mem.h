/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM as a vhost-user front end hands it over (SET_MEM_TABLE): up to
 * VHOST_USER_MAX_REGIONS regions, each a range of guest-physical addresses
 * backed by [mmap_offset, mmap_offset + size) of a file descriptor (a
 * memfd, a hugetlbfs file) that the front end also maps, at its own
 * virtual address userspace_addr.  Mapped here MAP_SHARED, and described
 * as a struct guest_mem so that the virtqueue code (guest_mem_ptr())
 * checks every guest address against it as it does in the VMM.
 *
 * The table is front-end controlled: sizes and offsets are checked for
 * overflow and against the file's size before anything is mapped (a
 * mapping past the end of a file would fault with SIGBUS on access).
 */
#ifndef VMM_DEVICES_VHOST_USER_VU_MEM_H
#define VMM_DEVICES_VHOST_USER_VU_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"
#include "vhost-user/vhost-user.h"

struct vu_mem_region {
	uint64_t gpa, size;
	uint64_t uaddr;	   /* the front end's address of gpa */
	uint8_t *map;	   /* our mapping of [0, map_len) of the fd */
	uint64_t map_len;
};

struct vu_mem {
	struct guest_mem gm; /* regions as the virtqueues see them */
	struct vu_mem_region r[VHOST_USER_MAX_REGIONS];
	unsigned int n;	     /* 0: no table */
};

/*
 * vu_mem_map - map the @tbl->nregions regions of @tbl, region i from
 * @fds[i], into @m (which must hold no table).  The fds are not closed
 * (the mappings hold their own references).  Returns 0, or -EINVAL (a
 * region of size 0, an overflow, a range beyond its file's end, a file
 * that cannot be mapped shared) with nothing mapped, or -ENOMEM.
 */
int vu_mem_map(struct vu_mem *m, const struct vhost_user_memory *tbl,
	       const int *fds) __must_check;
/* Unmap everything (no table afterwards; a no-op without one). */
void vu_mem_unmap(struct vu_mem *m);

/*
 * The guest-physical address of the front end's virtual address @uaddr,
 * if [uaddr, uaddr + len) lies inside one region: 0, or -EFAULT.
 */
int vu_mem_uaddr_to_gpa(const struct vu_mem *m, uint64_t uaddr, uint64_t len,
			uint64_t *gpa);

#endif
