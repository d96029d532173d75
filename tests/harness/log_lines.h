/* SPDX-License-Identifier: MIT */
/*
 * Records every libvmm log line (no size limit, unlike log_capture.h) for
 * tests that count lines: floods, rate limits and their "N more"
 * summaries.  Thread-safe (messages come from any VMM thread).
 */
#ifndef VMM_TESTS_LOG_LINES_H
#define VMM_TESTS_LOG_LINES_H

#include <stdint.h>

/* Forget what was recorded and route every message (up to debug) here. */
int log_lines_start(void);
/* Lines recorded since the start. */
unsigned int log_lines_total(void);
/* Lines that contain @needle. */
unsigned int log_lines_count(const char *needle);
/*
 * Over the lines that contain @prefix followed by ": N more @noun" (the
 * summaries of log.h's rate limiter for a subject; @noun NULL: any), the
 * sum of N.
 */
uint64_t log_lines_sum_more(const char *prefix, const char *noun);
/* Print every line to stderr (for a failing test's diagnosis). */
void log_lines_dump(unsigned int max);

#endif
