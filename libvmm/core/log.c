/* SPDX-License-Identifier: MIT */
/*
 * Logging is the one process-wide setting of the library (like libkrun's
 * krun_set_log_level): a sink shared by every VM.  A mutex guards the
 * (fn, opaque, level) triple; messages are formatted and delivered outside
 * it, from a copy, so a slow callback never blocks another thread's
 * vmm_set_log().
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_log_fn sink_fn;	       /* NULL: stderr */
static void *sink_opaque;
static int sink_level = VMM_LOG_WARN; /* read without the lock as a filter */

int vmm_set_log(vmm_log_fn fn, void *opaque, int level)
{
	if (level < VMM_LOG_ERROR || level > VMM_LOG_DEBUG)
		return -EINVAL;
	pthread_mutex_lock(&sink_lock);
	sink_fn = fn;
	sink_opaque = opaque;
	__atomic_store_n(&sink_level, level, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sink_lock);
	return 0;
}

/*
 * The default sink: one write(2) of "libvmm: MSG\n" to fd 2, not stdio.
 * It runs on seccomp-confined threads, and a buffered stderr's first
 * output would fstat() the fd (on no allow-list but control's); one write
 * also keeps lines from different threads whole.
 */
static void log_stderr(const char *msg)
{
	char line[sizeof("libvmm: ") + 512 + 1];
	size_t len = (size_t)snprintf(line, sizeof(line), "libvmm: %s\n", msg);
	size_t off = 0;

	if (len >= sizeof(line)) { /* cut: keep the newline */
		len = sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	while (off < len) {
		ssize_t n = write(STDERR_FILENO, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
}

void vmm_logf(int level, const char *fmt, ...)
{
	vmm_log_fn fn;
	void *opaque;
	char buf[512];
	va_list ap;
	int saved = errno;

	/* Cheap early filter; the level is re-checked under the lock. */
	if (level > __atomic_load_n(&sink_level, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&sink_lock);
	fn = sink_fn;
	opaque = sink_opaque;
	if (level > sink_level) {
		pthread_mutex_unlock(&sink_lock);
		return;
	}
	pthread_mutex_unlock(&sink_lock);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (fn)
		fn(level, buf, opaque);
	else
		log_stderr(buf);
	errno = saved;
}

/* ---- rate-limited messages (see log.h) -------------------------------- */

/* Context: l->lock held. */
static uint64_t log_now_ns(const struct log_limit *l)
{
	struct timespec ts;

	if (l->clock)
		return l->clock(l->clock_opaque);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void log_limit_set_clock(struct log_limit *l, uint64_t (*clock)(void *opaque),
			 void *opaque)
{
	l->clock = clock;
	l->clock_opaque = opaque;
}

void log_limit_init(struct log_limit *l, const char *noun)
{
	memset(l, 0, sizeof(*l));
	l->noun = noun ? noun : "messages";
	l->level = VMM_LOG_DEBUG;
	pthread_mutex_init(&l->lock, NULL);
}

/* A line to deliver once the limiter's lock is dropped. */
struct log_line {
	int level; /* -1: none */
	char msg[LOG_LIMIT_SUBJECT + LOG_LIMIT_TEXT + 96];
};

/* The burst's summary into @out (if it counted anything), and start
 * counting afresh.  Lock held. */
static void limit_summary(struct log_limit *l, uint64_t now, const char *when,
			  struct log_line *out)
{
	out->level = -1;
	if (l->suppressed) {
		out->level = l->level;
		snprintf(out->msg, sizeof(out->msg), "%s: %llu more %s %s (last: %s)",
			 l->subject, (unsigned long long)l->suppressed, l->noun,
			 when, l->text);
	}
	l->suppressed = 0;
	l->level = VMM_LOG_DEBUG;
	l->report_ns = now;
}

static void limit_emit(const struct log_line *line)
{
	if (line->level >= 0)
		vmm_logf(line->level, "%s", line->msg);
}

void log_vlimited(struct log_limit *l, int level, const char *subject,
		  const char *fmt, va_list ap)
{
	struct log_line prev = { .level = -1 }, cur = { .level = -1 };
	char text[LOG_LIMIT_TEXT];
	uint64_t now;
	int saved = errno;

	/* Formatted outside the lock: only the copy is serialised. */
	vsnprintf(text, sizeof(text), fmt, ap);
	pthread_mutex_lock(&l->lock);
	/* Read under the lock, so that times only grow from one holder to
	 * the next (a stale "now" would look like a huge gap). */
	now = log_now_ns(l);
	l->total++;
	if (l->open && now - l->last_ns >= LOG_LIMIT_GAP_NS) {
		limit_summary(l, now, "in the previous burst", &prev);
		__atomic_store_n(&l->open, false, __ATOMIC_RELAXED);
	}
	if (!l->open) {
		/* First of a burst: in full. */
		cur.level = level;
		snprintf(cur.msg, sizeof(cur.msg), "%s: %s", subject, text);
		__atomic_store_n(&l->open, true, __ATOMIC_RELAXED);
		l->report_ns = now;
	} else {
		l->suppressed++;
		if (level < l->level)
			l->level = level;
		snprintf(l->subject, sizeof(l->subject), "%s", subject);
		memcpy(l->text, text, sizeof(text));
		if (now - l->report_ns >= LOG_LIMIT_REPORT_NS)
			limit_summary(l, now, "so far, still going", &cur);
	}
	l->last_ns = now;
	pthread_mutex_unlock(&l->lock);
	limit_emit(&prev);
	limit_emit(&cur);
	errno = saved;
}

void log_limited(struct log_limit *l, int level, const char *subject,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlimited(l, level, subject, fmt, ap);
	va_end(ap);
}

void log_limit_quiet(struct log_limit *l)
{
	struct log_line line = { .level = -1 };
	uint64_t now;

	/* Relaxed: a hint; the decision is re-made under the lock, and a
	 * burst missed here is closed by the next message or flush. */
	if (!__atomic_load_n(&l->open, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	now = log_now_ns(l); /* under the lock: see log_vlimited() */
	if (l->open && now - l->last_ns >= LOG_LIMIT_GAP_NS) {
		limit_summary(l, now, "in the burst that just ended", &line);
		__atomic_store_n(&l->open, false, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&l->lock);
	limit_emit(&line);
}

void log_limit_flush(struct log_limit *l, const char *when)
{
	struct log_line line = { .level = -1 };

	pthread_mutex_lock(&l->lock);
	limit_summary(l, log_now_ns(l), when, &line);
	__atomic_store_n(&l->open, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->lock);
	limit_emit(&line);
}

uint64_t log_limit_total(struct log_limit *l)
{
	uint64_t n;

	pthread_mutex_lock(&l->lock);
	n = l->total;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void log_limit_destroy(struct log_limit *l, const char *when)
{
	if (!l->noun)
		return; /* never initialised (zeroed) */
	log_limit_flush(l, when);
	pthread_mutex_destroy(&l->lock);
	l->noun = NULL;
}
