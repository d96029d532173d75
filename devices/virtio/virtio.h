/* SPDX-License-Identifier: MIT */
/*
 * The contract between a virtio device model (e.g. virtio-blk) and its
 * transport (virtio-pci).  The transport owns the virtio 1.x register
 * interface, the status state machine, the virtqueue configuration and all
 * interrupt/notification wiring; the device owns what the queues mean.
 * Neither knows the other's internals: the device sees struct virtio_queue
 * and the functions below, the transport sees struct virtio_device_ops.
 */
#ifndef VMM_DEVICES_VIRTIO_VIRTIO_H
#define VMM_DEVICES_VIRTIO_VIRTIO_H

#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"
#include "virtio/virtqueue.h"

#define VIRTIO_NO_VECTOR 0xffff

struct virtio_transport;
struct virtio_queue;

/*
 * What a device calls on its transport (virtio-pci, or the vhost-user back
 * end in devices/vhost-user/), through the queue it serves: the transport
 * sets virtio_queue.t_ops next to .t.  Context: the thread serving the
 * queue (its I/O thread); neither may block on a lock that a thread
 * waiting for that I/O thread holds.
 */
struct virtio_transport_ops {
	/* Interrupt the driver for @q (see virtio_queue_notify()). */
	void (*queue_notify)(struct virtio_queue *q);
	/* The driver broke the protocol on @q (virtio_queue_needs_reset()). */
	void (*needs_reset)(struct virtio_queue *q, const char *why);
};

/*
 * One virtqueue as configured by the driver, handed to the device when the
 * driver sets DRIVER_OK (the ring state in @vq is already validated and
 * started).  Owned by the transport; the device may use it between
 * ops->start() and the return of ops->stop().
 */
struct virtio_queue {
	struct virtio_transport *t;
	const struct virtio_transport_ops *t_ops;
	unsigned int index;
	struct virtq vq;
	bool enabled;	    /* queue_enable was written 1 */
	uint16_t vector;    /* MSI-X vector, VIRTIO_NO_VECTOR for poll queues */
	int kick_fd;	    /* eventfd KVM signals on a notify write; the
			       same file from the queue's first DRIVER_OK
			       until the transport is destroyed */
	int call_fd;	    /* irqfd eventfd, -1 when vector is NO_VECTOR */
	/* Transport-private. */
	uint32_t gsi;
	bool gsi_valid;
};

struct virtio_device_ops {
	uint32_t device_id;	/* VIRTIO_ID_* */
	uint32_t config_size;	/* bytes of device configuration space */
	/* Features the device offers (VIRTIO_F_VERSION_1 included). */
	uint64_t (*features)(void *dev);
	/* The driver accepted @features at FEATURES_OK; return -EINVAL to
	 * refuse the combination (FEATURES_OK then does not stick). */
	int (*set_features)(void *dev, uint64_t features);
	void (*config_read)(void *dev, uint32_t off, void *buf, uint32_t len);
	void (*config_write)(void *dev, uint32_t off, const void *buf,
			     uint32_t len);
	/*
	 * DRIVER_OK: the queues are configured and wired (kick_fd registered
	 * as an ioeventfd, call_fd as an irqfd).  The device starts serving
	 * them, e.g. by attaching each to an I/O thread, beginning with what
	 * is already available (kicks may have come before).  Also called
	 * after stop() on the same queues, their ring positions kept, when
	 * the driver turns PCI bus mastering back on.  Context: vCPU thread.
	 * Returns 0 or -errno (the transport then sets NEEDS_RESET).
	 */
	int (*start)(void *dev, struct virtio_queue *queues, unsigned int nr);
	/*
	 * Device reset, or PCI bus mastering turned off: quiesce every queue,
	 * finish or cancel in-flight requests (complete them to the used
	 * rings, a cancelled one with an error status; a chain popped but
	 * never started may instead go back to the avail ring), stop
	 * touching guest memory.  No chain popped is left neither completed
	 * nor given back: the rings may be kept.  Returns only when done.
	 * Context: vCPU thread.
	 */
	void (*stop)(void *dev);
	/*
	 * Optional: for a transport that starts and stops queues one at a
	 * time instead of the whole device at DRIVER_OK and reset (vhost-user:
	 * a ring starts once the front end has handed over everything it
	 * needs, and stops at SET_VRING_ENABLE 0, GET_VRING_BASE or a
	 * disconnect).  Context: the transport's thread.
	 *
	 * start_queue: serve @q, as start() does each enabled queue; the
	 * ring state in @q->vq is validated and started.  Returns 0 or -errno.
	 *
	 * stop_queue: quiesce queue @index (a no-op if it is not started):
	 * nothing new is popped; what is in flight completes to the used ring,
	 * left to finish (@cancel false: a front end stopping a ring may only
	 * be pausing the VM, and the driver is interrupted as usual for what
	 * completes meanwhile; a chain popped but never started is given back
	 * to the avail ring) or cancelled (@cancel true, as stop() does: the
	 * front end is gone or resets the device).  Returns once the queue
	 * touches neither guest memory, kick_fd nor call_fd any more: the
	 * transport may then close those and unmap guest RAM, and hand a new
	 * kick_fd to the next start_queue().
	 */
	int (*start_queue)(void *dev, struct virtio_queue *q);
	void (*stop_queue)(void *dev, unsigned int index, bool cancel);
};

/*
 * A virtio device as it declares itself to a transport: what it is (ops:
 * device type, features, configuration space, start/stop) and its queues.
 * Each device model fills one in for an instance (virtio_blk_virtio(),
 * vcon_virtio()), and every transport takes it the same way (virtio-pci:
 * vpci_params_set_device(), then vpci_create()); the transport creates
 * the queues' kick eventfds and KVM wiring (vq-wiring.h) and hands the
 * queues to ops->start() at DRIVER_OK.  How the device serves them is its
 * business: on the machine's per-vCPU I/O threads through the queue
 * service (vq-service.h; virtio-blk), or on threads of its own
 * (virtio-console).
 */
struct virtio_device {
	const struct virtio_device_ops *ops;
	void *dev;		 /* passed to every op */
	unsigned int num_queues; /* what the driver may configure */
	uint16_t queue_size;	 /* largest queue; a power of two */
	/* Another process serves the queues and writes their call eventfds
	 * itself (a vhost-user front end): the transport makes the irqfds
	 * follow the MSI-X mask (vq-wiring.h, "External notifiers"). */
	bool external_queues;
};

/*
 * Context: the thread serving @q (its I/O thread).  Interrupt the driver for
 * @q.  virtio-pci: writes call_fd unless the MSI-X vector is masked (then
 * the PBA bit is set and the interrupt is sent when the guest unmasks it);
 * a no-op for a queue without a vector (poll queue).  vhost-user: writes
 * the front end's call eventfd, if it gave one.
 */
static inline void virtio_queue_notify(struct virtio_queue *q)
{
	q->t_ops->queue_notify(q);
}

/*
 * Context: any device thread.  The driver broke the protocol (malformed
 * ring) on @q: virtio-pci sets DEVICE_NEEDS_RESET and sends a
 * configuration-change interrupt; vhost-user signals the ring's error
 * eventfd.  The device must stop processing @q until reset.  Logged once.
 */
static inline void virtio_queue_needs_reset(struct virtio_queue *q,
					    const char *why)
{
	q->t_ops->needs_reset(q, why);
}

#endif
