/* SPDX-License-Identifier: MIT */
/* minivmm-oci's error reporting: stderr and the --log file. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oci.h"

static int log_fd = -1;
static bool log_json, quiet;

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

void oci_log(const char *level, const char *fmt, ...)
{
	char msg[2048], line[4608], esc[4200], ts[64];
	struct timespec now;
	struct tm tm;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!quiet && !strcmp(level, "error"))
		dprintf(2, OCI_NAME ": %s\n", msg);
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
