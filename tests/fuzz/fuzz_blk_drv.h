/* SPDX-License-Identifier: MIT */
/*
 * The virtio-blk driver side shared by the block fuzz targets
 * (fuzz_virtqueue_blk.c: the synchronous engine; fuzz_blk_uring.c: the
 * io_uring engine on its I/O thread's loop): fake guest RAM, split rings
 * laid out by the simulated driver (tests/harness/fake_guest.h), and the
 * action records that put requests on them -- well-formed (or nearly)
 * virtio-blk requests, raw descriptor chains and indirect tables that may
 * be malformed in every way a guest can make them, RAM scribbles and
 * notification suppression.  Every field is normalised as in
 * fuzz_virtqueue_blk.c's header.
 */
#ifndef VMM_TESTS_FUZZ_FUZZ_BLK_DRV_H
#define VMM_TESTS_FUZZ_FUZZ_BLK_DRV_H

#include <stdint.h>

#include "fake_guest.h"
#include "fuzz.h"

#define FBD_MAX_QUEUES 2
#define FBD_MAX_CHAIN 12 /* descriptors per raw chain */
#define FBD_MAX_DATA 4	 /* data buffers per well-formed request */

struct fbd {
	struct fuzz_in in;
	struct fake_guest g;
	uint64_t ram_size;    /* of g */
	uint64_t img_sectors; /* of the disk */
	unsigned int nq;
	uint16_t qsize;
	uint64_t features;    /* negotiated */
	struct fg_vq fvq[FBD_MAX_QUEUES];
	uint16_t slot[FBD_MAX_QUEUES]; /* next raw descriptor slot */
	uint64_t data_gpa;    /* first byte after the rings */
	uint64_t scratch;     /* rotating cursor for headers/status/tables */
	unsigned int q;	      /* the queue records go to */
};

/* Lay queue @q's ring out again, zeroed, at the same place. */
void fbd_ring_reinit(struct fbd *d, unsigned int q);
/* The action records (fields from d->in) on queue d->q. */
void fbd_chain(struct fbd *d);	  /* raw descriptor chain */
void fbd_indirect(struct fbd *d); /* raw indirect table */
void fbd_blk(struct fbd *d);	  /* virtio-blk request */
void fbd_ram(struct fbd *d);	  /* the driver scribbles on guest RAM */
void fbd_suppress(struct fbd *d); /* avail flags / used_event */

#endif
