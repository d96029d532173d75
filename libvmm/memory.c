/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM: one memfd, mapped once, split into a low and a high region
 * around the PCI hole.  A memfd (rather than anonymous memory) lets a later
 * vhost-user backend or snapshot share the same pages by fd.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "memory.h"

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
	void *p;
	int fd, ret;

	memset(mem, 0, sizeof(*mem));
	mem->memfd = -1;
	fd = memfd_create("vmm-guest-ram", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		vmm_err("memfd_create for guest RAM: %s", strerror(errno));
		return ret;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		vmm_err("sizing guest RAM to %llu bytes: %s",
			(unsigned long long)size, strerror(errno));
		close(fd);
		return ret;
	}
	/* MAP_NORESERVE: guest RAM is touched lazily; do not demand swap for
	 * all of it up front. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		 fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		vmm_err("mapping %llu bytes of guest RAM: %s",
			(unsigned long long)size, strerror(errno));
		close(fd);
		return ret == -ENOMEM ? -ENOMEM : ret;
	}
	/* Guest RAM is the bulk of the process: keep it out of core dumps and
	 * let the kernel back it with huge pages where it can. */
	madvise(p, size, MADV_DONTDUMP);
	madvise(p, size, MADV_HUGEPAGE);
	mem->base = p;
	mem->size = size;
	mem->memfd = fd;
	guest_mem_layout(mem);
	return 0;
}

void guest_mem_init_buf(struct guest_mem *mem, void *buf, uint64_t size)
{
	memset(mem, 0, sizeof(*mem));
	mem->memfd = -1;
	mem->base = buf;
	mem->size = size;
	guest_mem_layout(mem);
}

void guest_mem_destroy(struct guest_mem *mem)
{
	if (mem->memfd >= 0) {
		munmap(mem->base, mem->size);
		close(mem->memfd);
	}
	memset(mem, 0, sizeof(*mem));
	mem->memfd = -1;
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
