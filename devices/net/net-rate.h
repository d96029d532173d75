/* SPDX-License-Identifier: MIT */
/*
 * A NIC queue's rate limit (ratelimit.h): frames are sized only once
 * moved (read from the tap, popped from the TX ring), so a queue moves
 * while its limiter holds credit, at most NET_RATE_BUDGET frames a round,
 * and charges what it moved afterwards.  A queue that finds the limiter
 * in debt books a turn (ratelimit_reserve() of one frame and one byte,
 * counted against its round's charge) and waits for it, woken by its I/O
 * thread's timed wait (vqs_retry_at()); so does a queue whose round used
 * up its budget (net_rate_again()).  Turns are served in the order they
 * were booked, whichever pair and I/O thread asks: every busy pair gets
 * one round per refill, none is starved by a sibling that happens to run
 * first when the tokens are back (four pairs on one I/O thread: one got
 * every frame before turns).  RX leaves frames in the tap meanwhile (the
 * kernel's queue bounds them), TX leaves chains in the ring.
 * Context: the queue's I/O thread.
 */
#ifndef VMM_DEVICES_NET_NET_RATE_H
#define VMM_DEVICES_NET_NET_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "ratelimit.h"
#include "virtio/vq-service.h"

/* Frames one round of a limited queue moves at most: the debt a round
 * leaves stays small (16 TSO frames), the average holds either way. */
#define NET_RATE_BUDGET 16u

/* One queue's standing with its limiter (zeroed: none). */
struct net_rate_queue {
	uint64_t wait_from; /* waiting since (0: not waiting) */
	uint64_t turn;	    /* the booked turn starts then */
	uint32_t gen;	    /* the limiter's generation it was booked in */
	bool prepaid;	    /* a turn is held (its frame and byte charged)
			       until its round is charged */
};

/*
 * Whether @sq must wait for @rl's tokens (then it is served again at its
 * turn, or within RATELIMIT_RECHECK_NS to see a changed limit).  Lowers
 * *@budget for a limited queue.
 */
bool net_rate_wait(struct vqs_queue *sq, struct ratelimit *rl,
		   struct net_rate_queue *nq, unsigned int *budget);
/* Charge what a round moved (less what its turn prepaid). */
void net_rate_charge(struct ratelimit *rl, struct net_rate_queue *nq,
		     uint64_t bytes, uint64_t frames);
/*
 * A limited round moved its whole budget and frames are left: serve @sq
 * again at its next turn (at once if the limiter has credit), on the
 * queue's timed wait.  (Before the queues could yield (VQS_YIELD), this
 * replaced VQS_RETRY, which waits for the I/O thread's next round, up to
 * IOTHREAD_RETRY_NS (1 ms) when nothing else wakes it: NET_RATE_BUDGET
 * frames a millisecond, a ceiling under the limit: bench/
 * net_ratelimit_bench.sh measured 18.9 MiB/s of 1514-byte frames for
 * 50 MiB/s.)  Returns false when @rl is unlimited (the caller returns
 * VQS_YIELD: its round had the full budget).
 */
bool net_rate_again(struct vqs_queue *sq, struct ratelimit *rl,
		    struct net_rate_queue *nq);

#endif
