/* SPDX-License-Identifier: MIT */
/*
 * Host side of the serial console: the embedder's console fds
 * (vmm_set_console()) on one side, a device (the 8250 UART) on the other.
 *
 * Output never blocks the device.  serial_host_write() (a vCPU, under the
 * UART's lock) writes straight to the fd when nothing is queued and the fd
 * cannot block (below); what the fd does not take at once goes to a
 * bounded buffer (SERIAL_HOST_OUT_BUF bytes) that the console thread drains;
 * bytes that do not fit there are dropped and counted: the guest keeps
 * running at full speed whatever the reader does (a stalled pipe, a
 * terminal after Ctrl-S).  No write() ever blocks: the fds are used
 * through nbfd.h, which never changes the embedder's own file description:
 *  - a pipe, FIFO, terminal or other character device is written through
 *    a private, non-blocking open file description of the same file
 *    (/proc/self/fd/N reopened with O_NONBLOCK);
 *  - a socket with send(MSG_DONTWAIT);
 *  - a regular file or block device, or a description that already is
 *    non-blocking, is written as it is (neither waits for a reader);
 *  - anything else (a reopen that failed: no /proc, permissions) is
 *    written in chunks of at most NBFD_POLL_CHUNK bytes once poll()
 *    reports it writable, which does not block unless another writer
 *    fills the same pipe in between.
 * Input is read the same way (reopened non-blocking, or after poll()), so
 * a read never waits either, and pushed to the device as it has room.
 *
 * serial_host_stop() is bounded: the thread is woken through an eventfd, makes
 * a last attempt to write what is buffered for at most SERIAL_HOST_FLUSH_MS,
 * drops (and counts) the rest and ends.
 *
 * VMM threads block asynchronous signals (thread.h), so a write to a pipe
 * whose reader is gone (EPIPE) raises no SIGPIPE in the process: the
 * console logs it once and drops output from then on.
 */
#ifndef VMM_SERIAL_HOST_H
#define VMM_SERIAL_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

#define SERIAL_HOST_OUT_BUF (64u << 10)
#define SERIAL_HOST_FLUSH_MS 1000

struct serial_host;
struct sandbox;

struct serial_host_params {
	int in_fd;  /* guest input comes from here, or -1; borrowed */
	int out_fd; /* guest output goes here, or -1 to discard; borrowed */
	/*
	 * Hands up to @len input bytes to the device; returns how many it
	 * took (0 when its FIFO is full: the rest is offered again ~5 ms
	 * later).  Context: console thread.
	 */
	size_t (*push_input)(void *opaque, const void *buf, size_t len);
	void *opaque;
	/* Filter the console thread installs on itself, or NULL. */
	const struct sandbox *seccomp;
	/* Called (console thread) if that filter cannot be installed; the
	 * thread then ends. */
	void (*failed)(void *opaque);
};

struct serial_host_stats {
	uint64_t bytes_out;	/* written to out_fd */
	uint64_t bytes_dropped; /* guest output never written (buffer full,
				   out_fd failed, or left at stop) */
	uint64_t bytes_in;	/* taken by the device from in_fd */
};

/*
 * Prepare the fds (the reopen above happens here, on the caller's thread,
 * before any confinement).  Starts no thread.  Returns 0, -ENOMEM, or
 * -errno of eventfd().
 */
int serial_host_create(const struct serial_host_params *p, struct serial_host **out) __must_check;
/* Start the console thread (none is needed, and none is started, when
 * both fds are -1).  Returns 0 or -errno. */
int serial_host_start(struct serial_host *c) __must_check;
/*
 * Queue guest output.  Never blocks and never fails: what does not fit is
 * dropped and counted.  Context: any thread (a vCPU, with the UART's lock
 * held: the order of calls is the order of the bytes).
 */
void serial_host_write(struct serial_host *c, const void *buf, size_t len);
/* Stop the thread after a final flush of at most SERIAL_HOST_FLUSH_MS.
 * Idempotent; NULL-safe. */
void serial_host_stop(struct serial_host *c);
/* serial_host_stop(), then close the private fds and free.  NULL-safe. */
void serial_host_destroy(struct serial_host *c);
void serial_host_get_stats(struct serial_host *c, struct serial_host_stats *st);

#endif
