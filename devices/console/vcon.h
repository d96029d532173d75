/* SPDX-License-Identifier: MIT */
/*
 * virtio-console with VIRTIO_CONSOLE_F_MULTIPORT (virtio 1.x, 5.3): named
 * byte-stream ports between host file descriptors and the guest (Linux:
 * /dev/vportNpM, name in /sys/class/virtio-ports/vportNpM/name).  No port is
 * a console (hvc): every port is a raw, binary-clean stream with no line
 * discipline, which is what a container's stdio needs.
 *
 * Queues (5.3.2): receiveq/transmitq of port 0 (0, 1), control receiveq/
 * transmitq (2, 3), then receiveq/transmitq of port N at 2N + 2, 2N + 3.
 *
 * Per port, host side:
 *  - in_fd (host -> guest): what is read from it fills the guest's receive
 *    buffers.  End of file on it (read() 0, or an error such as EIO from a
 *    pty whose other side closed) is delivered as "host disconnected"
 *    (VIRTIO_CONSOLE_PORT_OPEN 0) once the data read before it is in the
 *    guest's buffers: Linux's read() on the port then returns 0 (EOF).
 *  - out_fd (guest -> host): what the guest writes is written here, in
 *    order.  While the device runs, a full out_fd is waited for (poll) as
 *    long as it takes: a slow reader holds the guest's writes back.  The
 *    writes themselves never block (core/nbfd.h: a socket is written with
 *    MSG_DONTWAIT, a pipe or terminal through a private non-blocking
 *    reopen), so a stop always reaches the thread.  When a write fails
 *    (EPIPE: nobody reads) the port's output is discarded from then on
 *    (logged once).  -1: discarded.
 *  A port is "host connected" from the start until in_fd reaches EOF; a
 *  port without in_fd stays connected (Linux blocks writes to a port whose
 *  host side is not connected).
 *
 * Threads.  One thread per port ("vmm-portN") serves both of its queues and
 * one ("vmm-portctl") the control queues; they exist from vcon_start_threads()
 * to vcon_destroy(), idle until the driver sets DRIVER_OK (ops->start) and
 * again after a reset (ops->stop, which waits until every thread has let go
 * of the queues).  Guest output still queued when the device stops (reset,
 * or the VM's end through vpci_quiesce()) is written out first, for at most
 * VCON_STOP_FLUSH_MS: everything the guest wrote before it stopped reaches
 * an out_fd whose reader keeps up; what a reader that stalled (or the very
 * process that stops the VM, reading the port itself) did not take by then
 * is dropped, counted in vcon_port_stats().dropped and logged (one line per
 * port and stop, rate-limited).  So a stop never waits for a reader.  The threads block
 * SIGPIPE for themselves, so a closed pipe is an EPIPE, not a signal.
 * Without vcon_start_threads(), vcon_poll() does the threads' work on the
 * caller's thread (tests, fuzzing).
 *
 * Guest-controlled values (validated where used): the control messages'
 * id/event/value (vcon.c: ctl_handle), descriptor chains (virtq_pop; a
 * receive chain without writable buffers or a transmit chain without
 * readable ones is completed empty), and the queues' enable bits.
 */
#ifndef VMM_DEVICES_CONSOLE_VCON_H
#define VMM_DEVICES_CONSOLE_VCON_H

#include <stdint.h>

#include "util/compiler.h"
#include "virtio/virtio.h"

#define VCON_MAX_PORTS 31u   /* 64 queues, 65 MSI-X vectors */
/* Queues of a device with @nr_ports ports (port 0, control, ports 1..). */
#define VCON_NUM_QUEUES(nr_ports) (2u * ((nr_ports) + 1u))
#define VCON_MAX_NAME 127u   /* bytes of a port name, NUL excluded */
#define VCON_QUEUE_SIZE 128u
/* How long a stop keeps writing out queued guest output (see above). */
#define VCON_STOP_FLUSH_MS 500u

struct vcon;

struct vcon_port_params {
	const char *name; /* copied */
	int in_fd;	  /* -1 or an fd owned (and closed) by the device */
	int out_fd;	  /* same */
};

struct vcon_params {
	const struct vcon_port_params *ports;
	unsigned int nr_ports; /* 1..VCON_MAX_PORTS */
	/* Run first on each device thread (e.g. to install its seccomp
	 * filter); a negative return ends the thread and is logged.  May be
	 * NULL. */
	int (*thread_init)(void *opaque);
	void *thread_opaque;
};

/*
 * vcon_create - the device model; takes ownership of every port fd (also
 * on failure).  Returns 0, -EINVAL (no port, too many, a name missing, too
 * long or duplicated), -ENOMEM.
 */
int vcon_create(const struct vcon_params *p, struct vcon **out) __must_check;

/* Number of virtqueues the transport must provide: 2 * (nr_ports + 1). */
unsigned int vcon_num_queues(const struct vcon *c);
const struct virtio_device_ops *vcon_dev_ops(void);
/* @c as a virtio device (virtio.h): its ops, its queues, VCON_QUEUE_SIZE. */
void vcon_virtio(struct vcon *c, struct virtio_device *out);

/* Start the device threads.  0 or -errno (then none runs). */
int vcon_start_threads(struct vcon *c) __must_check;

/*
 * vcon_poll - serve the device on the calling thread instead of the device
 * threads (an embedder that polls; fuzz_vcon and its replay in
 * check_fuzz_regressions, where it makes every run reproducible): one non-blocking turn of each thread's
 * loop -- take the queues if the device started, handle what the transmit
 * queues hold, read a port's in_fd if it is readable, fill receive
 * buffers.  Writes to out_fd wait for a full fd as they do on the
 * threads, and the caller must ignore or block SIGPIPE.  Without the threads, ops->stop
 * writes out queued output and lets go of the queues itself.  Returns 0,
 * or -EBUSY once vcon_start_threads() ran.
 */
int vcon_poll(struct vcon *c);

/* Stop and join the threads (after vpci_quiesce()/vpci_destroy() stopped
 * the device), close the fds and free.  NULL-safe. */
void vcon_destroy(struct vcon *c);

/* Per-port counters (relaxed reads). */
struct vcon_port_stats {
	uint64_t bytes_in;  /* host -> guest */
	uint64_t bytes_out; /* guest -> host, written to out_fd */
	uint64_t dropped;   /* guest -> host bytes discarded (no/failed out_fd,
			       or not taken by the stop's deadline) */
	bool guest_open;    /* the guest has the port open */
	bool host_connected;
};
int vcon_port_stats(struct vcon *c, unsigned int port, struct vcon_port_stats *st);

#endif
