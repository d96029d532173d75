/* SPDX-License-Identifier: MIT */
/*
 * The whole virtio-net device (devices/net/virtio-net.h) with its queue
 * service and one real I/O thread serving every queue, 1 to
 * NDR_MAX_PAIRS queue pairs and the control queue on simulated guest
 * memory, over the stream back end: each pair on one end of its own Unix
 * socketpair; the test drives the rings as the driver and plays the peer
 * (passt) on the other ends.  One pair: VERSION_1 alone is negotiated.
 * More: CTRL_VQ and MQ too, and every pair is enabled (VQ_PAIRS_SET on
 * the control queue) before the test runs; EVENT_IDX when asked.  For
 * check_net_kicks, check_net_rate,
 * check_net_rate_again, check_net_rate_turns, check_net_stream_pollout,
 * check_net_link.
 */
#ifndef VMM_TESTS_NET_DEV_RIG_H
#define VMM_TESTS_NET_DEV_RIG_H

#include <stdbool.h>
#include <stdint.h>

#include "fake_guest.h"
#include "iothread.h"
#include "net/virtio-net.h"
#include "ratelimit.h"

#define NDR_MAX_PAIRS 4
#define NDR_MAX_NQ (2 * NDR_MAX_PAIRS + 1) /* rx0, tx0, rx1, tx1, ..., ctrl */
#define NDR_RXQ(p) (2 * (p))
#define NDR_TXQ(p) (2 * (p) + 1)
#define NDR_RX NDR_RXQ(0)
#define NDR_TX NDR_TXQ(0)
#define NDR_CTRLQ(r) (2 * (r)->pairs) /* after the pairs' queues */

struct net_dev_rig {
	struct fake_guest g;
	struct fg_vq drv[NDR_MAX_NQ];
	struct virtio_queue qs[NDR_MAX_NQ];
	struct iothread *io;
	struct virtio_net *dev;
	struct virtio_device vd;
	unsigned int pairs;		/* queue pairs; 2 * pairs + 1 queues */
	int peer[NDR_MAX_PAIRS];	/* the test's ends, non-blocking */
	unsigned int tx_used; /* pair 0's TX chains given back so far (ndr_tx_used()) */
	unsigned int link_changes; /* the device's link_changed calls (atomic) */
};

struct ndr_params {
	uint16_t queue_size;
	unsigned int pairs;		  /* 0 or 1: one; at most NDR_MAX_PAIRS */
	const struct ratelimit_cfg *rate; /* NULL: unlimited */
	int sndbuf;			  /* > 0: SO_SNDBUF of the device's ends
					   * and SO_RCVBUF of the peers' */
	bool event_idx;			  /* VIRTIO_RING_F_EVENT_IDX too */
};

/* Set up and start the device (asserts: call from a Check fixture). */
void ndr_setup(struct net_dev_rig *r, const struct ndr_params *p);
void ndr_teardown(struct net_dev_rig *r);
/* Ring queue @q's doorbell. */
void ndr_kick(struct net_dev_rig *r, unsigned int q);
/* Post a TX chain on pair @pair's TX queue (not published): an all-zero
 * header and @len bytes, byte j = @seed + j. */
void ndr_post_tx_pair(struct net_dev_rig *r, unsigned int pair, uint32_t len, uint8_t seed);
/* The same on pair 0. */
void ndr_post_tx(struct net_dev_rig *r, uint32_t len, uint8_t seed);
/* Pair 0's TX chains the device has given back so far. */
unsigned int ndr_tx_used(struct net_dev_rig *r);
/* Read exactly @len bytes from pair 0's peer end, waiting (bounded, asserts). */
void ndr_peer_read(struct net_dev_rig *r, uint8_t *buf, size_t len);
/* Waits the limiter of pair 0's TX (@tx) or RX side has counted. */
uint64_t ndr_throttled(struct net_dev_rig *r, bool tx);

/* Numbered frames, byte j of frame i = @seed + i * @step + j (uint8_t),
 * @flen <= NDR_MAX_FLEN bytes each, all on pair 0: */
#define NDR_MAX_FLEN 2000
/* TX: post @n chains (seed 0, step 1), publish them and kick once. */
void ndr_tx_numbered(struct net_dev_rig *r, unsigned int n, uint32_t flen);
/* Read @n stream frames from the peer's end, asserting each one's length
 * (the prefix) and bytes: what ndr_tx_numbered() posted, in order. */
void ndr_peer_expect_numbered(struct net_dev_rig *r, unsigned int n, uint32_t flen);
/* RX: add @n buffers of 2048 bytes (their addresses into @gpa, the
 * chains' heads into @head), not yet published. */
void ndr_rx_add(struct net_dev_rig *r, unsigned int n, uint64_t *gpa, int *head);
/* The same, then publish them and kick. */
void ndr_rx_post(struct net_dev_rig *r, unsigned int n, uint64_t *gpa, int *head);
/* The peer sends @n stream frames of @flen <= NDR_MAX_FLEN bytes on pair
 * 0, one send() each, byte j of frame i = @seed + i + j (step 1 for
 * ndr_rx_expect()). */
void ndr_peer_send_numbered(struct net_dev_rig *r, unsigned int n, uint32_t flen,
			    uint8_t seed);
/* Wait (bounded) for the @n buffers ndr_rx_post() posted, asserting that
 * they come back in order, each holding the header and frame i. */
void ndr_rx_expect(struct net_dev_rig *r, unsigned int n, const uint64_t *gpa,
		   const int *head, uint32_t flen, uint8_t seed, unsigned int step);

#endif
