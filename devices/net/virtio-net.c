/* SPDX-License-Identifier: MIT */
/* virtio-net device on a tap, served by the queue service (virtio-net.h). */
#include <errno.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "net/net-backend.h"
#include "net/net-rate.h"
#include "net/tap.h"
#include "net/tap-uring.h"
#include "net/vhost-net.h"
#include "net/virtio-net.h"
#include "ratelimit.h"

/* Packets (RX) or chains (TX) one process() call moves before the I/O
 * thread serves its other queues (the rest: VQS_YIELD, at the next round,
 * which does not sleep). */
#define NET_BUDGET 256u

struct net_queue {
	struct virtio_net *d;
	struct vqs_queue *sq;
	struct iothread *io; /* sq's, kept for destroy */
	unsigned int pair;
	/* RX: the tap file watched while attached (registered once: see
	 * iothread_file_get()) and the read scratch; TX and control: the
	 * pop scratch. */
	struct iothread_fd watch;
	struct iothread_file file;
	bool watching;
	/* A back end moved by io_uring (net_backend.uring): the queue's
	 * engine, and whether this attach uses it (the file registered: RX
	 * and TX each hold a registration, so TX needs none of RX's). */
	struct tap_uring *ur;
	bool uring;
	/* RX: the driver gave too few buffers; the tap waits for a kick. */
	bool starved;
	/* The queue's kick eventfd, -1 before its first start (the same file
	 * from then on: virtio.h): the control queue's thread signals a
	 * pair's RX queue on it when the pair comes back on. */
	int kick_fd;
	struct vnet_rxq *rx;
	struct virtq_chain *chain;
	struct net_rate_queue rate; /* its standing with the rate limit */
	/* TX: the back end's peer took nothing for TX_STALL_NS (warned). */
	bool stall_warned;
	/* TX on a back end whose file fills (tx_waits_writable): the file
	 * watched for POLLOUT while attached, and whether TX waits for it
	 * (a wake-up then serves the queue; others are ignored). */
	struct iothread_fd out_watch;
	bool out_watching;
	bool out_waiting;
};

/* A peer that takes no frame for this long while TX waits is logged: the
 * guest's transmissions stop with nothing else to show for it. */
#define TX_STALL_NS (10ull * 1000000000ull)

struct virtio_net {
	struct vnet n;
	struct vqs *svc;
	uint16_t queue_size;
	unsigned int nr_queues;
	const struct net_backend *be;
	int *fds;			/* n.max_pairs */
	void **priv;			/* n.max_pairs: be->pair_init()'s */
	struct net_queue *qs;		/* nr_queues */
	struct vnet_pair_stats *stats;	/* n.max_pairs */
	struct log_limit tap_log;
	/* vhost=on: the files (n.max_pairs, else NULL), which pairs the
	 * kernel serves now and the transport's queues meanwhile (written
	 * on the transport's thread at start and stop, under link_lock,
	 * which the link's changes hold to give the pairs' files their back
	 * end or none). */
	int *vhost;
	uint64_t vhost_features;
	bool *vhost_on;
	struct virtio_queue *vhost_qs;
	struct log_limit vhost_log;
	/*
	 * The link (VIRTIO_NET_S_LINK_UP in n.status) is down while the
	 * operator holds it down (admin_down: virtio_net_set_link()) or, for
	 * good, once the back end's peer went away (peer_gone: a stream):
	 * link_is_down().  The data path reads them relaxed (a frame around
	 * the change may still go either way, as on a wire).  link_lock
	 * orders their writers, the status bit's and the tap queues'
	 * steering (pair_steer()): the API thread, the pairs' I/O threads,
	 * the control queue's, the transport's.
	 */
	bool admin_down, peer_gone;
	pthread_mutex_t link_lock;
	struct iothread *io0; /* the control queue's: virtio_net_set_link() */
	void (*link_changed)(void *opaque);
	void *link_opaque;
	/* Rate limits (net-rate.h), each shared by all pairs' RX or TX
	 * queues, set from any thread (virtio_net_ratelimit()). */
	struct ratelimit rl_rx, rl_tx;
};

static uint16_t curr_pairs(const struct virtio_net *d)
{
	return __atomic_load_n(&d->n.curr_pairs, __ATOMIC_RELAXED);
}

static bool link_is_down(const struct virtio_net *d)
{
	return __atomic_load_n(&d->admin_down, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&d->peer_gone, __ATOMIC_RELAXED);
}

/* Pair @p's tap file is attached while the driver uses the pair and the
 * link is up: a detached file gets no frame from the kernel, which drops
 * what it would have queued there (nothing stale comes at the link's
 * return).  Caller holds link_lock. */
static void pair_steer_locked(struct virtio_net *d, unsigned int p)
{
	bool on = p < curr_pairs(d) && !link_is_down(d);
	int r = d->be->steer ? d->be->steer(d->fds[p], on) : 0;

	/* -EINVAL: a tap without multi-queue (one inherited file), already
	 * in the state asked. */
	if (r && r != -EINVAL)
		log_limited(&d->tap_log, VMM_LOG_WARN, "virtio-net",
			    "tap queue %u: %s", p, strerror(-r));
}

static void pair_steer(struct virtio_net *d, unsigned int p)
{
	pthread_mutex_lock(&d->link_lock);
	pair_steer_locked(d, p);
	pthread_mutex_unlock(&d->link_lock);
}

/*
 * A pair the driver turned off (VQ_PAIRS_SET) gets no frame (virtio 1.x
 * 5.1.6.5.5).  A tap's steering (pair_steer()) already sends its file
 * none; a back end without steering (a stream socket per pair) keeps the
 * frames its peer sends there until the pair is on again.  Acquire:
 * pairs with vnet_ctrl()'s release store; a pair turned on is then
 * signalled on its RX queue's kick_fd (ctrl_process()).
 * Context: the queue's I/O thread.
 */
static bool pair_off(const struct virtio_net *d, unsigned int p)
{
	return p >= __atomic_load_n(&d->n.curr_pairs, __ATOMIC_ACQUIRE);
}

/* The tap file of an RX queue became readable. */
static void rx_readable(void *opaque)
{
	struct net_queue *q = opaque;

	if (!q->starved && !link_is_down(q->d) &&
	    !pair_off(q->d, q->pair))
		vqs_kick(q->sq);
}

/* The TX file of a queue's pair has room again (or had some freed while
 * TX did not wait: nothing to do).  Context: the queue's I/O thread, as
 * tx_process(), so out_waiting needs no atomics. */
static void tx_writable(void *opaque)
{
	struct net_queue *q = opaque;

	if (q->out_waiting) {
		q->out_waiting = false;
		vqs_kick(q->sq);
	}
}

/*
 * Interrupt now if pushing made it due (once per process() call).  @more:
 * work left that is ready (the budget ran out): VQS_YIELD, served again
 * after the thread's other queues without a sleep.  @wait: work left
 * that waits for the back end's file to take more, with no wake-up to
 * say when (its POLLOUT is not watched): VQS_RETRY.
 */
static int pushed_result(struct vqs_queue *sq, bool pushed, bool more,
			 bool wait)
{
	int r = more ? VQS_YIELD : wait ? VQS_RETRY : 0;

	if (pushed && virtq_should_notify(vqs_virtq(sq)))
		r |= VQS_NOTIFY;
	return r;
}

/*
 * The link state after a change of admin_down or peer_gone: the status
 * bit the driver reads, every tap queue's steering, and a configuration
 * interrupt (the driver reads the status again) when the bit changed.
 * Seq-cst: a driver that reads the status after the interrupt (sent by
 * link_changed, whose generation bump is seq-cst too) sees the new bit.
 * Caller holds link_lock.
 */
static void link_publish(struct virtio_net *d)
{
	bool down = link_is_down(d);
	uint16_t old;

	old = down ? __atomic_fetch_and(&d->n.status,
					(uint16_t)~VIRTIO_NET_S_LINK_UP,
					__ATOMIC_SEQ_CST) :
		     __atomic_fetch_or(&d->n.status, (uint16_t)VIRTIO_NET_S_LINK_UP,
				       __ATOMIC_SEQ_CST);
	for (unsigned int p = 0; p < d->n.max_pairs; p++)
		pair_steer_locked(d, p);
	if (!(old & VIRTIO_NET_S_LINK_UP) != down && d->link_changed)
		d->link_changed(d->link_opaque);
}

/*
 * The back end of pair @p found its peer gone or broken (a stream's
 * end of file or bad length): the link goes down for good, the driver is
 * told by a configuration interrupt, the VM runs on.  Context: the pair's
 * I/O thread.
 */
static void link_check(struct virtio_net *d, unsigned int p)
{
	int why = d->be->gone ? d->be->gone(d->priv[p]) : 0;

	if (!why || __atomic_load_n(&d->peer_gone, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&d->link_lock);
	if (d->peer_gone) {
		pthread_mutex_unlock(&d->link_lock);
		return;
	}
	__atomic_store_n(&d->peer_gone, true, __ATOMIC_RELAXED);
	link_publish(d);
	pthread_mutex_unlock(&d->link_lock);
	log_limited(&d->tap_log, VMM_LOG_WARN, "virtio-net",
		    "%s of pair %u: %s; link down", d->be->kind, p,
		    why == -EMSGSIZE ? "a frame length over the maximum (a "
				       "broken peer)" : "the peer went away");
}

/* One RX step: reads started (io_uring) or done (the back end's own). */
static int rx_move(struct virtio_net *d, struct net_queue *q, bool mrg,
		   unsigned int budget, unsigned int *moved)
{
	if (q->uring)
		return tap_uring_rx(q->ur, mrg, vnet_rx_max_frame(&d->n), budget,
				    moved);
	return d->be->rx(d->priv[q->pair], d->fds[q->pair], q->rx,
			 vqs_virtq(q->sq), mrg, vnet_rx_max_frame(&d->n), budget,
			 &d->stats[q->pair], moved);
}

/*
 * Kicks on an RX queue say "buffers added", and the device needs that
 * only when it ran out of them: it reads frames when its back end's file
 * says so, and takes whatever buffers the ring holds then.  So an RX
 * queue's kicks stay off (virtq_disable_notify(): EVENT_IDX's avail_event
 * out of the driver's window, else NO_NOTIFY) except while it starves.
 * Before, every pop asked for a kick at the next entry the driver added,
 * so a refill that caught up with the device kicked whether or not it
 * starved, and a refill racing with the device's own reads too (Linux
 * refills at the end of each NAPI poll).
 */
static int rx_process(struct virtio_net *d, struct net_queue *q)
{
	bool mrg = d->n.features & (1ull << VIRTIO_NET_F_MRG_RXBUF);
	struct vnet_pair_stats *st = &d->stats[q->pair];
	struct virtq *vq = vqs_virtq(q->sq);
	unsigned int pushed, again, budget = NET_BUDGET;
	uint64_t bytes = st->rx_bytes, frames = st->rx_packets;
	bool more;
	int r;

	/* Off, or the link held down: the frames stay with the back end
	 * (pair_off(); a tap queue is detached meanwhile, so the kernel
	 * drops them: virtio_net_set_link()). */
	if (pair_off(d, q->pair) || __atomic_load_n(&d->admin_down, __ATOMIC_RELAXED))
		return 0;
	/* Throttled: the frames stay in the tap until the tokens are back. */
	if (net_rate_wait(q->sq, &d->rl_rx, &q->rate, &budget))
		return 0;
	virtq_disable_notify(vq);
	r = rx_move(d, q, mrg, budget, &pushed);
	if (r == VNET_RX_NO_BUFS) {
		/* Starved: a kick when the driver adds buffers, and one more
		 * look, with kicks on: buffers added before the driver could
		 * see them on would bring no kick.  The pop that finds the
		 * ring short stores avail_event and then re-reads avail->idx
		 * (the barrier in virtq_pop()), so either this look sees them
		 * or the driver kicks. */
		virtq_enable_notify(vq);
		r = rx_move(d, q, mrg, budget - pushed, &again);
		pushed += again;
		if (r != VNET_RX_NO_BUFS)
			virtq_disable_notify(vq);
	}
	/* The io_uring path charges each read as it completes. */
	if (!q->uring)
		net_rate_charge(&d->rl_rx, &q->rate, st->rx_bytes - bytes,
				st->rx_packets - frames);
	link_check(d, q->pair);
	if (r < 0)
		return r;
	/* io_uring: the reads started push their packets as they complete
	 * (vqs_pushed()), nothing is pushed here. */
	if (q->uring)
		pushed = 0;
	/* Out of buffers: leave the frames in the tap's queue (bounded,
	 * the kernel drops past it) until the driver kicks with more. */
	q->starved = r == VNET_RX_NO_BUFS;
	/* A limited round that used its budget: again at the queue's next
	 * turn (net_rate_again()); unlimited, after the thread's other
	 * queues (VQS_YIELD). */
	more = r == VNET_RX_BUDGET &&
	       !net_rate_again(q->sq, &d->rl_rx, &q->rate);
	return pushed_result(q->sq, pushed, more, false);
}

/*
 * The back end's peer has taken nothing for TX_STALL_NS while frames
 * wait (a stream peer that stopped reading): warn once, and say when it
 * reads again.  Context: the pair's I/O thread.
 */
static void tx_stall_check(struct virtio_net *d, struct net_queue *q)
{
	uint64_t since = d->be->blocked_since ? d->be->blocked_since(d->priv[q->pair]) : 0;
	uint64_t now;

	if (!since) {
		if (q->stall_warned)
			log_limited(&d->tap_log, VMM_LOG_INFO, "virtio-net",
				    "%s of pair %u: the peer takes frames again",
				    d->be->kind, q->pair);
		q->stall_warned = false;
		return;
	}
	now = ratelimit_now();
	if (q->stall_warned || now - since < TX_STALL_NS)
		return;
	q->stall_warned = true;
	log_limited(&d->tap_log, VMM_LOG_WARN, "virtio-net",
		    "%s of pair %u: the peer has taken no frame for %llu s; "
		    "the guest's frames wait", d->be->kind, q->pair,
		    (unsigned long long)((now - since) / 1000000000ull));
}

/*
 * The link held down (virtio_net_set_link()): the chains the driver sends
 * are used unsent and counted as drops, as by a NIC without a cable (a
 * Linux driver stops sending at the carrier's loss; one that goes on
 * gets nothing out and no stall).  Returns as vnet_tx().  Context: the
 * queue's I/O thread.
 */
static int tx_discard(struct virtq *vq, struct virtq_chain *ch,
		      unsigned int budget, struct vnet_pair_stats *st, bool *more)
{
	unsigned int done = 0;
	int r = 0;

	while (done < budget && (r = virtq_pop(vq, ch)) > 0) {
		vnet_tx_count(st, 0, false);
		virtq_push(vq, ch->head, 0);
		done++;
	}
	if (r < 0)
		return -EPROTO;
	*more = done == budget && virtq_avail_count(vq);
	return (int)done;
}

/*
 * Kicks on a TX queue are off while the device works through the ring
 * and on again only once it found the ring empty, with one more look
 * after (virtq_enable_notify()): the driver adds frames while the device
 * sends the ones before (a write to a tap runs the host's stack, the
 * longest part of a frame's way), and those need no kick, the loop pops
 * them.  Before, every pop asked for a kick at the next entry, so each
 * frame the driver added while the device sent the last one it had
 * kicked.  vhost-net's handle_tx() does the same.  Left off when the
 * device stops with work left (budget, a full file, the rate limit):
 * what serves it next is not a kick.
 */
static int tx_process(struct virtio_net *d, struct net_queue *q)
{
	bool down = __atomic_load_n(&d->admin_down, __ATOMIC_RELAXED);
	struct vnet_pair_stats *st = &d->stats[q->pair];
	struct virtq *vq = vqs_virtq(q->sq);
	uint64_t bytes = st->tx_bytes, frames = st->tx_packets;
	unsigned int budget = NET_BUDGET, done = 0;
	uint64_t ur_bytes = 0, ur_frames = 0;
	bool more, full = false;
	int r;

	/* Throttled: the chains stay in the ring until the tokens are back. */
	if (net_rate_wait(q->sq, &d->rl_tx, &q->rate, &budget))
		return 0;
	virtq_disable_notify(vq);
	for (;;) {
		if (down) {
			r = tx_discard(vq, q->chain, budget - done, st, &more);
		} else if (q->uring) {
			uint64_t b, f;

			/* Slots all busy (*full): their completions serve
			 * the queue again (vqs_pushed()), with kicks off. */
			r = tap_uring_tx(q->ur, q->chain, budget - done, &more,
					 &full, &b, &f);
			ur_bytes += b;
			ur_frames += f;
		} else {
			r = d->be->tx(d->priv[q->pair], d->fds[q->pair], vq,
				      q->chain, budget - done, st, &more);
		}
		if (r < 0)
			break;
		done += (unsigned int)r;
		/* Stopped with chains left (budget, a full file, busy
		 * slots), or the ring found empty and still empty with kicks
		 * on: done. */
		if (more || full || !virtq_enable_notify(vq))
			break;
		virtq_disable_notify(vq);
		if (done == budget) {
			more = true; /* added meanwhile, past the budget */
			break;
		}
	}
	/* io_uring: charged as taken (the writes complete later). */
	net_rate_charge(&d->rl_tx, &q->rate,
			q->uring ? ur_bytes : st->tx_bytes - bytes,
			q->uring ? ur_frames : st->tx_packets - frames);
	link_check(d, q->pair);
	tx_stall_check(d, q);
	if (r < 0)
		return r;
	if (down)
		return pushed_result(q->sq, done > 0, more, false);
	if (q->uring) {
		/* Pushed as the writes complete (vqs_pushed()). */
		more = more && !(done == budget && budget < NET_BUDGET &&
				 net_rate_again(q->sq, &d->rl_tx, &q->rate));
		return pushed_result(q->sq, false, more, false);
	}
	/* The file is full: its POLLOUT wake-up serves the queue again, not
	 * a retry every round (each a wake-up of this thread).  A wake-up
	 * that comes after the failed send is one more CQE for this thread,
	 * handled after this call, so none is missed.  Not watched: a retry
	 * each round (VQS_RETRY, which may sleep: the file is not ready). */
	full = more && d->be->blocked_since &&
	       d->be->blocked_since(d->priv[q->pair]);
	if (full) {
		q->out_waiting = q->out_watching;
		more = false;
	}
	/* A limited round that used its budget: again at the queue's next
	 * turn (net_rate_again()); unlimited, after the thread's other
	 * queues (VQS_YIELD). */
	if (more && done == budget && budget < NET_BUDGET &&
	    net_rate_again(q->sq, &d->rl_tx, &q->rate))
		more = false;
	return pushed_result(q->sq, done > 0, more, full && !q->out_watching);
}

/* Pair @p's RX queue, if the pair is on, signalled on its kick eventfd:
 * its own thread serves it (reads what waits in the back end's file)
 * now, not at the peer's next frame.  Context: the control queue's I/O
 * thread (VQ_PAIRS_SET, virtio_net_set_link()). */
static void pair_rx_kick(struct virtio_net *d, unsigned int p)
{
	int fd = d->qs[2 * p].kick_fd;

	if (!pair_off(d, p) && fd >= 0 && eventfd_write(fd, 1))
		log_limited(&d->tap_log, VMM_LOG_WARN, "virtio-net",
			    "RX queue %u: kick: %s", 2 * p, strerror(errno));
}

static int ctrl_process(struct virtio_net *d, struct net_queue *q)
{
	bool changed = false;
	int r = vnet_ctrl(&d->n, vqs_virtq(q->sq), q->chain, &changed);

	if (r < 0)
		return r;
	/* Pairs the driver turned on or off: the kernel steers flows
	 * only to the enabled pairs' files.  Without steering, the frames
	 * a pair's peer sent while it was off wait in its file: a kick on
	 * the pair's RX queue (its own thread) reads them now, not at the
	 * peer's next frame. */
	for (unsigned int p = 0; changed && p < d->n.max_pairs; p++) {
		pair_steer(d, p);
		if (!d->be->steer)
			pair_rx_kick(d, p);
	}
	return pushed_result(q->sq, r > 0, false, false);
}

/* Context: the queue's I/O thread. */
static int net_process(void *dev, struct vqs_queue *sq)
{
	struct virtio_net *d = dev;
	struct net_queue *q = &d->qs[vqs_index(sq)];

	if (vnet_is_ctrl(&d->n, vqs_index(sq)))
		return ctrl_process(d, q);
	return q->rx ? rx_process(d, q) : tx_process(d, q);
}

/*
 * A back end moved by io_uring: the pair's file registered with the
 * queue's ring (once, kept until the device is destroyed: iothread.h)
 * and the queue's engine.  Neither possible (the table full, no memory):
 * the back end's own readv/writev for this attach, slower, not broken.
 */
static void uring_attach(struct virtio_net *d, struct net_queue *q)
{
	int ret = 0;

	q->uring = false;
	if (!d->be->uring)
		return;
	if (!q->file.held)
		ret = iothread_file_get(q->io, d->fds[q->pair], &q->file);
	if (!ret && !q->ur)
		ret = tap_uring_create(q->rx != NULL, &q->ur);
	if (ret) {
		log_limited(&d->tap_log, VMM_LOG_WARN, "virtio-net",
			    "queue %u: io_uring: %s; readv/writev instead",
			    vqs_index(q->sq), strerror(-ret));
		return;
	}
	tap_uring_attach(q->ur, &(struct tap_uring_queue){
					.sq = q->sq, .file = &q->file,
					.st = &d->stats[q->pair],
					.rl = q->rx ? &d->rl_rx : &d->rl_tx,
					.rate = &q->rate });
	q->uring = true;
}

/* RX queue of a pair: offloads as negotiated, steering, the tap watched;
 * TX queue on a back end that fills: its file watched for POLLOUT.
 * Context: the queue's I/O thread. */
static int net_attach(void *dev, struct vqs_queue *sq)
{
	struct virtio_net *d = dev;
	struct net_queue *q = &d->qs[vqs_index(sq)];
	int fd, ret;

	q->sq = sq;
	q->io = vqs_iothread(sq);
	q->starved = false;
	if (vnet_is_ctrl(&d->n, vqs_index(sq)))
		return 0;
	if (!q->rx) {
		uring_attach(d, q);
		if (!d->be->tx_waits_writable)
			return 0;
		/* The file registered by the watch itself (the RX queue's
		 * registration may be on another thread). */
		q->out_waiting = false;
		q->out_watch = (struct iothread_fd){ .fd = d->fds[q->pair],
						     .events = POLLOUT,
						     .fn = tx_writable, .opaque = q };
		/* Not watched (no file slot or SQE left): TX retries every
		 * round as before, slower to wake but correct. */
		q->out_watching = !iothread_watch_fd(vqs_iothread(sq), &q->out_watch);
		return 0;
	}
	fd = d->fds[q->pair];
	ret = d->be->set_features ? d->be->set_features(fd, d->n.features) : 0;
	if (ret)
		return ret;
	pair_steer(d, q->pair);
	if (!q->file.held) {
		ret = iothread_file_get(vqs_iothread(sq), fd, &q->file);
		if (ret)
			return ret;
	}
	uring_attach(d, q);
	q->watch = (struct iothread_fd){ .fd = fd, .file = &q->file,
					 .fn = rx_readable, .opaque = q };
	ret = iothread_watch_fd(vqs_iothread(sq), &q->watch);
	q->watching = !ret;
	return ret;
}

/* Stop watching the tap; io_uring: start nothing more and cancel what is
 * in flight (readv/writev: nothing is, every read and write is done by
 * the time process() returns). */
static void net_quiesce(void *dev, struct vqs_queue *sq, bool cancel)
{
	struct virtio_net *d = dev;
	struct net_queue *q = &d->qs[vqs_index(sq)];

	if (q->uring)
		tap_uring_quiesce(q->ur, cancel);
	if (q->watching)
		iothread_unwatch_fd(vqs_iothread(sq), &q->watch);
	q->watching = false;
	if (q->out_watching)
		iothread_unwatch_fd(vqs_iothread(sq), &q->out_watch);
	q->out_watching = false;
	q->out_waiting = false;
}

static bool net_idle(void *dev, struct vqs_queue *sq)
{
	struct net_queue *q = &((struct virtio_net *)dev)->qs[vqs_index(sq)];

	return !q->uring || tap_uring_idle(q->ur);
}

/* Idle and detached: the RX chains an engine kept go with the ring. */
static void net_detached(void *dev, struct vqs_queue *sq)
{
	struct net_queue *q = &((struct virtio_net *)dev)->qs[vqs_index(sq)];

	if (q->uring)
		tap_uring_detached(q->ur);
	q->uring = false;
}

/* Queue i is pair i / 2's, served with it on that pair's thread; the
 * control queue on thread 0. */
static unsigned int net_iothread_of(void *dev, unsigned int index,
				    unsigned int nr_iothreads)
{
	struct virtio_net *d = dev;

	if (index == 2u * d->n.max_pairs) /* with MQ; features are not
						 known yet */
		return 0;
	return (index / 2) % nr_iothreads;
}

/* Receive queues (even indices; the control queue is odd or last) hold
 * buffers the device fills. */
static bool net_fills(void *dev, unsigned int index)
{
	struct virtio_net *d = dev;

	return index < 2u * d->n.max_pairs && !(index & 1);
}

static const struct vqs_ops net_service = {
	.process = net_process,
	.attach = net_attach,
	.quiesce = net_quiesce,
	.idle = net_idle,
	.detached = net_detached,
	.iothread_of = net_iothread_of,
	.fills = net_fills,
};

/* The data pairs of the negotiated features: all with MQ, else pair 0. */
static unsigned int data_pairs(const struct virtio_net *d)
{
	return d->n.features & (1ull << VIRTIO_NET_F_MQ) ? d->n.max_pairs : 1;
}

/* vhost=on: take every pair back from the kernel, where each ring stopped
 * kept for a restart.  Context: the transport's thread, link_lock held. */
static void net_vhost_stop_locked(struct virtio_net *d)
{
	for (unsigned int p = 0; d->vhost_qs && p < d->n.max_pairs; p++) {
		int r;

		if (!d->vhost_on[p])
			continue;
		d->vhost_on[p] = false;
		r = vhost_net_stop(d->vhost[p], &d->vhost_qs[2 * p],
				   &d->vhost_qs[2 * p + 1]);
		if (r)
			log_limited(&d->vhost_log, VMM_LOG_ERROR, "virtio-net",
				    "vhost pair %u: stopping failed: %s", p,
				    strerror(-r));
	}
	d->vhost_qs = NULL;
}

static void net_vhost_stop(struct virtio_net *d)
{
	pthread_mutex_lock(&d->link_lock);
	net_vhost_stop_locked(d);
	pthread_mutex_unlock(&d->link_lock);
}

/* vhost=on: the back end of each pair the kernel serves, after a link
 * change: its tap, or none while the link is down (vhost-net then takes
 * nothing from either ring: what the driver queues waits there, and goes
 * at the link's return).  Caller holds link_lock, which orders it with
 * the rings' start and stop on the transport's thread. */
static void vhost_link_locked(struct virtio_net *d)
{
	bool down = link_is_down(d);

	for (unsigned int p = 0; p < d->n.max_pairs; p++) {
		const char *what = "";
		int r;

		if (!d->vhost_on[p])
			continue;
		r = vhost_net_backend(d->vhost[p], down ? -1 : d->fds[p], &what);
		if (r)
			log_limited(&d->vhost_log, VMM_LOG_ERROR, "virtio-net",
				    "vhost pair %u: link %s: %s failed: %s", p,
				    down ? "down" : "up", what, strerror(-r));
	}
}

/* vhost=on, DRIVER_OK: each enabled pair to its vhost file (offloads as
 * negotiated, steering as for the I/O threads; no back end while the
 * link is held down), then the control queue to the queue service.
 * Context: vCPU thread. */
static int net_vhost_start(struct virtio_net *d, struct virtio_queue *qs,
			   unsigned int nr)
{
	unsigned int offl = vnet_tun_offloads(d->n.features);
	const char *what = "";
	unsigned int p;
	int ret = 0;

	pthread_mutex_lock(&d->link_lock);
	d->vhost_qs = qs;
	for (p = 0; !ret && p < data_pairs(d) && 2 * p + 1 < nr; p++) {
		if (!qs[2 * p].enabled || !qs[2 * p + 1].enabled)
			continue;
		what = "TUNSETOFFLOAD";
		ret = tap_set_offload(d->fds[p], offl);
		if (!ret)
			ret = vhost_net_start(d->vhost[p], d->n.features, &qs[2 * p],
					      &qs[2 * p + 1],
					      link_is_down(d) ? -1 : d->fds[p], &what);
		d->vhost_on[p] = !ret;
	}
	/* Tap queues attached for the pairs the driver uses (one until
	 * VQ_PAIRS_SET), the others detached: the kernel steers no flow to
	 * a file whose rings nobody serves. */
	for (unsigned int i = 0; i < d->n.max_pairs; i++)
		pair_steer_locked(d, i);
	if (ret) {
		log_limited(&d->vhost_log, VMM_LOG_ERROR, "virtio-net",
			    "vhost pair %u: %s failed: %s", p - 1, what,
			    strerror(-ret));
		net_vhost_stop_locked(d);
		pthread_mutex_unlock(&d->link_lock);
		return ret;
	}
	pthread_mutex_unlock(&d->link_lock);
	for (unsigned int i = 0; !ret && i < nr; i++)
		if (vnet_is_ctrl(&d->n, i))
			ret = vqs_start(d->svc, &qs[i], 1);
	if (ret) /* the control queue did not start: the pairs stop too */
		net_vhost_stop(d);
	return ret;
}

/* Keep @vq's kick eventfd for ctrl_process() (the same file for the
 * transport's life). */
static void net_keep_kick_fd(struct virtio_net *d, const struct virtio_queue *vq)
{
	if (vq->index < d->nr_queues)
		d->qs[vq->index].kick_fd = vq->kick_fd;
}

static int net_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	struct virtio_net *d = dev;

	for (unsigned int i = 0; i < nr; i++)
		net_keep_kick_fd(d, &queues[i]);
	if (d->vhost)
		return net_vhost_start(d, queues, nr);
	return vqs_start(d->svc, queues, nr);
}

/* Device reset (or bus mastering off): every queue stopped.  The pair
 * count goes back to one at the next FEATURES_OK (net_set_features()). */
static void net_stop(void *dev)
{
	struct virtio_net *d = dev;

	vqs_stop(d->svc);
	if (d->vhost)
		net_vhost_stop(d);
}

static int net_start_queue(void *dev, struct virtio_queue *vq)
{
	struct virtio_net *d = dev;

	net_keep_kick_fd(d, vq);
	return vqs_start_queue(d->svc, vq);
}

static void net_stop_queue(void *dev, unsigned int index, bool cancel)
{
	vqs_stop_queue(((struct virtio_net *)dev)->svc, index, cancel);
}

static uint64_t net_features(void *dev)
{
	struct virtio_net *d = dev;
	uint64_t f = vnet_device_features(&d->n);

	return d->vhost ? vhost_net_offer(f, d->vhost_features) : f;
}

/* Context: vCPU thread, at FEATURES_OK (no queue is served: a reset came
 * first, so the pair count starts again at one). */
static int net_set_features(void *dev, uint64_t f)
{
	struct virtio_net *d = dev;
	/* Not offered (vhost=on offers less than the model knows). */
	int ret = f & ~net_features(d) ? -EINVAL : vnet_set_features(&d->n, f);

	if (!ret)
		__atomic_store_n(&d->n.curr_pairs, 1, __ATOMIC_RELAXED);
	return ret;
}

static void net_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	vnet_config_read(&((struct virtio_net *)dev)->n, off, buf, len);
}

static void net_config_write(void *dev, uint32_t off, const void *buf,
			     uint32_t len)
{
	/* Every field is read-only (no VIRTIO_NET_F_CTRL_MAC_ADDR): a write
	 * is ignored, as the spec allows. */
	(void)dev;
	(void)off;
	(void)buf;
	(void)len;
}

static const struct virtio_device_ops net_ops = {
	.device_id = VIRTIO_ID_NET,
	.config_size = sizeof(struct virtio_net_config),
	.features = net_features,
	.set_features = net_set_features,
	.config_read = net_config_read,
	.config_write = net_config_write,
	.start = net_start,
	.stop = net_stop,
	.start_queue = net_start_queue,
	.stop_queue = net_stop_queue,
};

void virtio_net_virtio(struct virtio_net *d, struct virtio_device *out)
{
	*out = (struct virtio_device){
		.ops = &net_ops,
		.dev = d,
		.num_queues = d->nr_queues,
		.queue_size = d->queue_size,
		/* vhost=on: the kernel writes the pairs' call eventfds. */
		.external_queues = d->vhost != NULL,
	};
}

unsigned int virtio_net_pairs(const struct virtio_net *d)
{
	return d->n.max_pairs;
}

/* Per-queue scratch: RX reads on every even queue that may be an RX
 * queue, a pop scratch on all. */
static int net_alloc_queues(struct virtio_net *d)
{
	d->qs = calloc(d->nr_queues, sizeof(*d->qs));
	d->stats = calloc(d->n.max_pairs, sizeof(*d->stats));
	if (!d->qs || !d->stats)
		return -ENOMEM;
	for (unsigned int i = 0; i < d->nr_queues; i++) {
		struct net_queue *q = &d->qs[i];

		q->d = d;
		q->pair = i / 2 < d->n.max_pairs ? i / 2 : 0;
		q->kick_fd = -1;
		q->chain = malloc(sizeof(*q->chain));
		if (!q->chain)
			return -ENOMEM;
		if (!(i & 1) && i < 2u * d->n.max_pairs &&
		    !(q->rx = malloc(sizeof(*q->rx))))
			return -ENOMEM;
	}
	return 0;
}

static void net_free(struct virtio_net *d)
{
	for (unsigned int p = 0; d->priv && p < d->n.max_pairs; p++)
		if (d->priv[p] && d->be->pair_fini)
			d->be->pair_fini(d->priv[p]);
	free(d->priv);
	for (unsigned int i = 0; d->qs && i < d->nr_queues; i++) {
		tap_uring_destroy(d->qs[i].ur);
		free(d->qs[i].rx);
		free(d->qs[i].chain);
	}
	free(d->qs);
	free(d->stats);
	free(d->fds);
	free(d->vhost);
	free(d->vhost_on);
	pthread_mutex_destroy(&d->link_lock);
	free(d);
}

int virtio_net_create(const struct virtio_net_params *p, struct virtio_net **out)
{
	uint16_t qs = p->queue_size ? p->queue_size : 256;
	const struct net_backend *be = p->backend ? p->backend : &net_tap_backend;
	struct vnet_params np = p->net;
	struct virtio_net *d;
	int ret;

	if (!p->fds || !p->iothreads || !p->nr_iothreads || qs < 2 ||
	    qs > VIRTQ_MAX_SIZE || (qs & (qs - 1)))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->link_lock, NULL);
	/* No header on the wire, no offload to pass the guest's through. */
	np.no_offloads = np.no_offloads || !be->offloads;
	d->be = be;
	ret = vnet_init(&d->n, &np);
	if (ret) {
		free(d);
		return ret;
	}
	d->queue_size = qs;
	d->nr_queues = vnet_num_queues(&d->n);
	d->fds = calloc(d->n.max_pairs, sizeof(*d->fds));
	d->priv = calloc(d->n.max_pairs, sizeof(*d->priv));
	ret = d->fds && d->priv ? net_alloc_queues(d) : -ENOMEM;
	for (unsigned int i = 0; !ret && be->pair_init && i < d->n.max_pairs; i++)
		ret = be->pair_init(p->fds[i], &d->priv[i]);
	if (!ret && p->vhost_fds) {
		d->vhost = calloc(d->n.max_pairs, sizeof(*d->vhost));
		d->vhost_on = calloc(d->n.max_pairs, sizeof(*d->vhost_on));
		if (!d->vhost || !d->vhost_on)
			ret = -ENOMEM;
	}
	if (!ret)
		ret = vqs_create(&(struct vqs_params){
					 .ops = &net_service,
					 .dev = d,
					 .name = "virtio-net",
					 .nr_queues = d->nr_queues,
					 .iothreads = p->iothreads,
					 .nr_iothreads = p->nr_iothreads,
					 /* No busy-poll: an RX ring with buffers
					  * is its normal state, not work. */
					 .poll_us = 0,
				 },
				 &d->svc);
	if (ret) {
		net_free(d);
		return ret;
	}
	memcpy(d->fds, p->fds, d->n.max_pairs * sizeof(*d->fds));
	if (p->vhost_fds)
		memcpy(d->vhost, p->vhost_fds, d->n.max_pairs * sizeof(*d->vhost));
	d->vhost_features = p->vhost_features;
	d->link_changed = p->link_changed;
	d->link_opaque = p->link_opaque;
	d->io0 = p->iothreads[0];
	/* Held down from the start: no interrupt (the driver reads the
	 * status when it starts), the tap queues detached at attach. */
	d->admin_down = p->link_down;
	if (p->link_down)
		d->n.status &= (uint16_t)~VIRTIO_NET_S_LINK_UP;
	ratelimit_init(&d->rl_rx);
	ratelimit_init(&d->rl_tx);
	if (p->rate) {
		ratelimit_set(&d->rl_rx, p->rate);
		ratelimit_set(&d->rl_tx, p->rate);
	}
	log_limit_init(&d->tap_log, be->offloads ? "tap errors" : "stream errors");
	log_limit_init(&d->vhost_log, "vhost-net errors");
	*out = d;
	return 0;
}

void virtio_net_destroy(struct virtio_net *d)
{
	if (!d)
		return;
	vqs_destroy(d->svc);
	for (unsigned int i = 0; i < d->nr_queues; i++)
		if (d->qs[i].file.held)
			iothread_file_put(d->qs[i].io, &d->qs[i].file);
	for (unsigned int p = 0; p < d->n.max_pairs; p++) {
		close(d->fds[p]);
		if (d->vhost)
			close(d->vhost[p]);
	}
	log_limit_destroy(&d->tap_log, "until the NIC was removed");
	log_limit_destroy(&d->vhost_log, "until the NIC was removed");
	net_free(d);
}

int virtio_net_pair_stats(struct virtio_net *d, unsigned int pair,
			  struct virtio_net_pair_stats *st)
{
	struct vnet_pair_stats *s;

	if (pair >= d->n.max_pairs)
		return -ENOENT;
	s = &d->stats[pair];
	memset(st, 0, sizeof(*st));
	st->net.rx_packets = __atomic_load_n(&s->rx_packets, __ATOMIC_RELAXED);
	st->net.rx_bytes = __atomic_load_n(&s->rx_bytes, __ATOMIC_RELAXED);
	st->net.rx_drops = __atomic_load_n(&s->rx_drops, __ATOMIC_RELAXED);
	st->net.tx_packets = __atomic_load_n(&s->tx_packets, __ATOMIC_RELAXED);
	st->net.tx_bytes = __atomic_load_n(&s->tx_bytes, __ATOMIC_RELAXED);
	st->net.tx_drops = __atomic_load_n(&s->tx_drops, __ATOMIC_RELAXED);
	(void)vqs_queue_stats(d->svc, 2 * pair, &st->rx);
	(void)vqs_queue_stats(d->svc, 2 * pair + 1, &st->tx);
	return 0;
}

struct net_link_req {
	struct virtio_net *d;
	bool up;
};

/* Context: I/O thread 0 (the control queue's); vhost=on: the caller. */
static int net_set_link_fn(void *opaque)
{
	const struct net_link_req *r = opaque;
	struct virtio_net *d = r->d;
	int ret = 0;

	pthread_mutex_lock(&d->link_lock);
	if (r->up && d->peer_gone) {
		ret = -ENOTCONN;
	} else if (d->admin_down == r->up) {
		__atomic_store_n(&d->admin_down, !r->up, __ATOMIC_RELAXED);
		/* vhost=on: the kernel stops before the guest hears of it
		 * (down), or serves again before (up). */
		if (d->vhost)
			vhost_link_locked(d);
		link_publish(d);
		/* Up: each enabled pair's RX queue reads again now (a
		 * stream's peer kept what it sent meanwhile: it waits in
		 * the socket). */
		for (unsigned int p = 0; r->up && !d->vhost && p < d->n.max_pairs; p++)
			pair_rx_kick(d, p);
	}
	pthread_mutex_unlock(&d->link_lock);
	return ret;
}

int virtio_net_set_link(struct virtio_net *d, bool up)
{
	struct net_link_req r = { .d = d, .up = up };

	/* vhost=on: no data queue is on an I/O thread, and the vhost
	 * requests are the transport's threads' (under link_lock), not the
	 * I/O threads'. */
	if (d->vhost)
		return net_set_link_fn(&r);
	return iothread_call_sync(d->io0, net_set_link_fn, &r);
}

bool virtio_net_link_up(struct virtio_net *d)
{
	return !link_is_down(d);
}

struct ratelimit *virtio_net_ratelimit(struct virtio_net *d, bool tx)
{
	return tx ? &d->rl_tx : &d->rl_rx;
}
