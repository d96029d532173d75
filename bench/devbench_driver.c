/* SPDX-License-Identifier: MIT */
/* devbench: simulated virtio-blk driver (see devbench_driver.h). */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_blk.h>

#include "devbench_driver.h"

#define rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ALIGN(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

int db_ram_init(struct db_ram *r, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->fd = memfd_create("devbench-ram", MFD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	if (ftruncate(r->fd, (off_t)size) < 0) {
		int e = errno;

		close(r->fd);
		return -e;
	}
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		int e = errno;

		close(r->fd);
		return -e;
	}
	r->size = size;
	r->bump = 0x1000;
	return 0;
}

void db_ram_destroy(struct db_ram *r)
{
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

uint64_t db_alloc(struct db_ram *r, uint64_t len, uint64_t align)
{
	uint64_t gpa = ALIGN(r->bump, align);

	if (gpa > r->size || len > r->size - gpa)
		return 0;
	r->bump = gpa + len;
	memset(r->base + gpa, 0, len);
	return gpa;
}

static void *ptr(struct db_queue *q, uint64_t gpa)
{
	return q->ram->base + gpa;
}

int db_queue_init(struct db_queue *q, struct db_ram *r, unsigned int index,
		  uint16_t size, unsigned int qd, uint64_t capacity_bytes,
		  bool event_idx, volatile int *stop)
{
	memset(q, 0, sizeof(*q));
	if (!qd || qd > size || capacity_bytes < DB_BLOCK)
		return -EINVAL;
	q->ram = r;
	q->index = index;
	q->size = size;
	q->qd = qd;
	q->event_idx = event_idx;
	q->nr_blocks = capacity_bytes / DB_BLOCK;
	q->stop = stop;
	q->kick_fd = q->call_fd = -1;
	q->rng = 0x9e3779b97f4a7c15ull * (index + 1);
	/* Ring layout as vring_init() with 4 KiB alignment of the used ring. */
	q->desc_gpa = db_alloc(r, 16ull * size, 4096);
	q->avail_gpa = db_alloc(r, 6ull + 2ull * size, 2);
	q->used_gpa = db_alloc(r, 6ull + 8ull * size, 4096);
	if (!q->desc_gpa || !q->avail_gpa || !q->used_gpa)
		return -ENOMEM;
	q->desc = ptr(q, q->desc_gpa);
	q->avail = ptr(q, q->avail_gpa);
	q->used = ptr(q, q->used_gpa);
	q->slots = calloc(qd, sizeof(*q->slots));
	q->free_ids = calloc(qd, sizeof(*q->free_ids));
	if (!q->slots || !q->free_ids)
		return -ENOMEM;
	for (unsigned int i = 0; i < qd; i++) {
		struct db_slot *s = &q->slots[i];

		s->ind_gpa = db_alloc(r, 3 * sizeof(struct vring_desc), 64);
		s->hdr_gpa = db_alloc(r, sizeof(struct virtio_blk_outhdr), 16);
		s->st_gpa = db_alloc(r, 1, 1);
		s->data_gpa = db_alloc(r, DB_BLOCK, DB_BLOCK);
		if (!s->ind_gpa || !s->hdr_gpa || !s->st_gpa || !s->data_gpa)
			return -ENOMEM;
		q->free_ids[q->nr_free++] = (uint16_t)(qd - 1 - i);
	}
	return 0;
}

void db_queue_destroy(struct db_queue *q)
{
	free(q->slots);
	free(q->free_ids);
	q->slots = NULL;
	q->free_ids = NULL;
}

static uint64_t rnd(struct db_queue *q)
{
	q->rng ^= q->rng >> 12;
	q->rng ^= q->rng << 25;
	q->rng ^= q->rng >> 27;
	return q->rng * 0x2545f4914f6cdd1dull;
}

static void put_desc(struct vring_desc *d, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

/* virtio_queue_rq + virtqueue_add_split (indirect): not yet published. */
static void add_req(struct db_queue *q)
{
	uint16_t id = q->free_ids[--q->nr_free];
	struct db_slot *s = &q->slots[id];
	struct virtio_blk_outhdr *h = ptr(q, s->hdr_gpa);
	struct vring_desc *ind = ptr(q, s->ind_gpa);
	uint64_t blk = rnd(q) % q->nr_blocks;

	h->type = htole32(VIRTIO_BLK_T_IN);
	h->ioprio = 0;
	h->sector = htole64(blk * (DB_BLOCK / 512));
	*(uint8_t *)ptr(q, s->st_gpa) = 0xff;
	put_desc(&ind[0], s->hdr_gpa, sizeof(*h), VRING_DESC_F_NEXT, 1);
	put_desc(&ind[1], s->data_gpa, DB_BLOCK,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
	put_desc(&ind[2], s->st_gpa, 1, VRING_DESC_F_WRITE, 0);
	put_desc(&q->desc[id], s->ind_gpa, 3 * sizeof(*ind),
		 VRING_DESC_F_INDIRECT, 0);
	q->avail->ring[q->avail_idx & (q->size - 1)] = htole16(id);
	q->avail_idx++;
	q->inflight++;
}

static inline bool need_event(uint16_t ev, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - ev - 1) < (uint16_t)(new_idx - old);
}

/* virtqueue_kick_prepare + virtqueue_notify. */
static void publish(struct db_queue *q)
{
	uint16_t old = q->kicked_idx, new_idx = q->avail_idx;
	bool kick;

	if (old == new_idx)
		return;
	wmb(); /* descriptors and ring entries before the index */
	STORE(q->avail->idx, htole16(new_idx));
	q->kicked_idx = new_idx;
	mb(); /* index before reading the device's suppression state */
	if (q->event_idx) {
		uint16_t *avail_event = (uint16_t *)((uint8_t *)q->used + 4 +
						     8u * q->size);
		uint16_t ev = le16toh(LOAD(*avail_event));

		kick = need_event(ev, new_idx, old);
	} else {
		kick = !(le16toh(LOAD(q->used->flags)) & VRING_USED_F_NO_NOTIFY);
	}
	if (kick) {
		uint64_t one = 1;

		if (write(q->kick_fd, &one, sizeof(one)) == sizeof(one))
			STORE(q->c.kicks, q->c.kicks + 1);
	}
}

static unsigned int used_pending(struct db_queue *q)
{
	return (uint16_t)(le16toh(LOAD(q->used->idx)) - q->last_used);
}

/* virtqueue_get_buf loop (interrupts disabled): returns completions. */
static unsigned int harvest(struct db_queue *q)
{
	unsigned int n = 0, errs = 0;

	while (used_pending(q)) {
		struct vring_used_elem e;
		uint32_t id;

		rmb(); /* entry after index */
		e = q->used->ring[q->last_used & (q->size - 1)];
		q->last_used++;
		id = le32toh(e.id);
		if (id >= q->qd || q->nr_free >= q->qd) {
			errs++;
			continue;
		}
		if (*(uint8_t *)ptr(q, q->slots[id].st_gpa) != VIRTIO_BLK_S_OK ||
		    le32toh(e.len) < 1)
			errs++;
		q->free_ids[q->nr_free++] = (uint16_t)id;
		q->inflight--;
		n++;
	}
	if (n)
		STORE(q->c.reqs, q->c.reqs + n);
	if (errs)
		STORE(q->c.errors, q->c.errors + errs);
	return n;
}

/* virtqueue_disable_cb: no EVENT_IDX, the NO_INTERRUPT flag; with
 * EVENT_IDX used_event is simply left behind (no interrupt until the
 * driver moves it again). */
static void disable_cb(struct db_queue *q)
{
	if (!q->event_idx)
		STORE(q->avail->flags, htole16(VRING_AVAIL_F_NO_INTERRUPT));
}

/* virtqueue_enable_cb: ask for an interrupt at the next used entry;
 * returns false if entries arrived meanwhile (the device may have pushed
 * them before it saw used_event / the cleared flag). */
static bool enable_cb(struct db_queue *q)
{
	if (q->event_idx)
		STORE(q->avail->ring[q->size], htole16(q->last_used));
	else
		STORE(q->avail->flags, 0);
	mb();
	return !used_pending(q);
}

/*
 * The vCPU, in Linux' order: the interrupt handler (virtblk_done) harvests
 * with callbacks disabled and re-enables them; then the submitter (fio in
 * the guest, blk-mq) adds new requests and kicks, with callbacks enabled;
 * the vCPU halts until the next interrupt.
 */
static void *queue_thread(void *arg)
{
	struct db_queue *q = arg;
	unsigned int idle_timeouts = 0;

	while (q->nr_free)
		add_req(q);
	publish(q);
	for (;;) {
		bool stopping = *q->stop;
		struct pollfd p = { .fd = q->call_fd, .events = POLLIN };
		uint64_t v;
		int r;

		disable_cb(q);
		harvest(q);
		if (!enable_cb(q))
			continue;
		if (!stopping && q->nr_free) {
			while (q->nr_free)
				add_req(q);
			publish(q);
			continue; /* completions may already be there */
		}
		if (stopping && !q->inflight)
			break;
		r = poll(&p, 1, 100);
		if (r > 0 && read(q->call_fd, &v, sizeof(v)) == sizeof(v)) {
			STORE(q->c.irqs, q->c.irqs + v);
			STORE(q->c.wakeups, q->c.wakeups + 1);
			idle_timeouts = 0;
		} else if (r == 0 && stopping && ++idle_timeouts > 20) {
			break; /* the device lost requests: give up after 2 s */
		}
	}
	return NULL;
}

int db_queue_start(struct db_queue *q)
{
	return -pthread_create(&q->thread, NULL, queue_thread, q);
}

void db_queue_join(struct db_queue *q)
{
	pthread_join(q->thread, NULL);
}

void db_queue_counters(struct db_queue *q, struct db_counters *out)
{
	out->reqs = LOAD(q->c.reqs);
	out->kicks = LOAD(q->c.kicks);
	out->irqs = LOAD(q->c.irqs);
	out->wakeups = LOAD(q->c.wakeups);
	out->errors = LOAD(q->c.errors);
}

uint64_t db_queue_cpu_ns(struct db_queue *q)
{
	clockid_t cid;
	struct timespec ts;

	if (pthread_getcpuclockid(q->thread, &cid) || clock_gettime(cid, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
