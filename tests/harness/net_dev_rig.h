/* SPDX-License-Identifier: MIT */
/*
 * The whole virtio-net device (devices/net/virtio-net.h) with its queue
 * service and one real I/O thread, one queue pair and the control queue
 * on simulated guest memory, over the stream back end on one end of a
 * Unix socketpair; the test drives the rings as the driver and plays the
 * peer (passt) on the other end.  For check_net_rate,
 * check_net_stream_pollout.
 */
#ifndef VMM_TESTS_NET_DEV_RIG_H
#define VMM_TESTS_NET_DEV_RIG_H

#include <stdint.h>

#include "fake_guest.h"
#include "iothread.h"
#include "net/virtio-net.h"
#include "ratelimit.h"

#define NDR_NQ 3 /* rx0, tx0, ctrl */
#define NDR_RX 0
#define NDR_TX 1

struct net_dev_rig {
	struct fake_guest g;
	struct fg_vq drv[NDR_NQ];
	struct virtio_queue qs[NDR_NQ];
	struct iothread *io;
	struct virtio_net *dev;
	struct virtio_device vd;
	int peer;	/* the test's end, non-blocking */
	unsigned int tx_used; /* TX chains given back so far (ndr_tx_used()) */
};

struct ndr_params {
	uint16_t queue_size;
	const struct ratelimit_cfg *rate; /* NULL: unlimited */
	int sndbuf;			  /* > 0: SO_SNDBUF of the device's end
					   * and SO_RCVBUF of the peer's */
};

/* Set up and start the device (asserts: call from a Check fixture). */
void ndr_setup(struct net_dev_rig *r, const struct ndr_params *p);
void ndr_teardown(struct net_dev_rig *r);
/* Ring queue @q's doorbell. */
void ndr_kick(struct net_dev_rig *r, unsigned int q);
/* Post a TX chain: an all-zero header and @len bytes, byte j = @seed + j. */
void ndr_post_tx(struct net_dev_rig *r, uint32_t len, uint8_t seed);
/* TX chains the device has given back so far. */
unsigned int ndr_tx_used(struct net_dev_rig *r);
/* Read exactly @len bytes from the peer's end, waiting (bounded, asserts). */
void ndr_peer_read(struct net_dev_rig *r, uint8_t *buf, size_t len);

#endif
