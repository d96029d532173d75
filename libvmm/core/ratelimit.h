/* SPDX-License-Identifier: MIT */
/*
 * Token buckets for rate limits (bytes per second and operations per
 * second), device-neutral: a disk's queues and a NIC's pairs charge the
 * same limiter from several I/O threads at once, without a lock and
 * without a timer of their own.
 *
 * Each bucket is kept as one 64-bit "theoretical arrival time" (tat, in
 * nanoseconds of the caller's monotonic clock): the moment at which the
 * bucket would be full again if nothing more were charged.  A charge of
 * n units costs n * 1e9 / rate ns and moves tat forward by that much; the
 * bucket holds burst units, i.e. tau = burst * 1e9 / rate ns of credit.
 * So a charge is one compare-and-swap of one word (GCRA, the generic cell
 * rate algorithm), exact however many threads charge at once.
 *
 * ratelimit_reserve() never refuses: it books the charge and says when it
 * may start.  A queue holding a reservation waits for it and serves it
 * without asking again; the next queue to ask books after it.  So queues
 * that share a limiter are served in the order they asked (FIFO across
 * queues, no starvation, no thundering herd at refill), and a request
 * larger than the bucket starts once the bucket is full and leaves a debt
 * the following requests wait for: it makes progress, the average rate
 * still holds.
 *
 * Rate 0 is unlimited.  Burst 0 is one second's worth (= rate).  The
 * one-time burst is an extra allowance spent before the bucket, never
 * refilled (a boot's reads).  Arithmetic saturates at RATELIMIT_NS_MAX:
 * no rate or size overflows.
 *
 * Context: any thread, for every function.
 */
#ifndef VMM_CORE_RATELIMIT_H
#define VMM_CORE_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* Saturation of every time and cost (about 146 years). */
#define RATELIMIT_NS_MAX (1ull << 62)
/*
 * The longest a throttled queue sleeps before it looks at the limits
 * again: a run-time change (ratelimit_set()) reaches a queue that waits
 * for a reservation booked under the old limits within this time.
 */
#define RATELIMIT_RECHECK_NS 100000000ull /* 100 ms */

struct ratelimit_bucket_cfg {
	uint64_t rate;	   /* units per second; 0 = unlimited */
	uint64_t burst;	   /* bucket size in units; 0 = rate (one second) */
	uint64_t one_time; /* extra units once, before the bucket */
};

struct ratelimit_cfg {
	struct ratelimit_bucket_cfg bw;	 /* bytes */
	struct ratelimit_bucket_cfg ops; /* operations (requests, frames) */
};

/* Internal; read and written with atomics only. */
struct ratelimit_bucket {
	uint64_t rate;	   /* 0: unlimited */
	uint64_t tau;	   /* burst in ns of rate */
	uint64_t one_time; /* what is left of the one-time burst */
	uint64_t tat;	   /* full again at this time */
};

struct ratelimit {
	struct ratelimit_bucket bw, ops;
	struct ratelimit_cfg cfg; /* as set (readers: ratelimit_get()) */
	uint32_t gen;		  /* bumped by every ratelimit_set() */
	/* Statistics (relaxed atomics). */
	uint64_t throttled; /* reservations that had to wait */
	uint64_t wait_ns;   /* the time they waited, in all */
};

/* Unlimited, zero statistics. */
void ratelimit_init(struct ratelimit *rl);
/* Whether @c is valid: a burst or one-time burst needs its rate.
 * Returns 0 or -EINVAL. */
int ratelimit_check(const struct ratelimit_cfg *c);
/*
 * Set new limits (valid ones: ratelimit_check()); both buckets start full
 * and the generation is bumped.  A charge racing with the change may be
 * booked with the old rate and the new burst or the reverse: one
 * request's worth, once.
 */
void ratelimit_set(struct ratelimit *rl, const struct ratelimit_cfg *c);
void ratelimit_get(struct ratelimit *rl, struct ratelimit_cfg *c);
uint32_t ratelimit_gen(struct ratelimit *rl);
/* Whether any limit is set (else callers may skip the clock). */
bool ratelimit_active(struct ratelimit *rl);

/*
 * Book @bytes and @ops at time @now; returns when the work may start
 * (@now if at once).  The later of the two buckets' answers; each bucket
 * spends its one-time burst first when that covers the whole charge.
 */
uint64_t ratelimit_reserve(struct ratelimit *rl, uint64_t bytes, uint64_t ops,
			   uint64_t now);
/*
 * For work whose size is known only after it is done (a frame read from a
 * tap): the earliest time at which both buckets hold credit again
 * (@now if they do now).  Charge the work afterwards with
 * ratelimit_reserve() and ignore its answer.
 */
uint64_t ratelimit_ready(struct ratelimit *rl, uint64_t now);

/* Count a wait of @ns (throttled, wait_ns). */
void ratelimit_note_wait(struct ratelimit *rl, uint64_t ns);
void ratelimit_stats(struct ratelimit *rl, uint64_t *throttled,
		     uint64_t *wait_ns);

/* The monotonic clock the I/O threads charge with (CLOCK_MONOTONIC, ns). */
uint64_t ratelimit_now(void);

#endif
