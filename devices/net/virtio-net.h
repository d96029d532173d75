/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net device (struct virtio_device_ops) on a tap: the model
 * (vnet.h) with its queues served by the queue service (vq-service.h).
 * Pair i (RX 2i, TX 2i+1) is served by I/O thread i mod T, with tap queue
 * file i; the control queue by thread 0.  Per pair, on its thread: a TX
 * kick writes the chains' frames to the tap; the tap becoming readable,
 * or an RX kick (new buffers), reads frames straight into the RX chains.
 * With the driver short of RX buffers the tap is not read (the kernel's
 * queue holds, then drops): host memory stays bounded.  A tap queue file
 * is attached only while its pair is enabled (VQ_PAIRS_SET), so the
 * kernel steers no frame to a pair the driver does not serve.
 *
 * Data moves with plain non-blocking readv/writev on the pair's I/O
 * thread, the tap file watched by the thread's io_uring.
 *
 * The same device runs on a stream socket instead (net-backend.h,
 * stream.h; passt's framing): one socket per pair, no offloads, and when
 * its peer goes away the link goes down (STATUS) while the VM runs on.
 * An operator may hold the link down on any back end
 * (virtio_net_set_link(): no frame in, the guest's dropped, a tap's
 * queues detached; vhost=on: the pairs' vhost files parked).
 * With vhost files (vhost=on, vhost-net.h) the kernel moves the data
 * instead: at DRIVER_OK each enabled pair's rings, kick and call
 * eventfds and tap file go to that pair's vhost-net file (on the vCPU),
 * the control queue alone to the queue service; the transport then
 * treats the queues' interrupts as external (virtio.h).  The pairs'
 * packet, kick and interrupt counters stay 0: the kernel keeps its own.
 */
#ifndef VMM_DEVICES_NET_VIRTIO_NET_H
#define VMM_DEVICES_NET_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "iothread.h"
#include "net/vnet.h"
#include "virtio/virtio.h"
#include "virtio/vq-service.h"

struct virtio_net;

struct net_backend;
struct ratelimit_cfg;

struct virtio_net_params {
	struct vnet_params net;	     /* net.max_pairs: also the files */
	const int *fds;		     /* net.max_pairs host files, set up
					(tap_open(), tap_adopt(); stream:
					nstream_connect(), nstream_adopt());
					owned by the device after a
					successful create */
	/* How frames move through @fds (net-backend.h); NULL: a tap.  A
	 * back end without the header on the wire (stream) gets no
	 * offloads offered. */
	const struct net_backend *backend;
	/* Optional: the link went down or up (VIRTIO_NET_S_LINK_UP changed:
	 * the back end's peer went away, or virtio_net_set_link()): the
	 * transport should send a configuration interrupt.  Context: an I/O
	 * thread of the device's. */
	void (*link_changed)(void *opaque);
	void *link_opaque;
	bool link_down;		     /* start with the link held down */
	uint16_t queue_size;	     /* power of two, 0: 256 */
	struct iothread **iothreads; /* borrowed; must outlive the device */
	unsigned int nr_iothreads;
	/* vhost=on: net.max_pairs vhost-net files, opened with the memory
	 * table set (vhost_net_open()), owned by the device after a
	 * successful create; the kernel then moves every pair's frames and
	 * only the control queue is served here.  NULL: the I/O threads
	 * move them. */
	const int *vhost_fds;
	uint64_t vhost_features; /* their VHOST_GET_FEATURES */
	/* Initial rate limits of RX and of TX, each (net-rate.h), or NULL:
	 * unlimited.  Not applied to pairs vhost-net serves. */
	const struct ratelimit_cfg *rate;
};

struct virtio_net_pair_stats {
	struct vnet_pair_stats net;
	struct vqs_queue_stats rx, tx; /* kicks, interrupts, thread */
};

/* 0, -EINVAL (bad parameters) or -ENOMEM. */
int virtio_net_create(const struct virtio_net_params *p, struct virtio_net **out)
	__must_check;
/* Stops the queues if running and closes the tap files. */
void virtio_net_destroy(struct virtio_net *d);
/* @d as a virtio device (virtio.h): its ops, queues and queue size. */
void virtio_net_virtio(struct virtio_net *d, struct virtio_device *out);
unsigned int virtio_net_pairs(const struct virtio_net *d);
/* Context: any thread.  0 or -ENOENT. */
int virtio_net_pair_stats(struct virtio_net *d, unsigned int pair,
			  struct virtio_net_pair_stats *st);
/*
 * Hold the link down (@up false) or let it up, as an operator pulls and
 * plugs a cable (QEMU's set_link).  Down: VIRTIO_NET_S_LINK_UP cleared
 * and a configuration interrupt; no frame is read from the back end (a
 * tap's queue files are detached from the kernel's steering, so the
 * kernel drops what comes meanwhile; a stream's peer keeps what it
 * sends in the socket); what the driver sends is used unsent and counted
 * in tx_drops.  Up: the reverse, each RX queue served at once.  Setting
 * the state the link is in does nothing.  Runs on I/O thread 0 (it
 * steers the tap's queues, as the control queue does) and waits for it.
 * vhost=on: each started pair's vhost file parked (no back end: the
 * kernel takes nothing from either ring, what the driver queues for TX
 * waits there and goes at the link's return) or given its tap again,
 * the tap's queues steered as above, on the calling thread (which must
 * be allowed VHOST_NET_SET_BACKEND and TUNSETQUEUE).
 * Context: any thread but the device's I/O threads.  Returns 0 or
 * -ENOTCONN (up, but the back end's peer went away: down for good).
 */
int virtio_net_set_link(struct virtio_net *d, bool up);
/* Whether the link is up now.  Context: any thread. */
bool virtio_net_link_up(struct virtio_net *d);
/* The RX (@tx false) or TX limiter of all pairs: change it
 * (ratelimit_set()) and read its statistics from any thread. */
struct ratelimit *virtio_net_ratelimit(struct virtio_net *d, bool tx);

#endif
