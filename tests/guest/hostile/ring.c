/* SPDX-License-Identifier: MIT */
/*
 * Split-ring driver helpers of the hostile driver's net and vsock modes
 * (net.c, vsock.c): DMA pages, queue set-up on the modern virtio-pci
 * transport, descriptors, the avail ring, kicks and waiting for the used
 * ring.  No MSI-X vector: these modes poll.  The blk mode (hostile.c) has
 * its own, older set, tied to its request tracking.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>

#include "hostile.h"

uint64_t ring_kicks;

void dma_pages(struct page *p, unsigned int n)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	uint8_t *mem = mmap(NULL, (size_t)n * PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (pm < 0 || mem == MAP_FAILED)
		die("DMA pages: %s", strerror(errno));
	/* No THP collapse, no compaction (abuse: compact_unevictable_allowed
	 * 0): the pages stay where pagemap said. */
	madvise(mem, (size_t)n * PAGE, MADV_NOHUGEPAGE);
	memset(mem, 0, (size_t)n * PAGE);
	if (mlock(mem, (size_t)n * PAGE))
		die("mlock: %s", strerror(errno));
	for (unsigned int i = 0; i < n; i++) {
		p[i].va = mem + (size_t)i * PAGE;
		p[i].pa = virt_to_phys(pm, p[i].va);
	}
	close(pm);
}

uint64_t dev_negotiate(struct dev *d, uint64_t want)
{
	uint64_t f;

	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	wr32(d->common, VIRTIO_PCI_COMMON_DFSELECT, 0);
	f = rd32(d->common, VIRTIO_PCI_COMMON_DF);
	wr32(d->common, VIRTIO_PCI_COMMON_DFSELECT, 1);
	f |= (uint64_t)rd32(d->common, VIRTIO_PCI_COMMON_DF) << 32;
	want &= f;
	wr32(d->common, VIRTIO_PCI_COMMON_GFSELECT, 0);
	wr32(d->common, VIRTIO_PCI_COMMON_GF, (uint32_t)want);
	wr32(d->common, VIRTIO_PCI_COMMON_GFSELECT, 1);
	wr32(d->common, VIRTIO_PCI_COMMON_GF, (uint32_t)(want >> 32));
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			      VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(status(d) & VIRTIO_CONFIG_S_FEATURES_OK))
		die("FEATURES_OK refused for 0x%" PRIx64, want);
	wr16(d->common, VIRTIO_PCI_COMMON_MSIX, NO_VECTOR);
	return f;
}

void vq_setup(struct dev *d, struct vq *x, const struct page *p, uint16_t idx)
{
	uint16_t size;

	x->idx = idx;
	x->desc = (struct desc *)p[0].va;
	x->avail = (struct avail *)p[1].va;
	x->used = (struct used *)p[2].va;
	for (unsigned int i = 0; i < 3; i++)
		memset(p[i].va, 0, PAGE);
	x->avail_idx = x->last_used = 0;
	wr16(d->common, VIRTIO_PCI_COMMON_Q_SELECT, idx);
	size = rd16(d->common, VIRTIO_PCI_COMMON_Q_SIZE);
	if (size < QSZ)
		die("queue %u: size %u, we need %u", idx, size, QSZ);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_SIZE, QSZ);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_MSIX, NO_VECTOR);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_DESCLO, (uint32_t)p[0].pa);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_DESCHI, (uint32_t)(p[0].pa >> 32));
	wr32(d->common, VIRTIO_PCI_COMMON_Q_AVAILLO, (uint32_t)p[1].pa);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_AVAILHI, (uint32_t)(p[1].pa >> 32));
	wr32(d->common, VIRTIO_PCI_COMMON_Q_USEDLO, (uint32_t)p[2].pa);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_USEDHI, (uint32_t)(p[2].pa >> 32));
	x->notify_off = rd16(d->common, VIRTIO_PCI_COMMON_Q_NOFF);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_ENABLE, 1);
}

void vq_kick(struct dev *d, struct vq *x)
{
	/* Everything we wrote into the rings before the doorbell. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	wr16(d->notify, (uint32_t)x->notify_off * d->notify_mult, x->idx);
	ring_kicks++;
}

void vq_desc(struct vq *x, unsigned int i, uint64_t addr, uint32_t len,
	     uint16_t flags, uint16_t next)
{
	x->desc[i] = (struct desc){ addr, len, flags, next };
}

void vq_publish(struct vq *x, uint16_t head)
{
	x->avail->ring[x->avail_idx % QSZ] = head;
	__atomic_store_n(&x->avail->idx, (uint16_t)(x->avail_idx + 1), __ATOMIC_RELEASE);
	x->avail_idx++;
}

uint16_t vq_used_idx(struct vq *x)
{
	return __atomic_load_n(&x->used->idx, __ATOMIC_ACQUIRE);
}

int vq_wait(struct dev *d, struct vq *x)
{
	double t0 = now();

	for (unsigned int i = 0;; i++) {
		if (vq_used_idx(x) != x->last_used)
			return 0;
		if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)
			return vq_used_idx(x) != x->last_used ? 0 : -1;
		if (i > 64) {
			if (now() - t0 > WAIT_S)
				return -2;
			pause_us(50);
		}
	}
}
