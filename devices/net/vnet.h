/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net model, without threads or a transport: what the features,
 * the configuration space and the three kinds of queue mean, and how a
 * packet moves between a ring and a tap-like file (a file that reads and
 * writes one frame per call, each after a 12-byte struct virtio_net_hdr_v1:
 * a tap with IFF_VNET_HDR and TUNSETVNETHDRSZ 12).
 *
 * Queues (virtio 1.x, 5.1.2): pair i is RX 2i and TX 2i+1; with MQ the
 * control queue is 2 * max_pairs.  The driver enables pairs with
 * VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET; before it does, only pair 0.
 *
 * No bounce buffer: a TX chain's readable segments (header, then frame)
 * are written to the file as they are, and a packet is read straight into
 * the writable segments of one RX chain, or of as many as it needs with
 * MRG_RXBUF (num_buffers set in the header afterwards).
 *
 * Every ring entry is guest-controlled: a chain that breaks the protocol
 * (an RX chain with nothing writable, a control chain with no status byte)
 * is -EPROTO (the device then needs a reset); a bad packet or command is
 * dropped or answered VIRTIO_NET_ERR.
 *
 * Context: a queue's functions run on its one serving thread; vnet_ctrl()
 * on the control queue's.
 */
#ifndef VMM_DEVICES_NET_VNET_H
#define VMM_DEVICES_NET_VNET_H

#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/compiler.h"
#include "virtio/virtqueue.h"

#define VNET_HDR_LEN 12u	/* struct virtio_net_hdr_v1 */
#define VNET_MAX_PAIRS 64u	/* queue pairs of one NIC */
#define VNET_DEFAULT_MTU 1500u
/* The largest frame a tap hands over with GSO: 64 KiB of IP plus the
 * Ethernet header (and a VLAN tag). */
#define VNET_MAX_GSO_FRAME (65535u + 18u)
/* Readable segments of one RX read (IOV_MAX is 1024). */
#define VNET_RX_MAX_IOV 1024u
/* Chains one RX read may spread over (MRG_RXBUF). */
#define VNET_RX_MAX_BUFS 256u

struct vnet_params {
	uint8_t mac[6];
	uint16_t max_pairs; /* 1..VNET_MAX_PAIRS; MQ offered when > 1 */
	uint16_t mtu;	    /* 68..65535; 0: VNET_DEFAULT_MTU */
	bool no_offloads;   /* no checksum/TSO offloads (a back end without
			       a virtio-net header would need this) */
};

struct vnet {
	uint8_t mac[6];
	uint16_t max_pairs;
	uint16_t mtu;
	bool no_offloads;
	uint64_t features;	/* negotiated (vnet_set_features()) */
	uint16_t curr_pairs;	/* enabled pairs: 1 until VQ_PAIRS_SET */
	uint16_t status;	/* VIRTIO_NET_S_LINK_UP */
};

/* Per pair, written by its serving thread, read by anyone (relaxed). */
struct vnet_pair_stats {
	uint64_t rx_packets, rx_bytes, rx_drops;
	uint64_t tx_packets, tx_bytes, tx_drops;
};

/* One RX queue's scratch: the chains a read is spread over. */
struct vnet_rxq {
	struct virtq_chain chain;	/* pop scratch */
	struct iovec iov[VNET_RX_MAX_IOV];
	uint16_t head[VNET_RX_MAX_BUFS];
	uint32_t len[VNET_RX_MAX_BUFS];	/* writable bytes of each chain */
	uint16_t iov_end[VNET_RX_MAX_BUFS];
};

/* 0 or -EINVAL (max_pairs or mtu out of range). */
int vnet_init(struct vnet *n, const struct vnet_params *p) __must_check;
/* Device reset: features forgotten, one pair, link up. */
void vnet_reset(struct vnet *n);
unsigned int vnet_num_queues(const struct vnet *n);
/* The control queue: 2 * max_pairs with MQ negotiated, else 2. */
static inline bool vnet_is_ctrl(const struct vnet *n, unsigned int q)
{
	if (!(n->features & (1ull << VIRTIO_NET_F_CTRL_VQ)))
		return false;
	return q == ((n->features & (1ull << VIRTIO_NET_F_MQ)) ? 2u * n->max_pairs : 2u);
}

uint64_t vnet_device_features(const struct vnet *n);
/* The driver's features: a subset of the offer, and no dependency broken
 * (GUEST_TSO without GUEST_CSUM, HOST_TSO without CSUM, ECN alone).
 * 0 or -EINVAL. */
int vnet_set_features(struct vnet *n, uint64_t features);
/* TUN_F_* offloads for TUNSETOFFLOAD: what the driver can take (GUEST_*). */
unsigned int vnet_tun_offloads(uint64_t features);
/* struct virtio_net_config; bytes past it read as zero. */
uint32_t vnet_config_size(void);
void vnet_config_read(const struct vnet *n, uint32_t off, void *buf, uint32_t len);

/*
 * Write up to @budget TX chains of @vq to @fd.  A frame the file refuses
 * (a bad header: the tap checks it; a chain shorter than the header) is
 * dropped and counted; its chain is used all the same.  Returns the
 * chains used (*@more: the budget ran out with chains left) or -EPROTO.
 */
int vnet_tx(struct virtq *vq, struct virtq_chain *scratch, int fd,
	    unsigned int budget, struct vnet_pair_stats *st, bool *more);

/*
 * One TX chain popped from @vq written to @fd at once (writev), counted
 * (vnet_tx_count()) and used.  vnet_tx()'s step; the io_uring path
 * (tap-uring.h) writes what its slots cannot take this way.
 */
void vnet_tx_chain(struct virtq *vq, const struct virtq_chain *ch, int fd,
		   struct vnet_pair_stats *st);
/* Count a TX frame of @len bytes (header included): @sent, or dropped. */
void vnet_tx_count(struct vnet_pair_stats *st, uint64_t len, bool sent);

/* vnet_rx() results. */
enum vnet_rx_stop {
	VNET_RX_DRAINED,  /* the file has nothing more (EAGAIN) */
	VNET_RX_NO_BUFS,  /* the driver gave too few buffers: stop reading
			     until it gives more (a kick) */
	VNET_RX_BUDGET,	  /* @budget packets moved, more may wait */
};

/*
 * Read up to @budget packets from @fd into @vq's chains.  Without
 * @mergeable one chain holds a packet (a shorter packet than the chain
 * leaves the rest untouched); with it a packet may take several, the
 * first's header saying how many, and a read is tried only when the
 * chains popped hold the largest packet the driver may get (@max_frame,
 * header included) or every ring entry is posted.  Chains popped but not
 * used go back to the avail ring.  Returns a vnet_rx_stop with *@pushed
 * the packets delivered, or -EPROTO (a chain with nothing writable).
 */
int vnet_rx(struct vnet_rxq *rq, struct virtq *vq, int fd, bool mergeable,
	    uint32_t max_frame, unsigned int budget, struct vnet_pair_stats *st,
	    unsigned int *pushed);
/*
 * vnet_rx()'s two halves, for a back end that copies a frame it holds
 * (stream.h) instead of reading it from a file.  vnet_rx_gather(): pop
 * chains into @rq until they hold @max_frame bytes (one chain without
 * @mergeable); returns the chains popped (0: none), or -EPROTO; *@ready:
 * a packet may go in (enough room, or all the driver can give); chains
 * not wanted go back with virtq_unpop(), last first.  vnet_rx_deliver():
 * the packet of @len bytes (header included) is in the @nb chains'
 * rq->iov: num_buffers set, the chains it filled used, the rest given
 * back.
 */
int vnet_rx_gather(struct vnet_rxq *rq, struct virtq *vq, bool mergeable,
		   uint32_t max_frame, unsigned int *niov, bool *ready);
void vnet_rx_deliver(struct vnet_rxq *rq, struct virtq *vq, unsigned int nb,
		     size_t len);
/*
 * For reads in flight while others are started (tap-uring.h), where the
 * chains a packet did not need are no longer the last popped and cannot
 * go back: vnet_rx_top_up() is vnet_rx_gather() for @rq already holding
 * *@nb chains (*@niov iovecs), popping more until they hold @max_frame;
 * "all the driver can give" is then every ring entry held by the device
 * (virtq_in_service()).  Returns the chains it popped (the last popped:
 * virtq_unpop() may give them back) or -EPROTO.  vnet_rx_push(): the
 * packet of @len bytes in the first chains used (num_buffers set);
 * returns how many.  vnet_rx_keep(): drop the @used first chains of @rq,
 * the rest kept for the next read; returns the chains left.
 */
int vnet_rx_top_up(struct vnet_rxq *rq, struct virtq *vq, bool mergeable,
		   uint32_t max_frame, unsigned int *nb, unsigned int *niov,
		   bool *ready);
unsigned int vnet_rx_push(struct vnet_rxq *rq, struct virtq *vq,
			  unsigned int nb, size_t len);
unsigned int vnet_rx_keep(struct vnet_rxq *rq, unsigned int nb,
			  unsigned int used, unsigned int *niov);
/* The biggest packet the driver of @n may be handed, header included. */
uint32_t vnet_rx_max_frame(const struct vnet *n);

/*
 * Serve the control queue: each command is answered VIRTIO_NET_OK or
 * VIRTIO_NET_ERR in its status byte.  VQ_PAIRS_SET changes
 * n->curr_pairs (*@pairs_changed).  Returns the chains used or -EPROTO
 * (no writable status byte, so no answer possible).
 */
int vnet_ctrl(struct vnet *n, struct virtq *vq, struct virtq_chain *scratch,
	      bool *pairs_changed);

/* A locally administered unicast MAC 52:54:xx:xx:xx:xx from @seed and
 * @index (stable: the same for the same VM and NIC). */
void vnet_mac_derive(uint64_t seed, unsigned int index, uint8_t mac[6]);

#endif
