/* SPDX-License-Identifier: MIT */
/*
 * What virtio-net (virtio-net.c) asks of the host side of a queue pair:
 * one file per pair and, per kind, how frames move between it and the
 * pair's rings.  Two kinds: a tap queue file (tap.h: frames after a
 * virtio-net header, so offloads pass through) and a stream socket
 * (stream.h: length-prefixed frames, no header, no offloads).
 *
 * Context: the pair's serving I/O thread, except pair_init/pair_fini (the
 * device's creator).
 */
#ifndef VMM_DEVICES_NET_NET_BACKEND_H
#define VMM_DEVICES_NET_NET_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "net/vnet.h"

struct net_backend {
	const char *kind;	/* "tap", "stream": for messages */
	bool offloads;		/* the wire carries the virtio-net header */
	/* Frames move through the pair's I/O-thread io_uring (tap-uring.h:
	 * the file is a tap's, non-blocking); tx/rx only where the file
	 * cannot be registered with the ring. */
	bool uring;
	/* TX can find the pair's file full (a stream socket whose peer reads
	 * slowly; blocked_since() then says since when): the device waits
	 * for POLLOUT on the file instead of trying again every round. */
	bool tx_waits_writable;
	/* Optional: per-pair state for @fd (*@priv), 0 or -ENOMEM. */
	int (*pair_init)(int fd, void **priv);
	void (*pair_fini)(void *priv);
	/* vnet_tx() / vnet_rx() conventions (vnet.h). */
	int (*tx)(void *priv, int fd, struct virtq *vq, struct virtq_chain *ch,
		  unsigned int budget, struct vnet_pair_stats *st, bool *more);
	int (*rx)(void *priv, int fd, struct vnet_rxq *rq, struct virtq *vq,
		  bool mergeable, uint32_t max_frame, unsigned int budget,
		  struct vnet_pair_stats *st, unsigned int *pushed);
	/* Optional: the driver accepted @features (offloads to set up). */
	int (*set_features)(int fd, uint64_t features);
	/* Optional: whether the pair is in use (-EINVAL: cannot tell). */
	int (*steer)(int fd, bool on);
	/* Optional: the pair's peer went away or broke the framing
	 * (0: alive, else why as -errno); the device takes its link down. */
	int (*gone)(void *priv);
	/* Optional: since when (CLOCK_MONOTONIC, ns) TX has waited for a
	 * peer that takes nothing (0: not waiting); the device warns when
	 * that lasts (a peer that stopped reading is otherwise silent). */
	uint64_t (*blocked_since)(void *priv);
};

extern const struct net_backend net_tap_backend;    /* tap.c */
extern const struct net_backend net_stream_backend; /* stream.c */

#endif
