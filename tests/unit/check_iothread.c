/* SPDX-License-Identifier: MIT */
/*
 * I/O threads on their own (libvmm/core/iothread.c): iothread_call_sync from
 * other threads and inline, calls posted to many threads and waited for
 * later (they run at once; one that runs the loop does not keep another
 * call to its thread from running), watching and unwatching an eventfd,
 * end-of-batch hooks, SQEs with callbacks and the nested loop
 * (iothread_run_until), busy-pollers, stop/destroy idempotence.  Real
 * threads and io_uring rings; no timing assertions (waits have a 10 s
 * deadline).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "iothread.h"
#include "test_clock.h"

#define RING_ENTRIES 32
#define WAIT_MS 10000

static struct iothread *io;

static void setup(void)
{
	ck_assert_int_eq(iothread_create(7, RING_ENTRIES, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
}

static void teardown(void)
{
	iothread_destroy(io);
	io = NULL;
}

static int read_loops(void *opaque)
{
	struct iothread_stats st;

	iothread_get_stats(opaque, &st);
	return (int)st.loops;
}

/* Return once the loop iteration in which everything so far happened
 * (CQE callbacks and the hooks after them) is over. */
static void settle(struct iothread *t)
{
	int first = iothread_call_sync(t, read_loops, t);
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (iothread_call_sync(t, read_loops, t) == first)
		ck_assert_msg(test_now_ms() < deadline, "I/O thread stuck in one round");
}

static void wait_for(const unsigned int *counter, unsigned int want)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) {
		ck_assert_msg(test_now_ms() < deadline, "waited for %u, have %u", want,
			      __atomic_load_n(counter, __ATOMIC_ACQUIRE));
		usleep(200);
	}
}

/* ---- iothread_call_sync ------------------------------------------------ */

struct call_rec {
	pthread_t tid;
	unsigned int n; /* only touched on the I/O thread */
};

static int record_tid(void *opaque)
{
	struct call_rec *r = opaque;

	r->tid = pthread_self();
	r->n++;
	return 42;
}

struct hammer {
	struct call_rec *rec;
	unsigned int calls;
	int bad;
};

static void *hammer_thread(void *opaque)
{
	struct hammer *h = opaque;

	for (unsigned int i = 0; i < h->calls; i++)
		if (iothread_call_sync(io, record_tid, h->rec) != 42)
			h->bad++;
	return NULL;
}

START_TEST(call_sync_runs_on_the_thread)
{
	struct call_rec rec = { 0 };
	struct hammer h[4];
	pthread_t th[4];
	pthread_t io_tid;

	ck_assert_uint_eq(iothread_index(io), 7);
	ck_assert_int_eq(iothread_call_sync(io, record_tid, &rec), 42);
	ck_assert(!pthread_equal(rec.tid, pthread_self()));
	io_tid = rec.tid;

	/* Many callers at once: every call runs, all on the one thread,
	 * serialised (rec.n is a plain counter). */
	for (unsigned int i = 0; i < 4; i++) {
		h[i] = (struct hammer){ .rec = &rec, .calls = 200 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, hammer_thread, &h[i]), 0);
	}
	for (unsigned int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(h[i].bad, 0);
	}
	ck_assert_uint_eq(rec.n, 1 + 4 * 200);
	ck_assert(pthread_equal(rec.tid, io_tid));
}
END_TEST

static int nested_call(void *opaque)
{
	struct call_rec *r = opaque;

	/* From the I/O thread itself: runs inline, no deadlock. */
	return iothread_call_sync(io, record_tid, r) + 1;
}

START_TEST(call_sync_from_the_thread_is_inline)
{
	struct call_rec rec = { 0 };

	ck_assert_int_eq(iothread_call_sync(io, nested_call, &rec), 43);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert(!pthread_equal(rec.tid, pthread_self()));
}
END_TEST

START_TEST(call_sync_inline_when_not_started)
{
	struct iothread *t;
	struct call_rec rec = { 0 };

	ck_assert_int_eq(iothread_create(3, RING_ENTRIES, &t), 0);
	ck_assert_int_eq(iothread_call_sync(t, record_tid, &rec), 42);
	ck_assert(pthread_equal(rec.tid, pthread_self()));
	ck_assert_uint_eq(rec.n, 1);

	/* Started, then stopped: inline again. */
	ck_assert_int_eq(iothread_start(t), 0);
	ck_assert_int_eq(iothread_call_sync(t, record_tid, &rec), 42);
	ck_assert(!pthread_equal(rec.tid, pthread_self()));
	iothread_stop(t);
	ck_assert_int_eq(iothread_call_sync(t, record_tid, &rec), 42);
	ck_assert(pthread_equal(rec.tid, pthread_self()));
	ck_assert_uint_eq(rec.n, 3);
	iothread_destroy(t);
}
END_TEST

/* ---- iothread_call_post / iothread_call_wait ----------------------------- */

#define NR_POSTED 4

struct rendezvous {
	unsigned int arrived; /* atomic */
	unsigned int want;
};

/*
 * Arrive, then wait (bounded) for every other call to have arrived: only
 * calls that run at the same time, on different threads, can all return 0.
 * One round trip after another (what virtio_blk_start() did before posting)
 * would leave the first call waiting for callers that are not yet posted.
 */
static int meet(void *opaque)
{
	struct rendezvous *r = opaque;
	uint64_t deadline = test_now_ms() + WAIT_MS;

	__atomic_add_fetch(&r->arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&r->arrived, __ATOMIC_ACQUIRE) < r->want) {
		if (test_now_ms() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

START_TEST(posted_calls_run_at_once)
{
	struct iothread *t[NR_POSTED];
	struct iothread_call c[NR_POSTED];
	struct rendezvous r = { .want = NR_POSTED };

	for (unsigned int i = 0; i < NR_POSTED; i++) {
		ck_assert_int_eq(iothread_create(i, RING_ENTRIES, &t[i]), 0);
		ck_assert_int_eq(iothread_start(t[i]), 0);
	}
	for (unsigned int i = 0; i < NR_POSTED; i++)
		iothread_call_post(t[i], &c[i], meet, &r);
	for (unsigned int i = 0; i < NR_POSTED; i++)
		ck_assert_int_eq(iothread_call_wait(t[i], &c[i]), 0);
	ck_assert_uint_eq(__atomic_load_n(&r.arrived, __ATOMIC_ACQUIRE),
			  NR_POSTED);
	for (unsigned int i = 0; i < NR_POSTED; i++)
		iothread_destroy(t[i]);
}
END_TEST

START_TEST(posted_calls_share_a_thread)
{
	struct call_rec rec = { 0 };
	struct iothread_call c[8];

	/* Several calls to one thread: each runs once, there, and each wait
	 * returns its own call's value, whatever order they are waited in. */
	for (unsigned int i = 0; i < 8; i++)
		iothread_call_post(io, &c[i], record_tid, &rec);
	for (unsigned int i = 8; i-- > 0;)
		ck_assert_int_eq(iothread_call_wait(io, &c[i]), 42);
	ck_assert_uint_eq(rec.n, 8);
	ck_assert(!pthread_equal(rec.tid, pthread_self()));
}
END_TEST

START_TEST(posted_call_inline_when_not_started)
{
	struct iothread *t;
	struct iothread_call c;
	struct call_rec rec = { 0 };

	/* Run by the post itself: done before anyone waits. */
	ck_assert_int_eq(iothread_create(3, RING_ENTRIES, &t), 0);
	iothread_call_post(t, &c, record_tid, &rec);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert(pthread_equal(rec.tid, pthread_self()));
	ck_assert_int_eq(iothread_call_wait(t, &c), 42);
	iothread_destroy(t);
}
END_TEST

/* ---- watched eventfds -------------------------------------------------- */

struct watch {
	struct iothread_fd w;
	unsigned int fired; /* atomic */
	pthread_t tid;
};

static void watch_fired(void *opaque)
{
	struct watch *wt = opaque;
	eventfd_t v;

	wt->tid = pthread_self();
	(void)eventfd_read(wt->w.fd, &v);
	__atomic_add_fetch(&wt->fired, 1, __ATOMIC_RELEASE);
}

static int do_watch(void *opaque)
{
	struct watch *wt = opaque;

	return iothread_watch_fd(io, &wt->w);
}

static int do_unwatch(void *opaque)
{
	struct watch *wt = opaque;

	iothread_unwatch_fd(io, &wt->w);
	return wt->w.armed ? -EBUSY : 0;
}

START_TEST(watch_and_unwatch_eventfd)
{
	struct watch wt = { 0 };
	struct call_rec rec = { 0 };
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	ck_assert_int_ge(efd, 0);
	wt.w.fd = efd;
	wt.w.fn = watch_fired;
	wt.w.opaque = &wt;
	ck_assert_int_eq(iothread_call_sync(io, do_watch, &wt), 0);
	ck_assert(wt.w.armed);

	ck_assert_int_eq(eventfd_write(efd, 1), 0);
	wait_for(&wt.fired, 1);
	(void)iothread_call_sync(io, record_tid, &rec);
	ck_assert(pthread_equal(wt.tid, rec.tid)); /* on the I/O thread */
	/* Multishot: it keeps firing without re-arming. */
	ck_assert_int_eq(eventfd_write(efd, 1), 0);
	wait_for(&wt.fired, 2);
	ck_assert_int_eq(eventfd_write(efd, 1), 0);
	wait_for(&wt.fired, 3);

	ck_assert_int_eq(iothread_call_sync(io, do_unwatch, &wt), 0);
	ck_assert(!wt.w.armed);
	/* Unwatching twice is harmless. */
	ck_assert_int_eq(iothread_call_sync(io, do_unwatch, &wt), 0);
	ck_assert_int_eq(eventfd_write(efd, 1), 0);
	settle(io);
	ck_assert_uint_eq(__atomic_load_n(&wt.fired, __ATOMIC_ACQUIRE), 3);

	/* Watching again works (the eventfd still holds the last write). */
	ck_assert_int_eq(iothread_call_sync(io, do_watch, &wt), 0);
	ck_assert_int_eq(eventfd_write(efd, 1), 0);
	wait_for(&wt.fired, 4);
	ck_assert_int_eq(iothread_call_sync(io, do_unwatch, &wt), 0);
	close(efd);
}
END_TEST

/*
 * Watch an eventfd a kick has already signalled and unwatch it within one
 * call on the I/O thread: both SQEs reach the kernel in the same
 * io_uring_enter, the armed poll is owned by its wake-up and POLL_REMOVE
 * answers -EALREADY.  iothread_unwatch_fd() used to wait for ever for the
 * poll's final CQE (found by tests/e2e/abuse.sh: a device reset right
 * after a kick); it must retry the remove.  A hang fails on Check's
 * timeout.
 */
static int watch_then_unwatch(void *opaque)
{
	struct watch *wt = opaque;
	int ret = do_watch(wt);

	if (!ret)
		ret = do_unwatch(wt);
	return ret;
}

static bool fired_once(void *opaque)
{
	return __atomic_load_n(&((struct watch *)opaque)->fired, __ATOMIC_ACQUIRE) >= 1;
}

/* Runs the loop until the watch fired, as a queue's detach drains. */
static int run_until_fired(void *opaque)
{
	iothread_run_until(io, fired_once, opaque);
	return 7;
}

/*
 * A posted call that runs the loop and a second call posted to the same
 * thread meanwhile: both run to completion, once each, whether the second
 * ran inside the first's loop or before or after it (iothread.h: their
 * order is not promised).
 */
START_TEST(posted_call_running_the_loop)
{
	struct watch wt = { 0 };
	struct iothread_call a, b;
	struct call_rec rec = { 0 };
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	ck_assert_int_ge(efd, 0);
	wt.w = (struct iothread_fd){ .fd = efd, .fn = watch_fired, .opaque = &wt };
	ck_assert_int_eq(iothread_call_sync(io, do_watch, &wt), 0);
	iothread_call_post(io, &a, run_until_fired, &wt);
	iothread_call_post(io, &b, record_tid, &rec);
	ck_assert_int_eq(eventfd_write(efd, 1), 0);
	ck_assert_int_eq(iothread_call_wait(io, &a), 7);
	ck_assert_int_eq(iothread_call_wait(io, &b), 42);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert(!pthread_equal(rec.tid, pthread_self()));
	ck_assert_int_eq(iothread_call_sync(io, do_unwatch, &wt), 0);
	close(efd);
}
END_TEST

START_TEST(unwatch_signalled_fd_in_one_call)
{
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	ck_assert_int_ge(efd, 0);
	for (int i = 0; i < 100; i++) {
		struct watch wt = { 0 };

		ck_assert_int_eq(eventfd_write(efd, 1), 0); /* the kick */
		wt.w.fd = efd;
		wt.w.fn = watch_fired;
		wt.w.opaque = &wt;
		ck_assert_int_eq(iothread_call_sync(io, watch_then_unwatch, &wt), 0);
		ck_assert(!wt.w.armed);
	}
	close(efd);
}
END_TEST

/* ---- end-of-batch hooks ------------------------------------------------ */

struct hook_rec {
	struct iothread_hook h;
	unsigned int runs;	/* atomic */
	unsigned int seq_at_run;
};

static unsigned int seq; /* bumped by calls and hooks, on the I/O thread */

static void hook_fn(void *opaque)
{
	struct hook_rec *r = opaque;

	r->seq_at_run = ++seq;
	__atomic_add_fetch(&r->runs, 1, __ATOMIC_RELEASE);
}

struct two_hooks {
	struct hook_rec *a, *b;
	unsigned int seq_at_call;
};

static int defer_hooks(void *opaque)
{
	struct two_hooks *t = opaque;

	t->seq_at_call = ++seq;
	/* The same hook three times in one batch runs once. */
	iothread_defer(io, &t->a->h);
	iothread_defer(io, &t->a->h);
	iothread_defer(io, &t->b->h);
	iothread_defer(io, &t->a->h);
	/* Hooks run after the batch, not now. */
	return (int)(t->a->runs + t->b->runs);
}

START_TEST(hooks_run_once_per_batch)
{
	struct hook_rec a = { .h = { .fn = hook_fn, .opaque = &a } };
	struct hook_rec b = { .h = { .fn = hook_fn, .opaque = &b } };
	struct two_hooks t = { .a = &a, .b = &b };

	ck_assert_int_eq(iothread_call_sync(io, defer_hooks, &t), 0);
	settle(io);
	ck_assert_uint_eq(a.runs, 1);
	ck_assert_uint_eq(b.runs, 1);
	ck_assert_uint_gt(a.seq_at_run, t.seq_at_call);
	ck_assert_uint_gt(b.seq_at_run, t.seq_at_call);
	ck_assert(!a.h.queued && !b.h.queued);

	/* Another batch: each runs once more. */
	ck_assert_int_eq(iothread_call_sync(io, defer_hooks, &t), 2);
	settle(io);
	ck_assert_uint_eq(a.runs, 2);
	ck_assert_uint_eq(b.runs, 2);
}
END_TEST

/* A watched fd's callback defers a hook: one hook run per callback batch,
 * never more runs than callbacks. */
struct fd_hook {
	struct watch wt;
	struct hook_rec hr;
};

static void fd_defers(void *opaque)
{
	struct fd_hook *fh = opaque;

	watch_fired(&fh->wt);
	iothread_defer(io, &fh->hr.h);
}

START_TEST(hook_from_fd_callback)
{
	struct fd_hook fh;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	unsigned int fired;

	memset(&fh, 0, sizeof(fh));
	ck_assert_int_ge(efd, 0);
	fh.wt.w = (struct iothread_fd){ .fd = efd, .fn = fd_defers, .opaque = &fh };
	fh.hr.h = (struct iothread_hook){ .fn = hook_fn, .opaque = &fh.hr };
	ck_assert_int_eq(iothread_call_sync(io, do_watch, &fh.wt), 0);
	for (unsigned int i = 1; i <= 5; i++) {
		ck_assert_int_eq(eventfd_write(efd, 1), 0);
		wait_for(&fh.wt.fired, i);
		settle(io);
		ck_assert_uint_eq(fh.hr.runs, i);
	}
	/* A burst: coalesced or not, hooks never outnumber callbacks. */
	for (unsigned int i = 0; i < 20; i++)
		ck_assert_int_eq(eventfd_write(efd, 1), 0);
	wait_for(&fh.wt.fired, 6);
	settle(io);
	fired = __atomic_load_n(&fh.wt.fired, __ATOMIC_ACQUIRE);
	ck_assert_uint_ge(fh.hr.runs, 6);
	ck_assert_uint_le(fh.hr.runs, fired);
	ck_assert_int_eq(iothread_call_sync(io, do_unwatch, &fh.wt), 0);
	close(efd);
}
END_TEST

/* ---- SQEs and the nested loop ---------------------------------------- */

struct nop {
	struct iothread_cb cb;
	int res;
	unsigned int done;
};

static void nop_done(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct nop *n = container_of(cb, struct nop, cb);

	(void)flags;
	n->res = res;
	n->done++;
}

static bool nops_done(void *opaque)
{
	struct nop *n = opaque;

	for (unsigned int i = 0; i < 3; i++)
		if (!n[i].done)
			return false;
	return true;
}

/* Like a queue drain on reset: queue work, then run the loop from inside
 * a call until it has completed. */
static int nops_and_run_until(void *opaque)
{
	struct nop *n = opaque;

	for (unsigned int i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe;

		n[i].cb.fn = nop_done;
		n[i].res = -1;
		sqe = iothread_get_sqe(io, &n[i].cb);
		if (!sqe)
			return -EBUSY;
		io_uring_prep_nop(sqe);
		iothread_sqe_nofile(io, sqe);
	}
	iothread_run_until(io, nops_done, n);
	return 0;
}

START_TEST(sqe_callbacks_and_run_until)
{
	struct nop n[3];
	struct iothread_stats st;

	memset(n, 0, sizeof(n));
	ck_assert_int_eq(iothread_call_sync(io, nops_and_run_until, n), 0);
	for (unsigned int i = 0; i < 3; i++) {
		ck_assert_uint_eq(n[i].done, 1);
		ck_assert_int_eq(n[i].res, 0);
	}
	settle(io);
	for (unsigned int i = 0; i < 3; i++)
		ck_assert_uint_eq(n[i].done, 1); /* each CQE dispatched once */
	iothread_get_stats(io, &st);
	ck_assert_uint_ge(st.cqes, 3);
	ck_assert_uint_gt(st.submits, 0);
	ck_assert_uint_gt(st.loops, 0);
}
END_TEST

/* More SQEs than the ring holds: iothread_get_sqe submits to make room. */
static int many_nops(void *opaque)
{
	struct nop *n = opaque;

	for (unsigned int i = 0; i < 4 * RING_ENTRIES; i++) {
		struct io_uring_sqe *sqe;

		n[i].cb.fn = nop_done;
		sqe = iothread_get_sqe(io, &n[i].cb);
		if (!sqe)
			return -EBUSY;
		io_uring_prep_nop(sqe);
		iothread_sqe_nofile(io, sqe);
	}
	return 0;
}

static bool all_nops_done(void *opaque)
{
	struct nop *n = opaque;

	for (unsigned int i = 0; i < 4 * RING_ENTRIES; i++)
		if (!n[i].done)
			return false;
	return true;
}

static int wait_all_nops(void *opaque)
{
	iothread_run_until(io, all_nops_done, opaque);
	return 0;
}

START_TEST(sq_full_submits_and_retries)
{
	struct nop *n = calloc(4 * RING_ENTRIES, sizeof(*n));

	ck_assert_ptr_nonnull(n);
	ck_assert_int_eq(iothread_call_sync(io, many_nops, n), 0);
	ck_assert_int_eq(iothread_call_sync(io, wait_all_nops, n), 0);
	for (unsigned int i = 0; i < 4 * RING_ENTRIES; i++) {
		ck_assert_uint_eq(n[i].done, 1);
		ck_assert_int_eq(n[i].res, 0);
	}
	free(n);
}
END_TEST

/* ---- busy-pollers ---------------------------------------------------- */

struct pol {
	struct iothread_poller p;
	bool work;	     /* set by a call: "a request arrived" */
	unsigned int found;  /* atomic */
	unsigned int polled; /* atomic: times fn ran */
};

static bool pol_fn(void *opaque)
{
	struct pol *p = opaque;

	__atomic_add_fetch(&p->polled, 1, __ATOMIC_RELAXED);
	if (!p->work)
		return false;
	p->work = false;
	__atomic_add_fetch(&p->found, 1, __ATOMIC_RELEASE);
	return true;
}

static int pol_add(void *opaque)
{
	iothread_add_poller(io, &((struct pol *)opaque)->p);
	return 0;
}

static int pol_remove(void *opaque)
{
	iothread_remove_poller(io, &((struct pol *)opaque)->p);
	return 0;
}

static int pol_post(void *opaque)
{
	((struct pol *)opaque)->work = true;
	return 0;
}

static int pol_peek(void *opaque)
{
	return ((struct pol *)opaque)->work;
}

START_TEST(pollers)
{
	struct pol on, off;
	struct iothread_stats s0, s1;

	memset(&on, 0, sizeof(on));
	memset(&off, 0, sizeof(off));
	on.p = (struct iothread_poller){ .fn = pol_fn, .opaque = &on, .poll_us = 100 };
	off.p = (struct iothread_poller){ .fn = pol_fn, .opaque = &off, .poll_us = 0 };
	ck_assert_int_eq(iothread_call_sync(io, pol_add, &off), 0);
	ck_assert_int_eq(iothread_call_sync(io, pol_add, &on), 0);
	settle(io);
	iothread_get_stats(io, &s0);

	/* Work that shows up while the thread is awake is found by polling,
	 * with no wake-up of its own. */
	ck_assert_int_eq(iothread_call_sync(io, pol_post, &on), 0);
	wait_for(&on.found, 1);
	settle(io);
	iothread_get_stats(io, &s1);
	ck_assert_uint_eq(s1.poll_hits, s0.poll_hits + 1);
	/* A poll_us = 0 poller is never called, even when others poll. */
	ck_assert_int_eq(iothread_call_sync(io, pol_post, &off), 0);
	settle(io);
	ck_assert_uint_eq(__atomic_load_n(&off.polled, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(iothread_call_sync(io, pol_peek, &off), 1);

	/* Removed: no longer polled. */
	ck_assert_int_eq(iothread_call_sync(io, pol_remove, &on), 0);
	ck_assert_int_eq(iothread_call_sync(io, pol_remove, &on), 0); /* absent */
	ck_assert_int_eq(iothread_call_sync(io, pol_post, &on), 0);
	settle(io);
	ck_assert_int_eq(iothread_call_sync(io, pol_peek, &on), 1);
	ck_assert_uint_eq(__atomic_load_n(&on.found, __ATOMIC_ACQUIRE), 1);
	iothread_get_stats(io, &s0);
	ck_assert_uint_eq(s0.poll_hits, s1.poll_hits);
	ck_assert_int_eq(iothread_call_sync(io, pol_remove, &off), 0);
}
END_TEST

/* ---- lifecycle ------------------------------------------------------- */

START_TEST(stop_destroy_idempotent)
{
	struct iothread *t;

	iothread_stop(NULL);
	iothread_destroy(NULL);

	/* Never started. */
	ck_assert_int_eq(iothread_create(1, RING_ENTRIES, &t), 0);
	iothread_stop(t);
	iothread_stop(t);
	iothread_destroy(t);

	/* Started: stop twice, then destroy (which stops again). */
	ck_assert_int_eq(iothread_create(2, RING_ENTRIES, &t), 0);
	ck_assert_int_eq(iothread_start(t), 0);
	iothread_stop(t);
	iothread_stop(t);
	iothread_destroy(t);

	/* Destroy a running thread directly. */
	ck_assert_int_eq(iothread_create(3, RING_ENTRIES, &t), 0);
	ck_assert_int_eq(iothread_start(t), 0);
	settle(t);
	iothread_destroy(t);

	/* Started once only: not twice, and not again after a stop (the
	 * exited thread's polls are gone; a restart would hang callers). */
	ck_assert_int_eq(iothread_create(4, RING_ENTRIES, &t), 0);
	ck_assert_int_eq(iothread_start(t), 0);
	ck_assert_int_eq(iothread_start(t), -EINVAL);
	settle(t);
	iothread_stop(t);
	ck_assert_int_eq(iothread_start(t), -EINVAL);
	iothread_destroy(t);
}
END_TEST

static Suite *iothread_suite(void)
{
	Suite *s = suite_create("iothread");
	TCase *tc = tcase_create("iothread");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, call_sync_runs_on_the_thread);
	tcase_add_test(tc, call_sync_from_the_thread_is_inline);
	tcase_add_test(tc, call_sync_inline_when_not_started);
	tcase_add_test(tc, posted_calls_run_at_once);
	tcase_add_test(tc, posted_calls_share_a_thread);
	tcase_add_test(tc, posted_call_inline_when_not_started);
	tcase_add_test(tc, watch_and_unwatch_eventfd);
	tcase_add_test(tc, unwatch_signalled_fd_in_one_call);
	tcase_add_test(tc, posted_call_running_the_loop);
	tcase_add_test(tc, hooks_run_once_per_batch);
	tcase_add_test(tc, hook_from_fd_callback);
	tcase_add_test(tc, sqe_callbacks_and_run_until);
	tcase_add_test(tc, sq_full_submits_and_retries);
	tcase_add_test(tc, pollers);
	tcase_add_test(tc, stop_destroy_idempotent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(iothread_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
