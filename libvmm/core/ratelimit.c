/* SPDX-License-Identifier: MIT */
/* Token buckets for rate limits, lock-free (ratelimit.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "ratelimit.h"

#define NS_PER_S 1000000000ull

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* @n units at @rate per second, in ns, rounded up (never faster than
 * the rate) and saturated. */
static uint64_t units_ns(uint64_t n, uint64_t rate)
{
	unsigned __int128 x = (unsigned __int128)n * NS_PER_S;

	x = (x + rate - 1) / rate;
	return x > RATELIMIT_NS_MAX ? RATELIMIT_NS_MAX : (uint64_t)x;
}

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

void ratelimit_init(struct ratelimit *rl)
{
	memset(rl, 0, sizeof(*rl));
}

static int bucket_check(const struct ratelimit_bucket_cfg *b)
{
	return !b->rate && (b->burst || b->one_time) ? -EINVAL : 0;
}

int ratelimit_check(const struct ratelimit_cfg *c)
{
	return bucket_check(&c->bw) ? -EINVAL : bucket_check(&c->ops);
}

static void bucket_set(struct ratelimit_bucket *b, struct ratelimit_bucket_cfg *as,
		       const struct ratelimit_bucket_cfg *c)
{
	uint64_t burst = c->burst ? c->burst : c->rate;

	STORE(&b->rate, c->rate);
	STORE(&b->tau, c->rate ? units_ns(burst, c->rate) : 0);
	STORE(&b->one_time, c->one_time);
	/* Full: any tat at or before now is. */
	STORE(&b->tat, 0);
	STORE(&as->rate, c->rate);
	STORE(&as->burst, c->burst);
	STORE(&as->one_time, c->one_time);
}

void ratelimit_set(struct ratelimit *rl, const struct ratelimit_cfg *c)
{
	bucket_set(&rl->bw, &rl->cfg.bw, &c->bw);
	bucket_set(&rl->ops, &rl->cfg.ops, &c->ops);
	/* Release: a queue that sees the new generation (acquire in
	 * ratelimit_gen()) books with the new buckets. */
	__atomic_add_fetch(&rl->gen, 1, __ATOMIC_RELEASE);
}

static void bucket_cfg_get(struct ratelimit_bucket_cfg *as,
			   struct ratelimit_bucket_cfg *out)
{
	out->rate = LOAD(&as->rate);
	out->burst = LOAD(&as->burst);
	out->one_time = LOAD(&as->one_time);
}

void ratelimit_get(struct ratelimit *rl, struct ratelimit_cfg *c)
{
	bucket_cfg_get(&rl->cfg.bw, &c->bw);
	bucket_cfg_get(&rl->cfg.ops, &c->ops);
}

uint32_t ratelimit_gen(struct ratelimit *rl)
{
	/* Pairs with the release in ratelimit_set(). */
	return __atomic_load_n(&rl->gen, __ATOMIC_ACQUIRE);
}

bool ratelimit_active(struct ratelimit *rl)
{
	return LOAD(&rl->bw.rate) || LOAD(&rl->ops.rate);
}

/* Spend the one-time burst if it covers all @n. */
static bool one_time_take(struct ratelimit_bucket *b, uint64_t n)
{
	uint64_t left = LOAD(&b->one_time);

	while (left && left >= n) {
		if (__atomic_compare_exchange_n(&b->one_time, &left, left - n,
						true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/*
 * GCRA: the charge may start once the bucket holds @n units' worth
 * (tat - start <= tau - cost), or, for a charge larger than the bucket,
 * once it is full (tat <= start); it moves tat by its cost from
 * max(tat, now).  One CAS; a lost race recomputes from the winner's tat.
 */
static uint64_t bucket_reserve(struct ratelimit_bucket *b, uint64_t n,
			       uint64_t now)
{
	uint64_t rate = LOAD(&b->rate), tau, cost, slack, tat, start, next;

	if (!rate || !n || one_time_take(b, n))
		return now;
	tau = LOAD(&b->tau);
	cost = units_ns(n, rate);
	slack = tau > cost ? tau - cost : 0;
	tat = LOAD(&b->tat);
	do {
		start = tat > now + slack ? tat - slack : now;
		next = min_u64((tat > now ? tat : now) + cost, RATELIMIT_NS_MAX);
	} while (!__atomic_compare_exchange_n(&b->tat, &tat, next, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return start;
}

uint64_t ratelimit_reserve(struct ratelimit *rl, uint64_t bytes, uint64_t ops,
			   uint64_t now)
{
	uint64_t a, b;

	now = min_u64(now, RATELIMIT_NS_MAX);
	a = bucket_reserve(&rl->bw, bytes, now);
	b = bucket_reserve(&rl->ops, ops, now);
	return a > b ? a : b;
}

/* Credit again (not in debt) from tat - tau on. */
static uint64_t bucket_ready(struct ratelimit_bucket *b, uint64_t now)
{
	uint64_t tat, tau;

	if (!LOAD(&b->rate) || LOAD(&b->one_time))
		return now;
	tat = LOAD(&b->tat);
	tau = LOAD(&b->tau);
	return tat > now + tau ? tat - tau : now;
}

uint64_t ratelimit_ready(struct ratelimit *rl, uint64_t now)
{
	uint64_t a, b;

	now = min_u64(now, RATELIMIT_NS_MAX);
	a = bucket_ready(&rl->bw, now);
	b = bucket_ready(&rl->ops, now);
	return a > b ? a : b;
}

void ratelimit_note_wait(struct ratelimit *rl, uint64_t ns)
{
	__atomic_add_fetch(&rl->throttled, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&rl->wait_ns, ns, __ATOMIC_RELAXED);
}

void ratelimit_stats(struct ratelimit *rl, uint64_t *throttled,
		     uint64_t *wait_ns)
{
	*throttled = LOAD(&rl->throttled);
	*wait_ns = LOAD(&rl->wait_ns);
}

uint64_t ratelimit_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}
