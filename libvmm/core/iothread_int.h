/* SPDX-License-Identifier: MIT */
/*
 * Inside the I/O threads: struct iothread, shared by iothread.c (the
 * thread, its loop, fd watches, hooks, pollers and cross-thread calls) and
 * iothread_ring.c (the io_uring's set-up: registered files and the
 * restrictions of its opcodes).
 */
#ifndef VMM_IOTHREAD_INT_H
#define VMM_IOTHREAD_INT_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>

#include "iothread.h"
#include "util/compiler.h"

struct iothread {
	unsigned int index;
	struct io_uring ring;
	pthread_t thread;
	bool started;
	bool stop; /* set on the I/O thread by the stop eventfd handler */
	bool submit_error; /* the last submit failed (log once per burst) */
	bool stopped;	   /* joined by iothread_stop(): cannot start again */
	bool restricted; /* ring limited to ring_sqe_ops[] (iothread_ring_init) */
	bool fixed_files; /* ... and to registered files (iothread_ring_init) */
	bool batch;	 /* run as SCHED_BATCH (iothread_set_batch) */

	/* Registered-file table, owned by the I/O thread (or by the caller
	 * while it does not run): the fd in each slot, -1 free.  Slots are
	 * never shared: one per iothread_file_get(). */
	int *files;
	unsigned int nr_files, files_used, file_hint;

	int stop_efd;
	struct iothread_fd stop_w;
	int call_efd;
	struct iothread_fd call_w;

	/* call_lock protects calls and every call's done flag. */
	pthread_mutex_t call_lock;
	pthread_cond_t call_cond;
	struct iothread_call *calls;

	/* Owned by the I/O thread.  A hook is on at most one of the three
	 * lists (its queued flag): hooks run at the end of this round;
	 * retry at the end of the next one (iothread_defer_next()), which
	 * moves them to retry_due when it starts. */
	struct iothread_hook *hooks;
	struct iothread_hook *retry, *retry_due;
	/* iothread_fail_sqes(): grant fail_after SQEs, then refuse fail_sqes. */
	unsigned int fail_after, fail_sqes;
	struct iothread_poller *pollers;
	struct iothread_stats st; /* written by the thread, read relaxed */
};

/* A statistic of the I/O thread's own (the only writer); others read them
 * relaxed (iothread_get_stats()). */
#define STAT_INC(io, f, n) \
	__atomic_store_n(&(io)->st.f, (io)->st.f + (n), __ATOMIC_RELAXED)

/* The ring of @entries SQEs, restricted and with its file table
 * (iothread_ring.c).  Context: iothread_create().  Returns 0 or -errno. */
int iothread_ring_init(struct iothread *io, unsigned int entries) __must_check;
/* Free the registered-file table (the ring itself is the caller's). */
void iothread_ring_free_files(struct iothread *io);

#endif
