/* SPDX-License-Identifier: MIT */
/*
 * The log rate limiter (libvmm/core/log.h), on its own: a burst is its first
 * message in full plus "N more" summaries (at a gap, periodically, at a
 * flush), counts are exact (logged + summarised == passed in) from many
 * threads, limiters are independent, and nothing overflows on long text.
 * Nothing asserts on timing: the single-threaded cases run on a fake clock
 * (log_limit_set_clock()), and the one bound that depends on the elapsed
 * time (threads on the real clock) is computed from it.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "log_lines.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Lines one limiter may log over @s seconds of messages: a burst costs
 * its first line and a closing summary, and a new one only starts after
 * LOG_LIMIT_GAP_NS without messages (a descheduled test thread can make
 * such a gap); one summary per LOG_LIMIT_REPORT_NS meanwhile. */
static unsigned int bound_for(double s)
{
	return 2 * (1 + (unsigned int)(s * 1e9 / (double)LOG_LIMIT_GAP_NS)) +
	       (unsigned int)(s * 1e9 / (double)LOG_LIMIT_REPORT_NS) + 1;
}

/* The fake clock: time stands still unless a test moves it. */
static uint64_t fake_ns;

static uint64_t fake_clock(void *opaque)
{
	(void)opaque;
	return fake_ns;
}

static void fake_init(struct log_limit *l, const char *noun)
{
	log_limit_init(l, noun);
	fake_ns = 1000000000ull;
	log_limit_set_clock(l, fake_clock, NULL);
}

START_TEST(first_in_full_then_one_summary)
{
	struct log_limit l;

	ck_assert_int_eq(log_lines_start(), 0);
	fake_init(&l, "test events");
	for (unsigned int i = 0; i < 1000; i++)
		log_limited(&l, i == 500 ? VMM_LOG_ERROR : VMM_LOG_INFO, "dev 7",
			    "event %u", i);
	ck_assert_uint_eq(log_lines_total(), 1);
	ck_assert_uint_eq(log_lines_count("dev 7: event 0"), 1);
	ck_assert_uint_eq(log_limit_total(&l), 1000);
	log_limit_flush(&l, "at the end");
	ck_assert_uint_eq(log_lines_total(), 2);
	ck_assert_uint_eq(log_lines_count("dev 7: 999 more test events at the end "
					  "(last: event 999)"), 1);
	/* Nothing left to summarise: a second flush logs nothing. */
	log_limit_flush(&l, "again");
	ck_assert_uint_eq(log_lines_total(), 2);
	/* A flush closes the burst: the next message is a first again. */
	log_limited(&l, VMM_LOG_WARN, "dev 7", "event %u", 1000);
	ck_assert_uint_eq(log_lines_count("dev 7: event 1000"), 1);
	log_limit_destroy(&l, "at destroy");
	ck_assert_uint_eq(log_lines_total(), 3);
}
END_TEST

/* The summary goes out at the most severe level it counts. */
static int levels[8];

static void level_fn(int level, const char *msg, void *opaque)
{
	(void)opaque;
	if (strstr(msg, "more"))
		levels[level]++;
}

START_TEST(summary_level_is_the_worst)
{
	struct log_limit l;

	memset(levels, 0, sizeof(levels));
	ck_assert_int_eq(vmm_set_log(level_fn, NULL, VMM_LOG_DEBUG), 0);
	fake_init(&l, "x");
	log_limited(&l, VMM_LOG_INFO, "s", "first");
	log_limited(&l, VMM_LOG_INFO, "s", "a");
	log_limited(&l, VMM_LOG_ERROR, "s", "b");
	log_limited(&l, VMM_LOG_WARN, "s", "c");
	log_limit_destroy(&l, "now");
	ck_assert_int_eq(levels[VMM_LOG_ERROR], 1);
	ck_assert_int_eq(levels[VMM_LOG_WARN] + levels[VMM_LOG_INFO], 0);
}
END_TEST

/* A second of quiet ends a burst: log_limit_quiet() (the success path)
 * or the next message logs its summary, and the next message is in full. */
START_TEST(gap_ends_a_burst)
{
	struct log_limit l;

	ck_assert_int_eq(log_lines_start(), 0);
	fake_init(&l, "errors");
	for (unsigned int i = 0; i < 5; i++)
		log_limited(&l, VMM_LOG_WARN, "disk a", "error %u", i);
	fake_ns += LOG_LIMIT_GAP_NS - 1;
	log_limit_quiet(&l); /* too early: nothing */
	ck_assert_uint_eq(log_lines_total(), 1);
	fake_ns += 1;
	log_limit_quiet(&l);
	ck_assert_uint_eq(log_lines_count("disk a: 4 more errors in the burst "
					  "that just ended (last: error 4)"), 1);
	log_limit_quiet(&l);
	ck_assert_uint_eq(log_lines_total(), 2);

	for (unsigned int i = 5; i < 8; i++)
		log_limited(&l, VMM_LOG_WARN, "disk a", "error %u", i);
	ck_assert_uint_eq(log_lines_count("disk a: error 5"), 1);
	ck_assert_uint_eq(log_lines_total(), 3);
	fake_ns += LOG_LIMIT_GAP_NS;
	log_limited(&l, VMM_LOG_WARN, "disk a", "error %u", 8);
	ck_assert_uint_eq(log_lines_count("disk a: 2 more errors in the previous "
					  "burst (last: error 7)"), 1);
	ck_assert_uint_eq(log_lines_count("disk a: error 8"), 1);
	ck_assert_uint_eq(log_lines_total(), 5);
	log_limit_destroy(&l, "x");
	ck_assert_uint_eq(log_lines_total(), 5);
}
END_TEST

/* Per object: one limiter's burst does not silence another's. */
START_TEST(limiters_are_independent)
{
	struct log_limit a, b;

	ck_assert_int_eq(log_lines_start(), 0);
	fake_init(&a, "x");
	fake_init(&b, "x");
	for (unsigned int i = 0; i < 100; i++) {
		log_limited(&a, VMM_LOG_WARN, "A", "m");
		log_limited(&b, VMM_LOG_WARN, "B", "m");
	}
	ck_assert_uint_eq(log_lines_count("A: m"), 1);
	ck_assert_uint_eq(log_lines_count("B: m"), 1);
	log_limit_destroy(&a, "end");
	log_limit_destroy(&b, "end");
	ck_assert_uint_eq(log_lines_sum_more("A", "x"), 99);
	ck_assert_uint_eq(log_lines_sum_more("B", "x"), 99);
}
END_TEST

/* A burst that never pauses: one summary per LOG_LIMIT_REPORT_NS. */
START_TEST(periodic_summary)
{
	struct log_limit l;

	ck_assert_int_eq(log_lines_start(), 0);
	fake_init(&l, "events");
	/* One message every 0.5 s for 60 s: never a gap of 1 s. */
	for (unsigned int i = 0; i < 120; i++) {
		log_limited(&l, VMM_LOG_WARN, "dev", "event %u", i);
		fake_ns += LOG_LIMIT_GAP_NS / 2;
	}
	/* The first in full, then at 10, 20, ... 50 s: 5 summaries. */
	ck_assert_uint_eq(log_lines_count("dev: event 0"), 1);
	ck_assert_uint_eq(log_lines_count("more events so far, still going"), 5);
	log_limit_destroy(&l, "at the end");
	ck_assert_uint_eq(log_lines_total(), 7);
	ck_assert_uint_eq(1 + log_lines_sum_more("dev", "events"), 120);
}
END_TEST

#define THREADS 8
#define PER_THREAD 20000

static void *hammer(void *arg)
{
	struct log_limit *l = arg;

	for (unsigned int i = 0; i < PER_THREAD; i++)
		log_limited(l, VMM_LOG_ERROR, "flood", "message %u", i);
	return NULL;
}

/* 8 threads, 160,000 messages: a bounded number of lines, and every
 * message is either logged in full or counted in a summary. */
START_TEST(threads_count_exactly)
{
	pthread_t th[THREADS];
	struct log_limit l;
	unsigned int lines, full;
	double t0, el;

	ck_assert_int_eq(log_lines_start(), 0);
	log_limit_init(&l, "messages");
	t0 = now_s();
	for (unsigned int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &l), 0);
	for (unsigned int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	log_limit_destroy(&l, "at the end");
	el = now_s() - t0;
	lines = log_lines_total();
	full = log_lines_count("flood: message ");
	printf("log_limit: %u messages from %u threads in %.2f s: %u lines\n",
	       THREADS * PER_THREAD, THREADS, el, lines);
	ck_assert_uint_le(lines, bound_for(el));
	ck_assert_uint_eq(full + log_lines_sum_more("flood", "messages"),
			  (uint64_t)THREADS * PER_THREAD);
}
END_TEST

/* Subjects and texts longer than the buffers are cut, not overrun. */
START_TEST(long_text_truncated)
{
	char big[2048];
	struct log_limit l;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(log_lines_start(), 0);
	fake_init(&l, "long ones");
	log_limited(&l, VMM_LOG_WARN, big, "%s", big);
	log_limited(&l, VMM_LOG_WARN, big, "%s", big);
	log_limit_destroy(&l, "end");
	ck_assert_uint_eq(log_lines_total(), 2);
}
END_TEST

static Suite *log_limit_suite(void)
{
	Suite *s = suite_create("log_limit");
	TCase *tc = tcase_create("log_limit");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, first_in_full_then_one_summary);
	tcase_add_test(tc, summary_level_is_the_worst);
	tcase_add_test(tc, gap_ends_a_burst);
	tcase_add_test(tc, limiters_are_independent);
	tcase_add_test(tc, periodic_summary);
	tcase_add_test(tc, threads_count_exactly);
	tcase_add_test(tc, long_text_truncated);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_limit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
