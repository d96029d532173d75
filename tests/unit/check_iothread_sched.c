/* SPDX-License-Identifier: MIT */
/*
 * I/O thread scheduling policy (iothread_set_batch, behind
 * vmm_set_iothread_sched): a batch thread runs as SCHED_BATCH from its
 * start, a normal one keeps SCHED_OTHER, and the creating thread's own
 * policy is never changed.  Read on the I/O thread itself
 * (iothread_call_sync) with sched_getscheduler(0), which is per thread.
 */
#include <check.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "iosched-adapt.h"
#include "iothread.h"

static int policy_here(void *opaque)
{
	(void)opaque;
	return sched_getscheduler(0);
}

static int thread_policy(bool batch)
{
	struct iothread *io;
	int policy;

	ck_assert_int_eq(iothread_create(0, 8, &io), 0);
	iothread_set_batch(io, batch);
	ck_assert_int_eq(iothread_start(io), 0);
	policy = iothread_call_sync(io, policy_here, NULL);
	iothread_destroy(io);
	return policy;
}

START_TEST(batch_thread_is_sched_batch)
{
	ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
	ck_assert_int_eq(thread_policy(true), SCHED_BATCH);
	/* The creator keeps its policy. */
	ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
}
END_TEST

START_TEST(normal_thread_keeps_sched_other)
{
	ck_assert_int_eq(thread_policy(false), SCHED_OTHER);
}
END_TEST

/* A started I/O thread with the adaptive policy. */
static struct iothread *adaptive_thread(void)
{
	struct iothread *io;

	ck_assert_int_eq(iothread_create(0, 8, &io), 0);
	iothread_set_adaptive(io, true);
	ck_assert_int_eq(iothread_start(io), 0);
	return io;
}

static int lone_wakes(void *opaque)
{
	struct iothread *io = opaque;

	for (int i = 0; i < IOSA_LONELY; i++)
		iothread_note_wake(io, 1);
	return sched_getscheduler(0);
}

static int a_batch(void *opaque)
{
	iothread_note_wake(opaque, 8);
	return sched_getscheduler(0);
}

/* Adaptive: starts SCHED_BATCH, lone wakes make the thread itself
 * SCHED_OTHER, a batch SCHED_BATCH again (iosched-adapt.h decides). */
START_TEST(adaptive_thread_switches_itself)
{
	struct iothread *io;
	struct iothread_stats st;

	io = adaptive_thread();
	ck_assert_int_eq(iothread_call_sync(io, policy_here, NULL), SCHED_BATCH);
	ck_assert_int_eq(iothread_call_sync(io, lone_wakes, io), SCHED_OTHER);
	ck_assert_int_eq(iothread_call_sync(io, a_batch, io), SCHED_BATCH);
	iothread_get_stats(io, &st);
	ck_assert_uint_eq(st.sched_switches, 2);
	ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
	iothread_destroy(io);
}
END_TEST

static int one_lone_wake(void *opaque)
{
	iothread_note_wake(opaque, 1);
	return sched_getscheduler(0);
}

/* The thread's own clock feeds the policy: a lone wake after an idle
 * spell finds the thread SCHED_OTHER and leaves it SCHED_BATCH. */
START_TEST(adaptive_thread_restarts_after_idle)
{
	const struct timespec spell = { .tv_nsec = IOSA_IDLE_NS + 10000000 };
	struct iothread *io;
	struct iothread_stats st;

	io = adaptive_thread();
	ck_assert_int_eq(iothread_call_sync(io, lone_wakes, io), SCHED_OTHER);
	nanosleep(&spell, NULL);
	ck_assert_int_eq(iothread_call_sync(io, one_lone_wake, io), SCHED_BATCH);
	iothread_get_stats(io, &st);
	ck_assert(st.sched_batch);
	ck_assert_uint_eq(st.sched_switches, 2);
	ck_assert_uint_ge(st.sched_normal_ns, IOSA_IDLE_NS);
	iothread_destroy(io);
}
END_TEST

/* The counters behind vmm_get_iothread_stats(): the policy in force and
 * the time an adaptive thread spent SCHED_OTHER, the open stretch
 * included while it lasts; fixed policies report theirs. */
START_TEST(adaptive_stats_time_normal)
{
	const struct timespec ms30 = { .tv_nsec = 30 * 1000 * 1000 };
	struct iothread *io;
	struct iothread_stats st, st2;

	io = adaptive_thread();
	iothread_get_stats(io, &st);
	ck_assert(st.sched_batch);
	ck_assert_uint_eq(st.sched_normal_ns, 0);

	ck_assert_int_eq(iothread_call_sync(io, lone_wakes, io), SCHED_OTHER);
	nanosleep(&ms30, NULL);
	iothread_get_stats(io, &st);
	ck_assert(!st.sched_batch);
	ck_assert_uint_ge(st.sched_normal_ns, 30 * 1000 * 1000); /* still open */

	ck_assert_int_eq(iothread_call_sync(io, a_batch, io), SCHED_BATCH);
	iothread_get_stats(io, &st);
	ck_assert(st.sched_batch);
	ck_assert_uint_ge(st.sched_normal_ns, 30 * 1000 * 1000);
	nanosleep(&ms30, NULL);
	iothread_get_stats(io, &st2);
	ck_assert_uint_eq(st2.sched_normal_ns, st.sched_normal_ns); /* closed */
	ck_assert_uint_eq(st2.sched_switches, 2);
	iothread_destroy(io);

	/* Fixed policies: what was set, never a switch. */
	for (int batch = 0; batch < 2; batch++) {
		ck_assert_int_eq(iothread_create(0, 8, &io), 0);
		iothread_set_batch(io, batch);
		ck_assert_int_eq(iothread_start(io), 0);
		for (int i = 0; i < IOSA_LONELY; i++)
			iothread_note_wake(io, 1); /* ignored: not adaptive */
		iothread_get_stats(io, &st);
		ck_assert_int_eq(st.sched_batch, batch);
		ck_assert_uint_eq(st.sched_switches, 0);
		ck_assert_uint_eq(st.sched_normal_ns, 0);
		iothread_destroy(io);
	}
}
END_TEST

static Suite *sched_suite(void)
{
	Suite *s = suite_create("iothread_sched");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, batch_thread_is_sched_batch);
	tcase_add_test(tc, normal_thread_keeps_sched_other);
	tcase_add_test(tc, adaptive_thread_switches_itself);
	tcase_add_test(tc, adaptive_stats_time_normal);
	tcase_add_test(tc, adaptive_thread_restarts_after_idle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sched_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
