/* SPDX-License-Identifier: MIT */
/* Library logging: routed to the vmm_set_log() callback or stderr. */
#ifndef VMM_LOG_H
#define VMM_LOG_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

void vmm_logf(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * (Re)prepare the default sink's way to standard error (log.c): done by
 * vmm_set_log() and vmm_create() on the embedder's thread, and by every
 * thread before it confines itself (sandbox.c), so that a confined thread
 * never needs the open() and fstat() it takes.  Cheap when fd 2 is still
 * the file it was.  Context: a thread that is not seccomp-confined.
 */
void log_prepare_stderr(void);
/*
 * Write @buf to standard error without blocking, or waiting at most
 * @timeout_ms whenever it takes nothing (vmm_log_write()).
 * Async-signal-safe once prepared (the SIGSYS handler uses it).
 */
int log_write_stderr(const char *buf, size_t len, int timeout_ms);

#define vmm_err(...) vmm_logf(VMM_LOG_ERROR, __VA_ARGS__)
#define vmm_warn(...) vmm_logf(VMM_LOG_WARN, __VA_ARGS__)
#define vmm_info(...) vmm_logf(VMM_LOG_INFO, __VA_ARGS__)
#define vmm_dbg(...) vmm_logf(VMM_LOG_DEBUG, __VA_ARGS__)

/*
 * Rate limiting for messages a guest (or anything else outside our control)
 * can trigger as often as it likes: a reset loop, a ring it breaks on
 * purpose every cycle, an interrupt KVM refuses, a host disk that fails
 * every request.  One struct log_limit per object and kind of message (no
 * global state: two VMs, or two disks, never share one).
 *
 * A burst of messages through one limiter is logged as
 *  - its first message, in full: "<subject>: <text>";
 *  - then nothing but a count, until a summary line
 *        "<subject>: N more <noun> <when> (last: <text of the last one>)"
 *    at the first message (or log_limit_quiet() call) LOG_LIMIT_GAP_NS
 *    or more after the burst's last message ("in the previous burst" /
 *    "in the burst that just ended"), every LOG_LIMIT_REPORT_NS while the
 *    burst lasts ("so far, still going"), and at log_limit_flush().
 * So a message source that never stops costs at most one line per
 * LOG_LIMIT_REPORT_NS, and one that pauses for a second at least 1 s
 * between lines.  The summary goes out at the most severe level among the
 * messages it counts.
 *
 * Thread-safe: a mutex per limiter, held only to update the counters and
 * copy text; messages are delivered (vmm_logf) after it is dropped, so a
 * slow vmm_log_fn never stalls another thread on the limiter longer than
 * a copy.  log_limit_quiet() is one relaxed load while no burst is open.
 */
#define LOG_LIMIT_GAP_NS 1000000000ull     /* a burst ends after 1 s quiet */
#define LOG_LIMIT_REPORT_NS 10000000000ull /* summary every 10 s meanwhile */
#define LOG_LIMIT_SUBJECT 96
#define LOG_LIMIT_TEXT 384

struct log_limit {
	const char *noun;	/* "I/O errors": static, set by init */
	pthread_mutex_t lock;	/* protects everything below */
	bool open;		/* a burst is open; atomic loads outside the lock */
	int level;		/* most severe level counted in this burst */
	uint64_t suppressed;	/* messages counted, not logged, in this burst */
	uint64_t last_ns;	/* CLOCK_MONOTONIC of the burst's last message */
	uint64_t report_ns;	/* of the last line logged for this burst */
	uint64_t total;		/* every message ever passed in (tests) */
	uint64_t (*clock)(void *opaque); /* NULL: CLOCK_MONOTONIC (tests) */
	void *clock_opaque;
	char subject[LOG_LIMIT_SUBJECT]; /* of the last counted message */
	char text[LOG_LIMIT_TEXT];
};

/* @noun names the messages in summaries ("I/O errors"); it must outlive
 * the limiter (a string literal). */
void log_limit_init(struct log_limit *l, const char *noun);
/* log_limit_flush(@l, @when) and free what init made. */
void log_limit_destroy(struct log_limit *l, const char *when);

/*
 * Log "<@subject>: <@fmt ...>" at @level through @l (see above).
 * Context: any thread.
 */
void log_limited(struct log_limit *l, int level, const char *subject,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void log_vlimited(struct log_limit *l, int level, const char *subject,
		  const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

/* Things went well: close a burst whose last message is LOG_LIMIT_GAP_NS
 * old (its summary goes out now).  Cheap while no burst is open. */
void log_limit_quiet(struct log_limit *l);
/* Log the summary of what @l counted so far, if anything ("N more <noun>
 * @when"), and close the burst. */
void log_limit_flush(struct log_limit *l, const char *when);
/* Messages passed through @l since init, logged or not. */
uint64_t log_limit_total(struct log_limit *l);
/* Tests: read time (ns) from @clock(@opaque) instead of CLOCK_MONOTONIC.
 * Call before the limiter is shared. */
void log_limit_set_clock(struct log_limit *l, uint64_t (*clock)(void *opaque),
			 void *opaque);

#endif
