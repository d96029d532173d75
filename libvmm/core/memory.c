/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM: one mapping, 2 MiB aligned, split into a low and a high region
 * around the PCI hole.
 *
 * Anonymous memory by default, for transparent huge pages: the kernel
 * gives MADV_HUGEPAGE anonymous memory 2 MiB pages under the usual THP
 * settings ("madvise" or "always"), but shmem (memfd) memory only when the
 * administrator turned on /sys/kernel/mm/transparent_hugepage/shmem_enabled,
 * which distributions ship as "never".  With 4 KiB pages every page the
 * guest touches first is an EPT/NPT violation exit and a host page fault,
 * and loading the kernel and initrd faults once per page, most of the
 * VMM's start-up CPU time (figures: docs/design-notes.md, "Core").  KVM
 * maps a huge page into the guest only where host and guest addresses
 * agree modulo 2 MiB, hence the alignment.
 *
 * A process that must map guest RAM too (a vhost-user back end such as
 * minivmm-blkd) needs a file: GUEST_MEM_MEMFD is a memfd mapped shared, with
 * MADV_HUGEPAGE so that shmem_enabled=advise gives it huge pages;
 * GUEST_MEM_HUGETLB a memfd on hugetlbfs (2 MiB pages from the reserved
 * pool, all of them reserved at the mmap, so a short pool fails the start
 * instead of killing the VMM with SIGBUS at a guest page fault), which
 * keeps the huge-page gains whatever the THP settings.  Both are sealed
 * (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL): a process given the fd can
 * trust its size, and no mapping of it can SIGBUS on a truncation.  What
 * the memfd costs is measured in bench/guest_ram_bench.sh (README, "Guest RAM
 * backends").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"
#include "memory.h"

#define HUGE_2M (2ull << 20)

_Static_assert(GUEST_MEM_ANON == VMM_MEMORY_ANON &&
		       GUEST_MEM_MEMFD == VMM_MEMORY_MEMFD &&
		       GUEST_MEM_HUGETLB == VMM_MEMORY_HUGETLB,
	       "guest_mem backends are vmm_memory_backend values");

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << 26) /* log2(2 MiB) << MFD_HUGE_SHIFT */
#endif

static bool guest_layout_ok(const struct guest_layout *l, uint64_t size)
{
	uint64_t below, above;

	if (l->hole_end < l->hole_start)
		return false;
	if (l->hole_start == l->hole_end) /* no hole */
		return l->ram_base + size > l->ram_base;
	if (l->ram_base >= l->hole_start && l->ram_base < l->hole_end)
		return false;
	below = l->ram_base < l->hole_start ? l->hole_start - l->ram_base : 0;
	if (size <= below)
		return true;
	above = size - below;
	return below ? l->hole_end + above > l->hole_end
		     : l->ram_base + size > l->ram_base;
}

static void guest_mem_layout(struct guest_mem *mem, const struct guest_layout *l)
{
	uint64_t low = mem->size;

	if (l->hole_start != l->hole_end && l->ram_base < l->hole_start)
		low = MIN(mem->size, l->hole_start - l->ram_base);
	mem->nr_regions = 1;
	mem->regions[0] = (struct guest_region){ l->ram_base, low, mem->base };
	if (mem->size > low) {
		mem->regions[1] = (struct guest_region){
			l->hole_end, mem->size - low, mem->base + low
		};
		mem->nr_regions = 2;
	}
}

/*
 * The memfd of a shared backend, @len bytes, sealed.  Returns the fd or
 * -errno (-ENOTSUP: this kernel has no such memfd).
 */
static int ram_memfd(uint64_t len, int backend)
{
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd, ret;

	if (backend == GUEST_MEM_HUGETLB)
		flags |= MFD_HUGETLB | MFD_HUGE_2MB;
	fd = memfd_create("vmm-guest-ram", flags);
	if (fd < 0) {
		ret = errno == EINVAL || errno == ENOSYS ? -ENOTSUP : -errno;
		vmm_err("guest RAM: memfd_create(%s): %s",
			backend == GUEST_MEM_HUGETLB ? "MFD_HUGETLB" : "shmem",
			strerror(errno));
		return ret;
	}
	/* hugetlbfs memfds take no seals before Linux 4.16: size fixed
	 * anyway there (a hugetlbfs file cannot be truncated while mapped
	 * pages are reserved), so that is not an error. */
	if (ftruncate(fd, (off_t)len) < 0 ||
	    (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 &&
	     backend != GUEST_MEM_HUGETLB)) {
		ret = -errno;
		vmm_err("guest RAM: sizing the memfd to %llu bytes: %s",
			(unsigned long long)len, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * Reserve @map bytes of address space (for @size bytes of RAM) aligned to
 * 2 MiB: readable and writable anonymous memory for GUEST_MEM_ANON, an
 * inaccessible range for a memfd to be mapped over.  Returns the base, or
 * NULL with *@err set.
 */
static uint8_t *ram_reserve(uint64_t size, uint64_t map, int backend, int *err)
{
	uint64_t len = map + HUGE_2M, head, tail;
	uint8_t *p, *base;

	if (len > SIZE_MAX) {
		*err = -EINVAL;
		return NULL;
	}
	/* MAP_NORESERVE: guest RAM is touched lazily; do not demand swap for
	 * all of it up front.  2 MiB more than needed, to align the start.
	 * For a memfd this only reserves the address range. */
	p = mmap(NULL, (size_t)len, backend == GUEST_MEM_ANON ?
			PROT_READ | PROT_WRITE : PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		*err = -errno;
		vmm_err("mapping %llu bytes of guest RAM: %s",
			(unsigned long long)size, strerror(errno));
		return NULL;
	}
	base = (uint8_t *)ALIGN_UP((uintptr_t)p, (uintptr_t)HUGE_2M);
	head = (uint64_t)(base - p);
	tail = len - head - map;
	if (head)
		munmap(p, (size_t)head);
	if (tail)
		munmap(base + map, (size_t)tail);
	return base;
}

/* A memfd of @backend mapped over the reservation [@base, +@map).  Returns
 * its fd, or -errno after unmapping the reservation. */
static int ram_map_memfd(uint8_t *base, uint64_t map, int backend)
{
	int ret, fd = ram_memfd(map, backend);

	/* Over the reservation.  hugetlbfs: no MAP_NORESERVE, so the pool
	 * must hold every page now (see the top of the file). */
	if (fd >= 0 &&
	    mmap(base, (size_t)map, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED |
			 (backend == GUEST_MEM_HUGETLB ? 0 : MAP_NORESERVE),
		 fd, 0) == MAP_FAILED) {
		ret = -errno;
		vmm_err("mapping %llu bytes of guest RAM from a %s memfd: %s%s",
			(unsigned long long)map,
			backend == GUEST_MEM_HUGETLB ? "hugetlbfs" : "shmem",
			strerror(errno),
			backend == GUEST_MEM_HUGETLB && errno == ENOMEM ?
				" (too few free 2 MiB pages: "
				"/proc/sys/vm/nr_hugepages)" :
				"");
		close(fd);
		fd = ret;
	}
	if (fd < 0)
		munmap(base, (size_t)map);
	return fd;
}

int guest_mem_init(struct guest_mem *mem, uint64_t size, int backend,
		   const struct guest_layout *layout)
{
	uint64_t map;
	uint8_t *base;
	int ret = 0, fd = -1;

	memset(mem, 0, sizeof(*mem));
	mem->fd = -1;
	if (backend != GUEST_MEM_ANON && backend != GUEST_MEM_MEMFD &&
	    backend != GUEST_MEM_HUGETLB)
		return -EINVAL;
	if (!layout || !guest_layout_ok(layout, size))
		return -EINVAL;
	if (size == 0 || size > UINT64_MAX - 2 * HUGE_2M)
		return -EINVAL;
	/* hugetlbfs maps whole huge pages only. */
	map = backend == GUEST_MEM_HUGETLB ? ALIGN_UP(size, HUGE_2M) : size;
	base = ram_reserve(size, map, backend, &ret);
	if (!base)
		return ret;
	if (backend != GUEST_MEM_ANON) {
		fd = ram_map_memfd(base, map, backend);
		if (fd < 0)
			return fd;
	}
	/* Huge pages (see above; hugetlbfs has them anyway); out of core
	 * dumps, which it would dwarf; not inherited by a child (the guest's
	 * memory is not its business).  The same advice for the whole range
	 * keeps it one VMA, which tools (the benchmarks) recognise in
	 * /proc/PID/smaps by its size, or by its name (the memfd's, or for
	 * anonymous memory where the kernel has CONFIG_ANON_VMA_NAME). */
	if (backend != GUEST_MEM_HUGETLB)
		madvise(base, (size_t)map, MADV_HUGEPAGE);
	madvise(base, (size_t)map, MADV_DONTDUMP);
	madvise(base, (size_t)map, MADV_DONTFORK);
	if (backend == GUEST_MEM_ANON)
		prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)base,
		      (unsigned long)map, (unsigned long)"vmm-guest-ram");
	mem->base = base;
	mem->size = size;
	mem->map_size = map;
	mem->mapped = true;
	mem->fd = fd;
	guest_mem_layout(mem, layout);
	return 0;
}

void guest_mem_init_buf(struct guest_mem *mem, void *buf, uint64_t size)
{
	memset(mem, 0, sizeof(*mem));
	mem->fd = -1;
	mem->base = buf;
	mem->size = size;
	guest_mem_layout(mem, &(struct guest_layout){ 0, 0, 0 });
}

void guest_mem_destroy(struct guest_mem *mem)
{
	if (mem->mapped) {
		munmap(mem->base, (size_t)mem->map_size);
		if (mem->fd >= 0)
			close(mem->fd);
	}
	memset(mem, 0, sizeof(*mem));
	mem->fd = -1;
}

int guest_mem_load_fd(const struct guest_mem *mem, uint64_t gpa, int fd,
		      uint64_t off, uint64_t len)
{
	uint8_t *dst = guest_mem_ptr(mem, gpa, len);
	ssize_t n;

	if (!dst)
		return -EFAULT;
	if (off > (uint64_t)LLONG_MAX - len)
		return -EINVAL;
	while (len) {
		n = pread(fd, dst, (size_t)MIN(len, 1ull << 30), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* the file shrank since it was measured */
		dst += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

int guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst,
		   uint64_t len)
{
	const void *src = guest_mem_ptr(mem, gpa, len);

	if (!src)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}
