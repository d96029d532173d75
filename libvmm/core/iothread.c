/* SPDX-License-Identifier: MIT */
/* Per-vCPU I/O threads on io_uring (see iothread.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "iosched-adapt.h"
#include "iothread-ring.h"
#include "iothread.h"
#include "log.h"
#include "thread.h"

struct iothread {
	unsigned int index;
	struct iothread_ring ring; /* io_uring, restrictions, file table */
	pthread_t thread;
	bool started;
	bool stop; /* set on the I/O thread by the stop eventfd handler */
	bool submit_error; /* the last submit failed (log once per burst) */
	bool stopped;	   /* joined by iothread_stop(): cannot start again */
	bool batch;	 /* run as SCHED_BATCH (iothread_set_batch) */
	bool adaptive;	 /* switch per iosched-adapt.h (iothread_set_adaptive) */
	struct iosched_adapt adapt; /* the I/O thread's own */
	/* Adaptive, while SCHED_OTHER: since when (CLOCK_MONOTONIC ns;
	 * written by the thread, read relaxed by iothread_get_stats()). */
	uint64_t normal_since;
	bool sched_warned; /* a policy change failed (logged once) */

	int stop_efd;
	struct iothread_fd stop_w;
	int call_efd;
	struct iothread_fd call_w;

	/* call_lock protects calls and every call's done flag. */
	pthread_mutex_t call_lock;
	pthread_cond_t call_cond;
	struct iothread_call *calls;

	/* Owned by the I/O thread.  A hook is on at most one of the lists
	 * (its queued flag): hooks run at the end of this round; retry at
	 * the end of the next one (iothread_defer_next()), which moves them
	 * to retry_due when it starts; yield likewise (iothread_yield(),
	 * moved to yield_due), and a round with yields due does not block. */
	struct iothread_hook *hooks;
	struct iothread_hook *retry, *retry_due;
	struct iothread_hook *yield, *yield_due;
	/* iothread_defer_at(): due at their ->when (a short list: one hook
	 * per throttled queue of this thread). */
	struct iothread_hook *timed;
	/* iothread_fail_sqes(): grant fail_after SQEs, then refuse fail_sqes. */
	unsigned int fail_after, fail_sqes;
	struct iothread_poller *pollers;
	struct iothread_stats st; /* written by the thread, read relaxed */
};

/* A statistic of the I/O thread's own (the only writer); others read them
 * relaxed (iothread_get_stats()). */
#define STAT_INC(io, f, n) \
	__atomic_store_n(&(io)->st.f, (io)->st.f + (n), __ATOMIC_RELAXED)

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
	st->sched_switches = __atomic_load_n(&io->st.sched_switches,
					     __ATOMIC_RELAXED);
	st->waits = __atomic_load_n(&io->st.waits, __ATOMIC_RELAXED);
	st->yields = __atomic_load_n(&io->st.yields, __ATOMIC_RELAXED);
	st->file_updates = __atomic_load_n(&io->ring.file_updates, __ATOMIC_RELAXED);
	st->files = __atomic_load_n(&io->ring.files_held, __ATOMIC_RELAXED);
	st->files_max = io->ring.fixed_files ? io->ring.nr_files : 0;
	/* Acquire: pairs with the release in iothread_note_wake(). */
	st->sched_normal_ns = __atomic_load_n(&io->st.sched_normal_ns,
					      __ATOMIC_ACQUIRE);
	if (io->adaptive) {
		uint64_t since = __atomic_load_n(&io->normal_since,
						 __ATOMIC_RELAXED);
		uint64_t now = now_ns();

		/* The stretch in SCHED_OTHER still open (0: none), read
		 * after the total: one that closes meanwhile is missed for
		 * this read, never counted twice. */
		st->sched_batch = !since;
		if (since && now > since)
			st->sched_normal_ns += now - since;
	} else {
		st->sched_batch = io->batch;
	}
}

struct io_uring_sqe *iothread_get_sqe(struct iothread *io, struct iothread_cb *cb)
{
	struct io_uring_sqe *sqe;

	if (io->fail_sqes) {
		if (io->fail_after) {
			io->fail_after--;
		} else {
			io->fail_sqes--;
			return NULL;
		}
	}
	sqe = io_uring_get_sqe(&io->ring.uring);
	if (!sqe) {
		/* SQ full: hand what is queued to the kernel and retry. */
		io_uring_submit(&io->ring.uring);
		STAT_INC(io, submits, 1);
		sqe = io_uring_get_sqe(&io->ring.uring);
		if (!sqe)
			return NULL;
	}
	io_uring_sqe_set_data(sqe, cb);
	return sqe;
}

static int iothread_arm(struct iothread *io, struct iothread_fd *w)
{
	const struct iothread_file *f = w->file ? w->file : &w->own;
	struct io_uring_sqe *sqe = iothread_get_sqe(io, &w->cb);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_multishot(sqe, f->idx,
				     w->events ? (unsigned int)w->events : POLLIN);
	iothread_sqe_file(sqe, f);
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
		 * The watch reads nothing from the fd: what is there is the
		 * owner's (the queue service reads a kick eventfd's counter
		 * in fn to count doorbells; a tap is read by its device).
		 * KVM's ioeventfd (eventfd_signal) wakes the poll on every
		 * signal whatever the counter holds, so an unread counter
		 * loses no wake-up.
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
	int ret;

	w->cb.fn = iothread_fd_cqe;
	w->io = io;
	w->removing = false;
	if (w->file && (!w->file->held || w->file->fd != w->fd))
		return -EINVAL;
	if (!w->file && !w->own.held) {
		ret = iothread_file_get(io, w->fd, &w->own);
		if (ret)
			return ret;
	}
	ret = iothread_arm(io, w);
	if (ret)
		iothread_file_put(io, &w->own);
	return ret;
}

static bool fd_unwatched(void *opaque)
{
	struct iothread_fd *w = opaque;

	return !w->armed;
}

struct unwatch_remove {
	struct iothread_cb cb;
	bool answered;
	int res;
};

static void unwatch_remove_cqe(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct unwatch_remove *r = container_of(cb, struct unwatch_remove, cb);

	(void)flags;
	r->res = res;
	r->answered = true;
}

static bool remove_answered(void *opaque)
{
	return ((struct unwatch_remove *)opaque)->answered;
}

void iothread_unwatch_fd(struct iothread *io, struct iothread_fd *w)
{
	struct io_uring_sqe *sqe;

	if (w->armed) {
		w->removing = true;
		/*
		 * POLL_REMOVE fails with -EALREADY while a wake-up owns the
		 * poll (its task_work has not run yet, e.g. the poll was armed
		 * on an eventfd a kick had already signalled, in the same
		 * io_uring_enter): the poll stays armed and its final CQE
		 * never comes.  Wait for the remove's own answer and retry;
		 * the next io_uring_enter runs that task_work first.  Found
		 * by tests/e2e/abuse.sh (a guest resetting the device right
		 * after a kick hung the VMM for good).
		 */
		for (;;) {
			struct unwatch_remove r = { .cb.fn = unwatch_remove_cqe };

			sqe = iothread_get_sqe(io, &r.cb);
			if (!sqe) {
				vmm_err("iothread %u: no SQE to remove the poll on fd %d",
					io->index, w->fd);
				return; /* the slot stays: the poll may still use it */
			}
			io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)&w->cb);
			iothread_sqe_nofile(io, sqe);
			iothread_run_until(io, remove_answered, &r);
			if (r.res != -EALREADY || !w->armed)
				break;
		}
		/* The poll's final CQE (-ECANCELED, no F_MORE) clears armed. */
		iothread_run_until(io, fd_unwatched, w);
	}
	/* The poll is gone: its own registration can go (a caller's stays
	 * with the caller). */
	iothread_file_put(io, &w->own);
}

void iothread_defer(struct iothread *io, struct iothread_hook *h)
{
	if (h->queued)
		return;
	h->queued = true;
	h->next = io->hooks;
	io->hooks = h;
}

void iothread_defer_next(struct iothread *io, struct iothread_hook *h)
{
	if (h->queued)
		return;
	h->queued = true;
	h->next = io->retry;
	io->retry = h;
}

void iothread_defer_at(struct iothread *io, struct iothread_hook *h,
		       uint64_t when_ns)
{
	if (h->queued) {
		for (struct iothread_hook *t = io->timed; t; t = t->next)
			if (t == h && when_ns < h->when)
				h->when = when_ns;
		return;
	}
	h->queued = true;
	h->when = when_ns;
	h->next = io->timed;
	io->timed = h;
}

static bool hook_unlink(struct iothread_hook **list, struct iothread_hook *h)
{
	for (struct iothread_hook **pp = list; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			h->queued = false;
			return true;
		}
	}
	return false;
}

void iothread_undefer(struct iothread *io, struct iothread_hook *h)
{
	if (h->queued && !hook_unlink(&io->hooks, h) &&
	    !hook_unlink(&io->retry, h) && !hook_unlink(&io->retry_due, h) &&
	    !hook_unlink(&io->yield, h) && !hook_unlink(&io->yield_due, h))
		hook_unlink(&io->timed, h);
}

void iothread_yield(struct iothread *io, struct iothread_hook *h)
{
	/* Queued for a later round (a retry, a time): the work is ready
	 * now, so the earlier, non-blocking round takes it.  Queued for
	 * this round's end (hooks, retry_due), or yielded already: it runs
	 * no later than a yield would. */
	if (h->queued && !hook_unlink(&io->retry, h) &&
	    !hook_unlink(&io->timed, h))
		return;
	h->queued = true;
	h->next = io->yield;
	io->yield = h;
}

void iothread_fail_sqes(struct iothread *io, unsigned int after, unsigned int n)
{
	io->fail_after = after;
	io->fail_sqes = n;
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

/*
 * Run the hooks on *@list, each taken off it before its call: one that
 * queues itself again lands on the list that asks for (for io->hooks,
 * this one: run too, before this returns).  @count, when given, counts
 * the calls (a statistic of the thread's, STAT_INC's way).
 */
static void hooks_run(struct iothread_hook **list, uint64_t *count)
{
	while (*list) {
		struct iothread_hook *h = *list;

		*list = h->next;
		h->queued = false;
		if (count)
			__atomic_store_n(count, *count + 1, __ATOMIC_RELAXED);
		h->fn(h->opaque);
	}
}

/* Timed hooks that are due, one pass: those are taken off first, so a
 * hook that defers itself again waits for its new time. */
static void iothread_run_timed(struct iothread *io)
{
	struct iothread_hook *due = NULL, **pp = &io->timed;
	uint64_t now;

	if (!io->timed)
		return;
	now = now_ns();
	while (*pp) {
		struct iothread_hook *h = *pp;

		if (h->when <= now) {
			*pp = h->next;
			h->next = due;
			due = h;
		} else {
			pp = &h->next;
		}
	}
	hooks_run(&due, NULL);
}

static void iothread_run_hooks(struct iothread *io)
{
	/* End-of-batch hooks, until none is left. */
	hooks_run(&io->hooks, NULL);
	/* Retries due this round, one pass: a hook that defers itself
	 * again lands on io->retry, for the next round. */
	hooks_run(&io->retry_due, NULL);
	/* Yields, one pass, after the completions this round collected
	 * (other queues' kicks) and the hooks they queued.  One that
	 * yields again lands on io->yield, for the next round. */
	hooks_run(&io->yield_due, &io->st.yields);
	iothread_run_timed(io);
	/* Hooks those queued (a queue served by a retry, a yield or a time
	 * pushed used entries: its end-of-batch interrupt decision): this
	 * round, not after the next wake-up, which may be a long sleep. */
	hooks_run(&io->hooks, NULL);
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

	while (io_uring_peek_cqe(&io->ring.uring, &cqe) == 0) {
		struct iothread_cb *cb = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		uint32_t flags = cqe->flags;

		/* The slot may be reused by the kernel once seen: copy first. */
		io_uring_cqe_seen(&io->ring.uring, cqe);
		n++;
		if (cb && cb->fn)
			cb->fn(cb, res, flags);
	}
	STAT_INC(io, cqes, n);
	return n;
}

/*
 * Retries (iothread_defer_next()) wait this long at most: what they retry
 * (an SQE the ring refused) usually frees up at the next submit, and a
 * condition that lasts costs one wake-up per interval, not a busy loop.
 */
#define IOTHREAD_RETRY_NS 1000000

/* Submit, then wait for a CQE, @ns at most. */
static int iothread_wait_retry(struct iothread *io, uint64_t ns)
{
	struct __kernel_timespec ts = { .tv_sec = (long long)(ns / 1000000000u),
					.tv_nsec = (long long)(ns % 1000000000u) };
	struct io_uring_cqe *cqe;
	int ret;

	/* Without EXT_ARG (5.11) liburing would queue an IORING_OP_TIMEOUT,
	 * which the restricted ring refuses: sleep instead, a retry's
	 * interval at most (kicks are not seen meanwhile). */
	if (io->ring.uring.features & IORING_FEAT_EXT_ARG)
		return io_uring_submit_and_wait_timeout(&io->ring.uring, &cqe, 1, &ts, NULL);
	ret = io_uring_submit(&io->ring.uring);
	if (!io_uring_cq_ready(&io->ring.uring))
		usleep((useconds_t)(MIN(ns, IOTHREAD_RETRY_NS) / 1000));
	return ret;
}

/* How long this round may sleep: not at all with a yield due,
 * IOTHREAD_RETRY_NS with a retry due, until the earliest timed hook, or
 * UINT64_MAX (until a CQE). */
static uint64_t iothread_sleep_ns(struct iothread *io)
{
	uint64_t ns = io->retry_due ? IOTHREAD_RETRY_NS : UINT64_MAX, now;

	if (io->yield_due)
		return 0;
	if (!io->timed)
		return ns;
	now = now_ns();
	for (struct iothread_hook *h = io->timed; h; h = h->next)
		ns = MIN(ns, h->when > now ? h->when - now : 0);
	return ns;
}

/* Move every hook of @from onto @to (the order reversed: LIFO pushes
 * become FIFO runs). */
static void hooks_move(struct iothread_hook **from, struct iothread_hook **to)
{
	while (*from) {
		struct iothread_hook *h = *from;

		*from = h->next;
		h->next = *to;
		*to = h;
	}
}

/* One wait + dispatch round; @wait: block for at least one CQE (for at
 * most IOTHREAD_RETRY_NS when a retry is due, until the earliest timed
 * hook's time when one is queued; not at all when a yield is due). */
static void iothread_round(struct iothread *io, bool wait)
{
	uint64_t sleep_ns;
	int ret;

	/* Retries and yields deferred before this round run at its end. */
	hooks_move(&io->retry, &io->retry_due);
	hooks_move(&io->yield, &io->yield_due);
	sleep_ns = wait ? iothread_sleep_ns(io) : 0;
	if (sleep_ns)
		STAT_INC(io, waits, 1);
	if (sleep_ns && sleep_ns != UINT64_MAX)
		ret = iothread_wait_retry(io, sleep_ns);
	else if (io->yield_due)
		/*
		 * Yielded work is ready: do not sleep, but enter the kernel
		 * (GETEVENTS, no minimum) so that completions still in
		 * task_work are posted now (COOP_TASKRUN defers them until
		 * this task enters the kernel) and the other queues' kicks
		 * are served before the yielded hooks.  A bare submit with
		 * nothing queued makes no system call: behind hooks that
		 * make none either (a queue whose work is all in guest
		 * memory) a kick would wait for the next interrupt of this
		 * CPU (a timer tick) to be posted.
		 */
		ret = io_uring_submit_and_get_events(&io->ring.uring);
	else
		ret = io_uring_submit_and_wait(&io->ring.uring, sleep_ns ? 1 : 0);

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
 * sleeping: a few tens of microseconds of spinning beat a sleep/wake-up
 * when requests arrive back to back.
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
		if (io_uring_cq_ready(&io->ring.uring))
			return true;
		cpu_relax();
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
		c->done = true; /* c is the caller's (maybe its stack): last touch */
		pthread_cond_broadcast(&io->call_cond);
		pthread_mutex_unlock(&io->call_lock);
		c = next;
	}
}

/* Context: the I/O thread.  SCHED_BATCH or SCHED_OTHER for itself (the
 * I/O threads' seccomp list allows exactly these two, pid 0). */
static void iothread_set_policy(struct iothread *io, bool batch)
{
	struct sched_param sp = { .sched_priority = 0 };

	/* Logged once: a guest's queue depth drives the switches. */
	if (sched_setscheduler(0, batch ? SCHED_BATCH : SCHED_OTHER, &sp) &&
	    !io->sched_warned) {
		io->sched_warned = true;
		vmm_warn("iothread %u: %s: %s", io->index,
			 batch ? "SCHED_BATCH" : "SCHED_OTHER", strerror(errno));
	}
}

void iothread_note_wake(struct iothread *io, uint32_t found)
{
	uint64_t now;

	if (!io->adaptive)
		return;
	/* One clock read per wake (vDSO): the policy starts afresh after an
	 * idle spell (iosched-adapt.h). */
	now = now_ns();
	if (!now)
		now = 1; /* 0 means "none" to both users */
	if (iosched_adapt_wake(&io->adapt, found, now)) {
		iothread_set_policy(io, io->adapt.batch);
		STAT_INC(io, sched_switches, 1);
		if (io->adapt.batch) {
			uint64_t since = io->normal_since;

			/* The stretch closed first, then the total (release:
			 * pairs with the acquire load in iothread_get_stats(),
			 * which reads the total first): a reader that sees the
			 * new total sees no open stretch, so none counts twice
			 * (one may be missed for an instant). */
			__atomic_store_n(&io->normal_since, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&io->st.sched_normal_ns,
					 io->st.sched_normal_ns + (now - since),
					 __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&io->normal_since, now,
					 __ATOMIC_RELAXED);
		}
	}
}

static void *iothread_main(void *arg)
{
	struct iothread *io = arg;
	char name[16];

	snprintf(name, sizeof(name), "vmm-io%u", io->index);
	pthread_setname_np(pthread_self(), name);
	/*
	 * SCHED_BATCH: no wake-up preemption.  Kicks arrive from a vCPU that
	 * keeps running; preempting it per kick turns every request into its
	 * own kick, wake-up and interrupt when both share a CPU
	 * (docs/design-notes.md, "Core").  Unprivileged; before any seccomp
	 * filter.  Failure costs only performance.  Adaptive threads start
	 * so too (iosched_adapt_init()).
	 */
	if (io->batch || io->adaptive)
		iothread_set_policy(io, true);
	while (!io->stop) {
		/* A yield is work ready: its round does not block, so no
		 * polling window before it. */
		bool work = io->yield || iothread_busy_poll(io);

		STAT_INC(io, loops, 1);
		iothread_round(io, !work);
	}
	return NULL;
}

void iothread_call_post(struct iothread *io, struct iothread_call *c,
			int (*fn)(void *opaque), void *opaque)
{
	uint64_t one = 1;

	*c = (struct iothread_call){ .fn = fn, .opaque = opaque };
	if (!io->started || on_thread(io)) {
		c->ret = fn(opaque);
		c->done = true;
		return;
	}
	pthread_mutex_lock(&io->call_lock);
	c->next = io->calls;
	io->calls = c;
	pthread_mutex_unlock(&io->call_lock);
	if (write(io->call_efd, &one, sizeof(one)) < 0)
		vmm_err("iothread %u: waking for a call: %s", io->index,
			strerror(errno));
}

int iothread_call_wait(struct iothread *io, struct iothread_call *c)
{
	int ret;

	/* done is set under call_lock after fn returned (iothread_call_fd):
	 * the lock orders fn's effects before our return. */
	pthread_mutex_lock(&io->call_lock);
	while (!c->done)
		pthread_cond_wait(&io->call_cond, &io->call_lock);
	ret = c->ret;
	pthread_mutex_unlock(&io->call_lock);
	return ret;
}

int iothread_call_sync(struct iothread *io, int (*fn)(void *opaque), void *opaque)
{
	struct iothread_call c;

	iothread_call_post(io, &c, fn, opaque);
	return iothread_call_wait(io, &c);
}

/* ---- registered files: on the thread that owns the ring's table ---- */

struct file_op {
	struct iothread *io;
	struct iothread_file *f;
	int fd;
};

/* Context: the I/O thread, or the caller while it does not run. */
static int file_get_local(void *opaque)
{
	struct file_op *op = opaque;

	if (op->io->stopped)
		return -ESHUTDOWN;
	return iothread_ring_file_get(&op->io->ring, op->fd, op->f);
}

/* Context: as file_get_local(). */
static int file_put_local(void *opaque)
{
	struct file_op *op = opaque;

	/* Stopped: no kernel call (the caller may be a confined control
	 * thread; the table is freed with the ring), and no slot is handed
	 * out again (file_get_local() refuses), so none can be stale. */
	iothread_ring_file_put(&op->io->ring, op->f, !op->io->stopped);
	return 0;
}

int iothread_file_get(struct iothread *io, int fd, struct iothread_file *f)
{
	struct file_op op = { .io = io, .f = f, .fd = fd };

	if (fd < 0)
		return -EBADF;
	if (!io->ring.fixed_files) {
		*f = (struct iothread_file){ .fd = fd, .idx = fd, .held = true };
		return 0;
	}
	/* On the thread that owns the table (inline if it is this one or
	 * none runs). */
	return iothread_call_sync(io, file_get_local, &op);
}

void iothread_file_put(struct iothread *io, struct iothread_file *f)
{
	struct file_op op = { .io = io, .f = f };

	if (!f->held)
		return;
	if (!io->ring.fixed_files) {
		f->held = false;
		return;
	}
	iothread_call_sync(io, file_put_local, &op);
}

void iothread_sqe_nofile(struct iothread *io, struct io_uring_sqe *sqe)
{
	if (io->ring.fixed_files)
		sqe->flags |= IOSQE_FIXED_FILE;
}

/* ---- life cycle ---- */

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
	ret = iothread_ring_init(&io->ring, index, ring_entries);
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
	iothread_ring_exit(&io->ring);
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

void iothread_set_adaptive(struct iothread *io, bool adaptive)
{
	io->adaptive = adaptive;
	iosched_adapt_init(&io->adapt);
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
	/* Asynchronous signals blocked, like every library thread. */
	ret = thread_spawn(&io->thread, iothread_main, io);
	if (ret)
		return ret;
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
	iothread_ring_exit(&io->ring);
	close(io->stop_efd);
	close(io->call_efd);
	pthread_mutex_destroy(&io->call_lock);
	pthread_cond_destroy(&io->call_cond);
	free(io);
}

bool iothread_ring_restricted(const struct iothread *io)
{
	return io->ring.restricted;
}

bool iothread_ring_fixed_files(const struct iothread *io)
{
	return io->ring.fixed_files;
}

int iothread_ring_fd(const struct iothread *io)
{
	return io->ring.uring.ring_fd;
}

int iothread_set_affinity(struct iothread *io, const cpu_set_t *set)
{
	if (!io->started)
		return -ESRCH;
	return -pthread_setaffinity_np(io->thread, sizeof(*set), set);
}
