/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the split virtqueue and the virtio-blk request path, driven
 * through the unit tests' simulated driver (tests/harness/fake_guest.h) on
 * fake guest RAM, with the synchronous engine on a memfd image.
 *
 * Input: [features u64][setup u8] then action records [action u8][fields],
 * the shape of QEMU's virtio_blk_fuzz.c.  Every field is normalised:
 * queue indices modulo the number of queues, descriptor slots modulo the
 * queue size, guest addresses into RAM, straddling its end or near 2^64,
 * lengths small, RAM-sized or raw.  The driver side writes descriptors raw
 * (fg_vq_set_desc / fg_write_desc), so chains may be malformed in every way
 * the guest can make them: loops, bad next, bad flags, nested indirect.
 *
 * Checked beyond the sanitizers (abort() on violation):
 *  - vblk_process_queue() returns >= 0 or -EPROTO, and once -EPROTO it
 *    stays -EPROTO until the queue is reset (the documented latch);
 *  - per kick, the device completes no more chains than it took, takes
 *    no more than the ring holds, and (synchronous engine) completes
 *    every chain it took, as many as it returns;
 *  - no file descriptor is leaked across an input.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"
#include "fuzz.h"

#define RAM_SIZE (64u << 10)
#define IMG_SIZE (64u << 10) /* 128 sectors */
#define IMG_SECTORS (IMG_SIZE / 512)
#define MAX_QUEUES 2
#define MAX_CHAIN 12  /* descriptors per raw chain */
#define MAX_DATA 4    /* data buffers per well-formed request */
#define MAX_ACTIONS 512

enum {
	A_QSEL,
	A_CHAIN,      /* raw descriptor chain */
	A_BLK,	      /* well-formed (or nearly) virtio-blk request */
	A_INDIRECT,   /* raw indirect table */
	A_KICK,	      /* publish + vblk_process_queue */
	A_QRESET,     /* queue reset (vblk_queue_reset + virtq_reset) */
	A_DEVRESET,   /* device reset: renegotiate features, restart queues */
	A_CFG_READ,
	A_CFG_WRITE,
	A_RAM,	      /* driver scribbles on guest RAM */
	A_AVAIL_IDX,  /* avail->idx jumps */
	A_SUPPRESS,   /* avail flags / used_event */
	A_NR,
};

struct fz {
	struct fuzz_in in;
	struct fake_guest g;
	struct vblk *blk;
	struct blk_engine *eng;
	unsigned int nq;
	uint16_t qsize;
	uint64_t features;
	struct fg_vq fvq[MAX_QUEUES];
	struct virtq vq[MAX_QUEUES];
	bool ready[MAX_QUEUES];	 /* virtq_start() accepted the rings */
	bool broken[MAX_QUEUES]; /* vblk_process_queue() said -EPROTO */
	uint16_t slot[MAX_QUEUES]; /* next raw descriptor slot */
	uint64_t data_gpa;	/* first byte after the rings */
	uint64_t scratch;	/* rotating cursor for headers/status/tables */
	unsigned int q;
};

static struct blk_engine *engine(void)
{
	static struct blk_engine *eng;

	if (!eng && blk_sync_engine_create(&eng))
		abort();
	return eng;
}

/* Guest address: inside RAM, straddling its end, or absurd. */
static uint64_t norm_addr(uint32_t v)
{
	switch (v >> 30) {
	case 0:
	case 1:
		return v % RAM_SIZE;
	case 2:
		return RAM_SIZE - 64 + (v & 0x7f); /* around the end of RAM */
	default:
		return UINT64_MAX - (v & 0xffff); /* wraps on addr + len */
	}
}

static uint32_t norm_len(uint32_t v)
{
	switch (v >> 30) {
	case 0:
	case 1:
		return v % 4097;
	case 2:
		return v % (RAM_SIZE + 1024);
	default:
		return v; /* raw: up to 4 GiB */
	}
}

/* Scratch space in the data area for headers, status bytes, tables. */
static uint64_t scratch(struct fz *f, uint32_t len)
{
	uint64_t gpa = (f->scratch + 15) & ~15ull;

	if (gpa + len > RAM_SIZE)
		gpa = f->data_gpa;
	f->scratch = gpa + len;
	return gpa;
}

static void ring_start(struct fz *f, unsigned int q)
{
	f->ready[q] = fg_vq_attach(&f->fvq[q], &f->vq[q]) == 0;
	f->broken[q] = false;
	f->slot[q] = 0;
}

/* The driver lays queue @q's ring out again, zeroed, at the same place. */
static void ring_reinit(struct fz *f, unsigned int q)
{
	struct fg_vq *vq = &f->fvq[q];
	uint64_t save = f->g.bump, start = vq->desc_gpa;
	uint64_t end = vq->used_gpa + 6 + 8ull * f->qsize;

	memset(fg_ptr(&f->g, start, end - start), 0, end - start);
	fg_vq_destroy(vq);
	f->g.bump = start;
	if (fg_vq_init(&f->g, vq, f->qsize, f->features))
		abort();
	f->g.bump = save;
}

static uint16_t next_slot(struct fz *f)
{
	uint16_t s = f->slot[f->q];

	f->slot[f->q] = (uint16_t)((s + 1) & (f->qsize - 1));
	return s;
}

static void do_chain(struct fz *f)
{
	struct fg_vq *vq = &f->fvq[f->q];
	unsigned int n = 1 + fi_u8(&f->in) % MAX_CHAIN;
	uint16_t head = f->slot[f->q];

	for (unsigned int i = 0; i < n; i++) {
		uint64_t addr = norm_addr(fi_u32(&f->in));
		uint32_t len = norm_len(fi_u32(&f->in));
		uint8_t fl = fi_u8(&f->in);
		uint16_t s = next_slot(f), flags, next;

		if (fl & 0x80) { /* raw flags and next */
			flags = fl & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
				      VRING_DESC_F_INDIRECT);
			next = fi_u8(&f->in);
		} else { /* linked like a driver would, direction from fl */
			flags = (uint16_t)((fl & 1 ? VRING_DESC_F_WRITE : 0) |
					   (i + 1 < n ? VRING_DESC_F_NEXT : 0));
			next = f->slot[f->q];
		}
		fg_vq_set_desc(vq, s, addr, len, flags, next);
	}
	fg_vq_add_raw_head(vq, head);
}

static void do_indirect(struct fz *f)
{
	struct fg_vq *vq = &f->fvq[f->q];
	unsigned int n = 1 + fi_u8(&f->in) % MAX_CHAIN;
	uint8_t mode = fi_u8(&f->in);
	uint64_t table = scratch(f, 16 * n);
	uint32_t tlen = 16 * n;
	uint16_t head = next_slot(f);

	for (unsigned int i = 0; i < n; i++) {
		uint64_t addr = norm_addr(fi_u32(&f->in));
		uint32_t len = norm_len(fi_u32(&f->in));
		uint8_t fl = fi_u8(&f->in);
		uint16_t flags, next;

		if (fl & 0x80) {
			flags = fl & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
				      VRING_DESC_F_INDIRECT);
			next = fi_u8(&f->in);
		} else {
			flags = (uint16_t)((fl & 1 ? VRING_DESC_F_WRITE : 0) |
					   (i + 1 < n ? VRING_DESC_F_NEXT : 0));
			next = (uint16_t)(i + 1);
		}
		fg_write_desc(&f->g, table, (uint16_t)i, addr, len, flags, next);
	}
	if (mode & 1) /* table length not a multiple of 16, or too long */
		tlen = norm_len(fi_u32(&f->in));
	if (mode & 2) /* table itself outside RAM */
		table = norm_addr(fi_u32(&f->in));
	fg_vq_set_desc(vq, head, table, tlen,
		       (uint16_t)(VRING_DESC_F_INDIRECT |
				  (mode & 4 ? VRING_DESC_F_NEXT | VRING_DESC_F_WRITE : 0)),
		       (uint16_t)(mode >> 3));
	fg_vq_add_raw_head(vq, head);
}

static void do_blk(struct fz *f)
{
	static const uint32_t types[] = {
		VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT, VIRTIO_BLK_T_FLUSH,
		VIRTIO_BLK_T_GET_ID, VIRTIO_BLK_T_DISCARD,
		VIRTIO_BLK_T_WRITE_ZEROES,
	};
	struct fg_vq *vq = &f->fvq[f->q];
	uint8_t sel = fi_u8(&f->in), mode = fi_u8(&f->in);
	uint32_t type = sel < 240 ? types[sel % 6] : fi_u32(&f->in);
	uint64_t sector = mode & 0x80 ? fi_u64(&f->in)
				      : fi_u16(&f->in) % (IMG_SECTORS + 8);
	unsigned int ndata = fi_u8(&f->in) % (MAX_DATA + 1), n = 0;
	bool indirect = mode & 1, dev_writes = type == VIRTIO_BLK_T_IN ||
					       type == VIRTIO_BLK_T_GET_ID;
	struct fg_buf bufs[MAX_DATA + 2];
	struct virtio_blk_outhdr h = {
		.type = htole32(type), .ioprio = 0, .sector = htole64(sector),
	};
	uint64_t st;

	bufs[n].gpa = scratch(f, sizeof(h));
	bufs[n].len = mode & 2 ? fi_u8(&f->in) % 32 : sizeof(h); /* short hdr */
	bufs[n++].writable = false;
	memcpy(fg_ptr(&f->g, bufs[0].gpa, sizeof(h)), &h, sizeof(h));
	for (unsigned int i = 0; i < ndata; i++, n++) {
		uint8_t d = fi_u8(&f->in);
		uint32_t len = d & 0x80 ? norm_len(fi_u32(&f->in))
					: 512u * (1 + (d & 3));

		if (type == VIRTIO_BLK_T_DISCARD ||
		    type == VIRTIO_BLK_T_WRITE_ZEROES) {
			struct virtio_blk_discard_write_zeroes r = {
				.sector = htole64(fi_u16(&f->in) % (IMG_SECTORS + 8)),
				.num_sectors = htole32(fi_u8(&f->in)),
				.flags = htole32(fi_u8(&f->in) & 3),
			};

			len = d & 0x80 ? len : sizeof(r);
			bufs[n].gpa = scratch(f, sizeof(r));
			memcpy(fg_ptr(&f->g, bufs[n].gpa, sizeof(r)), &r, sizeof(r));
		} else {
			bufs[n].gpa = f->data_gpa +
				      fi_u16(&f->in) % (RAM_SIZE - f->data_gpa);
		}
		bufs[n].len = len;
		bufs[n].writable = dev_writes ^ !!(d & 0x40);
	}
	if (!(mode & 4)) { /* status byte (missing: -EPROTO) */
		st = scratch(f, 1);
		*(uint8_t *)fg_ptr(&f->g, st, 1) = 0xff;
		bufs[n].gpa = st;
		bufs[n].len = mode & 8 ? 0 : 1;
		bufs[n++].writable = !(mode & 16);
	}
	if (indirect) {
		uint64_t table = scratch(f, 16 * n);
		uint16_t head = next_slot(f);

		for (unsigned int i = 0; i < n; i++)
			fg_write_desc(&f->g, table, (uint16_t)i, bufs[i].gpa,
				      bufs[i].len,
				      (uint16_t)((bufs[i].writable ? VRING_DESC_F_WRITE : 0) |
						 (i + 1 < n ? VRING_DESC_F_NEXT : 0)),
				      (uint16_t)(i + 1));
		fg_vq_set_desc(vq, head, table, 16 * n, VRING_DESC_F_INDIRECT, 0);
		fg_vq_add_raw_head(vq, head);
		return;
	}
	{
		uint16_t head = f->slot[f->q];

		for (unsigned int i = 0; i < n; i++) {
			uint16_t s = next_slot(f);

			fg_vq_set_desc(vq, s, bufs[i].gpa, bufs[i].len,
				       (uint16_t)((bufs[i].writable ? VRING_DESC_F_WRITE : 0) |
						  (i + 1 < n ? VRING_DESC_F_NEXT : 0)),
				       f->slot[f->q]);
		}
		fg_vq_add_raw_head(vq, head);
	}
}

static void do_kick(struct fz *f)
{
	unsigned int q = f->q;
	struct fg_vq *vq = &f->fvq[q];
	bool notify = false;
	uint32_t id, len;
	int r;

	uint16_t popped, pushed;

	fg_vq_publish(vq);
	if (!f->ready[q])
		return; /* the transport never hands a dead queue to the device */
	popped = f->vq[q].last_avail_idx;
	pushed = f->vq[q].used_idx;
	r = vblk_process_queue(f->blk, q, &f->vq[q], f->eng, &notify);
	popped = (uint16_t)(f->vq[q].last_avail_idx - popped);
	pushed = (uint16_t)(f->vq[q].used_idx - pushed);
	if (r < 0 && r != -EPROTO)
		abort();
	if (f->broken[q] && r != -EPROTO)
		abort(); /* the broken latch must hold until reset */
	if (r == -EPROTO)
		f->broken[q] = true;
	/* The device's own indices (the driver may scribble on the guest's
	 * copies): never more completions than chains taken, never more
	 * chains than the ring holds, and with the synchronous engine every
	 * chain taken is completed in the same call. */
	if (pushed > popped || popped > f->qsize ||
	    (r >= 0 && (pushed != popped || (unsigned int)r != popped)))
		abort();
	while (fg_vq_get_used(vq, &id, &len) == 1)
		;
}

static void do_qreset(struct fz *f, unsigned int q)
{
	vblk_queue_reset(f->blk, q);
	virtq_reset(&f->vq[q]);
}

static void do_devreset(struct fz *f)
{
	uint64_t want = fi_u64(&f->in);

	for (unsigned int q = 0; q < f->nq; q++)
		do_qreset(f, q);
	f->features = (want & vblk_device_features(f->blk)) |
		      (1ull << VIRTIO_F_VERSION_1);
	if (vblk_set_driver_features(f->blk, f->features))
		abort();
	for (unsigned int q = 0; q < f->nq; q++) {
		ring_reinit(f, q);
		ring_start(f, q);
	}
}

static void do_cfg(struct fz *f, bool write)
{
	uint32_t off = fi_u8(&f->in) % (sizeof(struct virtio_blk_config) + 8);
	uint32_t len = fi_u8(&f->in) % 9;
	uint8_t buf[8];

	if (write) {
		fi_bytes(&f->in, buf, len);
		(void)vblk_config_write(f->blk, off, buf, len);
	} else {
		(void)vblk_config_read(f->blk, off, buf, len);
	}
}

static void do_ram(struct fz *f)
{
	uint32_t off = fi_u16(&f->in) % RAM_SIZE;
	uint32_t len = fi_u8(&f->in) % 64;

	if (len > RAM_SIZE - off)
		len = RAM_SIZE - off;
	fi_bytes(&f->in, fg_ptr(&f->g, off, len), len);
}

static void do_suppress(struct fz *f)
{
	struct fg_vq *vq = &f->fvq[f->q];
	uint8_t m = fi_u8(&f->in);
	uint16_t v = fi_u16(&f->in);

	if (m & 1)
		fg_vq_set_avail_flags(vq, v & VRING_AVAIL_F_NO_INTERRUPT);
	else
		fg_vq_set_used_event(vq, v);
}

static int probe_fd(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

int fuzz_virtqueue_blk(const uint8_t *data, size_t size)
{
	struct fz f;
	struct vblk_options o = { .num_queues = 1, .serial = "fuzz-serial-0" };
	int fd_before, img;
	uint8_t setup;

	fuzz_quiet_logs();
	memset(&f, 0, sizeof(f));
	f.in = (struct fuzz_in){ data, size };
	f.features = fi_u64(&f.in);
	setup = fi_u8(&f.in);
	f.qsize = (uint16_t)(4u << (setup & 3)); /* 4..32 */
	f.nq = 1 + ((setup >> 2) & 1);
	o.num_queues = (uint16_t)f.nq;
	o.queue_size = f.qsize;
	o.flags = (setup & 0x08 ? VBLK_OPT_READONLY : 0) |
		  (setup & 0x10 ? VBLK_OPT_NO_FLUSH : 0) |
		  (setup & 0x20 ? VBLK_OPT_NO_EVENT_IDX : 0);
	img = fuzz_image(IMG_SIZE);
	if (img < 0)
		abort();
	o.fd = img;
	f.eng = engine();
	fd_before = probe_fd(); /* after the caches above opened theirs */
	if (vblk_open(&o, &f.blk))
		abort();
	f.features = (f.features & vblk_device_features(f.blk)) |
		     (1ull << VIRTIO_F_VERSION_1);
	if (vblk_set_driver_features(f.blk, f.features))
		abort();
	if (fg_init(&f.g, RAM_SIZE))
		abort();
	for (unsigned int q = 0; q < f.nq; q++) {
		if (fg_vq_init(&f.g, &f.fvq[q], f.qsize, f.features))
			abort();
		ring_start(&f, q);
	}
	f.data_gpa = (f.g.bump + 4095) & ~4095ull;
	f.g.bump = f.data_gpa;
	f.scratch = f.data_gpa;

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f.in); i++) {
		switch (fi_u8(&f.in) % A_NR) {
		case A_QSEL:
			f.q = fi_u8(&f.in) % f.nq;
			break;
		case A_CHAIN:
			do_chain(&f);
			break;
		case A_BLK:
			do_blk(&f);
			break;
		case A_INDIRECT:
			do_indirect(&f);
			break;
		case A_KICK:
			do_kick(&f);
			break;
		case A_QRESET:
			do_qreset(&f, f.q);
			ring_reinit(&f, f.q);
			ring_start(&f, f.q);
			break;
		case A_DEVRESET:
			do_devreset(&f);
			break;
		case A_CFG_READ:
			do_cfg(&f, false);
			break;
		case A_CFG_WRITE:
			do_cfg(&f, true);
			break;
		case A_RAM:
			do_ram(&f);
			break;
		case A_AVAIL_IDX:
			fg_vq_set_avail_idx(&f.fvq[f.q],
					    (uint16_t)(f.fvq[f.q].avail_idx + fi_u8(&f.in)));
			break;
		case A_SUPPRESS:
			do_suppress(&f);
			break;
		}
	}
	/* Whatever is still queued is served once more, as at shutdown. */
	for (f.q = 0; f.q < f.nq; f.q++)
		do_kick(&f);

	for (unsigned int q = 0; q < f.nq; q++)
		fg_vq_destroy(&f.fvq[q]);
	fg_destroy(&f.g);
	vblk_close(f.blk);
	if (probe_fd() != fd_before)
		abort(); /* a file descriptor leaked */
	return 0;
}

FUZZ_TARGET(fuzz_virtqueue_blk)
