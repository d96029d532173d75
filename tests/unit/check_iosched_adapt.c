/* SPDX-License-Identifier: MIT */
/*
 * The adaptive I/O-thread policy's decision (iosched-adapt.h), fed with
 * the number of requests each kick's wake-up found: lone requests turn it
 * NORMAL after IOSA_LONELY wakes; a batch turns it BATCH at once; a
 * steady shallow queue is probed with BATCH for IOSA_PROBE wakes at
 * intervals doubling up to IOSA_PROBE_MAX; a deep queue that looks
 * shallow under NORMAL (every kick preempts the vCPU, so finds one
 * request) is caught by the next probe; a wake after an idle spell
 * starts afresh.  KVM-free, no threads, a simulated clock.
 */
#include <check.h>
#include <stdlib.h>

#include "iosched-adapt.h"

/* The simulated clock: a steady load wakes every millisecond. */
static uint64_t clock_ns = 1;

static bool wake_after(struct iosched_adapt *a, uint32_t found, uint64_t gap)
{
	clock_ns += gap;
	return iosched_adapt_wake(a, found, clock_ns);
}

static bool wake(struct iosched_adapt *a, uint32_t found)
{
	return wake_after(a, found, 1000 * 1000);
}

/* Feed @n wakes of @found each; returns the policy changes seen. */
static unsigned int feed(struct iosched_adapt *a, unsigned int n, uint32_t found)
{
	unsigned int changes = 0;

	while (n--)
		changes += wake(a, found);
	return changes;
}

START_TEST(starts_batch_and_stays_with_batches)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	ck_assert(a.batch);
	ck_assert_uint_eq(feed(&a, 10000, 13), 0);
	ck_assert(a.batch);
	/* Lone wakes between batches do not add up. */
	for (int i = 0; i < 1000; i++) {
		ck_assert_uint_eq(feed(&a, IOSA_LONELY - 1, 1), 0);
		ck_assert_uint_eq(feed(&a, 1, 2), 0);
	}
	ck_assert(a.batch);
}
END_TEST

START_TEST(lone_requests_turn_normal_with_hysteresis)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	ck_assert_uint_eq(feed(&a, IOSA_LONELY - 1, 1), 0);
	ck_assert(a.batch);
	ck_assert(wake(&a, 0)); /* 0 counts as lone too */
	ck_assert(!a.batch);
	ck_assert_uint_eq(a.switches, 1);
}
END_TEST

START_TEST(batch_under_normal_turns_batch_at_once)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	feed(&a, IOSA_LONELY, 1);
	ck_assert(!a.batch);
	ck_assert_uint_eq(feed(&a, 3, 1), 0);
	ck_assert(wake(&a, 2));
	ck_assert(a.batch);
}
END_TEST

/* A steady QD-1 stream: mostly NORMAL, probes back off to IOSA_PROBE_MAX,
 * so few wakes are spent in BATCH and few policy changes are made. */
START_TEST(shallow_queue_probes_rarely)
{
	struct iosched_adapt a;
	unsigned int in_batch = 0, n = 100000, changes = 0;

	iosched_adapt_init(&a);
	for (unsigned int i = 0; i < n; i++) {
		in_batch += a.batch;
		changes += wake(&a, 1);
	}
	ck_assert_uint_eq(a.probe_every, IOSA_PROBE_MAX);
	/* Steady state: IOSA_PROBE batch wakes and 2 changes per
	 * IOSA_PROBE_MAX + IOSA_PROBE wakes. */
	ck_assert_uint_le(in_batch, IOSA_LONELY + 20 * IOSA_PROBE +
					    n / IOSA_PROBE_MAX * IOSA_PROBE);
	ck_assert_uint_le(changes, 20 + 2 * (n / IOSA_PROBE_MAX));
	ck_assert_uint_eq(changes, a.switches);
}
END_TEST

/* Under NORMAL a deep queue looks like lone requests; the next probe lets
 * the vCPU queue a batch, and the policy stays BATCH. */
START_TEST(probe_finds_deep_queue)
{
	struct iosched_adapt a;
	unsigned int w = 0;

	iosched_adapt_init(&a);
	feed(&a, 100000, 1); /* backed off to IOSA_PROBE_MAX */
	/* Run to the end of a probe (the switch back to NORMAL). */
	while (!(wake(&a, 1) && !a.batch))
		ck_assert_uint_le(++w, IOSA_PROBE_MAX + IOSA_PROBE);
	for (w = 0; !a.batch; w++)
		wake(&a, 1);
	ck_assert_uint_eq(w, IOSA_PROBE_MAX);
	ck_assert_uint_eq(feed(&a, 1, 20), 0);
	ck_assert(a.batch);
	ck_assert(!a.probing);
	ck_assert_uint_eq(a.probe_every, IOSA_PROBE_MIN);
	ck_assert_uint_eq(feed(&a, 10000, 20), 0);
	ck_assert(a.batch);
}
END_TEST

/* A probe that sees only lone wakes ends after IOSA_PROBE of them, not
 * IOSA_LONELY, and doubles the interval. */
START_TEST(failed_probe_is_short_and_backs_off)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	feed(&a, IOSA_LONELY, 1);
	ck_assert(!a.batch);
	ck_assert_uint_eq(feed(&a, IOSA_PROBE_MIN - 1, 1), 0);
	ck_assert(wake(&a, 1));
	ck_assert(a.batch && a.probing);
	ck_assert_uint_eq(feed(&a, IOSA_PROBE - 1, 1), 0);
	ck_assert(wake(&a, 1));
	ck_assert(!a.batch && !a.probing);
	ck_assert_uint_eq(a.probe_every, 2 * IOSA_PROBE_MIN);
}
END_TEST

/* Whatever a guest's avail index says (up to 65535, or garbage), the
 * machine only ever picks one of two policies. */
START_TEST(any_count_is_fine)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	srand(7);
	for (int i = 0; i < 100000; i++) {
		uint32_t f = (rand() & 1) ? (uint32_t)rand() : (uint32_t)(rand() & 1);

		wake(&a, f);
		ck_assert_uint_ge(a.probe_every, IOSA_PROBE_MIN);
		ck_assert_uint_le(a.probe_every, IOSA_PROBE_MAX);
	}
}
END_TEST

/* A wake after IOSA_IDLE_NS without one: the lone requests that taught
 * NORMAL and the backed-off probe are forgotten; BATCH as at init, and
 * the next load's lone wakes are counted from this one. */
START_TEST(idle_spell_starts_afresh)
{
	struct iosched_adapt a;
	uint64_t switches;

	iosched_adapt_init(&a);
	feed(&a, 100000, 1); /* the echo test: NORMAL, backed off */
	while (a.batch)
		wake(&a, 1);
	ck_assert_uint_eq(a.probe_every, IOSA_PROBE_MAX);
	switches = a.switches;

	/* Just short of the spell: nothing changes. */
	ck_assert(!wake_after(&a, 1, IOSA_IDLE_NS - 1));
	ck_assert(!a.batch);
	ck_assert_uint_eq(a.probe_every, IOSA_PROBE_MAX);

	ck_assert(wake_after(&a, 1, IOSA_IDLE_NS));
	ck_assert(a.batch && !a.probing);
	ck_assert_uint_eq(a.probe_every, IOSA_PROBE_MIN);
	ck_assert_uint_eq(a.switches, switches + 1);
	/* This wake was the first lone one of the new load. */
	ck_assert_uint_eq(feed(&a, IOSA_LONELY - 2, 1), 0);
	ck_assert(wake(&a, 1));
	ck_assert(!a.batch);
	/* ... whose first probe comes after IOSA_PROBE_MIN wakes. */
	ck_assert_uint_eq(feed(&a, IOSA_PROBE_MIN - 1, 1), 0);
	ck_assert(wake(&a, 1));
	ck_assert(a.batch && a.probing);
}
END_TEST

/* A spell that ends in BATCH (or in a probe) changes no policy: no
 * switch is counted, though a probe's state is reset. */
START_TEST(idle_spell_in_batch_is_no_switch)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	ck_assert(!wake_after(&a, 1, 5ull * IOSA_IDLE_NS));
	ck_assert(!wake_after(&a, 7, 5ull * IOSA_IDLE_NS));
	ck_assert(a.batch);
	ck_assert_uint_eq(a.switches, 0);

	feed(&a, IOSA_LONELY, 1);
	feed(&a, IOSA_PROBE_MIN, 1); /* probing */
	ck_assert(a.batch && a.probing);
	ck_assert(!wake_after(&a, 1, IOSA_IDLE_NS));
	ck_assert(a.batch && !a.probing);
	ck_assert_uint_eq(a.switches, 2);
	ck_assert_uint_eq(a.count, 1);
}
END_TEST

/* Sparse lone requests (one per idle spell) are served under BATCH, and
 * never make a switch. */
START_TEST(sparse_requests_stay_batch)
{
	struct iosched_adapt a;

	iosched_adapt_init(&a);
	for (int i = 0; i < 1000; i++)
		ck_assert(!wake_after(&a, 1, IOSA_IDLE_NS + (uint64_t)i));
	ck_assert(a.batch);
	ck_assert_uint_eq(a.switches, 0);
}
END_TEST

static Suite *adapt_suite(void)
{
	Suite *s = suite_create("iosched_adapt");
	TCase *tc = tcase_create("decision");

	tcase_add_test(tc, starts_batch_and_stays_with_batches);
	tcase_add_test(tc, lone_requests_turn_normal_with_hysteresis);
	tcase_add_test(tc, batch_under_normal_turns_batch_at_once);
	tcase_add_test(tc, shallow_queue_probes_rarely);
	tcase_add_test(tc, probe_finds_deep_queue);
	tcase_add_test(tc, failed_probe_is_short_and_backs_off);
	tcase_add_test(tc, any_count_is_fine);
	tcase_add_test(tc, idle_spell_starts_afresh);
	tcase_add_test(tc, idle_spell_in_batch_is_no_switch);
	tcase_add_test(tc, sparse_requests_stay_batch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(adapt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
