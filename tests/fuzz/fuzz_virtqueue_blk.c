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
#include "fuzz_blk_drv.h"

#define RAM_SIZE (64u << 10)
#define IMG_SIZE (64u << 10) /* 128 sectors */
#define IMG_SECTORS (IMG_SIZE / 512)
#define MAX_QUEUES FBD_MAX_QUEUES
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
	struct fbd d; /* the driver side, and the input (fuzz_blk_drv.h) */
	struct vblk *blk;
	struct blk_engine *eng;
	struct virtq vq[MAX_QUEUES];
	bool ready[MAX_QUEUES];	 /* virtq_start() accepted the rings */
	bool broken[MAX_QUEUES]; /* vblk_process_queue() said -EPROTO */
};

static struct blk_engine *engine(void)
{
	static struct blk_engine *eng;

	if (!eng && blk_sync_engine_create(&eng))
		abort();
	return eng;
}

static void ring_start(struct fz *f, unsigned int q)
{
	f->ready[q] = fg_vq_attach(&f->d.fvq[q], &f->vq[q]) == 0;
	f->broken[q] = false;
	f->d.slot[q] = 0;
}

static void do_kick(struct fz *f)
{
	unsigned int q = f->d.q;
	struct fg_vq *vq = &f->d.fvq[q];
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
	if (pushed > popped || popped > f->d.qsize ||
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
	uint64_t want = fi_u64(&f->d.in);

	for (unsigned int q = 0; q < f->d.nq; q++)
		do_qreset(f, q);
	f->d.features = (want & vblk_device_features(f->blk)) |
		      (1ull << VIRTIO_F_VERSION_1);
	if (vblk_set_driver_features(f->blk, f->d.features))
		abort();
	for (unsigned int q = 0; q < f->d.nq; q++) {
		fbd_ring_reinit(&f->d, q);
		ring_start(f, q);
	}
}

static void do_cfg(struct fz *f, bool write)
{
	uint32_t off = fi_u8(&f->d.in) % (sizeof(struct virtio_blk_config) + 8);
	uint32_t len = fi_u8(&f->d.in) % 9;
	uint8_t buf[8];

	if (write) {
		fi_bytes(&f->d.in, buf, len);
		(void)vblk_config_write(f->blk, off, buf, len);
	} else {
		(void)vblk_config_read(f->blk, off, buf, len);
	}
}

int fuzz_virtqueue_blk(const uint8_t *data, size_t size)
{
	struct fz f;
	struct vblk_options o = { .num_queues = 1, .serial = "fuzz-serial-0" };
	int fd_before, img;
	uint8_t setup;

	fuzz_quiet_logs();
	memset(&f, 0, sizeof(f));
	f.d.in = (struct fuzz_in){ data, size };
	f.d.features = fi_u64(&f.d.in);
	setup = fi_u8(&f.d.in);
	f.d.qsize = (uint16_t)(4u << (setup & 3)); /* 4..32 */
	f.d.nq = 1 + ((setup >> 2) & 1);
	o.num_queues = (uint16_t)f.d.nq;
	o.queue_size = f.d.qsize;
	o.flags = (setup & 0x08 ? VBLK_OPT_READONLY : 0) |
		  (setup & 0x10 ? VBLK_OPT_NO_FLUSH : 0) |
		  (setup & 0x20 ? VBLK_OPT_NO_EVENT_IDX : 0);
	img = fuzz_image(IMG_SIZE);
	if (img < 0)
		abort();
	o.fd = img;
	f.eng = engine();
	fd_before = fuzz_probe_fd(); /* after the caches above opened theirs */
	if (vblk_open(&o, &f.blk))
		abort();
	f.d.features = (f.d.features & vblk_device_features(f.blk)) |
		     (1ull << VIRTIO_F_VERSION_1);
	if (vblk_set_driver_features(f.blk, f.d.features))
		abort();
	f.d.ram_size = RAM_SIZE;
	f.d.img_sectors = IMG_SECTORS;
	if (fg_init(&f.d.g, RAM_SIZE))
		abort();
	for (unsigned int q = 0; q < f.d.nq; q++) {
		if (fg_vq_init(&f.d.g, &f.d.fvq[q], f.d.qsize, f.d.features))
			abort();
		ring_start(&f, q);
	}
	f.d.data_gpa = (f.d.g.bump + 4095) & ~4095ull;
	f.d.g.bump = f.d.data_gpa;
	f.d.scratch = f.d.data_gpa;

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f.d.in); i++) {
		switch (fi_u8(&f.d.in) % A_NR) {
		case A_QSEL:
			f.d.q = fi_u8(&f.d.in) % f.d.nq;
			break;
		case A_CHAIN:
			fbd_chain(&f.d);
			break;
		case A_BLK:
			fbd_blk(&f.d);
			break;
		case A_INDIRECT:
			fbd_indirect(&f.d);
			break;
		case A_KICK:
			do_kick(&f);
			break;
		case A_QRESET:
			do_qreset(&f, f.d.q);
			fbd_ring_reinit(&f.d, f.d.q);
			ring_start(&f, f.d.q);
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
			fbd_ram(&f.d);
			break;
		case A_AVAIL_IDX:
			fg_vq_set_avail_idx(&f.d.fvq[f.d.q],
					    (uint16_t)(f.d.fvq[f.d.q].avail_idx + fi_u8(&f.d.in)));
			break;
		case A_SUPPRESS:
			fbd_suppress(&f.d);
			break;
		}
	}
	/* Whatever is still queued is served once more, as at shutdown. */
	for (f.d.q = 0; f.d.q < f.d.nq; f.d.q++)
		do_kick(&f);

	for (unsigned int q = 0; q < f.d.nq; q++)
		fg_vq_destroy(&f.d.fvq[q]);
	fg_destroy(&f.d.g);
	vblk_close(f.blk);
	if (fuzz_probe_fd() != fd_before)
		abort(); /* a file descriptor leaked */
	return 0;
}

FUZZ_TARGET(fuzz_virtqueue_blk)
