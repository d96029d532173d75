/* SPDX-License-Identifier: MIT */
/* Starting a container process in the guest (see process.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "process.h"

void init_msg(const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	va_start(ap, fmt);
	fprintf(stderr, "minivmm-init[%ld.%03ld]: ", (long)ts.tv_sec,
		ts.tv_nsec / 1000000);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void init_write_full(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		b += w;
		n -= (size_t)w;
	}
}

void init_set_winsize(int fd, uint16_t rows, uint16_t cols)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };

	if (rows && cols && ioctl(fd, TIOCSWINSZ, &ws))
		init_msg("TIOCSWINSZ: %s", strerror(errno));
}

void init_child_fail(int pipe_fd, int status, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	text[0] = (char)status;
	vsnprintf(text + 1, sizeof(text) - 1, fmt, ap);
	va_end(ap);
	init_write_full(pipe_fd, text, strlen(text + 1) + 1);
	_exit(status);
}

static void set_rlimits(const struct init_config *c)
{
	for (unsigned int i = 0; i < c->nrlimits; i++) {
		struct rlimit r = { c->rlimits[i].soft, c->rlimits[i].hard };

		if (setrlimit((int)c->rlimits[i].res, &r) == 0)
			continue;
		/* A nofile limit above fs.nr_open: raise nr_open first. */
		if (c->rlimits[i].res == RLIMIT_NOFILE) {
			int fd = open("/proc/sys/fs/nr_open", O_WRONLY | O_CLOEXEC);
			char v[32];

			if (fd >= 0) {
				snprintf(v, sizeof(v), "%llu",
					 (unsigned long long)c->rlimits[i].hard);
				if (write(fd, v, strlen(v)) < 0)
					init_msg("fs.nr_open: %s", strerror(errno));
				close(fd);
			}
			if (setrlimit(RLIMIT_NOFILE, &r) == 0)
				continue;
		}
		init_msg("rlimit %u: %s (ignored)", c->rlimits[i].res, strerror(errno));
	}
}

void init_process_exec(const struct init_config *c, int fd)
{
	char why[300];
	sigset_t all;

	set_rlimits(c);
	umask(c->umask_v);
	if (c->has_caps && init_caps_before_user(c->caps, why, sizeof(why)))
		init_child_fail(fd, 1, "%s", why);
	if (setgroups(c->ngroups, c->groups) || setgid(c->gid) || setuid(c->uid))
		init_child_fail(fd, 1, "setting uid %u gid %u: %s", c->uid, c->gid,
				strerror(errno));
	if (c->has_caps && init_caps_after_user(c->caps, why, sizeof(why)))
		init_child_fail(fd, 1, "%s", why);
	if (chdir(c->cwd))
		init_child_fail(fd, 1, "chdir to cwd (\"%s\") set in config.json failed: %s",
				c->cwd, strerror(errno));
	if (c->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		init_child_fail(fd, 1, "no_new_privs: %s", strerror(errno));
	/* Default signal handling for the process, as a fresh exec has. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	clearenv();
	for (unsigned int i = 0; i < c->nenv; i++)
		putenv(c->env[i]);
	execvp(c->args[0], c->args);
	if (errno == ENOENT)
		init_child_fail(fd, 127, "exec: \"%s\": executable file not found in $PATH",
				c->args[0]);
	init_child_fail(fd, 126, "exec %s: %s", c->args[0], strerror(errno));
}
