/* SPDX-License-Identifier: MIT */
/* The block fuzz targets' driver side (see fuzz_blk_drv.h). */
#include <endian.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_ring.h>

#include "fuzz_blk_drv.h"

/* Guest address: inside RAM, straddling its end, or absurd. */
static uint64_t norm_addr(const struct fbd *d, uint32_t v)
{
	switch (v >> 30) {
	case 0:
	case 1:
		return v % d->ram_size;
	case 2:
		return d->ram_size - 64 + (v & 0x7f); /* around the end of RAM */
	default:
		return UINT64_MAX - (v & 0xffff); /* wraps on addr + len */
	}
}

static uint32_t norm_len(const struct fbd *d, uint32_t v)
{
	switch (v >> 30) {
	case 0:
	case 1:
		return v % 4097;
	case 2:
		return v % (d->ram_size + 1024);
	default:
		return v; /* raw: up to 4 GiB */
	}
}

/* Scratch space in the data area for headers, status bytes, tables. */
static uint64_t scratch(struct fbd *d, uint32_t len)
{
	uint64_t gpa = (d->scratch + 15) & ~15ull;

	if (gpa + len > d->ram_size)
		gpa = d->data_gpa;
	d->scratch = gpa + len;
	return gpa;
}

/* The driver lays queue @q's ring out again, zeroed, at the same place. */
void fbd_ring_reinit(struct fbd *d, unsigned int q)
{
	struct fg_vq *vq = &d->fvq[q];
	uint64_t save = d->g.bump, start = vq->desc_gpa;
	uint64_t end = vq->used_gpa + 6 + 8ull * d->qsize;

	memset(fg_ptr(&d->g, start, end - start), 0, end - start);
	fg_vq_destroy(vq);
	d->g.bump = start;
	if (fg_vq_init(&d->g, vq, d->qsize, d->features))
		abort();
	d->g.bump = save;
}

static uint16_t next_slot(struct fbd *d)
{
	uint16_t s = d->slot[d->q];

	d->slot[d->q] = (uint16_t)((s + 1) & (d->qsize - 1));
	return s;
}

void fbd_chain(struct fbd *d)
{
	struct fg_vq *vq = &d->fvq[d->q];
	unsigned int n = 1 + fi_u8(&d->in) % FBD_MAX_CHAIN;
	uint16_t head = d->slot[d->q];

	for (unsigned int i = 0; i < n; i++) {
		uint64_t addr = norm_addr(d, fi_u32(&d->in));
		uint32_t len = norm_len(d, fi_u32(&d->in));
		uint8_t fl = fi_u8(&d->in);
		uint16_t s = next_slot(d), flags, next;

		if (fl & 0x80) { /* raw flags and next */
			flags = fl & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
				      VRING_DESC_F_INDIRECT);
			next = fi_u8(&d->in);
		} else { /* linked like a driver would, direction from fl */
			flags = (uint16_t)((fl & 1 ? VRING_DESC_F_WRITE : 0) |
					   (i + 1 < n ? VRING_DESC_F_NEXT : 0));
			next = d->slot[d->q];
		}
		fg_vq_set_desc(vq, s, addr, len, flags, next);
	}
	fg_vq_add_raw_head(vq, head);
}

void fbd_indirect(struct fbd *d)
{
	struct fg_vq *vq = &d->fvq[d->q];
	unsigned int n = 1 + fi_u8(&d->in) % FBD_MAX_CHAIN;
	uint8_t mode = fi_u8(&d->in);
	uint64_t table = scratch(d, 16 * n);
	uint32_t tlen = 16 * n;
	uint16_t head = next_slot(d);

	for (unsigned int i = 0; i < n; i++) {
		uint64_t addr = norm_addr(d, fi_u32(&d->in));
		uint32_t len = norm_len(d, fi_u32(&d->in));
		uint8_t fl = fi_u8(&d->in);
		uint16_t flags, next;

		if (fl & 0x80) {
			flags = fl & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
				      VRING_DESC_F_INDIRECT);
			next = fi_u8(&d->in);
		} else {
			flags = (uint16_t)((fl & 1 ? VRING_DESC_F_WRITE : 0) |
					   (i + 1 < n ? VRING_DESC_F_NEXT : 0));
			next = (uint16_t)(i + 1);
		}
		fg_write_desc(&d->g, table, (uint16_t)i, addr, len, flags, next);
	}
	if (mode & 1) /* table length not a multiple of 16, or too long */
		tlen = norm_len(d, fi_u32(&d->in));
	if (mode & 2) /* table itself outside RAM */
		table = norm_addr(d, fi_u32(&d->in));
	fg_vq_set_desc(vq, head, table, tlen,
		       (uint16_t)(VRING_DESC_F_INDIRECT |
				  (mode & 4 ? VRING_DESC_F_NEXT | VRING_DESC_F_WRITE : 0)),
		       (uint16_t)(mode >> 3));
	fg_vq_add_raw_head(vq, head);
}

void fbd_blk(struct fbd *d)
{
	static const uint32_t types[] = {
		VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT, VIRTIO_BLK_T_FLUSH,
		VIRTIO_BLK_T_GET_ID, VIRTIO_BLK_T_DISCARD,
		VIRTIO_BLK_T_WRITE_ZEROES,
	};
	struct fg_vq *vq = &d->fvq[d->q];
	uint8_t sel = fi_u8(&d->in), mode = fi_u8(&d->in);
	uint32_t type = sel < 240 ? types[sel % 6] : fi_u32(&d->in);
	uint64_t sector = mode & 0x80 ? fi_u64(&d->in)
				      : fi_u16(&d->in) % (d->img_sectors + 8);
	unsigned int ndata = fi_u8(&d->in) % (FBD_MAX_DATA + 1), n = 0;
	bool indirect = mode & 1, dev_writes = type == VIRTIO_BLK_T_IN ||
					       type == VIRTIO_BLK_T_GET_ID;
	struct fg_buf bufs[FBD_MAX_DATA + 2];
	struct virtio_blk_outhdr h = {
		.type = htole32(type), .ioprio = 0, .sector = htole64(sector),
	};
	uint64_t st;

	bufs[n].gpa = scratch(d, sizeof(h));
	bufs[n].len = mode & 2 ? fi_u8(&d->in) % 32 : sizeof(h); /* short hdr */
	bufs[n++].writable = false;
	memcpy(fg_ptr(&d->g, bufs[0].gpa, sizeof(h)), &h, sizeof(h));
	for (unsigned int i = 0; i < ndata; i++, n++) {
		uint8_t db = fi_u8(&d->in);
		uint32_t len = db & 0x80 ? norm_len(d, fi_u32(&d->in))
					: 512u * (1 + (db & 3));

		if (type == VIRTIO_BLK_T_DISCARD ||
		    type == VIRTIO_BLK_T_WRITE_ZEROES) {
			struct virtio_blk_discard_write_zeroes r = {
				.sector = htole64(fi_u16(&d->in) % (d->img_sectors + 8)),
				.num_sectors = htole32(fi_u8(&d->in)),
				.flags = htole32(fi_u8(&d->in) & 3),
			};

			len = db & 0x80 ? len : sizeof(r);
			bufs[n].gpa = scratch(d, sizeof(r));
			memcpy(fg_ptr(&d->g, bufs[n].gpa, sizeof(r)), &r, sizeof(r));
		} else {
			bufs[n].gpa = d->data_gpa +
				      fi_u16(&d->in) % (d->ram_size - d->data_gpa);
		}
		bufs[n].len = len;
		bufs[n].writable = dev_writes ^ !!(db & 0x40);
	}
	if (!(mode & 4)) { /* status byte (missing: -EPROTO) */
		st = scratch(d, 1);
		*(uint8_t *)fg_ptr(&d->g, st, 1) = 0xff;
		bufs[n].gpa = st;
		bufs[n].len = mode & 8 ? 0 : 1;
		bufs[n++].writable = !(mode & 16);
	}
	if (indirect) {
		uint64_t table = scratch(d, 16 * n);
		uint16_t head = next_slot(d);

		for (unsigned int i = 0; i < n; i++)
			fg_write_desc(&d->g, table, (uint16_t)i, bufs[i].gpa,
				      bufs[i].len,
				      (uint16_t)((bufs[i].writable ? VRING_DESC_F_WRITE : 0) |
						 (i + 1 < n ? VRING_DESC_F_NEXT : 0)),
				      (uint16_t)(i + 1));
		fg_vq_set_desc(vq, head, table, 16 * n, VRING_DESC_F_INDIRECT, 0);
		fg_vq_add_raw_head(vq, head);
		return;
	}
	{
		uint16_t head = d->slot[d->q];

		for (unsigned int i = 0; i < n; i++) {
			uint16_t s = next_slot(d);

			fg_vq_set_desc(vq, s, bufs[i].gpa, bufs[i].len,
				       (uint16_t)((bufs[i].writable ? VRING_DESC_F_WRITE : 0) |
						  (i + 1 < n ? VRING_DESC_F_NEXT : 0)),
				       d->slot[d->q]);
		}
		fg_vq_add_raw_head(vq, head);
	}
}

void fbd_ram(struct fbd *d)
{
	uint32_t off = fi_u16(&d->in) % d->ram_size;
	uint32_t len = fi_u8(&d->in) % 64;

	if (len > d->ram_size - off)
		len = d->ram_size - off;
	fi_bytes(&d->in, fg_ptr(&d->g, off, len), len);
}

void fbd_suppress(struct fbd *d)
{
	struct fg_vq *vq = &d->fvq[d->q];
	uint8_t m = fi_u8(&d->in);
	uint16_t v = fi_u16(&d->in);

	if (m & 1)
		fg_vq_set_avail_flags(vq, v & VRING_AVAIL_F_NO_INTERRUPT);
	else
		fg_vq_set_used_event(vq, v);
}

