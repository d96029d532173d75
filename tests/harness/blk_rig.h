/* SPDX-License-Identifier: MIT */
/*
 * One virtio-blk disk on the real threaded data path, without KVM: the
 * virtio-pci transport over fake KVM (fake_vpci.h), real I/O threads with
 * their io_uring rings, the io_uring engine, an image file, and the
 * simulated driver (fake_guest.h) bringing the device up the way
 * virtio_pci_modern + virtio_blk do.  For tests of resets, stops and
 * retries (check_blk_bounded, check_blk_retry); check_blk_iothread has its
 * own, older copy of the same machinery.
 *
 * Check-free like the rest of the harness: set-up steps return 0 or
 * -errno, waits return what they got, and a broken contract aborts.
 */
#ifndef VMM_TESTS_HARNESS_BLK_RIG_H
#define VMM_TESTS_HARNESS_BLK_RIG_H

#include <stdbool.h>
#include <stdint.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "fake_guest.h"
#include "fake_vpci.h"
#include "iothread.h"

#define BR_MAX_Q 4
#define BR_MAX_IO 2

struct br_opts {
	uint64_t ram_size;   /* guest RAM; 0: 32 MiB */
	uint64_t img_size;   /* temporary image, filled with br_pat(); 0: 4 MiB */
	bool sparse;	     /* leave the image a hole (large images) */
	uint16_t queue_size; /* 0: 128 */
	unsigned int nq;     /* queues, 1..BR_MAX_Q; 0: 1 */
	unsigned int nio;    /* I/O threads, 1..BR_MAX_IO; 0: 1 */
	unsigned int ring_entries; /* per I/O thread; 0: 64 */
};

struct br_q {
	struct fg_vq vq;
	bool inited;
	uint64_t notify;
	int kick_fd;
	int call_fd;
};

struct br {
	struct br_opts o;
	struct fv v;
	struct fake_guest g;
	int img;
	struct iothread *io[BR_MAX_IO];
	struct virtio_blk *dev;
	struct vblk *blk; /* the device's (it owns it) */
	struct br_q q[BR_MAX_Q];
};

/* Image content before any write. */
uint8_t br_pat(uint64_t off);

/* Build everything and bring the driver up (br_drv_up()).  0 or -errno;
 * br_down() cleans up after a failure too. */
int br_up(struct br *r, const struct br_opts *o);
/* Reset the device and bring it up again: negotiate (VERSION_1, EVENT_IDX,
 * INDIRECT_DESC, SEG_MAX, BLK_SIZE, MQ, FLUSH, CONFIG_WCE), MSI-X with
 * queue q on vector q + 1, fresh rings, DRIVER_OK. */
int br_drv_up(struct br *r);
void br_down(struct br *r);

struct vblk *br_blk(struct br *r);
struct iothread *br_queue_io(struct br *r, unsigned int q);
/* Write the device status 0 (returns once the device has reset: every
 * request in flight completed or cancelled). */
void br_reset(struct br *r);
/* Make added requests visible and kick the queue if the device asks. */
void br_publish(struct br *r, unsigned int q);
/* Kick regardless. */
void br_kick(struct br *r, unsigned int q);
/*
 * Collect up to @n used entries of queue @q (ids/lens may be NULL),
 * waiting at most @timeout_ms for them.  Returns how many came.
 */
unsigned int br_wait_used(struct br *r, unsigned int q, uint32_t *ids,
			  uint32_t *lens, unsigned int n, unsigned int timeout_ms);
/* Wait until the device has popped every request published on @q (its
 * avail_event reached the avail index).  0, or -ETIMEDOUT. */
int br_wait_popped(struct br *r, unsigned int q, unsigned int timeout_ms);

#endif
