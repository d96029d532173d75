/* SPDX-License-Identifier: MIT */
/*
 * Non-blocking output to an embedder's file descriptor without changing
 * its file description (which a shell, a supervisor or the embedder may
 * share: setting O_NONBLOCK on it would change their writes too).
 *
 *  - a socket: send(MSG_DONTWAIT | MSG_NOSIGNAL) (a socket cannot be
 *    reopened through /proc);
 *  - a regular file or block device, or a description that already is
 *    non-blocking: written as it is (neither waits for a reader);
 *  - a pipe, FIFO, terminal or other character device: a private,
 *    non-blocking open file description of the same file
 *    (/proc/self/fd/N reopened with O_NONBLOCK);
 *  - anything else (the reopen failed: no /proc, permissions): written at
 *    most PIPE_BUF bytes at a time once poll() reports it writable, which
 *    does not block unless another writer fills the same pipe in between.
 *
 * So nbfd_write() returns -1/EAGAIN instead of waiting for a reader, and a
 * thread that must stay responsive (a device thread told to stop) polls
 * nbfd.fd for POLLOUT together with whatever wakes it.  Needs nothing but
 * libc (minivmm-oci compiles it in for its log: examples/oci).
 */
#ifndef VMM_NBFD_H
#define VMM_NBFD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct nbfd {
	int fd;		 /* what to write to and poll: the embedder's fd or
			    our reopen; -1: none */
	bool own;	 /* fd is our reopen: nbfd_close() closes it */
	bool sock;	 /* a socket: send() with MSG_DONTWAIT */
	bool poll_first; /* blocking description that could not be reopened */
};

/*
 * Set @e up for writing to @fd (-1: none).  The reopen is an open():
 * Context: before any seccomp confinement of the threads that write.
 */
void nbfd_open_out(struct nbfd *e, int fd);
/*
 * Write up to @len bytes of @buf without waiting: the count written (> 0),
 * or -1 with errno (EAGAIN: the fd takes nothing now; EPIPE, ...).  Each
 * call is one write()/send() (after a poll() with no timeout in the
 * poll_first case).
 */
ssize_t nbfd_write(const struct nbfd *e, const void *buf, size_t len);
/* Close our reopen, if any (never the embedder's fd). */
void nbfd_close(struct nbfd *e);

#endif
