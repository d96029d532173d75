/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueue, device side (virtio 1.x, section 2.7).
 *
 * The rings live in guest memory and are written concurrently by the guest
 * driver on other CPUs: every value read from them is guest-controlled and is
 * validated here (indices against the queue size, addresses and lengths
 * against guest RAM, chain length capped at the queue size so a descriptor
 * loop ends).  A malformed ring is a protocol violation: virtq_pop() returns
 * -EPROTO and the transport sets NEEDS_RESET; it never crashes or hangs.
 *
 * Context: a virtqueue is owned by exactly one thread while the device is
 * running (its I/O thread); setup and reset happen while that thread is
 * quiesced.
 */
#ifndef VMM_DEVICES_VIRTIO_VIRTQUEUE_H
#define VMM_DEVICES_VIRTIO_VIRTQUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "memory.h"
#include "util/compiler.h"

#define VIRTQ_MAX_SIZE 1024u
/* Max segments of one chain after indirect expansion (our SEG_MAX + 2). */
#define VIRTQ_MAX_SEGS 1024u

struct virtq_inflight;

struct virtq {
	const struct guest_mem *mem;
	uint16_t size;	     /* power of two, <= VIRTQ_MAX_SIZE */
	bool event_idx;	     /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool indirect;	     /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	bool ready;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	/* Host pointers to the rings, validated once in virtq_start(). */
	struct virtq_desc_raw *desc;
	struct virtq_avail_raw *avail;
	struct virtq_used_raw *used;
	uint16_t last_avail_idx; /* next avail entry to consume */
	uint16_t used_idx;	 /* shadow of used->idx (we are its only writer) */
	uint16_t signalled_used; /* used_idx at the last interrupt (EVENT_IDX) */
	bool signalled_used_valid;
	bool notify_disabled;	 /* virtq_disable_notify() in effect */
	/* In-flight tracking (vhost-user INFLIGHT_SHMFD), NULL by default:
	 * then pop and push cost one predictable branch each. */
	struct virtq_inflight *inflight;
};

/* One descriptor chain, resolved to host memory. */
struct virtq_chain {
	uint16_t head;	   /* id to give back in virtq_push() */
	unsigned int nr_out; /* leading device-readable segments */
	unsigned int nr_in;  /* trailing device-writable segments */
	struct iovec iov[VIRTQ_MAX_SEGS]; /* out segments first, then in */
	uint64_t in_len;     /* total bytes of writable segments */
};

/*
 * Validate the ring addresses for @size entries (alignment, inside RAM) and
 * make the queue ready.  Returns 0 or -EINVAL.
 */
int virtq_start(struct virtq *vq, const struct guest_mem *mem, uint16_t size,
		uint64_t desc, uint64_t avail, uint64_t used, bool event_idx,
		bool indirect) __must_check;
/*
 * virtq_resume - virtq_start() for a ring that already has a history, as a
 * vhost-user front end hands it over (SET_VRING_BASE after a pause, a
 * reconnect, a memory-table change): popping continues at
 * @last_avail_idx, pushing at the ring's own used->idx, and nothing but
 * avail_event (EVENT_IDX) is written.  Returns 0 or -EINVAL.
 */
int virtq_resume(struct virtq *vq, const struct guest_mem *mem, uint16_t size,
		 uint64_t desc, uint64_t avail, uint64_t used, bool event_idx,
		 bool indirect, uint16_t last_avail_idx) __must_check;
/*
 * Give back the chain popped last (never pushed): the next virtq_pop()
 * returns it again.  For a ring stopped with a chain the device popped
 * but could not start (vhost-user's GET_VRING_BASE then reports it as not
 * consumed).  Tracked: it is no longer in flight (or, a resubmitted one,
 * waits for resubmission again).
 */
/*
 * virtq_adopt - become the consumer of a started ring whose previous one
 * (a vhost-user back end) is gone and completed its requests in the order
 * it popped them: then every avail entry from used->idx on is unanswered,
 * and popping continues there (pushing too), with kicks enabled
 * (virtq_enable_notify()).  For a back end that completed out of order the
 * position is wrong (the driver may see a head it already has back).
 * Context: the ring's only consumer from now on.
 */
void virtq_adopt(struct virtq *vq);
void virtq_unpop(struct virtq *vq);
/* Forget all state (device reset / queue reset). */
void virtq_reset(struct virtq *vq);

/* Number of chains the driver has made available and we have not popped. */
unsigned int virtq_avail_count(struct virtq *vq);
/*
 * Number of chains popped and not yet pushed back (in service), at most
 * the queue size.  Context: the queue's owner (the fields are its own).
 */
unsigned int virtq_in_service(const struct virtq *vq);

/*
 * Pop the next available chain into @chain.  Tracked (virtq_inflight_attach()):
 * the heads left in flight by the previous back end come first, then the
 * avail ring, each popped head recorded in flight with the next counter.
 * Returns 1 if a chain was popped, 0 if the ring is empty, -EPROTO if the
 * driver broke the protocol (avail idx ran ahead by more than the queue
 * size, head or next out of range, loop, address outside RAM, address+len
 * overflow, writable descriptor before a readable one, nested indirect,
 * indirect table of bad length, more than VIRTQ_MAX_SEGS segments).
 */
int virtq_pop(struct virtq *vq, struct virtq_chain *chain) __must_check;

/*
 * Return @head to the driver with @len bytes written to its in segments and
 * publish it (used->idx).  Everything the device wrote into the chain's
 * buffers (data, status byte) before this call is visible to the driver once
 * it sees the new used->idx.  @head must come from virtq_pop() on this queue
 * (an out-of-range value is an internal bug: it is logged and ignored).
 * Notification is separate: call virtq_should_notify() once per batch.
 * Tracked: recorded as no longer in flight once published (nothing at all
 * after virtq_inflight_freeze()).
 */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t len);

/*
 * Must the driver be interrupted for the used entries pushed since the
 * last call that returned true?  Honours VIRTQ_AVAIL_F_NO_INTERRUPT, or
 * used_event with EVENT_IDX (with 16-bit wrap-around).
 */
bool virtq_should_notify(struct virtq *vq);

/*
 * Notification (kick) suppression for the I/O thread's poll loop.
 * virtq_disable_notify(): ask the driver not to kick (VIRTQ_USED_F_NO_NOTIFY,
 * or, with EVENT_IDX, avail_event set one behind last_avail_idx so the
 * driver's kick window cannot reach it for 64Ki entries).
 * virtq_enable_notify(): ask for kicks again (avail_event = last_avail_idx);
 * returns true if new buffers arrived meanwhile, in which case the caller
 * must process the ring again instead of sleeping (the race in 2.7.10).
 */
void virtq_disable_notify(struct virtq *vq);
bool virtq_enable_notify(struct virtq *vq);

/*
 * The race-free way to drain a queue and then sleep until the next kick:
 *
 *	for (;;) {
 *		virtq_disable_notify(vq);
 *		while ((r = virtq_pop(vq, &chain)) > 0)
 *			handle(&chain);
 *		if (r < 0)
 *			... NEEDS_RESET ...
 *		if (!virtq_enable_notify(vq))
 *			break;		(ring empty with kicks enabled: sleep)
 *	}
 *
 * While notifications are enabled, virtq_pop() keeps avail_event equal to
 * last_avail_idx (EVENT_IDX), so the driver kicks for the next new entry,
 * and a pop that finds the ring empty does the same re-check as
 * virtq_enable_notify() (a full barrier, avail->idx read again): a device
 * that just pops until 0 and then sleeps until the next kick loses none
 * either.
 */

/*
 * In-flight tracking, split rings (vhost-user's
 * VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD, specification section "Inflight I/O
 * tracking").  A buffer shared with the vhost-user front end, which keeps it
 * across a back-end restart, records which heads were popped and not yet
 * pushed, so that the next back end resubmits them.  Per queue, one
 * region laid out as vhost-user front ends and libvhost-user expect (host byte
 * order, not little-endian: the buffer never reaches the guest):
 *
 *	QueueRegionSplit { u64 features; u16 version; u16 desc_num;
 *			   u16 last_batch_head; u16 used_idx;
 *			   DescStateSplit desc[desc_num]; }
 *	DescStateSplit	 { u8 inflight; u8 padding[5]; u16 next; u64 counter; }
 *
 * and the regions of queues 0..N-1 back to back, each
 * virtq_inflight_region_size(queue size) bytes (header and entries rounded
 * up to 64 bytes: libvhost-user computes ALIGN_UP(16 * size + 2, 64) and
 * DPDK ALIGN_UP(16 * size + 16, 64), the same number since 16 * size is a
 * multiple of 16).
 */
struct virtq_inflight_desc {
	uint8_t inflight;    /* 1: popped and not yet pushed (heads only) */
	uint8_t padding[5];
	uint16_t next;	     /* the last batch of pushes, as a list */
	uint64_t counter;    /* pop order */
};

struct virtq_inflight_region {
	uint64_t features;	  /* 0 */
	uint16_t version;	  /* VIRTQ_INFLIGHT_VERSION; 0: a fresh buffer */
	uint16_t desc_num;	  /* entries in desc[] */
	uint16_t last_batch_head; /* the last head pushed */
	uint16_t used_idx;	  /* used->idx once that push was recorded */
	struct virtq_inflight_desc desc[];
};

_Static_assert(sizeof(struct virtq_inflight_desc) == 16, "DescStateSplit");
_Static_assert(sizeof(struct virtq_inflight_region) == 16, "QueueRegionSplit");

#define VIRTQ_INFLIGHT_VERSION 1
#define VIRTQ_INFLIGHT_ALIGN 64u

/* Bytes of one queue's region for rings of @queue_size entries. */
static inline uint64_t virtq_inflight_region_size(uint16_t queue_size)
{
	uint64_t n = sizeof(struct virtq_inflight_region) +
		     sizeof(struct virtq_inflight_desc) * (uint64_t)queue_size;

	return (n + VIRTQ_INFLIGHT_ALIGN - 1) & ~(uint64_t)(VIRTQ_INFLIGHT_ALIGN - 1);
}

/* The tracker of one ring: owned by the transport, used by the ring's
 * thread between virtq_inflight_attach() and the ring's reset. */
struct virtq_inflight {
	struct virtq_inflight_region *r; /* in the shared buffer */
	uint16_t desc_num;		 /* r's entries, as the transport knows it */
	uint64_t counter;		 /* the next pop's counter */
	bool frozen;			 /* virtq_inflight_freeze() (atomic) */
	bool last_resubmit;		 /* the last pop was a resubmission */
	uint16_t last_head;		 /* ... and its head (virtq_unpop()) */
	/* Heads in flight at attach time, by counter: popped again first. */
	uint16_t nr_resubmit, next_resubmit;
	uint16_t resubmit[VIRTQ_MAX_SIZE];
};

/*
 * virtq_inflight_attach - track @vq (started or resumed, not yet handed to
 * the device) in region @r of @desc_num entries (the queue size the front
 * end gave for the buffer; @vq->size must not exceed it).
 *
 * A fresh region (version 0) is initialised: nothing is in flight, popping
 * continues where virtq_resume() put it.  Otherwise the previous back end's
 * record is recovered (the specification's rule): if the region's used_idx
 * is behind the used ring's idx, the last batch was published but not yet
 * recorded, so its heads are no longer in flight; then every head still
 * in flight is queued for resubmission in counter order, and popping from
 * the avail ring continues at used->idx + that number (what was popped is
 * exactly what was completed plus what is in flight, whatever base the
 * front end sent: a front end may send used->idx after a back end died).
 *
 * The region is front-end memory: desc_num, heads and the batch list are
 * checked, never trusted.  Returns 0 (*@resubmit: heads queued, -1 for a
 * fresh region) or -EINVAL (a region of another version or size).
 * Context: the transport, before the device serves @vq.
 */
int virtq_inflight_attach(struct virtq *vq, struct virtq_inflight *t,
			  struct virtq_inflight_region *r, uint16_t desc_num,
			  int *resubmit) __must_check;

/*
 * From now on, pushes on @vq publish nothing and leave their heads in
 * flight: for a ring stopped with what is in flight cancelled (the front
 * end disconnected or this back end is going away), whose requests the
 * next back end must resubmit instead of the driver seeing them fail.
 * Any thread; a no-op without a tracker.
 */
void virtq_inflight_freeze(struct virtq *vq);

/* vring_need_event() from the virtio spec, exposed for unit tests. */
static inline bool virtq_need_event(uint16_t event_idx, uint16_t new_idx,
				    uint16_t old_idx)
{
	return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old_idx);
}

#endif
