/* SPDX-License-Identifier: MIT */
/* A NIC queue's rate limit (net-rate.h). */
#include "net/net-rate.h"

bool net_rate_wait(struct vqs_queue *sq, struct ratelimit *rl,
		   uint64_t *wait_from, unsigned int *budget)
{
	uint64_t now, ready;

	if (!ratelimit_active(rl)) {
		*wait_from = 0;
		return false;
	}
	now = ratelimit_now();
	ready = ratelimit_ready(rl, now);
	if (ready > now) {
		uint64_t recheck = now + RATELIMIT_RECHECK_NS;

		if (!*wait_from)
			*wait_from = now;
		vqs_retry_at(sq, ready < recheck ? ready : recheck);
		return true;
	}
	if (*wait_from) {
		ratelimit_note_wait(rl, now - *wait_from);
		*wait_from = 0;
	}
	if (*budget > NET_RATE_BUDGET)
		*budget = NET_RATE_BUDGET;
	return false;
}

void net_rate_charge(struct ratelimit *rl, uint64_t bytes, uint64_t frames)
{
	if (frames && ratelimit_active(rl))
		(void)ratelimit_reserve(rl, bytes, frames, ratelimit_now());
}

bool net_rate_again(struct vqs_queue *sq, struct ratelimit *rl,
		    uint64_t *wait_from)
{
	uint64_t now, ready, recheck;

	if (!ratelimit_active(rl))
		return false;
	now = ratelimit_now();
	ready = ratelimit_ready(rl, now);
	recheck = now + RATELIMIT_RECHECK_NS;
	/* In debt: net_rate_wait() at @ready ends (and counts) this wait. */
	if (ready > now && !*wait_from)
		*wait_from = now;
	vqs_retry_at(sq, ready < recheck ? ready : recheck);
	return true;
}
