/* SPDX-License-Identifier: MIT */
/* The vhost-user fuzz targets' stub device and helpers (fuzz_vu_stub.h). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "fuzz_vu_stub.h"

const uint32_t fvu_known[] = {
	VHOST_USER_GET_FEATURES,       VHOST_USER_SET_FEATURES,
	VHOST_USER_SET_OWNER,	       VHOST_USER_RESET_OWNER,
	VHOST_USER_SET_MEM_TABLE,      VHOST_USER_SET_VRING_NUM,
	VHOST_USER_SET_VRING_ADDR,     VHOST_USER_SET_VRING_BASE,
	VHOST_USER_GET_VRING_BASE,     VHOST_USER_SET_VRING_KICK,
	VHOST_USER_SET_VRING_CALL,     VHOST_USER_SET_VRING_ERR,
	VHOST_USER_GET_PROTOCOL_FEATURES, VHOST_USER_SET_PROTOCOL_FEATURES,
	VHOST_USER_GET_QUEUE_NUM,      VHOST_USER_SET_VRING_ENABLE,
	VHOST_USER_GET_CONFIG,	       VHOST_USER_SET_CONFIG,
	VHOST_USER_GET_INFLIGHT_FD,    VHOST_USER_SET_INFLIGHT_FD,
	VHOST_USER_RESET_DEVICE,
};

const unsigned int fvu_nknown = ARRAY_SIZE(fvu_known);

/* ---- the stub device ---------------------------------------------------- */

static uint64_t stub_features(void *dev)
{
	(void)dev;
	return (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |
	       (1ull << VIRTIO_RING_F_INDIRECT_DESC);
}

static int stub_set_features(void *dev, uint64_t f)
{
	(void)dev;
	return f & (1ull << VIRTIO_F_VERSION_1) ? 0 : -EINVAL;
}

static void stub_cfg_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	struct fvu_stub *s = dev;

	if (off > sizeof(s->cfg) || len > sizeof(s->cfg) - off)
		abort(); /* the back end bounds it */
	memcpy(buf, s->cfg + off, len);
}

static void stub_cfg_write(void *dev, uint32_t off, const void *buf, uint32_t len)
{
	struct fvu_stub *s = dev;

	if (off > sizeof(s->cfg) || len > sizeof(s->cfg) - off)
		abort();
	memcpy(s->cfg + off, buf, len);
}

static volatile uint8_t sink;

static int stub_start_queue(void *dev, struct virtio_queue *q)
{
	struct fvu_stub *s = dev;
	const struct virtq *vq = &q->vq;
	const uint8_t *d = (const uint8_t *)vq->desc, *a = (const uint8_t *)vq->avail;
	uint8_t *u = (uint8_t *)vq->used;

	if (q->index >= FVU_NQ || s->started[q->index] || !vq->ready || q->kick_fd < 0)
		abort();
	/* Every byte of the ring is mapped guest RAM (a wrong translation
	 * faults here). */
	for (unsigned int i = 0; i < 16u * vq->size; i++)
		sink ^= d[i];
	for (unsigned int i = 0; i < 6u + 2u * vq->size; i++)
		sink ^= a[i];
	for (unsigned int i = 0; i < 6u + 8u * vq->size; i++)
		u[i] = u[i];
	/* Serve what is there (resubmissions first when tracked); a
	 * malformed ring just stops it, as the device's NEEDS_RESET. */
	for (unsigned int i = 0; i < 2u * vq->size; i++) {
		static struct virtq_chain c;

		if (virtq_pop(&q->vq, &c) <= 0)
			break;
		virtq_push(&q->vq, c.head, 0);
	}
	virtio_queue_notify(q); /* writes the call eventfd, if any */
	s->started[q->index] = true;
	return 0;
}

static void stub_stop_queue(void *dev, unsigned int index, bool cancel)
{
	struct fvu_stub *s = dev;

	(void)cancel;
	if (index >= FVU_NQ || !s->started[index])
		abort(); /* the back end stops only what it started */
	s->started[index] = false;
}

static int stub_start(void *dev, struct virtio_queue *q, unsigned int nr)
{
	(void)dev;
	(void)q;
	(void)nr;
	abort(); /* vhost-user starts rings one at a time */
}

static void stub_stop(void *dev)
{
	(void)dev;
	abort();
}

const struct virtio_device_ops fvu_stub_ops = {
	.device_id = 2,
	.config_size = 60,
	.features = stub_features,
	.set_features = stub_set_features,
	.config_read = stub_cfg_read,
	.config_write = stub_cfg_write,
	.start = stub_start,
	.stop = stub_stop,
	.start_queue = stub_start_queue,
	.stop_queue = stub_stop_queue,
};

int fvu_memfd(int *fd, const char *name, uint32_t size)
{
	if (*fd < 0) {
		*fd = memfd_create(name, MFD_CLOEXEC);
		if (*fd < 0 || ftruncate(*fd, size) < 0)
			abort();
	}
	return *fd;
}

int fvu_ram_fd(void)
{
	static int fd = -1;

	return fvu_memfd(&fd, "fuzz-vhost-ram", FVU_RAM_SIZE);
}

struct vu_backend *fvu_backend(struct fvu_stub *dev)
{
	struct vu_backend_params p = {
		.ops = &fvu_stub_ops, .dev = dev, .num_queues = FVU_NQ,
		.max_queue_size = 256, .name = "fuzz",
	};
	struct vu_backend *b;

	if (vu_backend_create(&p, &b))
		abort();
	return b;
}

int fvu_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n++;
	closedir(d);
	return n;
}

void fvu_fixup(struct vu_msg *m)
{
	if (m->hdr.request == VHOST_USER_SET_MEM_TABLE) {
		struct vhost_user_memory *t = &m->p.memory;

		for (unsigned int i = 0; i < VHOST_USER_MAX_REGIONS; i++) {
			struct vhost_user_mem_region *r = &t->regions[i];

			/* Mostly page aligned, as QEMU's (refused otherwise,
			 * vu-mem.c); an odd size keeps some unaligned. */
			bool aligned = !(r->memory_size & 1);

			r->mmap_offset %= FVU_RAM_SIZE;
			r->guest_phys_addr %= 4ull * FVU_RAM_SIZE;
			if (aligned) {
				r->mmap_offset &= ~4095ull;
				r->guest_phys_addr &= ~4095ull;
			}
			r->memory_size = 1 + r->memory_size % (FVU_RAM_SIZE - r->mmap_offset);
			r->userspace_addr = FVU_UADDR_BASE + i * (uint64_t)FVU_RAM_SIZE +
					    (aligned ? 0 : r->userspace_addr % 64);
		}
	} else if (m->hdr.request == VHOST_USER_SET_VRING_ADDR) {
		struct vhost_user_vring_addr *a = &m->p.addr;

		a->desc_user_addr = FVU_UADDR_BASE + a->desc_user_addr % FVU_RAM_SIZE;
		a->avail_user_addr = FVU_UADDR_BASE + a->avail_user_addr % FVU_RAM_SIZE;
		a->used_user_addr = FVU_UADDR_BASE + a->used_user_addr % FVU_RAM_SIZE;
		m->p.addr.index %= FVU_NQ + 1;
	} else if (m->hdr.request == VHOST_USER_GET_INFLIGHT_FD ||
		   m->hdr.request == VHOST_USER_SET_INFLIGHT_FD) {
		struct vhost_user_inflight *in = &m->p.inflight;
		uint64_t need;

		in->num_queues %= FVU_NQ + 2;	     /* 0 .. one too many */
		in->queue_size %= 300;	     /* around max_queue_size 256 */
		need = in->num_queues * virtq_inflight_region_size(in->queue_size);
		in->mmap_size = need + in->mmap_size % 3 - 1; /* need - 1 .. + 1 */
		in->mmap_offset = (in->mmap_offset & 1) ? 4096 : 0;
	}
}
