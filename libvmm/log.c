/* SPDX-License-Identifier: MIT */
/*
 * Logging is the one process-wide setting of the library (like libkrun's
 * krun_set_log_level): a sink shared by every VM.  The sink is published as
 * one pointer to an immutable record so that a reader on any thread sees a
 * consistent (fn, opaque, level) triple without taking a lock.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

struct log_sink {
	vmm_log_fn fn;
	void *opaque;
	int level;
};

static const struct log_sink default_sink = { NULL, NULL, VMM_LOG_WARN };
/* Old sinks are leaked on purpose: a reader may still hold one, and a
 * program sets its log sink a handful of times at most. */
static const struct log_sink *cur_sink = &default_sink;

int vmm_set_log(vmm_log_fn fn, void *opaque, int level)
{
	struct log_sink *s;

	if (level < VMM_LOG_ERROR || level > VMM_LOG_DEBUG)
		return -EINVAL;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->opaque = opaque;
	s->level = level;
	/* Release: the fields above are visible before the pointer; pairs
	 * with the acquire load in vmm_logf(). */
	__atomic_store_n(&cur_sink, s, __ATOMIC_RELEASE);
	return 0;
}

void vmm_logf(int level, const char *fmt, ...)
{
	/* Pairs with the release store in vmm_set_log(). */
	const struct log_sink *s = __atomic_load_n(&cur_sink, __ATOMIC_ACQUIRE);
	char buf[512];
	va_list ap;
	int saved = errno;

	if (level > s->level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (s->fn)
		s->fn(level, buf, s->opaque);
	else
		fprintf(stderr, "libvmm: %s\n", buf);
	errno = saved;
}
