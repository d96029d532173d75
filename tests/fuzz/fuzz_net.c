/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the virtio-net paths (devices/net/vnet.h) -- TX, RX with and
 * without MRG_RXBUF, the control queue -- on rings the input writes raw
 * through the simulated driver (tests/harness/fake_guest.h), with frames
 * from the input on a datagram socket standing in for the tap.
 *
 * Input: [features u8] then records [action u8][fields]; descriptors are
 * written raw (loops, bad next, bad flags, addresses straddling RAM).
 * Checked beyond the sanitizers (abort() on violation): every call returns
 * >= 0 or -EPROTO (after which the ring is reset, as the device's
 * NEEDS_RESET would).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>

#include "fake_guest.h"
#include "fuzz.h"
#include "net/vnet.h"

#define RAM_SIZE (64u << 10)
#define QSIZE 16u
#define MAX_ACTIONS 256

enum { A_DESC, A_HEAD, A_AVAIL, A_FRAME, A_RX, A_TX, A_CTRL, A_RAM, A_NR };

struct fz {
	struct fake_guest g;
	struct fg_vq fvq;
	struct virtq vq;
	struct vnet n;
	struct vnet_rxq *rq;
	struct virtq_chain *chain;
	struct vnet_pair_stats st;
	uint16_t avail;
	int sv[2];
};

/* The device needs a reset: the same rings, started afresh. */
static void ring_reset(struct fz *z)
{
	virtq_reset(&z->vq);
	z->fvq.avail_idx = z->fvq.kicked_idx = z->fvq.last_used_idx = 0;
	z->fvq.avail->idx = 0;
	z->fvq.used->idx = 0;
	if (fg_vq_attach(&z->fvq, &z->vq))
		abort();
	z->avail = 0;
}

/* A result of the model: >= 0 or -EPROTO. */
static void check(struct fz *z, int r)
{
	if (r < 0 && r != -EPROTO)
		abort();
	if (r == -EPROTO)
		ring_reset(z);
}

static void frame(struct fz *z, struct fuzz_in *in)
{
	uint8_t buf[2048];
	size_t len = fi_u16(in) % sizeof(buf);

	fi_bytes(in, buf, len);
	(void)send(z->sv[1], buf, len, MSG_DONTWAIT);
}

static void action(struct fz *z, struct fuzz_in *in)
{
	uint8_t a = fi_u8(in);
	unsigned int pushed;
	bool more = false, changed = false;

	switch (a % A_NR) {
	case A_DESC: {
		uint16_t i = fi_u8(in) % QSIZE;
		uint64_t addr = fi_u16(in) * 4ull;
		uint32_t len = fi_u16(in);
		uint16_t flags = fi_u8(in) & 7, next = fi_u8(in);

		fg_vq_set_desc(&z->fvq, i, addr, len, flags, next);
		break;
	}
	case A_HEAD:
		fg_vq_add_raw_head(&z->fvq, fi_u8(in) % QSIZE);
		z->avail++;
		fg_vq_set_avail_idx(&z->fvq, z->avail);
		break;
	case A_AVAIL:
		z->avail += fi_u8(in);
		fg_vq_set_avail_idx(&z->fvq, z->avail);
		break;
	case A_FRAME:
		frame(z, in);
		break;
	case A_RX:
		check(z, vnet_rx(z->rq, &z->vq, z->sv[0], a & 0x80,
				 vnet_rx_max_frame(&z->n), 8, &z->st, &pushed));
		break;
	case A_TX:
		check(z, vnet_tx(&z->vq, z->chain, z->sv[0], 8, &z->st, &more));
		break;
	case A_CTRL:
		check(z, vnet_ctrl(&z->n, &z->vq, z->chain, &changed));
		break;
	case A_RAM: {
		uint32_t off = fi_u16(in) % RAM_SIZE;
		uint8_t *p = fg_ptr(&z->g, off, 1);

		if (p)
			*p = fi_u8(in);
		break;
	}
	}
}

int fuzz_net(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct vnet_params p = { .mac = { 0x52, 0x54 }, .max_pairs = 4 };
	static struct fz z;
	uint8_t f = fi_u8(&in);

	if (fg_init(&z.g, RAM_SIZE) || vnet_init(&z.n, &p) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, z.sv))
		abort();
	/* The offer, less what the input's first byte takes away. */
	if (vnet_set_features(&z.n, vnet_device_features(&z.n) & ~((uint64_t)f << 15)))
		(void)vnet_set_features(&z.n, vnet_device_features(&z.n));
	z.rq = malloc(sizeof(*z.rq));
	z.chain = malloc(sizeof(*z.chain));
	if (!z.rq || !z.chain)
		abort();
	z.fvq = (struct fg_vq){ 0 };
	if (fg_vq_init(&z.g, &z.fvq, QSIZE, 1ull << VIRTIO_RING_F_EVENT_IDX |
				    1ull << VIRTIO_RING_F_INDIRECT_DESC) ||
	    fg_vq_attach(&z.fvq, &z.vq))
		abort();
	z.avail = 0;
	for (int i = 0; i < MAX_ACTIONS && fi_left(&in); i++)
		action(&z, &in);
	fg_vq_destroy(&z.fvq);
	free(z.rq);
	free(z.chain);
	close(z.sv[0]);
	close(z.sv[1]);
	fg_destroy(&z.g);
	return 0;
}

FUZZ_TARGET(fuzz_net)
