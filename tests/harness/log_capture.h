/* Captures libvmm's log messages for tests that assert on them. */
#ifndef VMM_TESTS_LOG_CAPTURE_H
#define VMM_TESTS_LOG_CAPTURE_H

/* Empty the buffer and route every message (up to debug) into it.
 * Returns vmm_set_log()'s result. */
int log_capture_start(void);
/* Route messages into the buffer again, keeping what it holds. */
int log_capture_attach(void);
/* How many times @needle occurs in what was captured since the start. */
unsigned int log_capture_count(const char *needle);

#endif
