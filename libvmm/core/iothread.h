/* SPDX-License-Identifier: MIT */
/*
 * I/O threads: one per vCPU ("vmm-ioN"), each owning one io_uring.
 *
 * A thread waits on everything through its ring: multishot POLL_ADD on the
 * eventfds it serves (virtqueue kicks from KVM ioeventfds), the completions
 * of the I/O it submitted, and a stop eventfd (no pthread_cancel).  Every
 * SQE carries a struct iothread_cb pointer as user_data; the loop calls
 * cb->fn for each CQE, runs the end-of-batch hooks (devices signal their
 * irqfds there, once per batch), submits what handlers queued in one
 * io_uring_submit and sleeps -- unless a hook yielded (iothread_yield()):
 * then the next round only collects the completions ready by then.
 * Optionally it busy-polls registered pollers for a bounded time before
 * sleeping.
 *
 * The core knows nothing of devices: they register callbacks.  State owned
 * by a thread is changed from other threads only through a call run on
 * the I/O thread: iothread_call_sync(), or iothread_call_post() and
 * iothread_call_wait() for calls to many threads at once.
 *
 * Registered files.  Where the kernel allows (5.10+), the ring has a table
 * of registered files and only accepts SQEs that name a file by its slot
 * there (IOSQE_FIXED_FILE required; see ring_restrict() in iothread-ring.c):
 * every fd an SQE uses is first registered with iothread_file_get() (or by
 * iothread_watch_fd()), and SQEs are prepared with iothread_sqe_file() /
 * iothread_sqe_nofile().  Elsewhere the same calls hand back the plain fd,
 * so users need not care which ring they got.
 */
#ifndef VMM_IOTHREAD_H
#define VMM_IOTHREAD_H

#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "iothread-ring.h"
#include "util/compiler.h"

struct iothread;

/* Embedded in whatever an SQE completes for; user_data points here. */
struct iothread_cb {
	void (*fn)(struct iothread_cb *cb, int res, uint32_t cqe_flags);
};

/* struct iothread_file, a file as this thread's SQEs name it, and
 * iothread_sqe_file(): iothread-ring.h. */

/* A watched fd: fn runs on the I/O thread each time fd becomes readable. */
struct iothread_fd {
	struct iothread_cb cb; /* internal */
	struct iothread *io;   /* internal: set by iothread_watch_fd() */
	int fd;
	/* Optional: @fd registered by the caller (iothread_file_get()), who
	 * keeps it across watches.  NULL: the watch registers @fd itself
	 * (in own) and unregisters it when unwatched. */
	const struct iothread_file *file;
	struct iothread_file own; /* internal */
	void (*fn)(void *opaque);
	void *opaque;
	/* Poll mask (POLLIN when 0).  fn runs at each wake-up of the file
	 * for these events, not once per level: a POLLOUT watch on a socket
	 * runs when the peer frees room, not while room stays. */
	short events;
	bool armed;	/* a multishot poll is outstanding */
	bool removing;	/* poll_remove sent; waiting for the final CQE */
};

/* End-of-batch hook (linked list entry owned by the caller). */
struct iothread_hook {
	void (*fn)(void *opaque);
	void *opaque;
	bool queued;
	struct iothread_hook *next;
	uint64_t when; /* internal: iothread_defer_at()'s time */
};

/* Busy-poller: returns true if it found work. */
struct iothread_poller {
	bool (*fn)(void *opaque);
	void *opaque;
	uint32_t poll_us;	/* window before sleeping; 0 = never poll */
	struct iothread_poller *next;
};

struct iothread_stats {
	uint64_t loops;		/* rounds: wake-ups, and rounds that do not
				   sleep (a yield, a busy poll that found work) */
	uint64_t cqes;
	uint64_t submits;	/* io_uring_submit calls */
	uint64_t poll_hits;	/* busy-poll rounds that found work */
	uint64_t file_updates;	/* IORING_REGISTER_FILES_UPDATE calls */
	uint64_t sched_switches; /* adaptive policy changes */
	uint64_t sched_normal_ns; /* adaptive: time run SCHED_OTHER so far */
	uint64_t waits;		/* rounds whose wait could block (for a CQE,
				   or bounded by a retry or a timed hook) */
	uint64_t yields;	/* yielded hooks run (iothread_yield()) */
	uint32_t files;		/* registered files held now */
	uint32_t files_max;	/* slots in the table (0: no registered files) */
	bool sched_batch;	/* SCHED_BATCH now (fixed, or adaptive's choice) */
};

int iothread_create(unsigned int index, unsigned int ring_entries,
		    struct iothread **out) __must_check;
/*
 * Run the thread as SCHED_BATCH (set before iothread_start()): a kick then
 * wakes it without preempting the task on its CPU, usually the kicking
 * vCPU, which keeps queueing requests (see vmm_set_iothread_sched()).
 */
void iothread_set_batch(struct iothread *io, bool batch);
/*
 * Adaptive (set before iothread_start(); wins over iothread_set_batch()):
 * SCHED_BATCH while kicks find batches, SCHED_OTHER while they find lone
 * requests (iosched-adapt.h), fed by iothread_note_wake().
 */
void iothread_set_adaptive(struct iothread *io, bool adaptive);
/*
 * A kick woke a queue of this thread and found @found requests waiting.
 * Costs a clock read (vDSO), and one sched_setscheduler() when the
 * adaptive policy changes; nothing at all unless adaptive.  Context: the
 * I/O thread.
 */
void iothread_note_wake(struct iothread *io, uint32_t found);
/* Start the thread; once only (-EINVAL if started or stopped before). */
int iothread_start(struct iothread *io) __must_check;
/* Stop (stop eventfd) and join; idempotent. */
void iothread_stop(struct iothread *io);
void iothread_destroy(struct iothread *io);

/*
 * Run @fn(@opaque) on the I/O thread (or inline if the thread is not
 * running, or if called from it) and wait for it.  Returns fn's value.
 * Context: any thread but the I/O thread's own handlers may block here.
 */
int iothread_call_sync(struct iothread *io, int (*fn)(void *opaque),
		       void *opaque);

/*
 * The same call in two halves, so that one caller can have work running
 * on many I/O threads at once and wait once (a device start or stop with a
 * queue per vCPU: one sequential round trip per queue is what a guest's
 * DRIVER_OK or reset would otherwise stall for).  The caller owns @c;
 * fields are internal.  Every posted call must be waited for, with the
 * same @io, before @c is reused or freed.
 *
 * Several calls may be posted to one thread.  Their order is unspecified
 * (a batch taken at once runs newest first), and they may nest: a call
 * that runs the loop (iothread_run_until()) can have a call posted later
 * run inside it.  So calls posted to one thread must not wait for one
 * another's effects: whether the other one can run first depends on
 * timing.
 */
struct iothread_call {
	int (*fn)(void *opaque);
	void *opaque;
	int ret;
	bool done; /* under the thread's call lock */
	struct iothread_call *next;
};

/* Queue @fn(@opaque) on @io and wake it (inline, as above, when it does not
 * run or when called from it). */
void iothread_call_post(struct iothread *io, struct iothread_call *c,
			int (*fn)(void *opaque), void *opaque);
/* Wait for a posted call to have run; returns fn's value.  Context: as
 * iothread_call_sync() (it blocks). */
int iothread_call_wait(struct iothread *io, struct iothread_call *c);

/* ---- Context: the I/O thread (or before start) ---- */

/* Start watching w->fd (multishot poll).  Returns 0 or -errno. */
int iothread_watch_fd(struct iothread *io, struct iothread_fd *w) __must_check;
/* Stop watching; returns once the poll is gone (runs the loop meanwhile). */
void iothread_unwatch_fd(struct iothread *io, struct iothread_fd *w);

/* An SQE whose completion calls cb->fn; NULL if the ring is full even after
 * submitting what was queued (then retry later). */
struct io_uring_sqe *iothread_get_sqe(struct iothread *io, struct iothread_cb *cb);
/* Queue @h to run once after the current batch of CQEs. */
void iothread_defer(struct iothread *io, struct iothread_hook *h);
/*
 * Queue @h to run once at the end of the next round, which sleeps
 * IOTHREAD_RETRY_NS (1 ms) at most: for work that waits for a resource
 * (the ring refused an SQE) that no completion will signal.  A hook that
 * defers itself again runs once per round, never in a loop.  Not for
 * work that is ready now: see iothread_yield().
 */
void iothread_defer_next(struct iothread *io, struct iothread_hook *h);
/*
 * Queue @h to run once at the end of the next round, whose wait does not
 * block: that round takes the completions ready by then (other queues'
 * kicks), runs their callbacks and this round's hooks, then @h.  For
 * work that is ready but gives the thread's other work a turn first (a
 * queue that used its budget for one call); a hook that yields again
 * runs once per round, so yielding hooks take turns with each other and
 * with completions.  Already queued on a later list (iothread_defer_next(),
 * iothread_defer_at()): moved here; queued to run this round, or yielded
 * already: left as it is.
 */
void iothread_yield(struct iothread *io, struct iothread_hook *h);
/*
 * Queue @h to run once at the end of the first round that ends at or
 * after @when_ns (CLOCK_MONOTONIC): the thread's wait for completions is
 * bounded by the earliest such time, so timed work needs no timer of its
 * own (e.g. a queue waiting for a rate limit's tokens).  Already queued
 * for a later time: moved earlier; queued otherwise: left as it is.
 */
void iothread_defer_at(struct iothread *io, struct iothread_hook *h,
		       uint64_t when_ns);
/* Take @h off whichever list it is queued on (before freeing it). */
void iothread_undefer(struct iothread *io, struct iothread_hook *h);
/*
 * Fault injection for tests: after @after more SQEs, the next @n
 * iothread_get_sqe() calls return NULL, as when the SQ is full and the
 * kernel will not take it.
 */
void iothread_fail_sqes(struct iothread *io, unsigned int after, unsigned int n);
void iothread_add_poller(struct iothread *io, struct iothread_poller *p);
void iothread_remove_poller(struct iothread *io, struct iothread_poller *p);
/* Process completions until @done(@opaque) is true (drain on reset). */
void iothread_run_until(struct iothread *io, bool (*done)(void *opaque),
			void *opaque);

/* ---- registered files.  Context: any thread (the work is done on the
 * I/O thread, through a call to it, while it runs). ---- */

/*
 * iothread_file_get - register @fd in the ring's table (one slot per call,
 * even for an fd registered already) and describe it in @f.  The slot
 * holds its own reference to the open file: keep @fd open and @f held for
 * as long as SQEs may use it, then iothread_file_put().  On a ring without
 * registered files @f simply names @fd.  Registrations should live as long
 * as the fd: before Linux 6.13 a removal takes effect only once every
 * fixed-file request submitted before it has completed, and the thread's
 * own polls never complete, so every put while the thread runs leaves the
 * old file referenced until the ring is destroyed.
 * Returns 0, -EBADF (@fd < 0), -ENOSPC (table full), -ESHUTDOWN (thread
 * stopped) or the kernel's -errno.
 */
int iothread_file_get(struct iothread *io, int fd, struct iothread_file *f)
	__must_check;
/* Release @f's slot (a no-op if @f holds nothing).  After iothread_stop()
 * only the bookkeeping: the table goes with the ring. */
void iothread_file_put(struct iothread *io, struct iothread_file *f);

/* After io_uring_prep_*() of an SQE that takes no file (NOP, POLL_REMOVE):
 * a ring with registered files requires IOSQE_FIXED_FILE on EVERY SQE;
 * the kernel ignores it for opcodes without a file. */
void iothread_sqe_nofile(struct iothread *io, struct io_uring_sqe *sqe);

unsigned int iothread_index(const struct iothread *io);
/* Whether the ring only accepts the opcodes the I/O threads use
 * (IORING_REGISTER_RESTRICTIONS; false on kernels before 5.10). */
bool iothread_ring_restricted(const struct iothread *io);
/* Whether it also only accepts SQEs on registered files (see above). */
bool iothread_ring_fixed_files(const struct iothread *io);
/* The ring's fd (tests inspect /proc/self/fdinfo). */
int iothread_ring_fd(const struct iothread *io);
void iothread_get_stats(struct iothread *io, struct iothread_stats *st);

/* Pin the started I/O thread to @set (pthread_setaffinity_np()).
 * Returns 0, -ESRCH when not started, or the call's -errno.
 * Context: a thread the library does not confine (the one in vmm_start()). */
int iothread_set_affinity(struct iothread *io, const cpu_set_t *set);

#endif
