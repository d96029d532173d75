/* SPDX-License-Identifier: MIT */
/*
 * The virtio-vsock device (device id 19, struct virtio_device_ops): the
 * hybrid vsock of vsock.h behind a transport's queues (rx, tx, event),
 * all three served by one of the machine's I/O threads through the queue
 * service (vq-service.h), which also watches the host sockets' epoll set.
 * The event queue's buffers are left to the driver: the device sends no
 * events (they announce a migration).
 */
#ifndef VMM_DEVICES_VSOCK_VIRTIO_VSOCK_H
#define VMM_DEVICES_VSOCK_VIRTIO_VSOCK_H

#include <stdint.h>

#include "iothread.h"
#include "virtio/virtio.h"
#include "vsock/vsock.h"

#define VIRTIO_VSOCK_QUEUE_SIZE 256

struct virtio_vsock;

struct virtio_vsock_params {
	struct vsock_params vsock;   /* listen_fd owned by the device from
					create, success or not */
	struct iothread **iothreads; /* borrowed; must outlive the device */
	unsigned int nr_iothreads;
	unsigned int iothread;	     /* serving thread: this one mod T */
};

/* Per-device counters: the vsock's, and the queues' wake-ups and
 * interrupts summed. */
struct virtio_vsock_stats {
	struct vsock_stats vsock;
	uint64_t kicks, interrupts;
};

int virtio_vsock_create(const struct virtio_vsock_params *p,
			struct virtio_vsock **out) __must_check;
/* Stops the queues if running; closes every host socket. */
void virtio_vsock_destroy(struct virtio_vsock *d);
/* @d as a virtio device (virtio.h): its ops, queues and queue size. */
void virtio_vsock_virtio(struct virtio_vsock *d, struct virtio_device *out);
/* Context: any thread. */
void virtio_vsock_get_stats(struct virtio_vsock *d, struct virtio_vsock_stats *st);

#endif
