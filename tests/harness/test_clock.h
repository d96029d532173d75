/* SPDX-License-Identifier: MIT */
/*
 * The tests' clock: milliseconds on CLOCK_MONOTONIC, for deadlines and
 * for measuring how long something took (never asserted as a timing
 * beyond "it did not hang").  Any thread.
 */
#ifndef VMM_TESTS_TEST_CLOCK_H
#define VMM_TESTS_TEST_CLOCK_H

#include <stdint.h>

/* Whole milliseconds. */
uint64_t test_now_ms(void);
/* Milliseconds with the sub-millisecond part. */
double test_now_ms_f(void);

#endif
