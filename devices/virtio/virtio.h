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

/*
 * One virtqueue as configured by the driver, handed to the device when the
 * driver sets DRIVER_OK (the ring state in @vq is already validated and
 * started).  Owned by the transport; the device may use it between
 * ops->start() and the return of ops->stop().
 */
struct virtio_queue {
	struct virtio_transport *t;
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
	 * rings, a cancelled one with an error status), stop
	 * touching guest memory.  Returns only when done.  Context: vCPU
	 * thread.
	 */
	void (*stop)(void *dev);
};

/*
 * Context: the thread serving @q (its I/O thread).  Interrupt the driver for
 * @q: writes call_fd unless the MSI-X vector is masked (then the PBA bit is
 * set and the interrupt is sent when the guest unmasks it).  A no-op for a
 * queue without a vector (poll queue).
 */
void virtio_queue_notify(struct virtio_queue *q);

/*
 * Context: any device thread.  The driver broke the protocol (malformed
 * ring): set DEVICE_NEEDS_RESET and send a configuration-change interrupt;
 * the device must stop processing @q until reset.  Logged once.
 */
void virtio_transport_needs_reset(struct virtio_transport *t, const char *why);

#endif
