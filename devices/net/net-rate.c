/* SPDX-License-Identifier: MIT */
/* A NIC queue's rate limit (net-rate.h). */
#include "net/net-rate.h"

static void forget(struct net_rate_queue *nq)
{
	nq->wait_from = 0;
	nq->turn = 0;
	nq->prepaid = false;
}

/*
 * When @nq may move: its turn if it holds one (booked in the limits in
 * force: a change started the buckets full again), else now while the
 * limiter has credit, else a turn booked now.  The booking moves the
 * limiter's clock by a frame and a byte, so the next queue to book gets a
 * later turn: turns keep the order they were asked in.  A turn is held
 * until the round it allows is charged (net_rate_charge()).
 */
static uint64_t turn_start(struct ratelimit *rl, struct net_rate_queue *nq,
			   uint64_t now)
{
	uint32_t gen = ratelimit_gen(rl);

	if (nq->prepaid && nq->gen == gen)
		return nq->turn;
	nq->prepaid = false;
	if (ratelimit_ready(rl, now) <= now)
		return now;
	nq->turn = ratelimit_reserve(rl, 1, 1, now);
	nq->gen = gen;
	nq->prepaid = true;
	return nq->turn;
}

/* Wait for @start (on the queue's timed wait), at most the recheck
 * interval; counted from the first time it had to. */
static void wait_for(struct vqs_queue *sq, struct net_rate_queue *nq,
		     uint64_t start, uint64_t now)
{
	uint64_t recheck = now + RATELIMIT_RECHECK_NS;

	if (!nq->wait_from)
		nq->wait_from = now;
	vqs_retry_at(sq, start < recheck ? start : recheck);
}

bool net_rate_wait(struct vqs_queue *sq, struct ratelimit *rl,
		   struct net_rate_queue *nq, unsigned int *budget)
{
	uint64_t now, start;

	if (!ratelimit_active(rl)) {
		forget(nq);
		return false;
	}
	now = ratelimit_now();
	start = turn_start(rl, nq, now);
	if (start > now) {
		wait_for(sq, nq, start, now);
		return true;
	}
	if (nq->wait_from) {
		ratelimit_note_wait(rl, now - nq->wait_from);
		nq->wait_from = 0;
	}
	if (*budget > NET_RATE_BUDGET)
		*budget = NET_RATE_BUDGET;
	return false;
}

void net_rate_charge(struct ratelimit *rl, struct net_rate_queue *nq,
		     uint64_t bytes, uint64_t frames)
{
	if (nq->prepaid) {
		/* The round was the turn.  One with nothing to move (the
		 * driver took its buffers back, say) keeps its frame and
		 * byte: a wait's worth. */
		bytes = bytes ? bytes - 1 : 0;
		frames = frames ? frames - 1 : 0;
		nq->prepaid = false;
	}
	if ((bytes || frames) && ratelimit_active(rl))
		(void)ratelimit_reserve(rl, bytes, frames, ratelimit_now());
}

bool net_rate_again(struct vqs_queue *sq, struct ratelimit *rl,
		    struct net_rate_queue *nq)
{
	uint64_t now, start;

	if (!ratelimit_active(rl))
		return false;
	now = ratelimit_now();
	start = turn_start(rl, nq, now);
	if (start > now)
		wait_for(sq, nq, start, now);
	else
		vqs_retry_at(sq, now);
	return true;
}
