/* SPDX-License-Identifier: MIT */
/* The front end's memory table, mapped (see vu-mem.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "log.h"
#include "vhost-user/vu-mem.h"

#define VU_MEM_ALIGN 4096ull

/* Check region @r against its file @fd; 0 or -EINVAL (logged). */
static int region_ok(const struct vhost_user_mem_region *r, int fd,
		     unsigned int i)
{
	struct stat st;
	const char *why = NULL;

	if (!r->memory_size)
		why = "size 0";
	/* Guest-controlled through the front end.  A guest address maps to
	 * map + mmap_offset + (gpa - guest_phys_addr): with both 4 KiB
	 * aligned, a host pointer is aligned as its guest address is, which
	 * virtq_map() checks for the rings (a misaligned used ring would be
	 * misaligned atomic accesses).  Front ends map page-aligned regions. */
	else if ((r->guest_phys_addr | r->mmap_offset) & (VU_MEM_ALIGN - 1))
		why = "guest-physical address or file offset not 4 KiB aligned";
	else if (r->guest_phys_addr > UINT64_MAX - r->memory_size)
		why = "guest-physical range overflows";
	else if (r->userspace_addr > UINT64_MAX - r->memory_size)
		why = "front-end address range overflows";
	else if (r->mmap_offset > UINT64_MAX - r->memory_size ||
		 r->mmap_offset + r->memory_size > (uint64_t)SIZE_MAX)
		why = "file range overflows";
	else if (fstat(fd, &st) < 0)
		why = "cannot fstat its file descriptor";
	else if (!S_ISREG(st.st_mode))
		why = "its file descriptor is not a regular file (memfd, hugetlbfs or tmpfs file)";
	else if ((uint64_t)st.st_size < r->mmap_offset + r->memory_size)
		why = "it ends beyond the end of its file";
	if (!why)
		return 0;
	vmm_err("vhost-user: memory region %u (gpa %#llx, %llu bytes, offset %#llx): %s",
		i, (unsigned long long)r->guest_phys_addr,
		(unsigned long long)r->memory_size,
		(unsigned long long)r->mmap_offset, why);
	return -EINVAL;
}

int vu_mem_map(struct vu_mem *m, const struct vhost_user_memory *tbl,
	       const int *fds)
{
	int ret;

	if (m->n || !tbl->nregions || tbl->nregions > VHOST_USER_MAX_REGIONS)
		return -EINVAL;
	for (unsigned int i = 0; i < tbl->nregions; i++) {
		ret = region_ok(&tbl->regions[i], fds[i], i);
		if (ret)
			return ret;
	}
	memset(&m->gm, 0, sizeof(m->gm));
	m->gm.fd = -1;
	for (unsigned int i = 0; i < tbl->nregions; i++) {
		const struct vhost_user_mem_region *r = &tbl->regions[i];
		uint64_t len = r->mmap_offset + r->memory_size;
		uint8_t *p;

		/* From offset 0, as libvhost-user does: the offset need not
		 * be aligned to the file's page size (hugetlbfs: 2 MiB). */
		p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_NORESERVE, fds[i], 0);
		if (p == MAP_FAILED) {
			ret = errno == ENOMEM ? -ENOMEM : -EINVAL;
			vmm_err("vhost-user: mapping memory region %u (%llu bytes): %s",
				i, (unsigned long long)len, strerror(errno));
			vu_mem_unmap(m);
			return ret;
		}
		/* Guest RAM has no place in our core dumps. */
		madvise(p, (size_t)len, MADV_DONTDUMP);
		m->r[i] = (struct vu_mem_region){
			.gpa = r->guest_phys_addr, .size = r->memory_size,
			.uaddr = r->userspace_addr, .map = p, .map_len = len,
		};
		m->gm.regions[i] = (struct guest_region){
			r->guest_phys_addr, r->memory_size, p + r->mmap_offset
		};
		m->gm.size += r->memory_size;
		m->n = i + 1;
		m->gm.nr_regions = m->n;
	}
	return 0;
}

void vu_mem_unmap(struct vu_mem *m)
{
	for (unsigned int i = 0; i < m->n; i++)
		munmap(m->r[i].map, (size_t)m->r[i].map_len);
	memset(m, 0, sizeof(*m));
	m->gm.fd = -1;
}

int vu_mem_uaddr_to_gpa(const struct vu_mem *m, uint64_t uaddr, uint64_t len,
			uint64_t *gpa)
{
	for (unsigned int i = 0; i < m->n; i++) {
		const struct vu_mem_region *r = &m->r[i];
		uint64_t off;

		if (uaddr < r->uaddr)
			continue;
		off = uaddr - r->uaddr;
		if (off > r->size || len > r->size - off)
			continue;
		*gpa = r->gpa + off;
		return 0;
	}
	return -EFAULT;
}
