/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: virtio-net's stream back end (devices/net/stream.h) -- the
 * reassembly of frames that arrive in pieces, bad length words, a peer
 * that reads slowly or goes away -- with RX and TX on rings the input
 * writes raw through the simulated driver (tests/harness/fake_guest.h).
 * The input plays passt on the other end of a Unix stream socketpair:
 * raw bytes or well-formed frames in chunks of its choosing, partial
 * reads, a half close.  The harness's own socket calls are non-blocking
 * and MSG_NOSIGNAL: a device that shut its end down never kills it.
 *
 * Checked beyond the sanitizers (abort() on violation): every call returns
 * >= 0 or -EPROTO (then the ring is reset, as NEEDS_RESET would); the
 * buffers stay within their bounds; and the byte stream the device sends
 * stays in sync: every length word the peer reads is a frame of
 * NSTREAM_MIN_FRAME..NSTREAM_MAX_FRAME bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/virtio_ring.h>

#include "fake_guest.h"
#include "fuzz.h"
#include "net/stream.h"

#define RAM_SIZE (256u << 10)
#define QSIZE 16u
#define MAX_ACTIONS 256

enum { A_DESC, A_HEAD, A_AVAIL, A_BYTES, A_FRAME, A_RX, A_TX, A_DRAIN,
       A_HALF_CLOSE, A_RAM, A_NR };

struct fz {
	struct fake_guest g;
	struct fg_vq fvq;
	struct virtq vq;
	struct vnet_rxq *rq;
	struct virtq_chain *chain;
	struct vnet_pair_stats st;
	struct nstream *s;
	uint16_t avail;
	int sv[2]; /* sv[0]: the device's, sv[1]: the peer's */
	/* The peer's parser of what the device sent. */
	uint8_t hdr[4];
	unsigned int hdr_got;
	uint32_t left;
};

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

static void check(struct fz *z, int r)
{
	const struct nstream *s = z->s;

	if (r < 0 && r != -EPROTO)
		abort();
	if (s->rx_off > s->rx_len || s->rx_len > NSTREAM_BUF ||
	    s->tx_off > s->tx_len || s->tx_len > NSTREAM_BUF ||
	    (s->dead && (s->rx_len || s->tx_len)))
		abort();
	if (r == -EPROTO)
		ring_reset(z);
}

/* The peer reads up to @max bytes and checks the framing. */
static void drain(struct fz *z, size_t max)
{
	static uint8_t buf[1 << 16];
	ssize_t r = recv(z->sv[1], buf, max < sizeof(buf) ? max : sizeof(buf),
			 MSG_DONTWAIT);

	for (ssize_t i = 0; i < r;) {
		if (z->left) {
			uint32_t k = (uint32_t)(r - i) < z->left ? (uint32_t)(r - i) : z->left;

			z->left -= k;
			i += k;
			continue;
		}
		z->hdr[z->hdr_got++] = buf[i++];
		if (z->hdr_got < 4)
			continue;
		z->hdr_got = 0;
		z->left = (uint32_t)z->hdr[0] << 24 | (uint32_t)z->hdr[1] << 16 |
			  (uint32_t)z->hdr[2] << 8 | z->hdr[3];
		if (z->left < NSTREAM_MIN_FRAME || z->left > NSTREAM_MAX_FRAME)
			abort(); /* the device's stream lost its sync */
	}
}

static void peer_send(struct fz *z, const void *b, size_t len)
{
	(void)send(z->sv[1], b, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* A well-formed frame: its length (16 bits of input, up to 64 KiB + a
 * little: over the maximum sometimes) and filler. */
static void frame(struct fz *z, struct fuzz_in *in)
{
	static uint8_t buf[4 + 65536 + 64];
	uint32_t len = fi_u16(in) + (fi_u8(in) & 0x1f);

	buf[0] = (uint8_t)(len >> 24);
	buf[1] = (uint8_t)(len >> 16);
	buf[2] = (uint8_t)(len >> 8);
	buf[3] = (uint8_t)len;
	memset(buf + 4, 0x5a, len);
	peer_send(z, buf, 4 + (size_t)len);
}

static void ring_action(struct fz *z, struct fuzz_in *in, uint8_t a)
{
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
	case A_RAM: {
		uint32_t off = (uint32_t)fi_u16(in) * 4 % RAM_SIZE;
		uint8_t *p = fg_ptr(&z->g, off, 1);

		if (p)
			*p = fi_u8(in);
		break;
	}
	}
}

static void action(struct fz *z, struct fuzz_in *in)
{
	uint8_t a = fi_u8(in), raw[256];
	unsigned int pushed;
	bool more = false;
	size_t n;

	switch (a % A_NR) {
	case A_BYTES:
		n = fi_u8(in);
		fi_bytes(in, raw, n);
		peer_send(z, raw, n);
		break;
	case A_FRAME:
		frame(z, in);
		break;
	case A_RX:
		check(z, nstream_rx(z->s, z->rq, &z->vq, a & 0x80, 8, &z->st, &pushed));
		break;
	case A_TX:
		check(z, nstream_tx(z->s, &z->vq, z->chain, 8, &z->st, &more));
		break;
	case A_DRAIN:
		drain(z, (size_t)fi_u16(in) + 1);
		break;
	case A_HALF_CLOSE:
		(void)shutdown(z->sv[1], SHUT_WR);
		break;
	default:
		ring_action(z, in, a);
	}
}

int fuzz_net_stream(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	static struct fz z;

	if (fg_init(&z.g, RAM_SIZE) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, z.sv) ||
	    nstream_create(z.sv[0], &z.s))
		abort();
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
	z.hdr_got = 0;
	z.left = 0;
	memset(&z.st, 0, sizeof(z.st));
	for (int i = 0; i < MAX_ACTIONS && fi_left(&in); i++)
		action(&z, &in);
	drain(&z, 1 << 16);
	nstream_destroy(z.s);
	fg_vq_destroy(&z.fvq);
	free(z.rq);
	free(z.chain);
	close(z.sv[0]);
	close(z.sv[1]);
	fg_destroy(&z.g);
	return 0;
}

FUZZ_TARGET(fuzz_net_stream)
