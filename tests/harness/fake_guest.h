/* SPDX-License-Identifier: MIT */
/*
 * A simulated virtio driver for unit tests (the analogue of Firecracker's
 * VirtQueue test utility and QEMU's libqos virtio driver): fake guest RAM,
 * a bump allocator for guest buffers, and the driver side of a split ring
 * written independently of devices/virtio/virtqueue.c (it uses the Linux
 * uapi ring layout) so the two cross-check each other.
 *
 * Raw accessors let a test build malformed chains (loops, bad indices,
 * addresses outside RAM, nested indirect tables, avail index jumps).
 *
 * Functions that cannot fail in a correct test return values directly;
 * failures (out of guest memory, no free descriptors) return 0 / -errno and
 * the test asserts on them.
 */
#ifndef VMM_TESTS_HARNESS_FAKE_GUEST_H
#define VMM_TESTS_HARNESS_FAKE_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/virtio_ring.h>

#include "memory.h"
#include "virtio/virtqueue.h"

#define FG_RAM_BASE_ALLOC 0x1000u /* gpa 0 is never handed out: 0 = failure */

struct fake_guest {
	struct guest_mem mem;
	void *ram;
	bool shared; /* fg_init_memfd(): RAM is the memfd @fd, mapped shared */
	int fd;
	uint64_t ram_size;
	uint64_t bump; /* next free gpa */
};

/* Allocate @ram_size bytes of zeroed, page-aligned guest RAM at gpa 0. */
int fg_init(struct fake_guest *g, uint64_t ram_size);
/* The same in a memfd mapped shared (g->fd), as a vhost-user front end's
 * guest RAM that the back end maps too. */
int fg_init_memfd(struct fake_guest *g, uint64_t ram_size);
void fg_destroy(struct fake_guest *g);
/* Bump-allocate @len bytes aligned to @align (power of two); 0 on failure. */
uint64_t fg_alloc(struct fake_guest *g, uint64_t len, uint64_t align);
/* Host pointer to guest range (asserts nothing; NULL if outside RAM). */
void *fg_ptr(struct fake_guest *g, uint64_t gpa, uint64_t len);

struct fg_buf {
	uint64_t gpa;
	uint32_t len;
	bool writable;
};

/* Driver side of one split ring. */
struct fg_vq {
	struct fake_guest *g;
	uint16_t size;
	uint64_t features; /* VIRTIO_RING_F_* bits the "driver" negotiated */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	/* Driver-private bookkeeping (the device cannot corrupt it). */
	uint16_t free_head, num_free;
	uint16_t *shadow_next; /* free list and chain membership */
	uint16_t *chain_ndesc; /* per head: ring descriptors it holds (0 = raw) */
	uint64_t *indirect_gpa;	  /* per head: indirect table, reused */
	uint32_t *indirect_cap;	  /* its capacity in entries */
	uint16_t avail_idx;	  /* shadow of avail->idx (next to publish) */
	uint16_t kicked_idx;	  /* avail->idx at the last publish */
	uint16_t last_used_idx;
	unsigned int kicks;	  /* publishes that required a kick */
	/* Like Linux with callbacks enabled: fg_vq_get_used() re-arms
	 * used_event = last_used_idx (EVENT_IDX).  Default true; tests of
	 * used_event itself turn it off and set it by hand. */
	bool auto_used_event;
};

/* Lay out a ring of @size entries in guest RAM (zeroed). */
int fg_vq_init(struct fake_guest *g, struct fg_vq *vq, uint16_t size,
	       uint64_t features);
void fg_vq_destroy(struct fg_vq *vq);
/* virtq_start() the device side on the same ring, per the features. */
int fg_vq_attach(struct fg_vq *fvq, struct virtq *vq);

/*
 * Put a chain of @n buffers into the descriptor table (directly, or as an
 * indirect table occupying one ring descriptor) and append its head to the
 * avail ring, NOT yet visible to the device.  Returns head id or -errno
 * (-ENOSPC: no free descriptors).
 */
int fg_vq_add(struct fg_vq *vq, const struct fg_buf *bufs, unsigned int n,
	      bool indirect);
/*
 * Publish added heads: virtio_wmb() then avail->idx, virtio_mb(), then
 * decide whether to kick (avail_event / VRING_USED_F_NO_NOTIFY) like
 * virtqueue_kick_prepare().  Returns true (and counts) if a kick is due.
 */
bool fg_vq_publish(struct fg_vq *vq);
/* Pop one used entry: 1 (id, len filled; descriptors freed) or 0. */
int fg_vq_get_used(struct fg_vq *vq, uint32_t *id, uint32_t *len);
/* Number of used entries not yet consumed by fg_vq_get_used(). */
unsigned int fg_vq_used_pending(struct fg_vq *vq);

void fg_vq_set_used_event(struct fg_vq *vq, uint16_t v);
uint16_t fg_vq_avail_event(struct fg_vq *vq);
void fg_vq_set_avail_flags(struct fg_vq *vq, uint16_t flags);
uint16_t fg_vq_used_flags(struct fg_vq *vq);
uint16_t fg_vq_used_idx(struct fg_vq *vq);

/* Raw access for malformed chains.  Descriptors used this way must not be
 * mixed with fg_vq_add() on the same test ring. */
void fg_vq_set_desc(struct fg_vq *vq, uint16_t i, uint64_t addr, uint32_t len,
		    uint16_t flags, uint16_t next);
/* Write a descriptor into an arbitrary table (indirect table in RAM). */
void fg_write_desc(struct fake_guest *g, uint64_t table_gpa, uint16_t i,
		   uint64_t addr, uint32_t len, uint16_t flags, uint16_t next);
/* Append a raw head to the avail ring (no descriptor bookkeeping). */
void fg_vq_add_raw_head(struct fg_vq *vq, uint16_t head);
/* Force avail->idx (after a wmb), e.g. to jump ahead by more than size. */
void fg_vq_set_avail_idx(struct fg_vq *vq, uint16_t idx);

/* ---- virtio-blk requests ------------------------------------------------ */

struct fg_blk_req {
	int head;
	uint64_t hdr_gpa;
	uint64_t status_gpa;
};

/*
 * Build and add (not publish) a virtio-blk request: a 16-byte header
 * (type, sector) descriptor, the @data buffers as given, and a 1-byte
 * writable status descriptor initialised to 0xff.  Returns 0 or -errno.
 */
int fg_blk_add(struct fg_vq *vq, uint32_t type, uint64_t sector,
	       const struct fg_buf *data, unsigned int ndata, bool indirect,
	       struct fg_blk_req *out);
/* Status byte as the device left it (0xff = never written). */
uint8_t fg_blk_status(struct fake_guest *g, const struct fg_blk_req *r);

/*
 * Create a temporary image file of @size bytes in /tmp (mkstemp, then
 * ftruncate; already unlinked).  Returns an O_RDWR fd or -errno.
 */
int fg_tmp_image(uint64_t size);

#endif
