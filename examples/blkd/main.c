/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd: a vhost-user-blk back end built from libvmm's own pieces
 * (the virtio-blk device, its I/O threads, the vhost-user transport),
 * reached through their one shared header
 * (devices/vhost-user/shared/vhost-user-blk.h).
 *
 * Threads: this main thread is the control thread (listening socket, one
 * front end's messages at a time, signals through a signalfd); the
 * "vmm-ioN" I/O threads serve the rings.  Both run under seccomp-bpf
 * allow-lists from before the first connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>

#include "blkd-cli.h"
#include "sanitizer.h"
#include "vhost-user-blk.h"
#include "unix-listen.h"

struct blkd {
	struct blkd_opts o;
	struct vu_blk *vu;
	int listen_fd, sig_fd;
};

/* Log sink: one non-blocking write per message (vmm_log_write(): a
 * stalled stderr costs the line, never a stuck thread), nothing glibc's
 * stdio might need (the threads run under seccomp). */
static void log_sink(int level, const char *msg, void *opaque)
{
	static const char *const tag[] = { "error: ", "warning: ", "", "" };
	char buf[600];
	int n;

	(void)opaque;
	n = snprintf(buf, sizeof(buf), "minivmm-blkd: %s%s\n",
		     level >= 0 && level <= VMM_LOG_DEBUG ? tag[level] : "", msg);
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	if (n > 0)
		vmm_log_write(buf, (size_t)n, 0);
}

/* The daemon's own messages, through the same sink and level. */
static int say_level = VMM_LOG_WARN;
static void say(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (level > say_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_sink(level, msg, NULL);
}

/* Listen on @path (unix-listen.h: it appears only once the daemon
 * listens; a stale socket there is replaced, anything else is not
 * touched).  Returns the fd or -1 (logged).
 * Context: main thread, before any other thread runs. */
static int listen_on(const char *path)
{
	int fd, ret = unix_listen(path, SOCK_CLOEXEC, 1, -1, &fd);

	if (ret == -EEXIST)
		say(VMM_LOG_ERROR, "--socket %s exists and is not a socket", path);
	else if (ret)
		say(VMM_LOG_ERROR, "--socket %s: %s", path, strerror(-ret));
	return ret ? -1 : fd;
}

static int setup(struct blkd *d)
{
	struct vu_blk_params p = {
		.disk = &d->o.disk.cfg,
		.nr_iothreads = d->o.iothreads,
		.io_sched = d->o.io_sched,
		.stats_fd = d->o.stats_json ? STDOUT_FILENO : -1,
	};
	int ret;

	ret = vu_blk_create(&p, &d->vu);
	if (ret)
		return ret;
	d->listen_fd = listen_on(d->o.socket);
	return d->listen_fd < 0 ? -EINVAL : 0;
}

/* Seccomp: the I/O threads (on themselves), then this thread. */
static int confine(struct blkd *d)
{
	int ret;

	if (d->o.no_seccomp || SANITIZER_BUILD)
		return 0;
	ret = vu_blk_confine(d->vu);
	if (ret)
		say(VMM_LOG_ERROR, "seccomp: %s (--no-seccomp runs unconfined)",
		    strerror(-ret));
	return ret;
}

static void teardown(struct blkd *d)
{
	vu_blk_destroy(d->vu);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	if (d->sig_fd >= 0)
		close(d->sig_fd);
}

/* Serve front ends one after the other until a signal.  Returns the
 * signal number. */
static int serve(struct blkd *d)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = d->listen_fd, .events = POLLIN },
				       { .fd = d->sig_fd, .events = POLLIN } };
		struct signalfd_siginfo si;
		int conn, ret;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			say(VMM_LOG_ERROR, "poll: %s", strerror(errno));
			return SIGTERM;
		}
		if (p[1].revents & POLLIN) {
			if (read(d->sig_fd, &si, sizeof(si)) != sizeof(si))
				return SIGTERM;
			return (int)si.ssi_signo;
		}
		if (!(p[0].revents & POLLIN))
			continue;
		conn = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				say(VMM_LOG_WARN, "accept: %s", strerror(errno));
			continue;
		}
		say(VMM_LOG_INFO, "front end connected");
		ret = vu_blk_serve(d->vu, conn, d->sig_fd);
		close(conn);
		if (d->o.stats_json)
			vu_blk_print_stats(d->vu);
		if (ret == -ESHUTDOWN) {
			/* The signal is still queued: the next poll reads it. */
			say(VMM_LOG_INFO, "front end disconnected: stopping");
			continue;
		}
		say(VMM_LOG_INFO, "front end disconnected%s; waiting for the next one",
			 ret ? " (after an error)" : "");
	}
}

int main(int argc, char **argv)
{
	struct blkd d = { .listen_fd = -1, .sig_fd = -1 };
	char err[256];
	sigset_t set;
	int ret, sig;

	if (blkd_parse(argc, argv, blkd_host_cpus(), &d.o, err, sizeof(err))) {
		fprintf(stderr, "minivmm-blkd: %s\n", err);
		fprintf(stderr, "Try '%s --help'.\n", argv[0]);
		blkd_free(&d.o);
		return 2;
	}
	if (d.o.help || d.o.version) {
		if (d.o.help)
			blkd_usage(argv[0], stdout);
		else
			printf("minivmm-blkd (libvmm) %s\n", VMM_VERSION_STRING);
		blkd_free(&d.o);
		return 0;
	}
	vmm_set_log(log_sink, NULL, d.o.log_level);
	say_level = d.o.log_level;
	/* Before any thread exists, so that every thread inherits the mask
	 * and the signals only ever reach the signalfd. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) ||
	    (d.sig_fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		say(VMM_LOG_ERROR, "signalfd: %s", strerror(errno));
		blkd_free(&d.o);
		return 1;
	}
	ret = setup(&d);
	if (!ret)
		ret = confine(&d);
	if (ret) {
		teardown(&d);
		blkd_free(&d.o);
		return 1;
	}
	if (d.o.log_level > VMM_LOG_ERROR) {
		char ready[512];

		snprintf(ready, sizeof(ready), "ready: %s on %s", d.o.disk.cfg.path,
			 d.o.socket);
		log_sink(VMM_LOG_INFO, ready, NULL);
	}
	sig = serve(&d);
	say(VMM_LOG_INFO, "signal %d: stopping", sig);
	teardown(&d);
	blkd_free(&d.o);
	return 0;
}
