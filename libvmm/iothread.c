/* SPDX-License-Identifier: MIT */
/* Per-vCPU I/O threads on io_uring (see iothread.h). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "iothread.h"
#include "log.h"

struct iothread_call {
	int (*fn)(void *opaque);
	void *opaque;
	int ret;
	bool done;
	struct iothread_call *next;
};

struct iothread {
	unsigned int index;
	struct io_uring ring;
	pthread_t thread;
	bool started;
	bool stop; /* set on the I/O thread by the stop eventfd handler */
	bool submit_error; /* the last submit failed (log once per burst) */
	bool stopped;	   /* joined by iothread_stop(): cannot start again */
	bool restricted; /* ring limited to ring_sqe_ops[] (ring_init) */
	bool batch;	 /* run as SCHED_BATCH (iothread_set_batch) */

	int stop_efd;
	struct iothread_fd stop_w;
	int call_efd;
	struct iothread_fd call_w;

	/* call_lock protects calls and every call's done flag. */
	pthread_mutex_t call_lock;
	pthread_cond_t call_cond;
	struct iothread_call *calls;

	/* Owned by the I/O thread. */
	struct iothread_hook *hooks;
	struct iothread_poller *pollers;
	struct iothread_stats st; /* written by the thread, read relaxed */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool on_thread(struct iothread *io)
{
	return io->started && pthread_equal(pthread_self(), io->thread);
}

unsigned int iothread_index(const struct iothread *io)
{
	return io->index;
}

void iothread_get_stats(struct iothread *io, struct iothread_stats *st)
{
	st->loops = __atomic_load_n(&io->st.loops, __ATOMIC_RELAXED);
	st->cqes = __atomic_load_n(&io->st.cqes, __ATOMIC_RELAXED);
	st->submits = __atomic_load_n(&io->st.submits, __ATOMIC_RELAXED);
	st->poll_hits = __atomic_load_n(&io->st.poll_hits, __ATOMIC_RELAXED);
}

#define STAT_INC(io, f, n) __atomic_store_n(&(io)->st.f, (io)->st.f + (n), __ATOMIC_RELAXED)

struct io_uring_sqe *iothread_get_sqe(struct iothread *io, struct iothread_cb *cb)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

	if (!sqe) {
		/* SQ full: hand what is queued to the kernel and retry. */
		io_uring_submit(&io->ring);
		STAT_INC(io, submits, 1);
		sqe = io_uring_get_sqe(&io->ring);
		if (!sqe)
			return NULL;
	}
	io_uring_sqe_set_data(sqe, cb);
	return sqe;
}

static int iothread_arm(struct iothread *io, struct iothread_fd *w)
{
	struct io_uring_sqe *sqe = iothread_get_sqe(io, &w->cb);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_multishot(sqe, w->fd, POLLIN);
	w->armed = true;
	return 0;
}

/* Context: I/O thread. Multishot poll completion of a watched fd. */
static void iothread_fd_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct iothread_fd *w = container_of(cb, struct iothread_fd, cb);

	if (!(flags & IORING_CQE_F_MORE))
		w->armed = false;
	if (res > 0 && !w->removing)
		/*
		 * No read() of the eventfd: KVM's ioeventfd (eventfd_signal)
		 * wakes the poll on every signal whatever the counter value,
		 * and the counter saturates instead of overflowing, so one
		 * syscall per kick is saved.
		 */
		w->fn(w->opaque);
	if (!w->armed && !w->removing && res != -ECANCELED &&
	    iothread_arm(w->io, w))
		/* The kernel ended the multishot poll (e.g. CQ overflow) and
		 * re-arming failed: kicks on this fd would be lost. */
		vmm_err("iothread %u: cannot re-arm the poll on fd %d",
			w->io->index, w->fd);
}

int iothread_watch_fd(struct iothread *io, struct iothread_fd *w)
{
	w->cb.fn = iothread_fd_cqe;
	w->io = io;
	w->removing = false;
	return iothread_arm(io, w);
}

static bool fd_unwatched(void *opaque)
{
	struct iothread_fd *w = opaque;

	return !w->armed;
}

void iothread_unwatch_fd(struct iothread *io, struct iothread_fd *w)
{
	struct io_uring_sqe *sqe;

	if (!w->armed)
		return;
	w->removing = true;
	/* The remove request's own CQE needs no callback (NULL user_data);
	 * the poll's final CQE (-ECANCELED, no F_MORE) clears w->armed. */
	sqe = iothread_get_sqe(io, NULL);
	if (!sqe) {
		vmm_err("iothread %u: no SQE to remove the poll on fd %d",
			io->index, w->fd);
		return;
	}
	io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)&w->cb);
	iothread_run_until(io, fd_unwatched, w);
}

void iothread_defer(struct iothread *io, struct iothread_hook *h)
{
	if (h->queued)
		return;
	h->queued = true;
	h->next = io->hooks;
	io->hooks = h;
}

void iothread_add_poller(struct iothread *io, struct iothread_poller *p)
{
	p->next = io->pollers;
	io->pollers = p;
}

void iothread_remove_poller(struct iothread *io, struct iothread_poller *p)
{
	for (struct iothread_poller **pp = &io->pollers; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			return;
		}
	}
}

static void iothread_run_hooks(struct iothread *io)
{
	while (io->hooks) {
		struct iothread_hook *h = io->hooks;

		io->hooks = h->next;
		h->queued = false;
		h->fn(h->opaque);
	}
}

/*
 * Dispatch every CQE that is ready; returns how many.  Each CQE is consumed
 * (head advanced) before its callback runs, so a callback may itself run
 * the loop (iothread_run_until() while draining a queue on reset) without
 * the nested reap seeing the same CQEs again.
 */
static unsigned int iothread_reap(struct iothread *io)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0;

	while (io_uring_peek_cqe(&io->ring, &cqe) == 0) {
		struct iothread_cb *cb = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		uint32_t flags = cqe->flags;

		/* The slot may be reused by the kernel once seen: copy first. */
		io_uring_cqe_seen(&io->ring, cqe);
		n++;
		if (cb && cb->fn)
			cb->fn(cb, res, flags);
	}
	STAT_INC(io, cqes, n);
	return n;
}

/* One wait + dispatch round; @wait: block for at least one CQE. */
static void iothread_round(struct iothread *io, bool wait)
{
	int ret = io_uring_submit_and_wait(&io->ring, wait ? 1 : 0);

	STAT_INC(io, submits, 1);
	if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY &&
	    ret != -ETIME) {
		/* Logged once per burst; back off so a persistent error cannot
		 * turn the thread into a busy loop. */
		if (!io->submit_error)
			vmm_err("iothread %u: io_uring_submit_and_wait: %s",
				io->index, strerror(-ret));
		io->submit_error = true;
		usleep(1000);
	} else {
		io->submit_error = false;
	}
	iothread_reap(io);
	iothread_run_hooks(io);
}

void iothread_run_until(struct iothread *io, bool (*done)(void *opaque),
			void *opaque)
{
	while (!done(opaque))
		iothread_round(io, true);
}

/*
 * Busy-poll the registered pollers for up to the largest window before
 * sleeping (QEMU's IOThread polling idea: a few tens of microseconds of
 * spinning beat a sleep/wake-up when requests arrive back to back).
 * Returns true if work was found.
 */
static bool iothread_busy_poll(struct iothread *io)
{
	uint32_t window_us = 0;
	uint64_t deadline;

	for (struct iothread_poller *p = io->pollers; p; p = p->next)
		window_us = MAX(window_us, p->poll_us);
	if (!window_us)
		return false;
	deadline = now_ns() + (uint64_t)window_us * 1000;
	do {
		bool found = false;

		for (struct iothread_poller *p = io->pollers; p; p = p->next)
			if (p->poll_us && p->fn(p->opaque))
				found = true;
		if (found) {
			STAT_INC(io, poll_hits, 1);
			return true;
		}
		if (io_uring_cq_ready(&io->ring))
			return true;
		__builtin_ia32_pause();
	} while (now_ns() < deadline);
	return false;
}

static void iothread_stop_fd(void *opaque)
{
	struct iothread *io = opaque;

	io->stop = true;
}

static void iothread_call_fd(void *opaque)
{
	struct iothread *io = opaque;
	struct iothread_call *c;
	uint64_t cnt;

	if (read(io->call_efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		vmm_warn("iothread %u: reading call eventfd: %s", io->index,
			 strerror(errno));
	pthread_mutex_lock(&io->call_lock);
	c = io->calls;
	io->calls = NULL;
	pthread_mutex_unlock(&io->call_lock);
	while (c) {
		struct iothread_call *next = c->next;
		int ret = c->fn(c->opaque);

		pthread_mutex_lock(&io->call_lock);
		c->ret = ret;
		c->done = true; /* c lives on the caller's stack: last touch */
		pthread_cond_broadcast(&io->call_cond);
		pthread_mutex_unlock(&io->call_lock);
		c = next;
	}
}

static void *iothread_main(void *arg)
{
	struct iothread *io = arg;
	char name[16];

	snprintf(name, sizeof(name), "vmm-io%u", io->index);
	pthread_setname_np(pthread_self(), name);
	if (io->batch) {
		struct sched_param sp = { .sched_priority = 0 };

		/*
		 * SCHED_BATCH: no wake-up preemption.  Kicks arrive from a
		 * vCPU that keeps running; preempting it per kick turns every
		 * request into its own kick, wake-up and interrupt when both
		 * share a CPU (nested rig, one CPU: 2.0 notifications per
		 * request at iodepth 32, 0.07 as SCHED_BATCH).  Unprivileged;
		 * before any seccomp filter.  Failure costs only performance.
		 */
		if (sched_setscheduler(0, SCHED_BATCH, &sp))
			vmm_warn("iothread %u: SCHED_BATCH: %s", io->index,
				 strerror(errno));
	}
	while (!io->stop) {
		bool work = iothread_busy_poll(io);

		STAT_INC(io, loops, 1);
		iothread_round(io, !work);
	}
	return NULL;
}

int iothread_call_sync(struct iothread *io, int (*fn)(void *opaque), void *opaque)
{
	struct iothread_call c = { .fn = fn, .opaque = opaque };
	uint64_t one = 1;

	if (!io->started || on_thread(io))
		return fn(opaque);
	pthread_mutex_lock(&io->call_lock);
	c.next = io->calls;
	io->calls = &c;
	pthread_mutex_unlock(&io->call_lock);
	if (write(io->call_efd, &one, sizeof(one)) < 0)
		vmm_err("iothread %u: waking for a call: %s", io->index,
			strerror(errno));
	pthread_mutex_lock(&io->call_lock);
	while (!c.done)
		pthread_cond_wait(&io->call_cond, &io->call_lock);
	pthread_mutex_unlock(&io->call_lock);
	return c.ret;
}

/*
 * The SQE opcodes the I/O threads submit: POLL_ADD/POLL_REMOVE (watched
 * fds), READV/WRITEV/FSYNC/FALLOCATE/NOP (the block backend).  A new
 * opcode, an IOSQE_* flag or a registration (io_uring_register) must be
 * added here, or its SQEs complete with -EACCES.
 */
static const uint8_t ring_sqe_ops[] = {
	IORING_OP_NOP, IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC,
	IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE, IORING_OP_FALLOCATE,
};

/*
 * Restrict a ring created with IORING_SETUP_R_DISABLED to ring_sqe_ops[]
 * (no SQE flags, no registrations), as Firecracker does, then enable it:
 * io_uring requests are not subject to seccomp, so without this a
 * compromised thread could open files or sockets through its own ring.
 */
static int ring_restrict(struct io_uring *ring)
{
	struct io_uring_restriction r[sizeof(ring_sqe_ops)];

	memset(r, 0, sizeof(r));
	for (unsigned int i = 0; i < sizeof(ring_sqe_ops); i++) {
		r[i].opcode = IORING_RESTRICTION_SQE_OP;
		r[i].sqe_op = ring_sqe_ops[i];
	}
	/* Raw io_uring_register(2): Debian's liburing 2.3 declares
	 * io_uring_register_restrictions()/io_uring_enable_rings() but does
	 * not export them. */
	if (syscall(__NR_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_RESTRICTIONS, r, sizeof(ring_sqe_ops)) < 0 ||
	    syscall(__NR_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	return 0;
}

static int ring_init(struct iothread *io, unsigned int entries)
{
	/*
	 * The thread reaps its own completions (COOP_TASKRUN, 5.19+: no IPI
	 * to interrupt it for task work).  Not SINGLE_ISSUER: the ring is
	 * created here, by the thread that builds the VM, and the kernel
	 * binds a single-issuer ring to its first submitter.  R_DISABLED
	 * (5.10+) lets ring_restrict() register the opcode allow-list before
	 * any SQE.  Older kernels reject flags: fall back step by step, to a
	 * plain unrestricted ring last.
	 */
	static const uint32_t tries[] = {
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_R_DISABLED,
		IORING_SETUP_R_DISABLED,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	struct io_uring_params p;
	int ret = -EINVAL;

	for (unsigned int i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = tries[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		ret = io_uring_queue_init_params(entries, &io->ring, &p);
		if (ret == -EINVAL)
			continue;
		if (ret || !(tries[i] & IORING_SETUP_R_DISABLED))
			break;
		ret = ring_restrict(&io->ring);
		if (!ret) {
			io->restricted = true;
			break;
		}
		vmm_dbg("iothread %u: io_uring restrictions: %s", io->index,
			strerror(-ret));
		io_uring_queue_exit(&io->ring);
		ret = -EINVAL;
	}
	if (!ret && !io->restricted)
		vmm_warn("iothread %u: io_uring ring without opcode restrictions "
			 "(kernel < 5.10?)", io->index);
	return ret;
}

bool iothread_ring_restricted(const struct iothread *io)
{
	return io->restricted;
}

int iothread_create(unsigned int index, unsigned int ring_entries,
		    struct iothread **out)
{
	struct iothread *io = calloc(1, sizeof(*io));
	int ret;

	if (!io)
		return -ENOMEM;
	io->index = index;
	io->stop_efd = io->call_efd = -1;
	pthread_mutex_init(&io->call_lock, NULL);
	pthread_cond_init(&io->call_cond, NULL);
	ret = ring_init(io, ring_entries);
	if (ret) {
		vmm_err("iothread %u: io_uring_queue_init: %s", index, strerror(-ret));
		goto err_free;
	}
	io->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	io->call_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (io->stop_efd < 0 || io->call_efd < 0) {
		ret = -errno;
		goto err_ring;
	}
	io->stop_w = (struct iothread_fd){ .fd = io->stop_efd,
					   .fn = iothread_stop_fd, .opaque = io };
	io->call_w = (struct iothread_fd){ .fd = io->call_efd,
					   .fn = iothread_call_fd, .opaque = io };
	if ((ret = iothread_watch_fd(io, &io->stop_w)) ||
	    (ret = iothread_watch_fd(io, &io->call_w)))
		goto err_ring;
	*out = io;
	return 0;
err_ring:
	if (io->stop_efd >= 0)
		close(io->stop_efd);
	if (io->call_efd >= 0)
		close(io->call_efd);
	io_uring_queue_exit(&io->ring);
err_free:
	pthread_mutex_destroy(&io->call_lock);
	pthread_cond_destroy(&io->call_cond);
	free(io);
	return ret;
}

void iothread_set_batch(struct iothread *io, bool batch)
{
	io->batch = batch;
}

int iothread_start(struct iothread *io)
{
	int ret;

	/*
	 * Once only.  A second thread on the same ring would race the first;
	 * and after iothread_stop() the kernel has cancelled every poll the
	 * exited thread submitted (io_uring cancels a task's requests when
	 * it exits), so a restarted thread would never see a kick or an
	 * iothread_call_sync() wake-up and callers would hang.
	 */
	if (io->started || io->stopped)
		return -EINVAL;
	ret = pthread_create(&io->thread, NULL, iothread_main, io);
	if (ret)
		return -ret;
	io->started = true;
	return 0;
}

void iothread_stop(struct iothread *io)
{
	uint64_t one = 1;

	if (!io || !io->started)
		return;
	if (write(io->stop_efd, &one, sizeof(one)) < 0)
		vmm_err("iothread %u: stop: %s", io->index, strerror(errno));
	pthread_join(io->thread, NULL);
	io->started = false;
	io->stopped = true;
}

void iothread_destroy(struct iothread *io)
{
	if (!io)
		return;
	iothread_stop(io);
	io_uring_queue_exit(&io->ring);
	close(io->stop_efd);
	close(io->call_efd);
	pthread_mutex_destroy(&io->call_lock);
	pthread_cond_destroy(&io->call_cond);
	free(io);
}
