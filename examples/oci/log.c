/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's error reporting: stderr and the --log file.  Neither write
 * ever waits: stderr (a pipe of conmon's that may not be read) is written
 * through libvmm/core/nbfd.c (a private non-blocking reopen, or
 * MSG_DONTWAIT on a socket), and a line it does not take is dropped and
 * counted; the log file is a regular file.  Lines a guest can cause are
 * rate-limited (struct oci_limit).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oci.h"
#include "vmm/vmm.h"

static int log_fd = -1;
static bool log_json, quiet;
static uint64_t err_dropped; /* relaxed atomic: stderr lines not taken */

void oci_log_init(const char *path, bool json)
{
	log_json = json;
	if (path && *path)
		log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

void oci_log_quiet_stderr(bool q)
{
	quiet = q;
}

int oci_log_fd(void)
{
	return log_fd;
}

uint64_t oci_log_stderr_dropped(void)
{
	return __atomic_load_n(&err_dropped, __ATOMIC_RELAXED);
}

uint64_t oci_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* JSON string escaping of @s into @out. */
static void json_escape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = 0;
}

/* One line on stderr, whole or not at all (a line is far below PIPE_BUF),
 * never waiting (libvmm's vmm_log_write(): a private non-blocking
 * description of fd 2, so conmon's pipe keeps its flags). */
static void stderr_line(const char *msg)
{
	char line[2200];
	int n = snprintf(line, sizeof(line), OCI_NAME ": %s\n", msg);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;

	if (len && vmm_log_write(line, len, 0))
		__atomic_fetch_add(&err_dropped, 1, __ATOMIC_RELAXED);
}

static void log_line(const char *level, bool to_stderr, const char *msg)
{
	char line[4608], esc[4200], ts[64];
	struct timespec now;
	struct tm tm;
	int n;

	if (to_stderr && !quiet && !strcmp(level, "error"))
		stderr_line(msg);
	if (log_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	if (log_json) {
		json_escape(msg, esc, sizeof(esc));
		n = snprintf(line, sizeof(line),
			     "{\"level\":\"%s\",\"msg\":\"%s\",\"time\":\"%s.%09ldZ\"}\n",
			     level, esc, ts, now.tv_nsec);
	} else {
		n = snprintf(line, sizeof(line), "%s.%09ldZ %s: %s\n", ts, now.tv_nsec,
			     level, msg);
	}
	if (n > 0 && write(log_fd, line, (size_t)n < sizeof(line) ? (size_t)n
								  : sizeof(line) - 1) < 0)
		return;
}

static void vlog(const char *level, bool to_stderr, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void vlog(const char *level, bool to_stderr, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_line(level, to_stderr, msg);
}

void oci_log(const char *level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, true, fmt, ap);
	va_end(ap);
}

void oci_log_file(const char *level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, false, fmt, ap);
	va_end(ap);
}

/* ---- rate limit -------------------------------------------------------- */

/* The count of what @l suppressed, as one line (lock held by the caller;
 * the line goes out after it is dropped). */
static bool limit_take_summary(struct oci_limit *l, char *msg, size_t len,
			       const char *when)
{
	if (!l->suppressed)
		return false;
	snprintf(msg, len, "%llu more %s %s", (unsigned long long)l->suppressed,
		 l->noun, when);
	l->suppressed = 0;
	return true;
}

void oci_log_limited(struct oci_limit *l, const char *level, bool to_stderr,
		     const char *fmt, ...)
{
	uint64_t now = oci_now_ns();
	char sum[160];
	bool pass, summary = false;
	va_list ap;

	pthread_mutex_lock(&l->lock);
	l->total++;
	if (now - l->window_ns >= OCI_LIMIT_WINDOW_NS || !l->window_ns) {
		l->window_ns = now;
		l->in_window = 0;
	}
	pass = l->in_window < l->burst && l->lines < OCI_LIMIT_LINES;
	if (pass) {
		l->in_window++;
		l->lines++;
		summary = limit_take_summary(l, sum, sizeof(sum), "were suppressed");
	} else {
		l->suppressed++;
	}
	pthread_mutex_unlock(&l->lock);
	if (!pass)
		return;
	if (summary)
		log_line(level, false, sum);
	va_start(ap, fmt);
	vlog(level, to_stderr, fmt, ap);
	va_end(ap);
}

void oci_limit_flush(struct oci_limit *l, const char *level)
{
	char sum[160];
	bool summary;

	pthread_mutex_lock(&l->lock);
	summary = limit_take_summary(l, sum, sizeof(sum), "were suppressed (rate limit)");
	pthread_mutex_unlock(&l->lock);
	if (summary)
		log_line(level, false, sum);
}

uint64_t oci_limit_total(struct oci_limit *l)
{
	uint64_t n;

	pthread_mutex_lock(&l->lock);
	n = l->total;
	pthread_mutex_unlock(&l->lock);
	return n;
}
