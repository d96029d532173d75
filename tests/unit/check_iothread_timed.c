/* SPDX-License-Identifier: MIT */
/*
 * Timed hooks (iothread_defer_at()): a hook queued for a time runs once,
 * not before that time, on a thread with nothing else to wake it (the
 * wait is bounded by the earliest hook); an earlier time moves a queued
 * hook up; iothread_undefer() takes one off.
 */
#include <check.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "iothread.h"

#define RING_ENTRIES 64
#define MS 1000000ull

static struct iothread *io;

struct timed {
	struct iothread_hook h;
	uint64_t when, ran_at;
	unsigned int runs;
};

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void timed_fn(void *opaque)
{
	struct timed *t = opaque;

	t->ran_at = now();
	__atomic_add_fetch(&t->runs, 1, __ATOMIC_RELEASE);
}

static int do_defer(void *opaque)
{
	struct timed *t = opaque;

	iothread_defer_at(io, &t->h, t->when);
	return 0;
}

static int do_undefer(void *opaque)
{
	iothread_undefer(io, &((struct timed *)opaque)->h);
	return 0;
}

static void setup(void)
{
	ck_assert_int_eq(iothread_create(0, RING_ENTRIES, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
}

static void teardown(void)
{
	iothread_stop(io);
	iothread_destroy(io);
}

/* Bounded wait (the test's own timeout is the real bound). */
static void wait_runs(struct timed *t, unsigned int n)
{
	for (int i = 0; i < 10000 && __atomic_load_n(&t->runs, __ATOMIC_ACQUIRE) < n; i++)
		usleep(1000);
	ck_assert_uint_eq(__atomic_load_n(&t->runs, __ATOMIC_ACQUIRE), n);
}

START_TEST(runs_once_at_its_time)
{
	struct timed t = { .h = { .fn = timed_fn, .opaque = &t } };

	t.when = now() + 20 * MS;
	ck_assert_int_eq(iothread_call_sync(io, do_defer, &t), 0);
	wait_runs(&t, 1);
	ck_assert_uint_ge(t.ran_at, t.when);
	usleep(30000);
	ck_assert_uint_eq(t.runs, 1);
}
END_TEST

START_TEST(earlier_time_wins)
{
	struct timed t = { .h = { .fn = timed_fn, .opaque = &t } };
	uint64_t early;

	t.when = now() + 3600 * 1000 * MS; /* an hour */
	ck_assert_int_eq(iothread_call_sync(io, do_defer, &t), 0);
	early = t.when = now() + 10 * MS;
	ck_assert_int_eq(iothread_call_sync(io, do_defer, &t), 0);
	wait_runs(&t, 1);
	ck_assert_uint_ge(t.ran_at, early);
}
END_TEST

START_TEST(undefer_cancels)
{
	struct timed t = { .h = { .fn = timed_fn, .opaque = &t } };
	struct timed u = { .h = { .fn = timed_fn, .opaque = &u } };

	/* t far enough out that it cannot run before the undefer, however
	 * slowly this host runs the calls; u proves the thread waits on. */
	t.when = now() + 3600 * 1000 * MS;
	u.when = now() + 20 * MS;
	ck_assert_int_eq(iothread_call_sync(io, do_defer, &t), 0);
	ck_assert_int_eq(iothread_call_sync(io, do_defer, &u), 0);
	ck_assert_int_eq(iothread_call_sync(io, do_undefer, &t), 0);
	wait_runs(&u, 1);
	ck_assert_uint_eq(t.runs, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("iothread_timed");
	TCase *tc = tcase_create("timed");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, runs_once_at_its_time);
	tcase_add_test(tc, earlier_time_wins);
	tcase_add_test(tc, undefer_cancels);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
