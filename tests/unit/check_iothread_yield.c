/* SPDX-License-Identifier: MIT */
/*
 * Yielded hooks (iothread_yield()): work that is ready but lets the
 * thread's other work go first.  A hook that yields runs again at the end
 * of the next round, and that round does not sleep: on a thread with
 * nothing else to do, a hook yielding itself N times runs in N
 * consecutive rounds of which none waited (stats.waits), where retries
 * (iothread_defer_next(), for a resource) wait in every round -- that
 * wait, up to 1 ms each with nothing else to wake the thread, is what
 * capped an unlimited virtio-net queue at 256 frames a millisecond.
 * Yielding hooks take turns, one run each a round, and never keep the
 * thread from its completions (a watched eventfd, a call), even when they
 * make no system call themselves.  A yield moves a hook queued for a
 * later time up; iothread_undefer() takes a yielded hook off.  Counts
 * only, no timings (waits have a 10 s deadline).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "iothread.h"
#include "test_clock.h"

#define RING_ENTRIES 32
#define WAIT_MS 10000
#define N 100

static struct iothread *io;

static void setup(void)
{
	ck_assert_int_eq(iothread_create(0, RING_ENTRIES, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
}

static void teardown(void)
{
	iothread_destroy(io);
	io = NULL;
}

static void wait_for(const unsigned int *counter, unsigned int want)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) {
		ck_assert_msg(test_now_ms() < deadline, "waited for %u, have %u", want,
			      __atomic_load_n(counter, __ATOMIC_ACQUIRE));
		usleep(200);
	}
}

static int read_loops(void *opaque)
{
	struct iothread_stats st;

	(void)opaque;
	iothread_get_stats(io, &st);
	return (int)st.loops;
}

/* Return once the round in which everything so far happened is over. */
static void settle(void)
{
	int first = iothread_call_sync(io, read_loops, NULL);
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (iothread_call_sync(io, read_loops, NULL) == first)
		ck_assert_msg(test_now_ms() < deadline, "I/O thread stuck in one round");
}

/* A hook that queues itself again (yield or retry) until it ran @left
 * times, or while @spin; the thread's stats at its first and last run. */
struct yh {
	struct iothread_hook h;
	bool retry;		/* iothread_defer_next() instead of a yield */
	unsigned int left;	/* runs still to queue itself for */
	bool spin;		/* queue itself again while set (atomic) */
	unsigned int runs;	/* atomic */
	struct iothread_stats first, last;
	struct yh *other;	/* a hook it takes turns with */
	unsigned int unfair;	/* runs that found other's count off by > 1 */
};

/* Context: the I/O thread.  No system call: a hook that makes none must
 * not keep the thread from its completions either. */
static void yh_fn(void *opaque)
{
	struct yh *y = opaque;
	unsigned int runs = __atomic_load_n(&y->runs, __ATOMIC_RELAXED) + 1;

	iothread_get_stats(io, runs == 1 ? &y->first : &y->last);
	if (y->other) {
		unsigned int o = __atomic_load_n(&y->other->runs, __ATOMIC_RELAXED);

		if (o + 1 < runs || runs + 1 < o)
			y->unfair++;
	}
	if (y->left) {
		y->left--;
		if (y->retry)
			iothread_defer_next(io, &y->h);
		else
			iothread_yield(io, &y->h);
	} else if (__atomic_load_n(&y->spin, __ATOMIC_ACQUIRE)) {
		iothread_yield(io, &y->h);
	}
	__atomic_store_n(&y->runs, runs, __ATOMIC_RELEASE);
}

static void yh_init(struct yh *y)
{
	memset(y, 0, sizeof(*y));
	y->h = (struct iothread_hook){ .fn = yh_fn, .opaque = y };
}

static int do_yield(void *opaque)
{
	iothread_yield(io, &((struct yh *)opaque)->h);
	return 0;
}

static int do_defer_next(void *opaque)
{
	iothread_defer_next(io, &((struct yh *)opaque)->h);
	return 0;
}

START_TEST(yield_runs_again_without_a_wait)
{
	struct yh y;

	yh_init(&y);
	y.left = N - 1;
	ck_assert_int_eq(iothread_call_sync(io, do_yield, &y), 0);
	wait_for(&y.runs, N);
	settle();
	ck_assert_uint_eq(__atomic_load_n(&y.runs, __ATOMIC_ACQUIRE), N);
	ck_assert(!y.h.queued);
	/* One run a round (never two in one), in N consecutive rounds,
	 * none of which could sleep. */
	ck_assert_uint_eq(y.last.loops - y.first.loops, N - 1);
	ck_assert_uint_eq(y.last.waits, y.first.waits);
	ck_assert_uint_eq(y.last.yields - y.first.yields, N - 1);
}
END_TEST

/* The contrast: a retry is for a resource, and its round waits (bounded). */
START_TEST(retry_rounds_wait)
{
	struct yh y;

	yh_init(&y);
	y.retry = true;
	y.left = 4;
	ck_assert_int_eq(iothread_call_sync(io, do_defer_next, &y), 0);
	wait_for(&y.runs, 5);
	settle();
	ck_assert_uint_eq(y.last.loops - y.first.loops, 4);
	ck_assert_uint_eq(y.last.waits - y.first.waits, 4);
	ck_assert_uint_eq(y.last.yields, y.first.yields);
}
END_TEST

struct watch {
	struct iothread_fd w;
	unsigned int fired; /* atomic */
};

static void watch_fired(void *opaque)
{
	struct watch *wt = opaque;
	uint64_t v;

	if (read(wt->w.fd, &v, sizeof(v)) < 0)
		v = 0;
	__atomic_add_fetch(&wt->fired, 1, __ATOMIC_RELEASE);
}

static int do_watch(void *opaque)
{
	return iothread_watch_fd(io, &((struct watch *)opaque)->w);
}

static int do_unwatch(void *opaque)
{
	iothread_unwatch_fd(io, &((struct watch *)opaque)->w);
	return 0;
}

/* Both in one call: they start in the same round. */
static int do_yield_two(void *opaque)
{
	struct yh **y = opaque;

	iothread_yield(io, &y[0]->h);
	iothread_yield(io, &y[1]->h);
	return 0;
}

static int answer(void *opaque)
{
	(void)opaque;
	return 42;
}

START_TEST(yields_take_turns_with_completions)
{
	struct yh a, b, *ab[2] = { &a, &b };
	struct watch wt;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	unsigned int ra;

	ck_assert_int_ge(efd, 0);
	memset(&wt, 0, sizeof(wt));
	wt.w = (struct iothread_fd){ .fd = efd, .fn = watch_fired, .opaque = &wt };
	ck_assert_int_eq(iothread_call_sync(io, do_watch, &wt), 0);
	yh_init(&a);
	yh_init(&b);
	a.other = &b;
	b.other = &a;
	a.spin = b.spin = true;
	ck_assert_int_eq(iothread_call_sync(io, do_yield_two, ab), 0);
	wait_for(&a.runs, 10);

	/* While both keep yielding: kicks and calls are served. */
	for (unsigned int i = 1; i <= 5; i++) {
		ck_assert_int_eq(eventfd_write(efd, 1), 0);
		wait_for(&wt.fired, i);
		ck_assert_int_eq(iothread_call_sync(io, answer, NULL), 42);
	}
	ra = __atomic_load_n(&a.runs, __ATOMIC_ACQUIRE);
	wait_for(&a.runs, ra + 10); /* and the yields go on */

	__atomic_store_n(&a.spin, false, __ATOMIC_RELEASE);
	__atomic_store_n(&b.spin, false, __ATOMIC_RELEASE);
	settle();
	settle();
	ck_assert(!a.h.queued && !b.h.queued);
	/* One run each a round: neither got ahead by more than the one
	 * that runs first in a round. */
	ck_assert_uint_eq(a.unfair, 0);
	ck_assert_uint_eq(b.unfair, 0);
	ck_assert_int_eq(iothread_call_sync(io, do_unwatch, &wt), 0);
	close(efd);
}
END_TEST

/* In one call each: the hook cannot run between the two. */
static int do_hour_then_yield(void *opaque)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	iothread_defer_at(io, &((struct yh *)opaque)->h,
			  (uint64_t)(ts.tv_sec + 3600) * 1000000000ull);
	iothread_yield(io, &((struct yh *)opaque)->h);
	return 0;
}

static int do_next_then_yield(void *opaque)
{
	iothread_defer_next(io, &((struct yh *)opaque)->h);
	iothread_yield(io, &((struct yh *)opaque)->h);
	return 0;
}

static int do_yield_undefer(void *opaque)
{
	iothread_yield(io, &((struct yh *)opaque)->h);
	iothread_undefer(io, &((struct yh *)opaque)->h);
	return 0;
}

START_TEST(yield_moves_up_and_undefer_cancels)
{
	struct yh t, u;

	/* Queued for an hour from now, then yielded: runs now, once. */
	yh_init(&t);
	ck_assert_int_eq(iothread_call_sync(io, do_hour_then_yield, &t), 0);
	wait_for(&t.runs, 1);
	settle();
	ck_assert(!t.h.queued);
	/* Queued for the next round as a retry, then yielded: once. */
	ck_assert_int_eq(iothread_call_sync(io, do_next_then_yield, &t), 0);
	wait_for(&t.runs, 2);
	settle();
	settle();
	ck_assert_uint_eq(__atomic_load_n(&t.runs, __ATOMIC_ACQUIRE), 2);

	/* Yielded and taken off: never runs. */
	yh_init(&u);
	ck_assert_int_eq(iothread_call_sync(io, do_yield_undefer, &u), 0);
	settle();
	settle();
	ck_assert_uint_eq(__atomic_load_n(&u.runs, __ATOMIC_ACQUIRE), 0);
	ck_assert(!u.h.queued);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("iothread_yield");
	TCase *tc = tcase_create("yield");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, yield_runs_again_without_a_wait);
	tcase_add_test(tc, retry_rounds_wait);
	tcase_add_test(tc, yields_take_turns_with_completions);
	tcase_add_test(tc, yield_moves_up_and_undefer_cancels);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
