/* SPDX-License-Identifier: MIT */
/*
 * vhost-user back end: a transport, like virtio-pci, that hands a virtio
 * device's queues to another process's driver -- here a vhost-user front
 * end (another VMM's vhost-user-blk device) that owns the virtio register
 * interface and the guest, and gives this process guest RAM (file
 * descriptors), the rings' addresses, one kick eventfd per ring (KVM
 * signals it when the guest notifies) and one call eventfd per ring (an
 * irqfd: writing it interrupts the guest).
 *
 * The device is the same one the VMM runs (struct virtio_device_ops: for
 * blk, devices/blk/virtio-blk.c with its I/O threads): the back end calls
 * ops->features/set_features/config_read/config_write for the front end's
 * requests, ops->start_queue() when a ring has everything it needs and
 * ops->stop_queue() when it must stop; the device's I/O threads then poll
 * the kick eventfds in their io_uring and write the call eventfds, and the
 * control thread that runs this file is not on the request path.
 *
 * Ring life cycle (per ring): it starts once it has a size
 * (SET_VRING_NUM), addresses (SET_VRING_ADDR), a kick eventfd
 * (SET_VRING_KICK), is enabled (SET_VRING_ENABLE 1, or always when
 * VHOST_USER_F_PROTOCOL_FEATURES was not negotiated), and the front end has
 * sent the memory table and its features; it stops at SET_VRING_ENABLE 0
 * or GET_VRING_BASE (letting what is in flight finish: the front end may
 * be pausing the VM; GET_VRING_BASE then answers the next avail index,
 * which every request popped before it has been completed to the used
 * ring), at RESET_DEVICE/RESET_OWNER and when the connection ends
 * (cancelling what is in flight: the front end is gone or resets the
 * device).  A new memory table, new ring addresses or a new kick eventfd
 * for a running ring stop it the first way and start it again.
 *
 * In-flight tracking (INFLIGHT_SHMFD, split rings): GET_INFLIGHT_FD hands
 * the front end a zeroed buffer (one memfd made at create, re-zeroed at
 * each GET); SET_INFLIGHT_FD maps the one it keeps.  A ring that starts
 * with a buffer mapped is tracked in its region (virtq_inflight_attach():
 * the previous back end's requests still in flight are resubmitted first,
 * the avail ring resumes after them), and a ring stopped by cancelling
 * publishes nothing more (virtq_inflight_freeze()): what was in flight
 * stays there for the next back end.  The mapping goes at a device reset
 * or disconnect; the front end's buffer survives.
 *
 * Threads: everything here runs on one control thread (the one that calls
 * vu_backend_serve()), except the two transport callbacks the device makes
 * from its I/O threads (interrupt a ring: write its call eventfd; report
 * a broken ring: write its error eventfd), which take only the ring's
 * fd_lock.
 */
#ifndef VMM_DEVICES_VHOST_USER_VU_BACKEND_H
#define VMM_DEVICES_VHOST_USER_VU_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"
#include "vhost-user/vu-msg.h"
#include "virtio/virtio.h"

struct vu_backend;

struct vu_backend_params {
	const struct virtio_device_ops *ops; /* needs start_queue/stop_queue */
	void *dev;
	unsigned int num_queues;	     /* rings the device has */
	uint16_t max_queue_size;	     /* largest SET_VRING_NUM accepted */
	const char *name;		     /* for log messages */
};

/* Returns 0, -EINVAL (missing ops, no queues) or -ENOMEM. */
int vu_backend_create(const struct vu_backend_params *p, struct vu_backend **out)
	__must_check;
/* Ends the connection state (vu_backend_disconnect()) and frees. NULL-safe. */
void vu_backend_destroy(struct vu_backend *b);

/*
 * vu_backend_serve - serve one front end on the connected socket @sock
 * until it disconnects, sends a malformed message or fails a request that
 * it cannot be told about (no REPLY_ACK), or @stop_fd (-1: none) becomes
 * readable; then vu_backend_disconnect().  @sock stays open (the caller
 * closes it).  Returns 0 (the front end closed the connection),
 * -ESHUTDOWN (@stop_fd), -EPROTO (malformed or failed request, logged) or
 * another -errno of the socket.
 */
int vu_backend_serve(struct vu_backend *b, int sock, int stop_fd);

/*
 * vu_backend_handle - handle one request that passed vu_msg_check() (the
 * fds it carries become the back end's or are closed) and send its reply,
 * if any, on @sock (-1: build it but send nothing: the fuzz target).
 * Returns 0, or -errno when the connection must end: the request failed
 * and the front end did not ask for an acknowledgement to learn it, or
 * the reply could not be sent.
 */
int vu_backend_handle(struct vu_backend *b, int sock, struct vu_msg *m);

/*
 * End the connection's state: stop every running ring, cancelling what is
 * in flight, close every eventfd the front end gave, unmap its memory and
 * forget its features, ready for the next front end.  Idempotent.
 */
void vu_backend_disconnect(struct vu_backend *b);

#endif
