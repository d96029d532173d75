/* SPDX-License-Identifier: MIT */
/*
 * Non-blocking use of a file descriptor the library does not own (the
 * embedder's console fds, the process's standard error), without touching
 * the embedder's open file description: its O_NONBLOCK flag is shared
 * with whoever else holds it (a shell, a supervisor), so setting it would
 * change their I/O too.
 *
 * nbfd_open() picks one of four ways to reach the fd:
 *  - NBFD_DIRECT: a regular file or block device (neither waits for a
 *    reader), or a description that already is non-blocking: used as it is;
 *  - NBFD_REOPEN: a pipe, FIFO, terminal or other character device: a
 *    private, non-blocking open file description of the same file
 *    (/proc/self/fd/N reopened with O_NONBLOCK);
 *  - NBFD_SOCKET: a socket (which /proc cannot reopen): written with
 *    send(MSG_DONTWAIT | MSG_NOSIGNAL), which never waits whatever the
 *    description's flags;
 *  - NBFD_POLL: anything else, or a reopen that failed (no /proc,
 *    permissions): written NBFD_POLL_CHUNK bytes at a time, only after
 *    poll() reports it writable (a pipe then has a free page, a terminal
 *    room for WAKEUP_CHARS), which does not block unless another writer
 *    fills the same pipe in between.
 *
 * This module logs nothing (the log sink itself is built on it): failures
 * come back as -errno for the caller to report.
 */
#ifndef VMM_NBFD_H
#define VMM_NBFD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NBFD_POLL_CHUNK 256u

enum nbfd_mode { NBFD_NONE, NBFD_DIRECT, NBFD_REOPEN, NBFD_SOCKET, NBFD_POLL };

struct nbfd {
	int fd;		     /* the fd used: the caller's, or our reopen; -1 none */
	enum nbfd_mode mode;
	bool own;	     /* fd is our private reopen: nbfd_close() closes it */
};

/*
 * Prepare @fd for non-blocking use in direction @acc (O_RDONLY or
 * O_WRONLY); @fd < 0 gives mode NBFD_NONE.  Never fails: a reopen that
 * fails leaves NBFD_POLL, and its errno is returned (0 otherwise) so the
 * caller can say why.  Context: a thread that may open() (before any
 * seccomp confinement).
 */
int nbfd_open(int fd, int acc, struct nbfd *e);

/* Close what nbfd_open() opened (nothing for a borrowed fd). */
void nbfd_close(struct nbfd *e);

/*
 * Write at most @len bytes without blocking.  Returns the bytes written
 * (> 0), -EAGAIN when the fd takes nothing now, or -errno (EPIPE, EIO,
 * ...).  NBFD_POLL: checks with poll(fd, POLLOUT, 0) first, and writes at
 * most NBFD_POLL_CHUNK bytes.  EINTR is
 * retried.  Async-signal-safe.  Context: any thread; the calls it makes
 * (write, sendto with MSG_DONTWAIT | MSG_NOSIGNAL, poll) are on every
 * seccomp allow-list (sandbox.c).
 */
ssize_t nbfd_write(const struct nbfd *e, const void *buf, size_t len);

/*
 * Write all of @buf, waiting up to @timeout_ms (poll POLLOUT) each time
 * the fd takes nothing (0: never wait).  Returns the bytes written; *@err
 * is 0 (all written), -EAGAIN (nothing taken in time: the rest is left)
 * or -errno.  Async-signal-safe; same calls and context as nbfd_write().
 */
size_t nbfd_write_all(const struct nbfd *e, const void *buf, size_t len,
		      int timeout_ms, int *err);

#endif
