/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueue, device side.  See virtqueue.h for the contract.
 *
 * Everything under vq->desc/avail/used is guest memory that the driver may
 * rewrite at any moment: each field is loaded once (READ_ONCE) into a local
 * and validated there, never re-read after validation.  Virtio 1.x rings
 * are little-endian.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_ring.h>

#include "log.h"
#include "util/barrier.h"
#include "virtio/virtqueue.h"

struct virtq_desc_raw {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_avail_raw {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* [size], then used_event */
};

struct virtq_used_elem_raw {
	uint32_t id;
	uint32_t len;
};

struct virtq_used_raw {
	uint16_t flags;
	uint16_t idx;
	struct virtq_used_elem_raw ring[]; /* [size], then avail_event */
};

/* Natural alignment gives the spec layout; no packing needed. */
_Static_assert(sizeof(struct virtq_desc_raw) == 16, "split ring descriptor");
_Static_assert(sizeof(struct virtq_used_elem_raw) == 8, "used element");
_Static_assert(sizeof(struct virtq_avail_raw) == 4, "avail header");
_Static_assert(sizeof(struct virtq_used_raw) == 4, "used header");

static inline uint16_t *used_event_ptr(struct virtq *vq)
{
	return &vq->avail->ring[vq->size];
}

static inline uint16_t *avail_event_ptr(struct virtq *vq)
{
	return (uint16_t *)((uint8_t *)vq->used + sizeof(struct virtq_used_raw) +
			    sizeof(struct virtq_used_elem_raw) * vq->size);
}

static inline uint16_t load_avail_idx(struct virtq *vq)
{
	return le16toh(READ_ONCE(vq->avail->idx));
}

static inline void store_avail_event(struct virtq *vq, uint16_t v)
{
	WRITE_ONCE(*avail_event_ptr(vq), htole16(v));
}

/* Validate and map the rings; @vq is left untouched on failure. */
static int virtq_map(struct virtq *vq, const struct guest_mem *mem,
		     uint16_t size, uint64_t desc, uint64_t avail, uint64_t used,
		     bool event_idx, bool indirect)
{
	uint64_t desc_len = 16ull * size;
	uint64_t avail_len = 6ull + 2ull * size; /* incl. used_event */
	uint64_t used_len = 6ull + 8ull * size;	 /* incl. avail_event */
	void *d, *a, *u;

	if (!vq || !mem || size == 0 || size > VIRTQ_MAX_SIZE ||
	    (size & (size - 1)))
		return -EINVAL;
	/* Alignments required by the spec (2.7, table "Virtqueue Part"). */
	if ((desc & 15) || (avail & 1) || (used & 3))
		return -EINVAL;
	d = guest_mem_ptr(mem, desc, desc_len);
	a = guest_mem_ptr(mem, avail, avail_len);
	u = guest_mem_ptr(mem, used, used_len);
	if (!d || !a || !u)
		return -EINVAL;
	/* And in host memory (the rings are accessed as aligned 16/32-bit
	 * fields): holds whenever guest RAM regions are page aligned in both
	 * spaces (virtio-pci always; vhost-user: vu-mem.c checks), so this
	 * only guards against a transport that gets it wrong. */
	if (((uintptr_t)d & 15) || ((uintptr_t)a & 1) || ((uintptr_t)u & 3))
		return -EINVAL;

	memset(vq, 0, sizeof(*vq));
	vq->mem = mem;
	vq->size = size;
	vq->event_idx = event_idx;
	vq->indirect = indirect;
	vq->desc_gpa = desc;
	vq->avail_gpa = avail;
	vq->used_gpa = used;
	vq->desc = d;
	vq->avail = a;
	vq->used = u;
	return 0;
}

int virtq_start(struct virtq *vq, const struct guest_mem *mem, uint16_t size,
		uint64_t desc, uint64_t avail, uint64_t used, bool event_idx,
		bool indirect)
{
	int ret = virtq_map(vq, mem, size, desc, avail, used, event_idx,
			    indirect);

	if (ret)
		return ret;
	/* The driver zeroes the used ring before enabling the queue, but we do
	 * not rely on it: we are the only writer of used->idx/flags. */
	WRITE_ONCE(vq->used->idx, htole16(0));
	WRITE_ONCE(vq->used->flags, htole16(0));
	if (event_idx)
		store_avail_event(vq, 0);
	vq->ready = true;
	return 0;
}

int virtq_resume(struct virtq *vq, const struct guest_mem *mem, uint16_t size,
		 uint64_t desc, uint64_t avail, uint64_t used, bool event_idx,
		 bool indirect, uint16_t last_avail_idx)
{
	int ret = virtq_map(vq, mem, size, desc, avail, used, event_idx,
			    indirect);

	if (ret)
		return ret;
	vq->last_avail_idx = last_avail_idx;
	/*
	 * Guest-controlled: used->idx is the device's field, but in guest
	 * RAM.  We only ever use our shadow modulo the ring size (where the
	 * next used entry goes) and in EVENT_IDX arithmetic, so a bad value
	 * breaks this ring for its driver and nothing else.  No write to the
	 * used ring: the driver may be reading it right now.
	 */
	vq->used_idx = le16toh(READ_ONCE(vq->used->idx));
	if (event_idx)
		store_avail_event(vq, last_avail_idx); /* kicks enabled */
	vq->ready = true;
	return 0;
}

void virtq_adopt(struct virtq *vq)
{
	/* The previous consumer's stores are all visible: it is gone (a
	 * process that exited), so no barrier pairs with this read. */
	uint16_t u;

	if (!vq->ready)
		return;
	u = le16toh(READ_ONCE(vq->used->idx));
	vq->last_avail_idx = u;
	vq->used_idx = u;
	vq->signalled_used_valid = false;
	/* Kicks on from here, whatever the previous consumer left in
	 * avail_event or used->flags (NO_NOTIFY). */
	(void)virtq_enable_notify(vq);
}

void virtq_unpop(struct virtq *vq)
{
	struct virtq_inflight *t = vq->inflight;

	if (t && t->last_resubmit) {
		t->next_resubmit--; /* still in flight: popped again first */
		return;
	}
	vq->last_avail_idx--;
	/* Back on the avail ring: whoever pops it next records it again. */
	if (t)
		WRITE_ONCE(t->r->desc[t->last_head].inflight, 0);
}

void virtq_reset(struct virtq *vq)
{
	memset(vq, 0, sizeof(*vq));
}

unsigned int virtq_avail_count(struct virtq *vq)
{
	unsigned int n;

	if (!vq->ready)
		return 0;
	/* avail->idx is guest-controlled: a value more than size ahead is
	 * reported as is here and rejected by virtq_pop(). */
	n = (uint16_t)(load_avail_idx(vq) - vq->last_avail_idx);
	if (unlikely(vq->inflight))
		n += vq->inflight->nr_resubmit - vq->inflight->next_resubmit;
	return n;
}

unsigned int virtq_in_service(const struct virtq *vq)
{
	unsigned int n;

	if (!vq->ready)
		return 0;
	/* Every pop is pushed back once (or unpopped), so the two indices
	 * differ by the chains in service; a ring resumed from a back end
	 * whose used->idx ran ahead of its last_avail_idx is clamped. */
	n = (uint16_t)(vq->last_avail_idx - vq->used_idx);
	return n > vq->size ? vq->size : n;
}

/* Read descriptor @i of @table once, so later checks see a stable copy. */
static void read_desc(const struct virtq_desc_raw *table, unsigned int i,
		      struct virtq_desc_raw *out)
{
	struct virtq_desc_raw d;

	/* The table may be unaligned (indirect tables are only required to be
	 * 16-byte aligned by well-behaved drivers), so copy bytewise. */
	memcpy(&d, (const char *)table + (size_t)i * sizeof(d), sizeof(d));
	out->addr = le64toh(d.addr);
	out->len = le32toh(d.len);
	out->flags = le16toh(d.flags);
	out->next = le16toh(d.next);
}

/*
 * Walk the chain starting at @head.  All limits are checked here:
 *   - head and every next index < table size (queue size or indirect count);
 *   - at most table-size descriptors per table (ttl), so a loop ends;
 *   - every non-empty buffer inside guest RAM (guest_mem_ptr: overflow-safe);
 *   - indirect: negotiated, not chained with NEXT, not nested, len a
 *     non-zero multiple of 16 and at most VIRTQ_MAX_SIZE entries;
 *   - no readable descriptor after a writable one;
 *   - at most VIRTQ_MAX_SEGS iovecs.
 */
static int walk_chain(struct virtq *vq, uint16_t head, struct virtq_chain *c)
{
	const struct virtq_desc_raw *table = vq->desc;
	unsigned int table_size = vq->size;
	unsigned int ttl = vq->size;
	unsigned int idx = head;
	unsigned int nsegs = 0;
	bool in_indirect = false;
	struct virtq_desc_raw d;

	c->head = head;
	c->nr_out = 0;
	c->nr_in = 0;
	c->in_len = 0;

	for (;;) {
		void *p;

		if (ttl-- == 0) {
			vmm_dbg("virtq: descriptor chain from %u loops", head);
			return -EPROTO;
		}
		read_desc(table, idx, &d);

		if (d.flags & VRING_DESC_F_INDIRECT) {
			if (!vq->indirect || in_indirect ||
			    (d.flags & VRING_DESC_F_NEXT)) {
				vmm_dbg("virtq: bad indirect descriptor %u", idx);
				return -EPROTO;
			}
			if (d.len == 0 || d.len % sizeof(struct virtq_desc_raw) ||
			    d.len / sizeof(struct virtq_desc_raw) > VIRTQ_MAX_SIZE)
				return -EPROTO;
			p = guest_mem_ptr(vq->mem, d.addr, d.len);
			if (!p)
				return -EPROTO;
			table = p;
			table_size = d.len / sizeof(struct virtq_desc_raw);
			ttl = table_size;
			idx = 0;
			in_indirect = true;
			continue;
		}

		if (d.flags & VRING_DESC_F_WRITE) {
			c->in_len += d.len;
		} else if (c->nr_in) {
			vmm_dbg("virtq: readable descriptor after writable");
			return -EPROTO;
		}

		/* Zero-length buffers are legal and carry nothing. */
		if (d.len) {
			p = guest_mem_ptr(vq->mem, d.addr, d.len);
			if (!p || nsegs == VIRTQ_MAX_SEGS)
				return -EPROTO;
			c->iov[nsegs].iov_base = p;
			c->iov[nsegs].iov_len = d.len;
			nsegs++;
			if (d.flags & VRING_DESC_F_WRITE)
				c->nr_in++;
			else
				c->nr_out++;
		}

		if (!(d.flags & VRING_DESC_F_NEXT))
			return 0;
		if (d.next >= table_size)
			return -EPROTO;
		idx = d.next;
	}
}

/* virtq_pop() from the avail ring. */
static inline int pop_avail(struct virtq *vq, struct virtq_chain *chain)
{
	uint16_t avail_idx, nr, head;
	int ret;

	if (!vq->ready)
		return 0;
	avail_idx = load_avail_idx(vq);
	nr = (uint16_t)(avail_idx - vq->last_avail_idx);
	if (nr == 0 && vq->event_idx && !vq->notify_disabled) {
		/*
		 * Empty with kicks enabled: the caller may sleep until the next
		 * kick.  The driver publishes avail->idx, virtio_mb(), then
		 * reads avail_event (virtqueue_kick_prepare); we stored
		 * avail_event (the last pop, or virtq_enable_notify()) and
		 * then read avail->idx.  Store then load on both sides: without
		 * a full barrier here our load can pass our store (the store
		 * buffer), we see the ring empty, the driver sees the old
		 * avail_event and does not kick, and the queue stalls until
		 * something else serves it (check_vq_kick_race).  So:
		 * avail_event again, the barrier, and avail->idx once more.
		 * Pairs with the driver's virtio_mb().
		 * One barrier per pop that finds the ring empty; a device that
		 * drains with virtq_disable_notify() pays it in
		 * virtq_enable_notify() instead.
		 */
		store_avail_event(vq, vq->last_avail_idx);
		vmm_mb();
		avail_idx = load_avail_idx(vq);
		nr = (uint16_t)(avail_idx - vq->last_avail_idx);
	}
	/* Guest-controlled index: it may never run ahead by more than size. */
	if (nr > vq->size) {
		vmm_dbg("virtq: avail idx %u jumped (last %u, size %u)",
			avail_idx, vq->last_avail_idx, vq->size);
		return -EPROTO;
	}
	if (nr == 0)
		return 0;

	/* Read the ring entry only after seeing avail->idx cover it.  Pairs
	 * with the driver's virtio_wmb() between writing avail->ring[] (and
	 * the descriptors) and publishing avail->idx. */
	vmm_rmb();

	head = le16toh(READ_ONCE(vq->avail->ring[vq->last_avail_idx & (vq->size - 1)]));
	/* Guest-controlled head: checked against the queue size here. */
	if (head >= vq->size)
		return -EPROTO;
	ret = walk_chain(vq, head, chain);
	if (ret < 0)
		return ret;
	vq->last_avail_idx++;

	/* With kicks enabled, ask for one as soon as the driver adds the next
	 * entry.  No barrier here: the pop that finds the ring empty (above)
	 * or virtq_enable_notify() closes the race. */
	if (vq->event_idx && !vq->notify_disabled)
		store_avail_event(vq, vq->last_avail_idx);
	return 1;
}

/*
 * The tracked virtq_pop().  About the barriers on the region: its reader
 * is the next back end, after this one died or let go of the ring (the
 * front end keeps the buffer, nobody reads it meanwhile), or a test that
 * watches it from another process.  A process that dies leaves every store
 * it executed, so what matters is the order in which the stores are
 * issued; vmm_wmb() gives that order to the compiler and, on weakly
 * ordered CPUs, to a concurrent reader (which pairs each with a vmm_rmb()
 * between reading inflight and counter / used->idx and the region).
 */
static int pop_tracked(struct virtq *vq, struct virtq_chain *chain)
{
	struct virtq_inflight *t = vq->inflight;
	struct virtq_inflight_desc *d;
	int ret;

	if (!vq->ready)
		return 0;
	if (t->next_resubmit < t->nr_resubmit) {
		/* Left in flight by the previous back end: its descriptors
		 * are untouched (the driver waits for the used entry), its
		 * entry keeps inflight and counter. */
		uint16_t head = t->resubmit[t->next_resubmit];

		ret = walk_chain(vq, head, chain);
		if (ret < 0)
			return ret;
		t->next_resubmit++;
		t->last_resubmit = true;
		t->last_head = head;
		return 1;
	}
	ret = pop_avail(vq, chain);
	if (ret <= 0)
		return ret;
	/* chain->head < vq->size <= t->desc_num (virtq_inflight_attach()). */
	d = &t->r->desc[chain->head];
	WRITE_ONCE(d->counter, t->counter++);
	/* The counter before the flag: an entry marked in flight always has
	 * this pop's counter, so resubmission keeps the pop order. */
	vmm_wmb();
	WRITE_ONCE(d->inflight, 1);
	/* No barrier before the request starts: if this back end dies before
	 * the flag is stored, the recovered avail index (used->idx plus the
	 * heads in flight) does not count this pop, and the next back end
	 * pops the same avail entry again. */
	t->last_resubmit = false;
	t->last_head = chain->head;
	return 1;
}

int virtq_pop(struct virtq *vq, struct virtq_chain *chain)
{
	if (unlikely(vq->inflight))
		return pop_tracked(vq, chain);
	return pop_avail(vq, chain);
}

/* Publish one used element; false if @head is bad (logged). */
static inline bool push_used(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct virtq_used_elem_raw *e;

	if (unlikely(!vq->ready || head >= vq->size)) {
		vmm_err("virtq: push of bad head %u (size %u)", head, vq->size);
		return false;
	}
	e = &vq->used->ring[vq->used_idx & (vq->size - 1)];
	WRITE_ONCE(e->id, htole32(head));
	WRITE_ONCE(e->len, htole32(len));
	/* The used element and every byte written into the chain's buffers
	 * must be visible before the new used->idx.  Pairs with the driver's
	 * virtio_rmb() after reading used->idx (virtqueue_get_buf).  Tracked:
	 * also orders last_batch_head (push_tracked()) before used->idx. */
	vmm_wmb();
	vq->used_idx++;
	WRITE_ONCE(vq->used->idx, htole16(vq->used_idx));
	return true;
}

/*
 * The tracked virtq_push(), in the specification's order, one push per
 * batch.  Whenever this back end may die, the region and the used ring
 * together say whether @head is still in flight:
 *   before used->idx moves: region used_idx == used->idx, inflight 1:
 *     resubmitted (the driver has not seen it complete);
 *   after, before inflight is cleared: region used_idx != used->idx:
 *     the recovery clears the last batch, last_batch_head, which is @head;
 *   after inflight is cleared, before used_idx is stored: the same;
 *   after: consistent.
 */
static void push_tracked(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct virtq_inflight *t = vq->inflight;
	struct virtq_inflight_region *r = t->r;

	/* Stopped for a disconnect: what completes now stays in flight and
	 * the next back end does it again (a block request may be repeated;
	 * the driver has not seen it complete).  Relaxed: pairs with
	 * virtq_inflight_freeze(); a push that misses it is a whole one. */
	if (__atomic_load_n(&t->frozen, __ATOMIC_RELAXED))
		return;
	if (unlikely(head >= vq->size)) {
		(void)push_used(vq, head, len); /* logs it */
		return;
	}
	/* The batch list, one entry long.  Ordered before used->idx by the
	 * vmm_wmb() in push_used(). */
	WRITE_ONCE(r->desc[head].next, READ_ONCE(r->last_batch_head));
	WRITE_ONCE(r->last_batch_head, head);
	if (!push_used(vq, head, len))
		return;
	/* used->idx before inflight = 0: the other order loses @head if we
	 * die in between (neither in flight nor completed).  The reader
	 * (virtq_inflight_attach() of the next back end) compares used->idx
	 * with the region's used_idx. */
	vmm_wmb();
	WRITE_ONCE(r->desc[head].inflight, 0);
	/* inflight = 0 before used_idx: the other order, cut in between,
	 * looks like a consistent region with @head in flight, completed
	 * already: a duplicate used entry after the resubmission. */
	vmm_wmb();
	WRITE_ONCE(r->used_idx, vq->used_idx);
}

void virtq_push(struct virtq *vq, uint16_t head, uint32_t len)
{
	if (unlikely(vq->inflight)) {
		push_tracked(vq, head, len);
		return;
	}
	(void)push_used(vq, head, len);
}

void virtq_inflight_freeze(struct virtq *vq)
{
	if (vq->inflight)
		__atomic_store_n(&vq->inflight->frozen, true, __ATOMIC_RELAXED);
}

struct inflight_head {
	uint64_t counter;
	uint16_t head;
};

static int cmp_counter(const void *a, const void *b)
{
	const struct inflight_head *x = a, *y = b;

	if (x->counter != y->counter)
		return x->counter < y->counter ? -1 : 1;
	return x->head < y->head ? -1 : x->head > y->head;
}

int virtq_inflight_attach(struct virtq *vq, struct virtq_inflight *t,
			  struct virtq_inflight_region *r, uint16_t desc_num,
			  int *resubmit)
{
	struct inflight_head found[VIRTQ_MAX_SIZE];
	uint16_t used = vq->used_idx, batch, h;
	unsigned int n = 0;

	if (!vq->ready || vq->size > desc_num)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->r = r;
	t->desc_num = desc_num;
	*resubmit = -1;

	if (READ_ONCE(r->version) == 0) {
		/* Fresh (the front end's GET_INFLIGHT_FD buffer is zeroed,
		 * but clear the flags anyway).  used_idx starts at the ring's
		 * own idx, not 0: a ring with a history must not look like
		 * one with an unrecorded batch at the next recovery. */
		WRITE_ONCE(r->features, 0);
		WRITE_ONCE(r->desc_num, desc_num);
		WRITE_ONCE(r->last_batch_head, 0);
		WRITE_ONCE(r->used_idx, used);
		for (unsigned int i = 0; i < desc_num; i++)
			WRITE_ONCE(r->desc[i].inflight, 0);
		/* Initialised before it says so. */
		vmm_wmb();
		WRITE_ONCE(r->version, VIRTQ_INFLIGHT_VERSION);
		vq->inflight = t;
		return 0;
	}
	if (READ_ONCE(r->version) != VIRTQ_INFLIGHT_VERSION ||
	    READ_ONCE(r->desc_num) != desc_num) {
		vmm_err("virtq: in-flight region of version %u with %u entries (expected %u, %u)",
			READ_ONCE(r->version), READ_ONCE(r->desc_num),
			VIRTQ_INFLIGHT_VERSION, desc_num);
		return -EINVAL;
	}
	/* The last batch was published (used->idx moved) but not recorded:
	 * its heads are done.  Walk its list, bounded and checked. */
	batch = (uint16_t)(used - READ_ONCE(r->used_idx));
	h = READ_ONCE(r->last_batch_head);
	for (unsigned int i = 0; i < batch && i < desc_num && h < desc_num; i++) {
		WRITE_ONCE(r->desc[h].inflight, 0);
		h = READ_ONCE(r->desc[h].next);
	}
	/* Cleared before the region says it is consistent again (the same
	 * order as push_tracked()). */
	vmm_wmb();
	WRITE_ONCE(r->used_idx, used);

	for (unsigned int i = 0; i < desc_num; i++) {
		uint8_t f = READ_ONCE(r->desc[i].inflight);
		uint64_t c = READ_ONCE(r->desc[i].counter);

		if (!f)
			continue;
		if (i >= vq->size || f != 1) {
			/* Not a head this ring can have: nothing to do. */
			WRITE_ONCE(r->desc[i].inflight, 0);
			continue;
		}
		found[n].counter = c;
		found[n].head = (uint16_t)i;
		if (c >= t->counter)
			t->counter = c + 1;
		n++;
	}
	qsort(found, n, sizeof(found[0]), cmp_counter);
	for (unsigned int i = 0; i < n; i++)
		t->resubmit[i] = found[i].head;
	t->nr_resubmit = (uint16_t)n;
	vq->last_avail_idx = (uint16_t)(used + n);
	if (vq->event_idx)
		store_avail_event(vq, vq->last_avail_idx);
	*resubmit = (int)n;
	vq->inflight = t;
	return 0;
}

bool virtq_should_notify(struct virtq *vq)
{
	uint16_t old, new, event;
	bool valid;

	if (!vq->ready)
		return false;
	/* Our used->idx store must be globally visible before we read the
	 * driver's suppression state, and the driver does the mirror image
	 * (writes used_event / clears NO_INTERRUPT, virtio_mb(), re-reads
	 * used->idx in virtqueue_enable_cb / virtqueue_poll).  Store->load:
	 * needs the full barrier.  Pairs with that virtio_mb(). */
	vmm_mb();

	old = vq->signalled_used;
	new = vq->used_idx;
	valid = vq->signalled_used_valid;
	if (valid && old == new)
		return false; /* nothing pushed since the last interrupt */
	vq->signalled_used = new;
	vq->signalled_used_valid = true;

	if (!vq->event_idx)
		return !(le16toh(READ_ONCE(vq->avail->flags)) &
			 VRING_AVAIL_F_NO_INTERRUPT);
	if (!valid)
		return true;
	/* used_event is guest-controlled; any 16-bit value is meaningful. */
	event = le16toh(READ_ONCE(*used_event_ptr(vq)));
	return virtq_need_event(event, new, old);
}

void virtq_disable_notify(struct virtq *vq)
{
	if (!vq->ready || vq->notify_disabled)
		return;
	vq->notify_disabled = true;
	if (vq->event_idx) {
		/* One behind what we have consumed: the driver's kick window
		 * [old, new) cannot contain it until 64Ki more entries, so it
		 * is never crossed while we drain (a stray kick is harmless). */
		store_avail_event(vq, (uint16_t)(vq->last_avail_idx - 1));
	} else {
		uint16_t f = le16toh(READ_ONCE(vq->used->flags));

		WRITE_ONCE(vq->used->flags, htole16(f | VRING_USED_F_NO_NOTIFY));
	}
}

bool virtq_enable_notify(struct virtq *vq)
{
	if (!vq->ready)
		return false;
	vq->notify_disabled = false;
	if (vq->event_idx) {
		store_avail_event(vq, vq->last_avail_idx);
	} else {
		uint16_t f = le16toh(READ_ONCE(vq->used->flags));

		WRITE_ONCE(vq->used->flags, htole16(f & ~VRING_USED_F_NO_NOTIFY));
	}
	/* The classic race (virtio 1.x 2.7.10): the driver may have published
	 * entries while kicks were off and then read the old avail_event /
	 * NO_NOTIFY and skipped the kick.  Our store above must be visible
	 * before we re-read avail->idx; store->load needs the full barrier.
	 * Pairs with the driver's virtio_mb() between publishing avail->idx
	 * and reading avail_event / used->flags (virtqueue_kick_prepare). */
	vmm_mb();
	return load_avail_idx(vq) != vq->last_avail_idx;
}
