/* SPDX-License-Identifier: MIT */
/* A tap queue's frames moved by io_uring (tap-uring.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/tap-uring.h"
#include "virtio/vq-iov.h"

#define INC(x, n) __atomic_store_n(&(x), (x) + (n), __ATOMIC_RELAXED)

struct tu_slot {
	struct iothread_cb cb;
	struct iothread_cb cancel_cb; /* the ASYNC_CANCEL aimed at cb */
	struct tap_uring *u;
	bool busy;		/* an SQE of it without its CQE */
	struct tu_slot *next_free;
	/* TX: the chain written, its bytes (header included) and segments. */
	uint16_t head;
	uint64_t len;
	struct iovec *iov;
	/* RX: the chains held (nb, their niov iovecs in rq); allocated at
	 * the slot's first read, so a quiet queue holds one. */
	struct vnet_rxq *rq;
	unsigned int nb, niov;
};

struct tap_uring {
	bool rx;
	struct tap_uring_queue q;
	struct iothread *io;
	struct tu_slot *slots;
	unsigned int nr_slots;
	struct tu_slot *free;	/* TX: slots not busy */
	struct iovec *tx_iov;	/* TX: TAP_URING_TX_IOV per slot */
	unsigned int busy;	/* slots whose CQE is due */
	unsigned int cancels;	/* ASYNC_CANCELs whose CQE is due */
	/* Quiesced: nothing is started (completions still finish to the
	 * used ring: may_push()). */
	bool quiesced;
};

/* A completion may use its chains: the queue is served, or being stopped
 * or reset (vqs_may_finish(): a reset's driver reads back what the device
 * returned before the reset finished, so a frame written or read by then
 * is returned, not lost), but not on a queue broken by the driver
 * (NEEDS_RESET: not touched again). */
static bool may_push(const struct tap_uring *u)
{
	return vqs_may_finish(u->q.sq);
}

static void slot_done(struct tu_slot *s)
{
	struct tap_uring *u = s->u;

	s->busy = false;
	u->busy--;
	if (!u->rx) {
		s->next_free = u->free;
		u->free = s;
	}
}

/* Context: I/O thread.  A write of a TX chain completed. */
static void tx_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct tu_slot *s = container_of(cb, struct tu_slot, cb);
	struct tap_uring *u = s->u;

	(void)flags;
	/* A tap takes a frame whole or refuses it (a bad GSO header:
	 * EINVAL), as writev() does: dropped and counted. */
	vnet_tx_count(u->q.st, s->len, res >= 0);
	slot_done(s);
	if (!may_push(u))
		return;
	virtq_push(vqs_virtq(u->q.sq), s->head, 0);
	vqs_pushed(u->q.sq); /* also serves the queue again: chains left */
}

/* Context: I/O thread.  A read into an RX slot's chains completed. */
static void rx_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct tu_slot *s = container_of(cb, struct tu_slot, cb);
	struct tap_uring *u = s->u;
	unsigned int used;

	(void)flags;
	slot_done(s);
	if (res < (int)VNET_HDR_LEN) {
		/* EAGAIN: the tap is empty, the readable watch says when to
		 * read again; a tap that went down or was detached from the
		 * kernel's steering (-EBADFD) likewise.  A runt, which a tap
		 * never gives: dropped, and the queue read on. */
		if (res > 0) {
			INC(u->q.st->rx_drops, 1);
			vqs_kick(u->q.sq);
		}
		return;
	}
	if (!may_push(u)) {
		/* Read on a queue the driver broke: not returned. */
		INC(u->q.st->rx_drops, 1);
		return;
	}
	used = vnet_rx_push(s->rq, vqs_virtq(u->q.sq), s->nb, (size_t)res);
	s->nb = vnet_rx_keep(s->rq, s->nb, used, &s->niov);
	INC(u->q.st->rx_packets, 1);
	INC(u->q.st->rx_bytes, (uint64_t)res - VNET_HDR_LEN);
	net_rate_charge(u->q.rl, u->q.rate, (uint64_t)res - VNET_HDR_LEN, 1);
	vqs_pushed(u->q.sq); /* also serves the queue again: read on */
}

static void cancel_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct tu_slot *s = container_of(cb, struct tu_slot, cancel_cb);

	(void)res; /* 0, -EALREADY or -ENOENT: the slot's own CQE comes */
	(void)flags;
	s->u->cancels--;
}

int tap_uring_tx(struct tap_uring *u, struct virtq_chain *ch,
		 unsigned int budget, bool *more, bool *full, uint64_t *bytes,
		 uint64_t *frames)
{
	struct virtq *vq = vqs_virtq(u->q.sq);
	const struct iothread_file *f = u->q.file;
	unsigned int done = 0;
	int r = 0;

	*more = *full = false;
	*bytes = *frames = 0;
	while (done < budget && !u->quiesced) {
		struct io_uring_sqe *sqe = NULL;
		struct tu_slot *s = u->free;
		uint64_t len;

		if (!s) {
			*full = virtq_avail_count(vq) > 0;
			break;
		}
		r = virtq_pop(vq, ch);
		if (r <= 0)
			break;
		done++;
		len = vq_iov_len(ch->iov, ch->nr_out);
		if (len >= VNET_HDR_LEN) {
			*bytes += len - VNET_HDR_LEN;
			(*frames)++;
		}
		/* Shorter than the header (dropped), too many segments for a
		 * slot, or no SQE (the kernel refused the ring's): at once. */
		if (len < VNET_HDR_LEN || ch->nr_out > TAP_URING_TX_IOV ||
		    !(sqe = iothread_get_sqe(u->io, &s->cb))) {
			vnet_tx_chain(vq, ch, f->fd, u->q.st);
			vqs_pushed(u->q.sq);
			continue;
		}
		u->free = s->next_free;
		memcpy(s->iov, ch->iov, ch->nr_out * sizeof(*s->iov));
		/* Offset 0: a tap (or a socket) has no file position. */
		io_uring_prep_writev(sqe, f->idx, s->iov, ch->nr_out, 0);
		iothread_sqe_file(sqe, f);
		s->head = ch->head;
		s->len = len;
		s->busy = true;
		u->busy++;
	}
	if (r < 0)
		return -EPROTO;
	*more = done == budget && virtq_avail_count(vq);
	return (int)done;
}

/* Give back the @n chains slot @s popped last (the last popped from the
 * ring): the read they were for does not start. */
static void rx_unpop(struct tu_slot *s, struct virtq *vq, unsigned int n)
{
	s->nb -= n;
	s->niov = s->nb ? s->rq->iov_end[s->nb - 1] : 0;
	while (n--)
		virtq_unpop(vq);
}

static uint64_t rx_room(const struct tu_slot *s)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < s->nb; i++)
		n += s->rq->len[i];
	return n;
}

/*
 * Slot @dst is short of the largest frame: take the chains other slots
 * kept and are not reading into (what their last packets did not need),
 * until it holds enough.  Without this the kept chains could starve the
 * queue: spread over slots none of which holds a large frame, with the
 * rest of the ring posted to none (Linux refills only once more than 32
 * of its buffers are free), no read would start and no buffer come back.
 * Returns whether another slot is busy (a read in flight).
 */
static bool rx_collect(struct tap_uring *u, struct tu_slot *dst,
		       uint32_t max_frame)
{
	struct vnet_rxq *d = dst->rq;
	uint64_t room = rx_room(dst);
	bool busy = false;

	for (unsigned int i = 0; i < u->nr_slots; i++) {
		struct tu_slot *s = &u->slots[i];

		busy |= s->busy;
		if (s == dst || s->busy || !s->nb || room >= max_frame ||
		    dst->nb + s->nb > VNET_RX_MAX_BUFS ||
		    dst->niov + s->niov > VNET_RX_MAX_IOV)
			continue;
		memcpy(&d->iov[dst->niov], s->rq->iov, s->niov * sizeof(d->iov[0]));
		for (unsigned int j = 0; j < s->nb; j++) {
			d->head[dst->nb + j] = s->rq->head[j];
			d->len[dst->nb + j] = s->rq->len[j];
			d->iov_end[dst->nb + j] = (uint16_t)(s->rq->iov_end[j] + dst->niov);
		}
		room += rx_room(s);
		dst->nb += s->nb;
		dst->niov += s->niov;
		s->nb = s->niov = 0;
	}
	return busy;
}

int tap_uring_rx(struct tap_uring *u, bool mergeable, uint32_t max_frame,
		 unsigned int budget, unsigned int *started)
{
	struct virtq *vq = vqs_virtq(u->q.sq);
	const struct iothread_file *f = u->q.file;
	int stop = VNET_RX_DRAINED;

	*started = 0;
	for (unsigned int i = 0; i < u->nr_slots && !u->quiesced; i++) {
		struct tu_slot *s = &u->slots[i];
		struct io_uring_sqe *sqe;
		bool ready, busy;
		int n;

		if (s->busy)
			continue;
		if (*started == budget)
			return VNET_RX_BUDGET;
		/* Short of buffers: only the slots that hold enough already
		 * (a read that found the tap empty kept them) still start. */
		if (stop == VNET_RX_NO_BUFS &&
		    (!s->nb || (mergeable && rx_room(s) < max_frame)))
			continue;
		if (!s->rq && !(s->rq = calloc(1, sizeof(*s->rq))))
			break; /* fewer reads at once */
		/* Before popping: what this call pops stays last, so that
		 * it can go back. */
		busy = mergeable && rx_room(s) < max_frame && rx_collect(u, s, max_frame);
		n = vnet_rx_top_up(s->rq, vq, mergeable, max_frame, &s->nb,
				   &s->niov, &ready);
		if (n < 0)
			return -EPROTO;
		if (!s->nb || !ready) {
			rx_unpop(s, vq, (unsigned int)n);
			stop = VNET_RX_NO_BUFS;
			continue;
		}
		/* Short, with every buffer the driver posted held: read into
		 * all of them, as vnet_rx() would, but only once no other
		 * read holds some (it completes, or the tap's readable watch
		 * comes, and the queue is served again). */
		if (mergeable && rx_room(s) < max_frame && busy) {
			rx_unpop(s, vq, (unsigned int)n);
			return VNET_RX_DRAINED;
		}
		sqe = iothread_get_sqe(u->io, &s->cb);
		if (!sqe)
			return VNET_RX_BUDGET; /* chains kept: next round */
		io_uring_prep_readv(sqe, f->idx, s->rq->iov, s->niov, 0);
		iothread_sqe_file(sqe, f);
		s->busy = true;
		u->busy++;
		(*started)++;
	}
	/* Slots left without buffers while others read (or hold what a
	 * read needs, and start one each time the queue is served): not
	 * starved.  Those reads' completions serve the queue again and take
	 * what the driver added meanwhile, so it need not kick; asking it
	 * to would cost a kick per refill under load, as the reads keep
	 * the ring looking empty. */
	if (stop == VNET_RX_NO_BUFS && u->busy)
		return VNET_RX_DRAINED;
	return stop;
}

void tap_uring_quiesce(struct tap_uring *u, bool cancel)
{
	u->quiesced = true;
	if (!cancel)
		return;
	/* Reads parked on an idle tap (tap-uring.h) complete only with a
	 * frame, which a reset must not wait for: each busy slot's SQE is
	 * cancelled (a write, done within its submit as a rule, is found
	 * finished and returned; so is a read that got its frame first). */
	for (unsigned int i = 0; i < u->nr_slots; i++) {
		struct tu_slot *s = &u->slots[i];
		struct io_uring_sqe *sqe;

		if (!s->busy)
			continue;
		sqe = iothread_get_sqe(u->io, &s->cancel_cb);
		if (!sqe)
			return; /* the rest completes on its own */
		io_uring_prep_cancel(sqe, &s->cb, 0);
		iothread_sqe_nofile(u->io, sqe);
		u->cancels++;
	}
}

bool tap_uring_idle(const struct tap_uring *u)
{
	return !u->busy && !u->cancels;
}

void tap_uring_detached(struct tap_uring *u)
{
	/* The RX chains kept belong to a ring that is reset (virtio-pci
	 * stops a NIC's queues only so): forgotten with it. */
	for (unsigned int i = 0; i < u->nr_slots; i++)
		u->slots[i].nb = u->slots[i].niov = 0;
}

void tap_uring_attach(struct tap_uring *u, const struct tap_uring_queue *q)
{
	u->q = *q;
	u->io = vqs_iothread(q->sq);
	u->quiesced = false;
}

int tap_uring_create(bool rx, struct tap_uring **out)
{
	struct tap_uring *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->rx = rx;
	u->nr_slots = rx ? TAP_URING_RX_SLOTS : TAP_URING_TX_SLOTS;
	u->slots = calloc(u->nr_slots, sizeof(*u->slots));
	if (!rx)
		u->tx_iov = calloc((size_t)u->nr_slots * TAP_URING_TX_IOV,
				   sizeof(*u->tx_iov));
	if (!u->slots || (!rx && !u->tx_iov)) {
		tap_uring_destroy(u);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < u->nr_slots; i++) {
		struct tu_slot *s = &u->slots[i];

		s->u = u;
		s->cb.fn = rx ? rx_cqe : tx_cqe;
		s->cancel_cb.fn = cancel_cqe;
		if (!rx) {
			s->iov = &u->tx_iov[(size_t)i * TAP_URING_TX_IOV];
			s->next_free = u->free;
			u->free = s;
		}
	}
	*out = u;
	return 0;
}

void tap_uring_destroy(struct tap_uring *u)
{
	if (!u)
		return;
	for (unsigned int i = 0; u->slots && i < u->nr_slots; i++)
		free(u->slots[i].rq);
	free(u->slots);
	free(u->tx_iov);
	free(u);
}
