/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM: one anonymous private mapping, 2 MiB aligned, split into a low
 * and a high region around the PCI hole.
 *
 * Anonymous memory, not a memfd, for transparent huge pages: the kernel
 * gives MADV_HUGEPAGE anonymous memory 2 MiB pages under the usual THP
 * settings ("madvise" or "always"), but shmem (memfd) memory only when the
 * administrator turned on /sys/kernel/mm/transparent_hugepage/shmem_enabled,
 * which distributions ship as "never".  With 4 KiB pages every page the
 * guest touches first is an EPT/NPT violation exit and a host page fault:
 * a boot in the nested rig took 28,388 NPT exits against QEMU's 2,077 (its
 * RAM is anonymous THP), and loading the kernel and initrd (9.5 MB) took
 * 2,300 page faults, most of the VMM's start-up CPU time.  KVM maps a huge
 * page into the guest only where host and guest addresses agree modulo
 * 2 MiB, hence the alignment.  (A vhost-user backend would need shareable
 * memory, a memfd on hugetlbfs or shmem THP; none exists yet.)
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"
#include "memory.h"

#define HUGE_2M (2ull << 20)

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static void guest_mem_layout(struct guest_mem *mem)
{
	uint64_t low = MIN(mem->size, GUEST_PCI_HOLE_START);

	mem->nr_regions = 1;
	mem->regions[0] = (struct guest_region){ 0, low, mem->base };
	if (mem->size > low) {
		mem->regions[1] = (struct guest_region){
			GUEST_PCI_HOLE_END, mem->size - low, mem->base + low
		};
		mem->nr_regions = 2;
	}
}

int guest_mem_init(struct guest_mem *mem, uint64_t size)
{
	uint64_t len = size + HUGE_2M, head, tail;
	uint8_t *p, *base;
	int ret;

	memset(mem, 0, sizeof(*mem));
	if (size == 0 || size > UINT64_MAX - HUGE_2M || len > SIZE_MAX)
		return -EINVAL;
	/* MAP_NORESERVE: guest RAM is touched lazily; do not demand swap for
	 * all of it up front.  2 MiB more than needed, to align the start. */
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		vmm_err("mapping %llu bytes of guest RAM: %s",
			(unsigned long long)size, strerror(errno));
		return ret == -ENOMEM ? -ENOMEM : ret;
	}
	base = (uint8_t *)ALIGN_UP((uintptr_t)p, (uintptr_t)HUGE_2M);
	head = (uint64_t)(base - p);
	tail = len - head - size;
	if (head)
		munmap(p, (size_t)head);
	if (tail)
		munmap(base + size, (size_t)tail);
	/* Huge pages (see above); out of core dumps, which it would dwarf;
	 * not inherited by a child (the guest's memory is not its business).
	 * The same advice for the whole range keeps it one VMA, which tools
	 * (the benchmarks) recognise in /proc/PID/smaps by its size, or by
	 * its name where the kernel has CONFIG_ANON_VMA_NAME. */
	madvise(base, (size_t)size, MADV_HUGEPAGE);
	madvise(base, (size_t)size, MADV_DONTDUMP);
	madvise(base, (size_t)size, MADV_DONTFORK);
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)base,
	      (unsigned long)size, (unsigned long)"vmm-guest-ram");
	mem->base = base;
	mem->size = size;
	mem->mapped = true;
	guest_mem_layout(mem);
	return 0;
}

void guest_mem_init_buf(struct guest_mem *mem, void *buf, uint64_t size)
{
	memset(mem, 0, sizeof(*mem));
	mem->base = buf;
	mem->size = size;
	guest_mem_layout(mem);
}

void guest_mem_destroy(struct guest_mem *mem)
{
	if (mem->mapped)
		munmap(mem->base, (size_t)mem->size);
	memset(mem, 0, sizeof(*mem));
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

int guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src,
		    uint64_t len)
{
	void *dst = guest_mem_ptr(mem, gpa, len);

	if (!dst)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}
