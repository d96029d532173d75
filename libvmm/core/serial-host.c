/* SPDX-License-Identifier: MIT */
/* Host side of the serial console: bounded, non-blocking (see serial-host.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "serial-host.h"
#include "log.h"
#include "nbfd.h"
#include "sandbox.h"
#include "thread.h"

/* Seconds between two "output stalled" warnings. */
#define SERIAL_HOST_WARN_INTERVAL 10

struct serial_host {
	struct serial_host_params p;
	struct nbfd in, out; /* the embedder's fds, non-blocking (nbfd.h) */
	int stop_efd; /* serial_host_stop() -> thread */
	int wake_efd; /* serial_host_write() -> thread: output queued, or dropped */
	pthread_t thread;
	bool started;

	/*
	 * lock protects the output ring (buf, head, count), wake_pending,
	 * drop_pending, out_dead and the counters.  Taken by serial_host_write()
	 * (vCPU threads, with the UART's lock held: the UART's lock is
	 * always the outer one), the console thread and the stats reader;
	 * never held across a system call other than the eventfd write.
	 */
	pthread_mutex_t lock;
	uint8_t *buf;
	size_t head, count;
	/* The thread will look at the ring without another wake-up: set by
	 * the writer that wakes it, cleared by the thread when it found the
	 * ring empty.  So a stalled reader costs one wake-up, not one per
	 * byte. */
	bool wake_pending;
	/* Bytes were dropped since the thread last reported it: the writer
	 * wakes the thread once per stall so that it logs at once. */
	bool drop_pending;
	bool out_dead; /* out_fd failed for good: everything is dropped */
	struct serial_host_stats st;
	/*
	 * Held by the console thread across push_input() and the bytes_in
	 * update that follows it, and by serial_host_get_stats() around its
	 * copy: the bytes are the guest's to read as soon as the device has
	 * them, so without it a reader that saw them could still read the
	 * old count.  Order: in_lock, then the device's lock (inside
	 * push_input()), then lock; no writer path takes it.
	 */
	pthread_mutex_t in_lock;

	/* Console thread only. */
	bool out_blocked;     /* last write would block: wait for POLLOUT */
	bool stall_warned;    /* this stall was reported */
	bool warned_once;
	time_t last_warn;     /* CLOCK_MONOTONIC seconds */
};

/* Prepare the embedder's @fd for non-blocking use (nbfd.h).  Context:
 * vmm_start(), before confinement (the reopen is an open()). */
static void serial_host_open_end(const char *what, int fd, int acc,
			     struct nbfd *e)
{
	int err = nbfd_open(fd, acc, e);

	if (err)
		vmm_dbg("console %s fd %d: cannot reopen it non-blocking (%s); "
			"using it after poll()", what, fd, strerror(err));
}

int serial_host_create(const struct serial_host_params *p, struct serial_host **out)
{
	struct serial_host *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->p = *p;
	c->stop_efd = -1;
	c->wake_efd = -1;
	c->in.fd = -1;
	c->out.fd = -1;
	ret = -pthread_mutex_init(&c->lock, NULL);
	if (ret) {
		free(c);
		return ret;
	}
	ret = -pthread_mutex_init(&c->in_lock, NULL);
	if (ret) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return ret;
	}
	if (p->out_fd >= 0) {
		c->buf = malloc(SERIAL_HOST_OUT_BUF);
		if (!c->buf) {
			ret = -ENOMEM;
			goto err;
		}
	}
	c->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->wake_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->stop_efd < 0 || c->wake_efd < 0) {
		ret = -errno;
		goto err;
	}
	serial_host_open_end("input", p->in_fd, O_RDONLY, &c->in);
	serial_host_open_end("output", p->out_fd, O_WRONLY, &c->out);
	*out = c;
	return 0;
err:
	serial_host_destroy(c);
	return ret;
}

/* Context: any thread.  Caller holds no console lock. */
static void serial_host_wake(struct serial_host *c)
{
	uint64_t one = 1;

	/* Cannot fail but for a counter overflow, which a pending wake-up
	 * makes harmless. */
	if (write(c->wake_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		vmm_dbg("console wake-up: %s", strerror(errno));
}

void serial_host_write(struct serial_host *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t n, tail, first;
	bool wake = false;

	if (!c || !c->buf || !len)
		return;
	pthread_mutex_lock(&c->lock);
	/*
	 * Fast path, as when the UART wrote straight to the fd: nothing is
	 * queued (so nothing can be overtaken: the thread writes only while
	 * count > 0) and the fd never blocks.  What it does not take now
	 * (EAGAIN, a short write, an error the thread will report) is
	 * queued.
	 */
	if (!c->count && !c->out_dead && !nbfd_polled(&c->out)) {
		ssize_t w = nbfd_write(&c->out, p, len);

		if (w > 0) {
			c->st.bytes_out += (uint64_t)w;
			p += w;
			len -= (size_t)w;
		}
		if (!len) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
	}
	n = c->out_dead ? 0 : MIN(len, SERIAL_HOST_OUT_BUF - c->count);
	if (n < len) {
		c->st.bytes_dropped += len - n;
		if (!c->drop_pending && !c->out_dead) {
			c->drop_pending = true;
			wake = true;
		}
	}
	if (n) {
		tail = (c->head + c->count) % SERIAL_HOST_OUT_BUF;
		first = MIN(n, SERIAL_HOST_OUT_BUF - tail);
		memcpy(c->buf + tail, p, first);
		memcpy(c->buf, p + first, n - first);
		c->count += n;
		if (!c->wake_pending) {
			c->wake_pending = true;
			wake = true;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (wake)
		serial_host_wake(c);
}

/* Context: console thread.  Output failed for good (reader gone, I/O
 * error): say so once, drop what is queued and everything after. */
static void serial_host_out_failed(struct serial_host *c, int err)
{
	vmm_warn("console output failed (%s); dropping guest output from now on",
		 strerror(err));
	pthread_mutex_lock(&c->lock);
	c->out_dead = true;
	c->st.bytes_dropped += c->count;
	c->count = 0;
	c->head = 0;
	pthread_mutex_unlock(&c->lock);
}

/*
 * Write queued output until the ring is empty or the fd would block.
 * @ready: poll() just reported the fd writable (needed for an nbfd_polled()
 * fd, which then gets one chunk).  Context: console thread.
 */
static void serial_host_flush(struct serial_host *c, bool ready)
{
	for (;;) {
		size_t n;
		ssize_t w;

		if (nbfd_polled(&c->out) && !ready) {
			/* Blocking description: one chunk per POLLOUT
			 * (nbfd_write() bounds it). */
			pthread_mutex_lock(&c->lock);
			c->out_blocked = c->count > 0;
			pthread_mutex_unlock(&c->lock);
			return;
		}
		pthread_mutex_lock(&c->lock);
		if (!c->count || c->out_dead) {
			/* Empty: the next serial_host_write() wakes us. */
			c->wake_pending = false;
			c->out_blocked = false;
			pthread_mutex_unlock(&c->lock);
			return;
		}
		/* Single consumer: the bytes stay in the ring (the writer only
		 * appends) until committed below. */
		n = MIN(c->count, SERIAL_HOST_OUT_BUF - c->head);
		pthread_mutex_unlock(&c->lock);
		w = nbfd_write(&c->out, c->buf + c->head, n);
		if (w == -EAGAIN) {
			c->out_blocked = true;
			return;
		}
		if (w < 0) {
			serial_host_out_failed(c, (int)-w);
			return;
		}
		pthread_mutex_lock(&c->lock);
		c->head = (c->head + (size_t)w) % SERIAL_HOST_OUT_BUF;
		c->count -= (size_t)w;
		c->st.bytes_out += (uint64_t)w;
		pthread_mutex_unlock(&c->lock);
		ready = false;
	}
}

/* Context: console thread.  Log a stall (at most every
 * SERIAL_HOST_WARN_INTERVAL seconds) and the end of one that was logged. */
static void serial_host_report(struct serial_host *c)
{
	bool dropping, empty;
	uint64_t dropped;
	struct timespec ts;
	time_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec;

	pthread_mutex_lock(&c->lock);
	dropping = c->drop_pending;
	empty = !c->count;
	dropped = c->st.bytes_dropped;
	if (dropping && empty && !c->out_dead)
		c->drop_pending = false; /* drained: the next drop is news */
	pthread_mutex_unlock(&c->lock);
	if (c->out_dead)
		return;
	if (dropping && !empty && !c->stall_warned &&
	    (!c->warned_once || now - c->last_warn >= SERIAL_HOST_WARN_INTERVAL)) {
		vmm_warn("console output stalled: the console fd takes no more "
			 "and the %u KiB buffer is full; dropping guest output "
			 "(%" PRIu64 " bytes so far)", SERIAL_HOST_OUT_BUF >> 10, dropped);
		c->stall_warned = true;
		c->warned_once = true;
		c->last_warn = now;
	} else if (dropping && empty && c->stall_warned) {
		vmm_info("console output resumed (%" PRIu64 " bytes dropped so far)",
			 dropped);
		c->stall_warned = false;
	}
}

/* Context: console thread.  Last flush at stop, bounded in time. */
static void serial_host_final_flush(struct serial_host *c)
{
	struct timespec t0, t;
	bool ready = false;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = c->out.fd, .events = POLLOUT };
		long left;
		size_t count;

		serial_host_flush(c, ready);
		pthread_mutex_lock(&c->lock);
		count = c->out_dead ? 0 : c->count;
		pthread_mutex_unlock(&c->lock);
		if (!count)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = SERIAL_HOST_FLUSH_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
					   (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		ready = poll(&pfd, 1, (int)left) > 0 && (pfd.revents & POLLOUT);
		if (!ready && !(pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
			continue; /* timed out or EINTR: the clock decides */
		if (!ready) {
			serial_host_flush(c, true); /* collect the error */
			break;
		}
	}
	pthread_mutex_lock(&c->lock);
	c->st.bytes_dropped += c->count;
	c->count = 0;
	c->head = 0;
	pthread_mutex_unlock(&c->lock);
}

/* Read what input is available.  Returns the bytes read, 0 if none now;
 * sets *eof when input has ended for good.  Context: console thread. */
static size_t serial_host_read_input(struct serial_host *c, uint8_t *buf, size_t len,
				 bool *eof)
{
	ssize_t r = read(c->in.fd, buf, len);

	if (r > 0)
		return (size_t)r;
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r < 0)
		vmm_dbg("console input: %s; no more input", strerror(errno));
	*eof = true; /* EOF: no more input, ever */
	return 0;
}

/* Context: console thread ("vmm-console"). */
static void *serial_host_thread(void *arg)
{
	struct serial_host *c = arg;
	uint8_t in[64];
	size_t have = 0, off = 0;
	bool in_eof = c->in.fd < 0;

	pthread_setname_np(pthread_self(), "vmm-console");
	if (sandbox_install(c->p.seccomp, SANDBOX_CLASS_CONSOLE)) {
		vmm_err("seccomp: cannot confine the console thread");
		if (c->p.failed)
			c->p.failed(c->p.opaque);
		return NULL;
	}
	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = c->stop_efd, .events = POLLIN },
			{ .fd = c->wake_efd, .events = POLLIN },
		};
		int nfds = 2, in_i = -1, out_i = -1, n;
		bool out_ready = false;

		if (!in_eof && !have) {
			in_i = nfds;
			pfd[nfds++] = (struct pollfd){ .fd = c->in.fd, .events = POLLIN };
		}
		if (c->out_blocked) {
			out_i = nfds;
			pfd[nfds++] = (struct pollfd){ .fd = c->out.fd, .events = POLLOUT };
		}
		/* With input held back (the device's FIFO is full), only wait
		 * a little for the guest to drain it. */
		n = poll(pfd, (nfds_t)nfds, have ? 5 : -1);
		if (n < 0 && errno != EINTR) {
			vmm_err("console thread: poll: %s", strerror(errno));
			break;
		}
		if (n < 0)
			continue;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents) {
			uint64_t v;

			if (read(c->wake_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				vmm_dbg("console wake-up: %s", strerror(errno));
		}
		if (in_i >= 0 && pfd[in_i].revents) {
			have = serial_host_read_input(c, in, sizeof(in), &in_eof);
			off = 0;
		}
		if (have) {
			size_t done;

			pthread_mutex_lock(&c->in_lock);
			done = c->p.push_input(c->p.opaque, in + off, have);
			pthread_mutex_lock(&c->lock);
			c->st.bytes_in += done;
			pthread_mutex_unlock(&c->lock);
			pthread_mutex_unlock(&c->in_lock);
			off += done;
			have -= done;
		}
		/* POLLERR/POLLHUP count as ready: write() says what it is. */
		if (out_i >= 0 && pfd[out_i].revents)
			out_ready = true;
		if (c->out.fd >= 0)
			serial_host_flush(c, out_ready);
		serial_host_report(c);
	}
	if (c->out.fd >= 0)
		serial_host_final_flush(c);
	return NULL;
}

int serial_host_start(struct serial_host *c)
{
	int ret;

	if (c->started || (c->in.fd < 0 && c->out.fd < 0))
		return 0;
	ret = thread_spawn(&c->thread, serial_host_thread, c);
	if (ret)
		return ret;
	c->started = true;
	return 0;
}

void serial_host_stop(struct serial_host *c)
{
	uint64_t one = 1, dropped;

	if (!c || !c->started)
		return;
	if (write(c->stop_efd, &one, sizeof(one)) < 0)
		vmm_warn("stopping the console thread: %s", strerror(errno));
	/* Bounded: the thread never blocks in read()/write() and its final
	 * flush gives up after SERIAL_HOST_FLUSH_MS. */
	pthread_join(c->thread, NULL);
	c->started = false;
	pthread_mutex_lock(&c->lock);
	dropped = c->st.bytes_dropped;
	pthread_mutex_unlock(&c->lock);
	if (dropped)
		vmm_warn("console: %" PRIu64 " bytes of guest output were dropped "
			 "(the console fd did not take them in time)", dropped);
}

void serial_host_destroy(struct serial_host *c)
{
	if (!c)
		return;
	serial_host_stop(c);
	nbfd_close(&c->in);
	nbfd_close(&c->out);
	if (c->stop_efd >= 0)
		close(c->stop_efd);
	if (c->wake_efd >= 0)
		close(c->wake_efd);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->in_lock);
	free(c->buf);
	free(c);
}

void serial_host_get_stats(struct serial_host *c, struct serial_host_stats *st)
{
	pthread_mutex_lock(&c->in_lock);
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->in_lock);
}
