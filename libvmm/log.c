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
