/* SPDX-License-Identifier: MIT */
/*
 * A tap queue's frames moved by its I/O thread's io_uring, straight
 * between the tap file and the guest's buffers (no bounce copy): TX
 * chains as IORING_OP_WRITEV, RX buffers as IORING_OP_READV, many SQEs
 * per io_uring_enter (the thread's end-of-round submit) instead of one
 * readv/writev system call per frame (vnet_tx()/vnet_rx(), the fallback
 * when the file cannot be registered with the ring).
 *
 * One engine per queue, on the queue's I/O thread, in slots:
 *  - TX: up to TAP_URING_TX_SLOTS chains written at once, each used (len
 *    0) when its write completes, in the order of completion (virtio
 *    without IN_ORDER allows it).  A chain the slots cannot take (more
 *    than TAP_URING_TX_IOV segments; no SQE) is written at once.
 *  - RX: up to TAP_URING_RX_SLOTS reads at once, each into the chains it
 *    holds, gathered by the MRG_RXBUF rule of vnet_rx() (vnet.h: a read
 *    is started only once they hold the largest frame, or the device
 *    holds the whole ring).  A packet's chains are used when its read
 *    completes; those it did not need stay with the slot for its next
 *    read (other reads were started since: they cannot go back to the
 *    avail ring), or go to a slot short of buffers.  A read that finds
 *    the tap empty (EAGAIN) keeps its chains too.
 *
 * A write is done by the time the submit that carries it returns, as a
 * rule (the tap takes the frame or drops it).  A read that finds the tap
 * empty is parked by the kernel on the tap's wait queue and completes
 * with the next frame (Linux 6.x, though the file is
 * non-blocking: tap_adopt()), or answers EAGAIN, and then the queue's
 * readable watch says when to start it again.  So reads are in flight
 * while the tap is idle, and a stop must cancel them (below).  Nothing is
 * buffered in the VMM: a frame is either in the tap's queue or in the
 * guest's buffers.
 *
 * Stopping (tap_uring_quiesce()): nothing new is started, in-flight SQEs
 * are cancelled (IORING_OP_ASYNC_CANCEL) on a reset; what completes
 * before the stop returns still finishes to the used ring (a frame
 * written is returned, a frame read delivered: the driver of a reset
 * reads back what the device returned, vqs_may_finish()), except on a
 * queue the driver broke (NEEDS_RESET).  Once
 * tap_uring_idle(), tap_uring_detached() forgets the chains held: the
 * ring memory and the file may go.  A pair the driver turns off
 * (VQ_PAIRS_SET) is not stopped: its tap queue, detached from the
 * kernel's steering (TUNSETQUEUE), gets no frame, so its parked reads
 * wait, holding buffers of rings that stay the driver's until a reset
 * (which cancels them) or until the pair is on again.
 *
 * Context: the queue's I/O thread, except create/destroy (the device's
 * creator, the engine idle).
 */
#ifndef VMM_DEVICES_NET_TAP_URING_H
#define VMM_DEVICES_NET_TAP_URING_H

#include <stdbool.h>
#include <stdint.h>

#include "iothread.h"
#include "net/net-rate.h"
#include "net/vnet.h"
#include "virtio/vq-service.h"

#define TAP_URING_TX_SLOTS 64u
/* Readable segments a TX slot takes: Linux's chains have at most
 * MAX_SKB_FRAGS + 2 (19). */
#define TAP_URING_TX_IOV 32u
#define TAP_URING_RX_SLOTS 16u

struct tap_uring;

/* What an engine serves, set at every attach. */
struct tap_uring_queue {
	struct vqs_queue *sq;
	const struct iothread_file *file; /* the pair's tap, registered */
	struct vnet_pair_stats *st;
	/* RX: what a completed read is charged to (TX charges at submit). */
	struct ratelimit *rl;
	struct net_rate_queue *rate;
};

/* An engine for an RX (@rx) or TX queue.  0 or -ENOMEM. */
int tap_uring_create(bool rx, struct tap_uring **out) __must_check;
/* Free an idle engine (NULL: nothing). */
void tap_uring_destroy(struct tap_uring *u);
void tap_uring_attach(struct tap_uring *u, const struct tap_uring_queue *q);

/*
 * TX: start up to @budget chains (@ch: pop scratch).  Returns the chains
 * taken, or -EPROTO; *@more: the budget ran out with chains left; *@full:
 * every slot is busy with chains left (a completion serves the queue
 * again); *@bytes, *@frames: what was taken (for the rate limit).
 */
int tap_uring_tx(struct tap_uring *u, struct virtq_chain *ch,
		 unsigned int budget, bool *more, bool *full, uint64_t *bytes,
		 uint64_t *frames);
/*
 * RX: start up to @budget reads.  Returns VNET_RX_NO_BUFS (starved: no
 * read could start and none is in flight; the chains this call popped
 * went back), VNET_RX_DRAINED (every free slot started, or none free, or
 * some lack buffers while other reads are in flight: their completions
 * serve the queue again, so the driver need not kick), VNET_RX_BUDGET (@budget
 * started, or the ring had no SQE left: again after the thread's other
 * work), or -EPROTO.  *@started: reads started.
 */
int tap_uring_rx(struct tap_uring *u, bool mergeable, uint32_t max_frame,
		 unsigned int budget, unsigned int *started);

/* Stop starting work and cancel what is in flight; @cancel false: a
 * drain, completions still push used entries. */
void tap_uring_quiesce(struct tap_uring *u, bool cancel);
/* Nothing in flight (no SQE of the engine's without its CQE). */
bool tap_uring_idle(const struct tap_uring *u);
/* Idle and detached: forget the chains held (the ring is reset or
 * stopped). */
void tap_uring_detached(struct tap_uring *u);

#endif
