/* SPDX-License-Identifier: MIT */
/*
 * The lower half of the I/O threads: one io_uring as iothread.c uses it,
 * set up restricted to the opcodes the threads submit and, where the kernel
 * allows, to a table of registered files (see iothread.h, "Registered
 * files").  It knows nothing of threads: the owner of the ring (the I/O
 * thread, or whoever holds it while the thread does not run) calls it,
 * and iothread.c moves the calls onto that owner.
 */
#ifndef VMM_IOTHREAD_RING_H
#define VMM_IOTHREAD_RING_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"

/*
 * A file as this ring's SQEs name it: a slot of the ring's registered
 * table (sqe_flags IOSQE_FIXED_FILE), or the plain fd on a ring without
 * one.  Zero-initialised: holds nothing.
 */
struct iothread_file {
	int fd;		   /* the process's fd */
	int idx;	   /* what goes in sqe->fd */
	uint8_t sqe_flags; /* what goes in sqe->flags (iothread_sqe_file()) */
	bool held;	   /* got and not put */
};

/* After io_uring_prep_*(sqe, f->idx, ...): name @f's file. */
static inline void iothread_sqe_file(struct io_uring_sqe *sqe,
				     const struct iothread_file *f)
{
	sqe->flags |= f->sqe_flags;
}

struct iothread_ring {
	struct io_uring uring;
	unsigned int index; /* the I/O thread's, for messages */
	bool restricted;  /* limited to ring_sqe_ops[] (iothread_ring_init) */
	bool fixed_files; /* ... and to registered files (iothread_ring_init) */

	/* Registered-file table, owned by the ring's owner: the fd in each
	 * slot, -1 free.  Slots are never shared: one per
	 * iothread_ring_file_get(). */
	int *files;
	unsigned int nr_files, files_used, file_hint;

	/* Written by the owner only, read relaxed (iothread_get_stats()). */
	uint64_t file_updates; /* IORING_REGISTER_FILES_UPDATE calls */
	uint32_t files_held;   /* slots held now */
};

/* The ring of @entries SQEs of I/O thread @index, restricted and with its
 * file table as far as the kernel allows.  Context: iothread_create().
 * Returns 0 or -errno. */
int iothread_ring_init(struct iothread_ring *r, unsigned int index,
		       unsigned int entries) __must_check;
/* Close the ring (which drops every registered file) and free the table. */
void iothread_ring_exit(struct iothread_ring *r);

/*
 * Register @fd in a free slot of the table and describe it in @f; the ring
 * must have one (fixed_files).  Returns 0, -ENOSPC (table full) or the
 * kernel's -errno.  Context: the ring's owner.
 */
int iothread_ring_file_get(struct iothread_ring *r, int fd,
			   struct iothread_file *f) __must_check;
/* Free @f's slot; @kernel false: bookkeeping only (the table goes with the
 * ring, see iothread_file_put()).  Context: the ring's owner. */
void iothread_ring_file_put(struct iothread_ring *r, struct iothread_file *f,
			    bool kernel);

#endif
