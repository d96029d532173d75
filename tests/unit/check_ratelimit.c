/* SPDX-License-Identifier: MIT */
/*
 * Token-bucket arithmetic (libvmm/core/ratelimit.c) on a clock the test
 * drives: refill, the burst cap, zero = unlimited, saturation of huge
 * rates and sizes, a request larger than the bucket, the one-time burst,
 * run-time changes, FIFO order across queues (no starvation) and exact
 * accounting under concurrent charges.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "ratelimit.h"

#define MS 1000000ull
#define S 1000000000ull
#define T0 (1000 * S) /* a clock well past zero */

static struct ratelimit rl;

static void set_ops(uint64_t rate, uint64_t burst, uint64_t one_time)
{
	struct ratelimit_cfg c = { .ops = { rate, burst, one_time } };

	ck_assert_int_eq(ratelimit_check(&c), 0);
	ratelimit_set(&rl, &c);
}

static void set_bw(uint64_t rate, uint64_t burst, uint64_t one_time)
{
	struct ratelimit_cfg c = { .bw = { rate, burst, one_time } };

	ck_assert_int_eq(ratelimit_check(&c), 0);
	ratelimit_set(&rl, &c);
}

START_TEST(unlimited)
{
	ratelimit_init(&rl);
	ck_assert(!ratelimit_active(&rl));
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 1u << 22, 1, T0), T0);
	ck_assert_uint_eq(ratelimit_ready(&rl, T0), T0);
	/* One bucket limited, the other not: only the first counts. */
	set_ops(10, 1, 0);
	ck_assert(ratelimit_active(&rl));
	ck_assert_uint_eq(ratelimit_reserve(&rl, UINT64_MAX, 0, T0), T0);
}
END_TEST

START_TEST(burst_then_rate)
{
	ratelimit_init(&rl);
	set_ops(1000, 10, 0); /* 1 ms per op, 10 at once */
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0);
	/* Empty: each further op starts 1 ms after the one before. */
	for (uint64_t i = 1; i <= 100; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0 + i * MS);
}
END_TEST

START_TEST(refill_and_cap)
{
	ratelimit_init(&rl);
	set_ops(1000, 10, 0);
	for (int i = 0; i < 10; i++)
		ratelimit_reserve(&rl, 0, 1, T0);
	/* 5 ms later, 5 ops of credit. */
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0 + 5 * MS), T0 + 5 * MS);
	ck_assert_uint_gt(ratelimit_reserve(&rl, 0, 1, T0 + 5 * MS), T0 + 5 * MS);
	/* Idle for 10 s: the bucket holds its burst (10), not 10000. */
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0 + 10 * S), T0 + 10 * S);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0 + 10 * S), T0 + 10 * S + MS);
}
END_TEST

START_TEST(default_burst_is_one_second)
{
	ratelimit_init(&rl);
	set_bw(1u << 20, 0, 0); /* 1 MiB/s */
	ck_assert_uint_eq(ratelimit_reserve(&rl, 1u << 20, 0, T0), T0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 1u << 19, 0, T0), T0 + S / 2);
}
END_TEST

START_TEST(bandwidth_average)
{
	uint64_t t = T0, end;

	ratelimit_init(&rl);
	set_bw(100u << 20, 4096, 0); /* 100 MiB/s, a page of burst */
	/* 1 GiB in 4 KiB requests, each started when it may: 10.24 s. */
	for (int i = 0; i < (1 << 18); i++)
		t = ratelimit_reserve(&rl, 4096, 1, t);
	end = ratelimit_reserve(&rl, 4096, 1, t);
	/* Rounding up costs at most 1 ns per request. */
	ck_assert_uint_ge(end - T0, 10240 * MS);
	ck_assert_uint_le(end - T0, 10240 * MS + (1u << 18));
}
END_TEST

START_TEST(larger_than_bucket)
{
	ratelimit_init(&rl);
	set_bw(1000, 100, 0); /* 1000 B/s, 100 B bucket */
	/* A full bucket lets a 500 B request start at once... */
	ck_assert_uint_eq(ratelimit_reserve(&rl, 500, 0, T0), T0);
	/* ...and the debt (500 ms of it) delays the next: a 1 B request once
	 * 1 B is back (tat - (tau - cost) = 500 ms - 99 ms). */
	ck_assert_uint_eq(ratelimit_reserve(&rl, 1, 0, T0), T0 + 401 * MS);
	/* Another big one waits for the bucket to be full again. */
	ck_assert_uint_eq(ratelimit_reserve(&rl, 500, 0, T0), T0 + 501 * MS);
	ck_assert_uint_eq(ratelimit_ready(&rl, T0), T0 + 901 * MS);
}
END_TEST

START_TEST(saturation)
{
	uint64_t t;

	ratelimit_init(&rl);
	/* 2^64 - 1 bytes at 1 B/s: saturated, not wrapped. */
	set_bw(1, 1, 0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, UINT64_MAX, 0, T0), T0);
	t = ratelimit_reserve(&rl, UINT64_MAX, 0, T0);
	ck_assert_uint_eq(t, RATELIMIT_NS_MAX);
	ck_assert_uint_eq(ratelimit_reserve(&rl, UINT64_MAX, 0, T0), RATELIMIT_NS_MAX);
	/* A huge rate: everything nearly free. */
	set_bw(UINT64_MAX, UINT64_MAX, 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 1u << 22, 0, T0), T0);
	/* A clock past the saturation point. */
	set_ops(1, 1, 0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, UINT64_MAX), RATELIMIT_NS_MAX);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, UINT64_MAX), RATELIMIT_NS_MAX);
	/* A huge burst at a small rate. */
	set_ops(1, UINT64_MAX, 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0);
}
END_TEST

START_TEST(one_time_burst)
{
	ratelimit_init(&rl);
	set_bw(1000, 100, 5000);
	/* 5000 B at once from the one-time burst, then the bucket. */
	for (int i = 0; i < 50; i++)
		ck_assert_uint_eq(ratelimit_reserve(&rl, 100, 0, T0), T0);
	ck_assert_uint_eq(ratelimit_ready(&rl, T0), T0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 100, 0, T0), T0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 100, 0, T0), T0 + 100 * MS);
	/* Never refilled. */
	ck_assert_uint_eq(ratelimit_reserve(&rl, 100, 0, T0 + 100 * S), T0 + 100 * S);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 100, 0, T0 + 100 * S),
			  T0 + 100 * S + 100 * MS);
}
END_TEST

START_TEST(change_and_check)
{
	struct ratelimit_cfg c = { .bw = { 0, 10, 0 } }, got;
	uint32_t gen;

	ratelimit_init(&rl);
	ck_assert_int_eq(ratelimit_check(&c), -EINVAL);
	c = (struct ratelimit_cfg){ .ops = { 0, 0, 5 } };
	ck_assert_int_eq(ratelimit_check(&c), -EINVAL);
	gen = ratelimit_gen(&rl);
	set_ops(1, 1, 0);
	ck_assert_uint_ne(ratelimit_gen(&rl), gen);
	ratelimit_reserve(&rl, 0, 1, T0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0 + S);
	/* A change refills: the new limit starts with a full bucket. */
	set_ops(1000, 1, 0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0);
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0 + MS);
	ratelimit_get(&rl, &got);
	ck_assert_uint_eq(got.ops.rate, 1000);
	ck_assert_uint_eq(got.ops.burst, 1);
	ck_assert_uint_eq(got.bw.rate, 0);
	/* Back to unlimited. */
	set_ops(0, 0, 0);
	ck_assert(!ratelimit_active(&rl));
	ck_assert_uint_eq(ratelimit_reserve(&rl, 0, 1, T0), T0);
}
END_TEST

/*
 * Four queues share 1000 ops/s, each holding one reservation at a time
 * and booking the next as soon as the one it holds starts (all busy).
 * Event-driven on the test's clock: each gets a quarter, within one op.
 */
START_TEST(fifo_no_starvation)
{
	uint64_t at[4], served[4] = { 0 }, t;

	ratelimit_init(&rl);
	set_ops(1000, 4, 0);
	for (int q = 0; q < 4; q++)
		at[q] = ratelimit_reserve(&rl, 0, 1, T0);
	for (;;) {
		int q = 0;

		for (int i = 1; i < 4; i++)
			if (at[i] < at[q])
				q = i;
		t = at[q];
		if (t >= T0 + 10 * S)
			break;
		served[q]++;
		at[q] = ratelimit_reserve(&rl, 0, 1, t);
	}
	for (int q = 0; q < 4; q++) {
		ck_assert_uint_ge(served[q], 2500 - 1);
		ck_assert_uint_le(served[q], 2501 + 1);
	}
}
END_TEST

struct racer {
	int n;
};

static void *race(void *opaque)
{
	struct racer *r = opaque;

	for (int i = 0; i < r->n; i++)
		ratelimit_reserve(&rl, 1, 1, T0);
	return NULL;
}

/* Concurrent charges are each booked once: the bucket ends exactly
 * N costs in debt. */
START_TEST(concurrent_exact)
{
	pthread_t th[4];
	struct racer r = { 100000 };

	ratelimit_init(&rl);
	set_ops(1000000, 1, 0); /* 1 us per op */
	set_bw(1000000, 1, 0);	/* 1 us per byte; replaces the ops limit */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race, &r), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	/* 400000 bytes booked from T0: tat = T0 + 400 ms; next at tat. */
	ck_assert_uint_eq(ratelimit_reserve(&rl, 1, 0, T0), T0 + 400 * MS);
}
END_TEST

START_TEST(wait_stats)
{
	uint64_t n, ns;

	ratelimit_init(&rl);
	ratelimit_note_wait(&rl, 5);
	ratelimit_note_wait(&rl, 7);
	ratelimit_stats(&rl, &n, &ns);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ns, 12);
	ck_assert_uint_gt(ratelimit_now(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, unlimited);
	tcase_add_test(tc, burst_then_rate);
	tcase_add_test(tc, refill_and_cap);
	tcase_add_test(tc, default_burst_is_one_second);
	tcase_add_test(tc, bandwidth_average);
	tcase_add_test(tc, larger_than_bucket);
	tcase_add_test(tc, saturation);
	tcase_add_test(tc, one_time_burst);
	tcase_add_test(tc, change_and_check);
	tcase_add_test(tc, fifo_no_starvation);
	tcase_add_test(tc, concurrent_exact);
	tcase_add_test(tc, wait_stats);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
