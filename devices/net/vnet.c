/* SPDX-License-Identifier: MIT */
/* The virtio-net model (vnet.h). */
#include <errno.h>
#include <linux/if_tun.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "net/vnet.h"
#include "virtio/vq-iov.h"

#define BIT(n) (1ull << (n))
#define INC(x, n) __atomic_store_n(&(x), (x) + (n), __ATOMIC_RELAXED)

/* Offloads both ways through the tap's virtio-net header; no UFO (the
 * kernel dropped it for taps), no control of the guest's offloads. */
#define VNET_OFFLOADS                                                        \
	(BIT(VIRTIO_NET_F_CSUM) | BIT(VIRTIO_NET_F_GUEST_CSUM) |             \
	 BIT(VIRTIO_NET_F_GUEST_TSO4) | BIT(VIRTIO_NET_F_GUEST_TSO6) |       \
	 BIT(VIRTIO_NET_F_GUEST_ECN) | BIT(VIRTIO_NET_F_HOST_TSO4) |         \
	 BIT(VIRTIO_NET_F_HOST_TSO6) | BIT(VIRTIO_NET_F_HOST_ECN))

/* The configuration fields we fill: mac, status, max_virtqueue_pairs, mtu
 * (no SPEED_DUPLEX, RSS). */
#define VNET_CONFIG_SIZE offsetof(struct virtio_net_config, speed)

int vnet_init(struct vnet *n, const struct vnet_params *p)
{
	if (!p->max_pairs || p->max_pairs > VNET_MAX_PAIRS ||
	    (p->mtu && p->mtu < 68))
		return -EINVAL;
	memset(n, 0, sizeof(*n));
	memcpy(n->mac, p->mac, sizeof(n->mac));
	n->max_pairs = p->max_pairs;
	n->mtu = p->mtu ? p->mtu : VNET_DEFAULT_MTU;
	n->no_offloads = p->no_offloads;
	vnet_reset(n);
	return 0;
}

void vnet_reset(struct vnet *n)
{
	n->features = 0;
	n->curr_pairs = 1;
	n->status = VIRTIO_NET_S_LINK_UP;
}

unsigned int vnet_num_queues(const struct vnet *n)
{
	return 2u * n->max_pairs + 1; /* the pairs and the control queue */
}

uint64_t vnet_device_features(const struct vnet *n)
{
	uint64_t f = BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |
		     BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(VIRTIO_NET_F_MAC) |
		     BIT(VIRTIO_NET_F_STATUS) | BIT(VIRTIO_NET_F_MTU) |
		     BIT(VIRTIO_NET_F_MRG_RXBUF) | BIT(VIRTIO_NET_F_CTRL_VQ) |
		     BIT(VIRTIO_NET_F_CTRL_RX);

	if (n->max_pairs > 1)
		f |= BIT(VIRTIO_NET_F_MQ);
	if (!n->no_offloads)
		f |= VNET_OFFLOADS;
	return f;
}

/* Feature @f needs one of @deps (virtio 1.x, 5.1.3.1). */
static bool needs(uint64_t features, unsigned int f, uint64_t deps)
{
	return !(features & BIT(f)) || (features & deps);
}

int vnet_set_features(struct vnet *n, uint64_t f)
{
	uint64_t tso = BIT(VIRTIO_NET_F_GUEST_TSO4) | BIT(VIRTIO_NET_F_GUEST_TSO6);
	uint64_t htso = BIT(VIRTIO_NET_F_HOST_TSO4) | BIT(VIRTIO_NET_F_HOST_TSO6);
	uint64_t gcsum = BIT(VIRTIO_NET_F_GUEST_CSUM), hcsum = BIT(VIRTIO_NET_F_CSUM);
	uint64_t ctrl = BIT(VIRTIO_NET_F_CTRL_VQ);

	if ((f & ~vnet_device_features(n)) || !(f & BIT(VIRTIO_F_VERSION_1)) ||
	    !needs(f, VIRTIO_NET_F_GUEST_TSO4, gcsum) ||
	    !needs(f, VIRTIO_NET_F_GUEST_TSO6, gcsum) ||
	    !needs(f, VIRTIO_NET_F_GUEST_ECN, tso) ||
	    !needs(f, VIRTIO_NET_F_HOST_TSO4, hcsum) ||
	    !needs(f, VIRTIO_NET_F_HOST_TSO6, hcsum) ||
	    !needs(f, VIRTIO_NET_F_HOST_ECN, htso) ||
	    !needs(f, VIRTIO_NET_F_CTRL_RX, ctrl) ||
	    !needs(f, VIRTIO_NET_F_MQ, ctrl))
		return -EINVAL;
	n->features = f;
	return 0;
}

unsigned int vnet_tun_offloads(uint64_t f)
{
	unsigned int o = 0;

	if (f & BIT(VIRTIO_NET_F_GUEST_CSUM)) {
		o |= TUN_F_CSUM;
		if (f & BIT(VIRTIO_NET_F_GUEST_TSO4))
			o |= TUN_F_TSO4;
		if (f & BIT(VIRTIO_NET_F_GUEST_TSO6))
			o |= TUN_F_TSO6;
		if ((o & (TUN_F_TSO4 | TUN_F_TSO6)) &&
		    (f & BIT(VIRTIO_NET_F_GUEST_ECN)))
			o |= TUN_F_TSO_ECN;
	}
	return o;
}

uint32_t vnet_config_size(void)
{
	return VNET_CONFIG_SIZE;
}

void vnet_config_read(const struct vnet *n, uint32_t off, void *buf, uint32_t len)
{
	struct virtio_net_config c;

	memset(&c, 0, sizeof(c));
	memcpy(c.mac, n->mac, sizeof(c.mac));
	/* Little-endian (VERSION_1), as the hosts we build for are. */
	c.status = __atomic_load_n(&n->status, __ATOMIC_RELAXED);
	c.max_virtqueue_pairs = n->max_pairs;
	c.mtu = n->mtu;
	memset(buf, 0, len);
	if (off < VNET_CONFIG_SIZE)
		memcpy(buf, (uint8_t *)&c + off,
		       len < VNET_CONFIG_SIZE - off ? len : VNET_CONFIG_SIZE - off);
}

void vnet_tx_chain(struct virtq *vq, const struct virtq_chain *ch, int fd,
		   struct vnet_pair_stats *st)
{
	uint64_t len = vq_iov_len(ch->iov, ch->nr_out);
	ssize_t w = -1;

	/* Readable segments only are the frame (writable ones, which a TX
	 * chain must not have, are ignored).  The tap checks the header's
	 * GSO fields and refuses a bad one (EINVAL). */
	if (len >= VNET_HDR_LEN)
		w = writev(fd, ch->iov, (int)ch->nr_out);
	vnet_tx_count(st, len, w >= 0);
	virtq_push(vq, ch->head, 0);
}

void vnet_tx_count(struct vnet_pair_stats *st, uint64_t len, bool sent)
{
	if (!sent) {
		INC(st->tx_drops, 1);
	} else {
		INC(st->tx_packets, 1);
		INC(st->tx_bytes, len - VNET_HDR_LEN);
	}
}

int vnet_tx(struct virtq *vq, struct virtq_chain *ch, int fd,
	    unsigned int budget, struct vnet_pair_stats *st, bool *more)
{
	unsigned int done = 0;
	int r = 0;

	while (done < budget && (r = virtq_pop(vq, ch)) > 0) {
		vnet_tx_chain(vq, ch, fd, st);
		done++;
	}
	if (r < 0)
		return -EPROTO;
	*more = done == budget && virtq_avail_count(vq);
	return (int)done;
}

uint32_t vnet_rx_max_frame(const struct vnet *n)
{
	uint64_t gso = BIT(VIRTIO_NET_F_GUEST_TSO4) | BIT(VIRTIO_NET_F_GUEST_TSO6);

	if (n->features & gso)
		return VNET_HDR_LEN + VNET_MAX_GSO_FRAME;
	return VNET_HDR_LEN + n->mtu + 18u; /* Ethernet header and VLAN tag */
}

/* Write @v (little-endian) at byte @off of the packet spread over @iov. */
static void iov_put_le16(const struct iovec *iov, unsigned int n, size_t off,
			 uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	vq_iov_from_buf(iov, n, off, b, sizeof(b));
}

/* Give back the last @n chains popped (in reverse order: each unpop
 * steps back one avail entry). */
static void rx_unpop(struct virtq *vq, unsigned int n)
{
	while (n--)
		virtq_unpop(vq);
}

int vnet_rx_top_up(struct vnet_rxq *rq, struct virtq *vq, bool mergeable,
		   uint32_t max_frame, unsigned int *nbp, unsigned int *niov,
		   bool *ready)
{
	unsigned int nb = *nbp, popped = 0;
	uint64_t total = 0;
	int r = 0;

	for (unsigned int i = 0; i < nb; i++)
		total += rq->len[i];
	*ready = true;
	if (nb && (!mergeable || total >= max_frame))
		return 0;
	while (nb < VNET_RX_MAX_BUFS) {
		r = virtq_pop(vq, &rq->chain);
		if (r < 0)
			return -EPROTO;
		if (!r)
			break;
		/* A receive buffer with no room, or no room for the header in
		 * the first: a broken driver (the spec's "MUST"). */
		if (!rq->chain.in_len || (!nb && rq->chain.in_len < VNET_HDR_LEN))
			return -EPROTO;
		if (*niov + rq->chain.nr_in > VNET_RX_MAX_IOV) {
			virtq_unpop(vq);
			break;
		}
		memcpy(&rq->iov[*niov], &rq->chain.iov[rq->chain.nr_out],
		       rq->chain.nr_in * sizeof(struct iovec));
		*niov += rq->chain.nr_in;
		rq->head[nb] = rq->chain.head;
		rq->len[nb] = rq->chain.in_len > UINT32_MAX ? UINT32_MAX :
							      (uint32_t)rq->chain.in_len;
		rq->iov_end[nb] = (uint16_t)*niov;
		total += rq->chain.in_len;
		nb++;
		popped++;
		*nbp = nb;
		if (!mergeable || total >= max_frame)
			return (int)popped;
	}
	/* Short of @max_frame: read only if the driver cannot post more
	 * (its whole ring is held by the device, or this read's limits are
	 * reached). */
	*ready = virtq_in_service(vq) >= vq->size || nb == VNET_RX_MAX_BUFS || r > 0;
	return (int)popped;
}

int vnet_rx_gather(struct vnet_rxq *rq, struct virtq *vq, bool mergeable,
		   uint32_t max_frame, unsigned int *niov, bool *ready)
{
	unsigned int nb = 0;

	*niov = 0;
	return vnet_rx_top_up(rq, vq, mergeable, max_frame, &nb, niov, ready);
}

unsigned int vnet_rx_push(struct vnet_rxq *rq, struct virtq *vq,
			  unsigned int nb, size_t len)
{
	unsigned int used = 0;
	size_t left = len;

	while (used < nb && (left || !used)) {
		uint32_t take = left < rq->len[used] ? (uint32_t)left : rq->len[used];

		left -= take;
		used++;
	}
	iov_put_le16(rq->iov, rq->iov_end[used - 1],
		     offsetof(struct virtio_net_hdr_v1, num_buffers), (uint16_t)used);
	left = len;
	for (unsigned int i = 0; i < used; i++) {
		uint32_t take = left < rq->len[i] ? (uint32_t)left : rq->len[i];

		virtq_push(vq, rq->head[i], take);
		left -= take;
	}
	return used;
}

/* Deliver a packet of @len bytes read into the @nb chains gathered:
 * num_buffers in its header, the chains it filled used, the rest back. */
void vnet_rx_deliver(struct vnet_rxq *rq, struct virtq *vq, unsigned int nb,
		     size_t len)
{
	rx_unpop(vq, nb - vnet_rx_push(rq, vq, nb, len));
}

unsigned int vnet_rx_keep(struct vnet_rxq *rq, unsigned int nb,
			  unsigned int used, unsigned int *niov)
{
	unsigned int skip = used ? rq->iov_end[used - 1] : 0;

	memmove(rq->iov, &rq->iov[skip], (*niov - skip) * sizeof(rq->iov[0]));
	for (unsigned int i = used; i < nb; i++) {
		rq->head[i - used] = rq->head[i];
		rq->len[i - used] = rq->len[i];
		rq->iov_end[i - used] = (uint16_t)(rq->iov_end[i] - skip);
	}
	*niov -= skip;
	return nb - used;
}

int vnet_rx(struct vnet_rxq *rq, struct virtq *vq, int fd, bool mergeable,
	    uint32_t max_frame, unsigned int budget, struct vnet_pair_stats *st,
	    unsigned int *pushed)
{
	*pushed = 0;
	while (*pushed < budget) {
		unsigned int niov;
		bool ready;
		int nb = vnet_rx_gather(rq, vq, mergeable, max_frame, &niov, &ready);
		ssize_t rd;

		if (nb < 0)
			return -EPROTO;
		if (!nb || !ready) {
			rx_unpop(vq, (unsigned int)nb);
			return VNET_RX_NO_BUFS;
		}
		rd = readv(fd, rq->iov, (int)niov);
		if (rd < 0 && errno == EINTR) {
			rx_unpop(vq, (unsigned int)nb);
			continue;
		}
		if (rd < (ssize_t)VNET_HDR_LEN) {
			rx_unpop(vq, (unsigned int)nb);
			if (rd < 0)
				return VNET_RX_DRAINED; /* EAGAIN, or a tap gone down */
			INC(st->rx_drops, 1); /* a runt: not from a tap */
			continue;
		}
		vnet_rx_deliver(rq, vq, (unsigned int)nb, (size_t)rd);
		INC(st->rx_packets, 1);
		INC(st->rx_bytes, (uint64_t)rd - VNET_HDR_LEN);
		(*pushed)++;
	}
	return VNET_RX_BUDGET;
}

/* The largest control command we take: a MAC table of 340 entries. */
#define CTRL_MAX 2048u

/* A MAC table (VIRTIO_NET_CTRL_MAC_TABLE_SET): unicast then multicast,
 * each a le32 count and that many addresses, nothing after. */
static bool ctrl_mac_table_ok(const uint8_t *d, size_t len)
{
	for (int t = 0; t < 2; t++) {
		uint32_t e;

		if (len < 4)
			return false;
		e = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
		    (uint32_t)d[3] << 24;
		d += 4;
		len -= 4;
		if (e > len / 6)
			return false;
		d += 6ull * e;
		len -= 6ull * e;
	}
	return len == 0;
}

/*
 * One command: class, command, data.  The tap takes every frame for this
 * NIC whatever the driver's receive filter (the host's bridge or
 * namespace decides what reaches it), so the filter commands are
 * accepted and change nothing: the driver gets at least what it asked.
 */
static uint8_t ctrl_command(struct vnet *n, const uint8_t *c, size_t len,
			    bool *pairs_changed)
{
	const uint8_t *d = c + 2;
	size_t dl = len - 2;

	if (len < 2)
		return VIRTIO_NET_ERR;
	switch (c[0]) {
	case VIRTIO_NET_CTRL_RX:
		if (!(n->features & BIT(VIRTIO_NET_F_CTRL_RX)) || dl != 1 ||
		    (c[1] != VIRTIO_NET_CTRL_RX_PROMISC &&
		     c[1] != VIRTIO_NET_CTRL_RX_ALLMULTI))
			return VIRTIO_NET_ERR;
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_MAC:
		if (!(n->features & BIT(VIRTIO_NET_F_CTRL_RX)) ||
		    c[1] != VIRTIO_NET_CTRL_MAC_TABLE_SET || !ctrl_mac_table_ok(d, dl))
			return VIRTIO_NET_ERR;
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_MQ: {
		uint16_t pairs;

		if (!(n->features & BIT(VIRTIO_NET_F_MQ)) ||
		    c[1] != VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET || dl != 2)
			return VIRTIO_NET_ERR;
		pairs = (uint16_t)(d[0] | d[1] << 8);
		if (pairs < VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MIN || pairs > n->max_pairs)
			return VIRTIO_NET_ERR;
		*pairs_changed |= pairs != n->curr_pairs;
		/* Read by the other pairs' threads (their tap steering, and
		 * whether their RX reads: release, pairs with virtio-net.c's
		 * pair_off()). */
		__atomic_store_n(&n->curr_pairs, pairs, __ATOMIC_RELEASE);
		return VIRTIO_NET_OK;
	}
	default:
		return VIRTIO_NET_ERR;
	}
}

int vnet_ctrl(struct vnet *n, struct virtq *vq, struct virtq_chain *ch,
	      bool *pairs_changed)
{
	uint8_t cmd[CTRL_MAX];
	unsigned int done = 0;
	int r;

	while ((r = virtq_pop(vq, ch)) > 0) {
		const struct iovec *ack;
		size_t len = vq_iov_len(ch->iov, ch->nr_out);
		uint8_t st;
		bool big = len > CTRL_MAX;

		/* The answer is the last writable byte. */
		if (!ch->nr_in || !ch->iov[ch->nr_out + ch->nr_in - 1].iov_len)
			return -EPROTO;
		ack = &ch->iov[ch->nr_out + ch->nr_in - 1];
		if (!big)
			vq_iov_to_buf(ch->iov, ch->nr_out, 0, cmd, len);
		st = big ? VIRTIO_NET_ERR : ctrl_command(n, cmd, len, pairs_changed);
		((uint8_t *)ack->iov_base)[ack->iov_len - 1] = st;
		virtq_push(vq, ch->head, 1);
		done++;
	}
	return r < 0 ? -EPROTO : (int)done;
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void vnet_mac_derive(uint64_t seed, unsigned int index, uint8_t mac[6])
{
	uint64_t h = fnv1a(0xcbf29ce484222325ull, &seed, sizeof(seed));

	h = fnv1a(h, &index, sizeof(index));
	/* 52:54:00 is a common prefix for VMs; 0x52 is locally administered
	 * (bit 1) and unicast (bit 0 clear). */
	mac[0] = 0x52;
	mac[1] = 0x54;
	for (int i = 2; i < 6; i++)
		mac[i] = (uint8_t)(h >> (8 * (i - 2)));
}
