/* SPDX-License-Identifier: MIT */
/* Simulated virtio driver on fake guest memory; see fake_guest.h. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string.h>

#include <linux/virtio_blk.h>

#include "fake_guest.h"
#include "util/barrier.h"

int fg_init(struct fake_guest *g, uint64_t ram_size)
{
	memset(g, 0, sizeof(*g));
	g->fd = -1;
	if (posix_memalign(&g->ram, 4096, ram_size))
		return -ENOMEM;
	memset(g->ram, 0, ram_size);
	g->ram_size = ram_size;
	g->bump = FG_RAM_BASE_ALLOC;
	guest_mem_init_buf(&g->mem, g->ram, ram_size);
	return 0;
}

int fg_init_memfd(struct fake_guest *g, uint64_t ram_size)
{
	int err;

	memset(g, 0, sizeof(*g));
	g->fd = memfd_create("fake-guest-ram", MFD_CLOEXEC);
	if (g->fd < 0)
		return -errno;
	if (ftruncate(g->fd, (off_t)ram_size) < 0)
		goto fail;
	g->ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
	if (g->ram == MAP_FAILED)
		goto fail;
	g->ram_size = ram_size;
	g->bump = FG_RAM_BASE_ALLOC;
	g->shared = true;
	guest_mem_init_buf(&g->mem, g->ram, ram_size);
	return 0;
fail:
	err = errno;
	close(g->fd);
	memset(g, 0, sizeof(*g));
	g->fd = -1;
	return -err;
}

void fg_destroy(struct fake_guest *g)
{
	if (g->shared) {
		munmap(g->ram, g->ram_size);
		close(g->fd);
	} else {
		free(g->ram);
	}
	memset(g, 0, sizeof(*g));
	g->fd = -1;
}

uint64_t fg_alloc(struct fake_guest *g, uint64_t len, uint64_t align)
{
	uint64_t gpa = ALIGN_UP(g->bump, align);

	if (gpa > g->ram_size || len > g->ram_size - gpa)
		return 0;
	g->bump = gpa + len;
	return gpa;
}

void *fg_ptr(struct fake_guest *g, uint64_t gpa, uint64_t len)
{
	return guest_mem_ptr(&g->mem, gpa, len);
}

int fg_vq_init(struct fake_guest *g, struct fg_vq *vq, uint16_t size,
	       uint64_t features)
{
	memset(vq, 0, sizeof(*vq));
	vq->g = g;
	vq->size = size;
	vq->features = features;
	vq->desc_gpa = fg_alloc(g, 16ull * size, 16);
	vq->avail_gpa = fg_alloc(g, 6ull + 2ull * size, 2);
	vq->used_gpa = fg_alloc(g, 6ull + 8ull * size, 4);
	if (!vq->desc_gpa || !vq->avail_gpa || !vq->used_gpa)
		return -ENOMEM;
	vq->desc = fg_ptr(g, vq->desc_gpa, 16ull * size);
	vq->avail = fg_ptr(g, vq->avail_gpa, 6ull + 2ull * size);
	vq->used = fg_ptr(g, vq->used_gpa, 6ull + 8ull * size);
	vq->shadow_next = calloc(size, sizeof(*vq->shadow_next));
	vq->chain_ndesc = calloc(size, sizeof(*vq->chain_ndesc));
	vq->indirect_gpa = calloc(size, sizeof(*vq->indirect_gpa));
	vq->indirect_cap = calloc(size, sizeof(*vq->indirect_cap));
	if (!vq->shadow_next || !vq->chain_ndesc || !vq->indirect_gpa ||
	    !vq->indirect_cap) {
		fg_vq_destroy(vq);
		return -ENOMEM;
	}
	for (uint16_t i = 0; i < size; i++)
		vq->shadow_next[i] = (uint16_t)(i + 1);
	vq->free_head = 0;
	vq->num_free = size;
	vq->auto_used_event = true;
	return 0;
}

void fg_vq_destroy(struct fg_vq *vq)
{
	free(vq->shadow_next);
	free(vq->chain_ndesc);
	free(vq->indirect_gpa);
	free(vq->indirect_cap);
	vq->shadow_next = NULL;
	vq->chain_ndesc = NULL;
	vq->indirect_gpa = NULL;
	vq->indirect_cap = NULL;
}

int fg_vq_attach(struct fg_vq *fvq, struct virtq *vq)
{
	return virtq_start(vq, &fvq->g->mem, fvq->size, fvq->desc_gpa,
			   fvq->avail_gpa, fvq->used_gpa,
			   fvq->features & (1ull << VIRTIO_RING_F_EVENT_IDX),
			   fvq->features & (1ull << VIRTIO_RING_F_INDIRECT_DESC));
}

static void put_desc(struct vring_desc *d, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

void fg_write_desc(struct fake_guest *g, uint64_t table_gpa, uint16_t i,
		   uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	struct vring_desc *d = fg_ptr(g, table_gpa + 16ull * i, 16);

	if (d)
		put_desc(d, addr, len, flags, next);
}

void fg_vq_set_desc(struct fg_vq *vq, uint16_t i, uint64_t addr, uint32_t len,
		    uint16_t flags, uint16_t next)
{
	put_desc(&vq->desc[i], addr, len, flags, next);
}

static uint16_t take_desc(struct fg_vq *vq)
{
	uint16_t i = vq->free_head;

	vq->free_head = vq->shadow_next[i];
	vq->num_free--;
	return i;
}

void fg_vq_add_raw_head(struct fg_vq *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx & (vq->size - 1)] = htole16(head);
	vq->avail_idx++;
}

int fg_vq_add(struct fg_vq *vq, const struct fg_buf *bufs, unsigned int n,
	      bool indirect)
{
	uint16_t head, prev = 0, cur;

	if (n == 0)
		return -EINVAL;
	if (indirect) {
		uint64_t t;

		if (vq->num_free < 1)
			return -ENOSPC;
		head = take_desc(vq);
		if (vq->indirect_cap[head] < n) {
			t = fg_alloc(vq->g, 16ull * n, 16);
			if (!t)
				return -ENOMEM;
			vq->indirect_gpa[head] = t;
			vq->indirect_cap[head] = n;
		}
		t = vq->indirect_gpa[head];
		for (unsigned int i = 0; i < n; i++)
			fg_write_desc(vq->g, t, (uint16_t)i, bufs[i].gpa, bufs[i].len,
				      (uint16_t)((bufs[i].writable ? VRING_DESC_F_WRITE : 0) |
						 (i + 1 < n ? VRING_DESC_F_NEXT : 0)),
				      (uint16_t)(i + 1 < n ? i + 1 : 0));
		put_desc(&vq->desc[head], t, 16u * n, VRING_DESC_F_INDIRECT, 0);
		vq->chain_ndesc[head] = 1;
		fg_vq_add_raw_head(vq, head);
		return head;
	}
	if (vq->num_free < n)
		return -ENOSPC;
	head = vq->free_head;
	for (unsigned int i = 0; i < n; i++) {
		cur = take_desc(vq);
		if (i)
			vq->desc[prev].next = htole16(cur);
		put_desc(&vq->desc[cur], bufs[i].gpa, bufs[i].len,
			 (uint16_t)((bufs[i].writable ? VRING_DESC_F_WRITE : 0) |
				    (i + 1 < n ? VRING_DESC_F_NEXT : 0)), 0);
		prev = cur;
	}
	vq->chain_ndesc[head] = (uint16_t)n;
	fg_vq_add_raw_head(vq, head);
	return head;
}

/* avail_event sits right after used->ring[size] (vring_avail_event()). */
static uint16_t *avail_event_p(struct fg_vq *vq)
{
	return (uint16_t *)((uint8_t *)vq->used + 4 + 8u * vq->size);
}

bool fg_vq_publish(struct fg_vq *vq)
{
	uint16_t old = vq->kicked_idx, new = vq->avail_idx;
	bool kick;

	/* Descriptors and ring entries before the index (virtio_wmb in
	 * virtqueue_add); pairs with the device's rmb in virtq_pop(). */
	vmm_wmb();
	WRITE_ONCE(vq->avail->idx, htole16(new));
	vq->kicked_idx = new;
	/* Index store before reading the device's suppression state
	 * (virtio_mb in virtqueue_kick_prepare); pairs with the mb in
	 * virtq_enable_notify(). */
	vmm_mb();
	if (vq->features & (1ull << VIRTIO_RING_F_EVENT_IDX)) {
		uint16_t ev = le16toh(READ_ONCE(*avail_event_p(vq)));

		kick = virtq_need_event(ev, new, old);
	} else {
		kick = !(le16toh(READ_ONCE(vq->used->flags)) & VRING_USED_F_NO_NOTIFY);
	}
	if (kick)
		vq->kicks++;
	return kick;
}

unsigned int fg_vq_used_pending(struct fg_vq *vq)
{
	return (uint16_t)(le16toh(READ_ONCE(vq->used->idx)) - vq->last_used_idx);
}

int fg_vq_get_used(struct fg_vq *vq, uint32_t *id, uint32_t *len)
{
	struct vring_used_elem e;
	uint16_t head, n;

	if (!fg_vq_used_pending(vq))
		return 0;
	/* Entry after index; pairs with the wmb in virtq_push(). */
	vmm_rmb();
	e = vq->used->ring[vq->last_used_idx & (vq->size - 1)];
	vq->last_used_idx++;
	*id = le32toh(e.id);
	*len = le32toh(e.len);
	head = (uint16_t)*id;
	if (head < vq->size && vq->chain_ndesc[head]) {
		uint16_t i = head;

		n = vq->chain_ndesc[head];
		vq->chain_ndesc[head] = 0;
		/* Return the chain's descriptors: they were taken in list
		 * order, so they are consecutive in shadow_next. */
		for (uint16_t k = 1; k < n; k++)
			i = vq->shadow_next[i];
		vq->shadow_next[i] = vq->free_head;
		vq->free_head = head;
		vq->num_free = (uint16_t)(vq->num_free + n);
	}
	if (vq->auto_used_event && (vq->features & (1ull << VIRTIO_RING_F_EVENT_IDX)))
		fg_vq_set_used_event(vq, vq->last_used_idx);
	return 1;
}

void fg_vq_set_used_event(struct fg_vq *vq, uint16_t v)
{
	WRITE_ONCE(vq->avail->ring[vq->size], htole16(v));
	vmm_mb(); /* like virtqueue_enable_cb_delayed; pairs with should_notify */
}

uint16_t fg_vq_avail_event(struct fg_vq *vq)
{
	return le16toh(READ_ONCE(*avail_event_p(vq)));
}

void fg_vq_set_avail_flags(struct fg_vq *vq, uint16_t flags)
{
	WRITE_ONCE(vq->avail->flags, htole16(flags));
	vmm_mb(); /* pairs with the mb in virtq_should_notify() */
}

uint16_t fg_vq_used_flags(struct fg_vq *vq)
{
	return le16toh(READ_ONCE(vq->used->flags));
}

uint16_t fg_vq_used_idx(struct fg_vq *vq)
{
	return le16toh(READ_ONCE(vq->used->idx));
}

void fg_vq_set_avail_idx(struct fg_vq *vq, uint16_t idx)
{
	vmm_wmb(); /* as in fg_vq_publish() */
	vq->avail_idx = idx;
	vq->kicked_idx = idx;
	WRITE_ONCE(vq->avail->idx, htole16(idx));
}

int fg_blk_add(struct fg_vq *vq, uint32_t type, uint64_t sector,
	       const struct fg_buf *data, unsigned int ndata, bool indirect,
	       struct fg_blk_req *out)
{
	struct fg_buf bufs[VIRTQ_MAX_SEGS];
	struct virtio_blk_outhdr *h;
	uint8_t *st;
	int head;

	if (ndata + 2 > VIRTQ_MAX_SEGS)
		return -E2BIG;
	out->hdr_gpa = fg_alloc(vq->g, sizeof(*h), 16);
	out->status_gpa = fg_alloc(vq->g, 1, 1);
	if (!out->hdr_gpa || !out->status_gpa)
		return -ENOMEM;
	h = fg_ptr(vq->g, out->hdr_gpa, sizeof(*h));
	h->type = htole32(type);
	h->ioprio = 0;
	h->sector = htole64(sector);
	st = fg_ptr(vq->g, out->status_gpa, 1);
	*st = 0xff;

	bufs[0] = (struct fg_buf){ out->hdr_gpa, sizeof(*h), false };
	for (unsigned int i = 0; i < ndata; i++)
		bufs[1 + i] = data[i];
	bufs[1 + ndata] = (struct fg_buf){ out->status_gpa, 1, true };
	head = fg_vq_add(vq, bufs, ndata + 2, indirect);
	if (head < 0)
		return head;
	out->head = head;
	return 0;
}

uint8_t fg_blk_status(struct fake_guest *g, const struct fg_blk_req *r)
{
	uint8_t *st = fg_ptr(g, r->status_gpa, 1);

	return st ? *st : 0xff;
}

int fg_tmp_image(uint64_t size)
{
	char path[] = "/tmp/libvmm-test-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -errno;
	unlink(path);
	if (ftruncate(fd, (off_t)size) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}
