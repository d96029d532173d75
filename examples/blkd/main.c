/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd: a vhost-user-blk back end built from libvmm's own pieces:
 * the virtio-blk device (devices/blk: request parsing, the io_uring engine,
 * EVENT_IDX), its I/O threads (libvmm/core/iothread.c: one io_uring each, kick
 * eventfds polled in the ring, SCHED_BATCH), and the vhost-user transport
 * (devices/vhost-user) in place of virtio-pci.
 *
 * Threads: this main thread is the control thread (listening socket, one
 * front end's messages at a time, signals through a signalfd); the
 * "vmm-ioN" I/O threads serve the rings.  Both run under seccomp-bpf
 * allow-lists (libvmm/core/sandbox.c: "vhost" here, "io" there) from before
 * the first connection, and the I/O threads' rings are restricted
 * (registered files only) as in the VMM.
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
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "blkd-cli.h"
#include "iothread.h"
#include "log.h"
#include "nbfd.h"
#include "sandbox.h"
#include "vhost-user/vu-backend.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_BUILD 1
#endif
#endif
#ifndef SANITIZER_BUILD
#define SANITIZER_BUILD 0
#endif

/* Ring entries per I/O thread, as the VMM's (machine.c). */
#define BLKD_RING_ENTRIES 256

struct blkd {
	struct blkd_opts o;
	struct iothread **io;
	unsigned int nio;
	struct vblk_dev *dev;
	struct vu_backend *vu;
	struct sandbox *sb;
	int listen_fd, sig_fd;
	struct nbfd out; /* stdout, for --stats-json: never blocks (nbfd.h) */
	/* --stats-json's line, sized at start-up for every queue (the
	 * control thread formats it under seccomp). */
	char *stats_buf;
	size_t stats_len;
};

/* The longest per-queue entry of --stats-json: four 20-digit counters. */
#define BLKD_STATS_PER_QUEUE 160

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

/* Bind and listen on @path; a stale socket there is replaced, anything
 * else is not touched.  Returns the fd or -1 (logged). */
static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			vmm_err("--socket %s exists and is not a socket", path);
			return -1;
		}
		unlink(path); /* a previous daemon's (or front end's) */
	}
	strcpy(sa.sun_path, path); /* length checked by blkd_parse() */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 1) < 0) {
		vmm_err("--socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int confine_io(void *opaque)
{
	return sandbox_install(opaque, SANDBOX_CLASS_IO);
}

static int setup(struct blkd *d)
{
	const struct vmm_disk_config *c = &d->o.disk.cfg;
	struct vblk_options vo = {
		.path = c->path,
		.fd = -1,
		.flags = c->flags,
		.num_queues = c->num_queues,
		.queue_size = c->queue_size,
		.serial = c->serial,
	};
	struct vblk_dev_params dp = { .poll_us = c->poll_us };
	struct vu_backend_params vp = { .ops = vblk_dev_ops(), .name = c->path };
	struct vblk *blk;
	int ret;

	ret = vblk_open(&vo, &blk);
	if (ret) {
		vmm_err("--disk %s: cannot open the image: %s", c->path,
			strerror(-ret));
		return ret;
	}
	d->io = calloc(d->o.iothreads, sizeof(*d->io));
	if (!d->io) {
		vblk_close(blk);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < d->o.iothreads; i++) {
		ret = iothread_create(i, BLKD_RING_ENTRIES, &d->io[i]);
		if (ret) {
			vblk_close(blk);
			return ret;
		}
		d->nio++;
		iothread_set_batch(d->io[i], d->o.io_sched == VMM_IOTHREAD_SCHED_BATCH);
		ret = iothread_start(d->io[i]);
		if (ret) {
			vblk_close(blk);
			return ret;
		}
	}
	dp.blk = blk;
	dp.iothreads = d->io;
	dp.nr_iothreads = d->nio;
	ret = vblk_dev_create(&dp, &d->dev);
	if (ret) {
		vblk_close(blk);
		return ret;
	}
	if (d->o.stats_json) {
		d->stats_len = 512 + (size_t)c->num_queues * BLKD_STATS_PER_QUEUE;
		d->stats_buf = malloc(d->stats_len);
		if (!d->stats_buf)
			return -ENOMEM;
	}
	vp.dev = d->dev;
	vp.num_queues = vblk_num_queues(blk);
	vp.max_queue_size = vblk_queue_size(blk);
	ret = vu_backend_create(&vp, &d->vu);
	if (ret)
		return ret;
	d->listen_fd = listen_on(d->o.socket);
	if (d->listen_fd < 0)
		return -EINVAL;
	vmm_info("%s: %llu sectors%s, up to %u queues of up to %u entries, %u I/O threads",
		 c->path, (unsigned long long)vblk_capacity(blk),
		 (c->flags & VMM_DISK_READONLY) ? " read-only" : "",
		 vp.num_queues, vp.max_queue_size, d->nio);
	return 0;
}

/* Seccomp: the I/O threads (on themselves), then this thread. */
static int confine(struct blkd *d)
{
	int ret;

	if (d->o.no_seccomp || SANITIZER_BUILD)
		return 0;
	ret = sandbox_build_classes(VMM_SECCOMP_KILL,
				    (1u << SANDBOX_CLASS_IO) | (1u << SANDBOX_CLASS_VHOST),
				    &d->sb);
	for (unsigned int i = 0; !ret && i < d->nio; i++)
		ret = iothread_call_sync(d->io[i], confine_io, d->sb);
	if (!ret)
		ret = sandbox_install(d->sb, SANDBOX_CLASS_VHOST);
	if (ret)
		vmm_err("seccomp: %s (--no-seccomp runs unconfined)", strerror(-ret));
	return ret;
}

static void teardown(struct blkd *d)
{
	vu_backend_destroy(d->vu);
	/* Stops the queues (none runs after the disconnect) and closes the
	 * image; then the threads go. */
	vblk_dev_destroy(d->dev);
	for (unsigned int i = 0; i < d->nio; i++)
		iothread_stop(d->io[i]);
	for (unsigned int i = 0; i < d->nio; i++)
		iothread_destroy(d->io[i]);
	free(d->io);
	free(d->stats_buf);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	nbfd_close(&d->out);
	sandbox_free(d->sb);
}

/* --stats-json: the device's counters since the start (doorbells: the
 * front end's kick eventfd writes; kicks: the I/O thread wake-ups that
 * served them), one JSON line on stdout after each front end, per queue
 * only those a front end started (of up to 1024 offered), formatted here
 * in the buffer sized at start-up and written with one write(2): the
 * thread runs under seccomp and stdio may need more than write.  Context:
 * the control thread, between front ends or after the last (the I/O
 * threads update the counters with relaxed atomics; a reader between front
 * ends sees them final). */
static void print_stats(struct blkd *d)
{
	char *buf = d->stats_buf;
	size_t n = 0, cap = d->stats_len - 4;
	uint64_t req = 0, kicks = 0, bells = 0, irqs = 0, supp = 0, errs = 0, disc = 0, wz = 0;
	unsigned int nq = d->o.disk.cfg.num_queues;
	bool first = true;
	int err;

#define OUT(...)                                                                \
	do {                                                                    \
		int w_ = snprintf(buf + n, cap - n, __VA_ARGS__);               \
		if (w_ > 0)                                                     \
			n = n + (size_t)w_ >= cap ? cap : n + (size_t)w_;       \
	} while (0)
	OUT("{\"blkd\":{\"queues\":[");
	for (unsigned int q = 0; q < nq; q++) {
		struct vblk_dev_queue_stats st;
		uint64_t r = 0;

		if (vblk_dev_queue_stats(d->dev, q, &st) || !st.started)
			continue;
		for (unsigned int t = 0; t < VBLK_STAT_NR; t++)
			r += st.blk.reqs[t];
		req += r;
		kicks += st.kicks;
		bells += st.doorbells;
		irqs += st.interrupts;
		supp += st.suppressed;
		errs += st.blk.io_errors;
		disc += st.blk.reqs[VBLK_STAT_DISCARD];
		wz += st.blk.reqs[VBLK_STAT_WRITE_ZEROES];
		OUT("%s{\"q\":%u,\"requests\":%llu,\"doorbells\":%llu,\"kicks\":%llu,"
		    "\"interrupts\":%llu}",
		    first ? "" : ",", q, (unsigned long long)r,
		    (unsigned long long)st.doorbells, (unsigned long long)st.kicks,
		    (unsigned long long)st.interrupts);
		first = false;
	}
	OUT("],\"requests\":%llu,\"doorbells\":%llu,\"kicks\":%llu,\"interrupts\":%llu,"
	    "\"suppressed\":%llu,\"io_errors\":%llu,\"discards\":%llu,"
	    "\"write_zeroes\":%llu}}",
	    (unsigned long long)req, (unsigned long long)bells,
	    (unsigned long long)kicks,
	    (unsigned long long)irqs, (unsigned long long)supp,
	    (unsigned long long)errs, (unsigned long long)disc,
	    (unsigned long long)wz);
#undef OUT
	buf[n++] = '\n';
	/* stdout may be the pipe stderr is on, stalled: a reader that keeps
	 * reading gets the line, one that takes nothing for a second loses
	 * it, and the front end after it is served all the same. */
	if (nbfd_write_all(&d->out, buf, n, 1000, &err) != n)
		vmm_warn("--stats-json: counters line not written: %s",
			 strerror(err == -EAGAIN ? ETIMEDOUT : -err));
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
			vmm_err("poll: %s", strerror(errno));
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
				vmm_warn("accept: %s", strerror(errno));
			continue;
		}
		vmm_info("front end connected");
		ret = vu_backend_serve(d->vu, conn, d->sig_fd);
		close(conn);
		if (d->o.stats_json)
			print_stats(d);
		if (ret == -ESHUTDOWN) {
			/* The signal is still queued: the next poll reads it. */
			vmm_info("front end disconnected: stopping");
			continue;
		}
		vmm_info("front end disconnected%s; waiting for the next one",
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
	nbfd_open(STDOUT_FILENO, O_WRONLY, &d.out); /* before any confinement */
	/* Before any thread exists, so that every thread inherits the mask
	 * and the signals only ever reach the signalfd. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) ||
	    (d.sig_fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		vmm_err("signalfd: %s", strerror(errno));
		nbfd_close(&d.out);
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
	vmm_info("signal %d: stopping", sig);
	teardown(&d);
	blkd_free(&d.o);
	return 0;
}
