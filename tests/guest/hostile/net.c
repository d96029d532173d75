/* SPDX-License-Identifier: MIT */
/*
 * hostile -n BDF: the virtio-net mode of the hostile driver (hostile.c has
 * the program, the PCI take-over and the output conventions).  The abuse
 * payload (tests/guest/abuse) unbinds the NIC from virtio-pci; we drive it
 * through its BAR with rings and buffers in mlock'ed pages, on queue pair 0
 * (RX 0, TX 1) and the control queue, polling (no MSI-X vector).  The L1
 * side (tests/e2e/abuse.sh) is a tap 198.18.0.1/24 with our MAC as a
 * permanent neighbour of 198.18.0.2 and a UDP flood at 198.18.0.2 while
 * we run.
 *
 * Phases (-p filters them as in the blk mode), each case checked against
 * what README.md "virtio-net" promises: a frame the tap refuses is dropped
 * and counted, a bad control command answered VIRTIO_NET_ERR, a malformed
 * ring, an RX chain with nothing writable or a control command without a
 * status byte set DEVICE_NEEDS_RESET; never a hang.
 *   net-ctrl    control-queue garbage: unknown class / command, short and
 *               empty commands, MQ pairs 0, > max and 0xffff, wrong
 *               lengths, a bad MAC table, an oversized command (ERR); good
 *               ones (OK); no status byte, a zero-length one, a command
 *               byte after the status (NEEDS_RESET)
 *   net-tx      malformed TX chains: zero length, header only, header
 *               short of virtio_net_hdr, a runt frame, a bad GSO header
 *               (dropped); over 64 KiB (dropped or sent: the tap decides);
 *               a write-only descriptor after a good frame (sent), only a
 *               write-only one (dropped); a loop, an address outside
 *               guest RAM, next out of range, readable after writable,
 *               indirect not negotiated, avail index jump, head out of
 *               range (NEEDS_RESET)
 *   net-rx      rounds of: receive the flood into 64 good buffers; then a
 *               reset and a ring whose first buffer is zero-length,
 *               read-only (not device-writable) or too small for the
 *               header (NEEDS_RESET)
 *   net-reset   reset + re-initialisation with RX buffers and TX frames
 *               posted and kicked, while the flood comes in
 *   net-sanity  an ARP request for 198.18.0.1, its reply received on RX
 *
 * "ABUSE net totals ..." gives what the device must have counted (every TX
 * chain it returned: packets + drops; drops between the certain ones and
 * those plus the "either" ones; every RX frame and its bytes; NEEDS_RESET
 * events), checked by abuse.sh against --stats-json and the log.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>

#include "hostile.h"

#define HDR 12u		/* virtio_net_hdr_v1 (VERSION_1) */
#define NRX 64u		/* receive buffers */
#define RXBUF 2048u	/* bytes each: header + a 1518-byte frame fits */
#define BIG_PAGES 20u	/* the oversized frame: 80 KiB, over 64 KiB */
#define ETH_P_LOCAL 0x88b5 /* IEEE local experimental: L1 drops it */
/* Addresses of the test's tap network (abuse.sh): L1 .1, us .2. */
static const uint8_t ip_l1[4] = { 198, 18, 0, 1 };
static const uint8_t ip_us[4] = { 198, 18, 0, 2 };

/* Our pages: 3 per queue (descriptors, avail, used), commands, TX
 * frames, RX buffers, the oversized frame. */
enum {
	NP_RING = 0, /* RX 0-2, TX 3-5, control 6-8 */
	NP_CMD = 9,  /* control commands (first half), status bytes */
	NP_TX = 10,  /* TX frames, 128 bytes each */
	NP_RX = 11,  /* NRX buffers of RXBUF bytes */
	NP_BIG = NP_RX + NRX * RXBUF / PAGE,
	NPG = NP_BIG + BIG_PAGES,
};

enum { Q_RX, Q_TX, Q_CTRL, NQ };

static struct page np[NPG];
static struct vq q[NQ];
static uint8_t mac[6];
static uint16_t max_pairs;
static uint64_t offered;
static bool rx_busy[NRX];

/* What the device must count (abuse.sh). */
static struct {
	uint64_t tx_done, tx_drop_min, tx_drop_max;
	uint64_t rx_frames, rx_bytes, ctrl_ok, ctrl_err;
	uint64_t flood; /* of rx_frames: abuse.sh's UDP datagrams (port 9) */
	uint64_t needs_reset, resets;
} N;

static uint64_t npa(unsigned int p, unsigned int off)
{
	return np[p].pa + off;
}

static void *nva(unsigned int p, unsigned int off)
{
	return np[p].va + off;
}

/* ---- accounting ----------------------------------------------------- */

/* A TX chain the device returned: its used length must be 0. */
static void tx_reap(const char *what)
{
	struct vq *x = &q[Q_TX];

	while (x->last_used != vq_used_idx(x)) {
		struct used_elem e = x->used->ring[x->last_used % QSZ];

		x->last_used++;
		N.tx_done++;
		if (e.len)
			failf("%s: TX used len %u, expected 0", what, e.len);
	}
}

/* RX frames received: length within the buffer, one buffer each. */
static unsigned int rx_reap(const char *what, void (*seen)(const uint8_t *, uint32_t))
{
	struct vq *x = &q[Q_RX];
	unsigned int n = 0;

	while (x->last_used != vq_used_idx(x)) {
		struct used_elem e = x->used->ring[x->last_used % QSZ];
		const uint8_t *b;

		x->last_used++;
		if (e.id >= NRX || !rx_busy[e.id]) {
			failf("%s: RX used entry for head %u, not posted", what, e.id);
			continue;
		}
		rx_busy[e.id] = false;
		b = nva(NP_RX + e.id * RXBUF / PAGE, e.id * RXBUF % PAGE);
		N.rx_frames++;
		N.rx_bytes += e.len >= HDR ? e.len - HDR : 0;
		n++;
		if (e.len < HDR + 14 || e.len > RXBUF)
			failf("%s: RX frame of %u bytes in a %u-byte buffer", what, e.len, RXBUF);
		else if ((b[10] | b[11] << 8) != 1)
			failf("%s: RX num_buffers %u, expected 1", what, b[10] | b[11] << 8);
		else if (seen)
			seen(b + HDR, e.len - HDR);
		/* IPv4 (no options), UDP, destination port 9: the flood. */
		if (e.len >= HDR + 38 && b[HDR + 12] == 0x08 && b[HDR + 13] == 0 &&
		    b[HDR + 14] == 0x45 && b[HDR + 23] == 17 && b[HDR + 36] == 0 &&
		    b[HDR + 37] == 9)
			N.flood++;
	}
	return n;
}

static void rx_post_all(void)
{
	struct vq *x = &q[Q_RX];

	for (unsigned int i = 0; i < NRX; i++) {
		if (rx_busy[i])
			continue;
		vq_desc(x, i, npa(NP_RX + i * RXBUF / PAGE, i * RXBUF % PAGE), RXBUF,
		      VRING_DESC_F_WRITE, 0);
		rx_busy[i] = true;
		vq_publish(x, (uint16_t)i);
	}
}

/* ---- bring-up ---------------------------------------------------------- */

#define NET_FEATS                                                        \
	(F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MAC) | F(VIRTIO_NET_F_STATUS) | \
	 F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX) | F(VIRTIO_NET_F_MQ))

/* Reset (taking what the device returned before it), then the three
 * queues and DRIVER_OK. */
static void net_up(struct dev *d)
{
	uint8_t s;

	dev_reset(d);
	N.resets++;
	if (q[Q_TX].used) { /* set up before: take what it returned */
		tx_reap("at a reset");
		rx_reap("at a reset", NULL);
	}
	memset(rx_busy, 0, sizeof(rx_busy));
	offered = dev_negotiate(d, NET_FEATS);
	vq_setup(d, &q[Q_RX], &np[NP_RING], 0);
	vq_setup(d, &q[Q_TX], &np[NP_RING + 3], 1);
	vq_setup(d, &q[Q_CTRL], &np[NP_RING + 6], (uint16_t)(2 * max_pairs));
	driver_ok(d);
	s = status(d);
	if (!(s & VIRTIO_CONFIG_S_DRIVER_OK) || (s & VIRTIO_CONFIG_S_NEEDS_RESET))
		die("net: bring-up failed: status 0x%02x", s);
}

/* The case must have set NEEDS_RESET (and returned nothing on @x). */
static void expect_reset(struct dev *d, struct vq *x, const char *what)
{
	int r = vq_wait(d, x);

	if (r == -1)
		N.needs_reset++;
	else
		failf("%s: %s, expected DEVICE_NEEDS_RESET", what,
		      r == 0 ? "a used entry" : "no answer");
	net_up(d);
}

/* ---- frames ---------------------------------------------------------- */

/* A minimal Ethernet frame after a zero header at @b: broadcast, our MAC,
 * ETH_P_LOCAL, 46 bytes of payload.  Returns header + frame length. */
static uint32_t put_frame(uint8_t *b)
{
	memset(b, 0, HDR);
	memset(b + HDR, 0xff, 6);
	memcpy(b + HDR + 6, mac, 6);
	b[HDR + 12] = ETH_P_LOCAL >> 8;
	b[HDR + 13] = ETH_P_LOCAL & 0xff;
	memset(b + HDR + 14, 0, 46);
	memcpy(b + HDR + 14, "minivmm hostile net", 19);
	return HDR + 60;
}

/* ---- net-ctrl ---------------------------------------------------------- */

enum { C_OK, C_ERR, C_RESET };

/* One command @cmd of @len bytes (at most 2 KiB here, or @big bytes from a
 * page), a status area of @ack bytes (0: none), the expected answer. */
static void ctrl_one(struct dev *d, const char *what, const uint8_t *cmd, uint32_t len,
		     uint32_t ack, int expect)
{
	struct vq *x = &q[Q_CTRL];
	uint8_t *st = nva(NP_CMD, 3072);
	int r;

	if (len > 2048)
		memset(nva(NP_TX, 0), 0x42, len > PAGE ? PAGE : len);
	else
		memcpy(nva(NP_CMD, 0), cmd, len);
	memset(st, 0xee, 16);
	vq_desc(x, 0, len > 2048 ? npa(NP_TX, 0) : npa(NP_CMD, 0), len,
	      ack ? VRING_DESC_F_NEXT : 0, 1);
	vq_desc(x, 1, npa(NP_CMD, 3072), ack, VRING_DESC_F_WRITE, 0);
	vq_publish(x, 0);
	vq_kick(d, x);
	if (expect == C_RESET) {
		expect_reset(d, x, what);
		return;
	}
	r = vq_wait(d, x);
	if (r) {
		failf("ctrl %s: %s", what, r == -1 ? "device needs reset" : "no answer");
		net_up(d);
		return;
	}
	{
		struct used_elem e = x->used->ring[x->last_used % QSZ];
		uint8_t a = st[ack - 1];

		x->last_used++;
		if (e.id != 0 || e.len != 1)
			failf("ctrl %s: used id %u len %u, expected 0 and 1", what, e.id, e.len);
		if (a == VIRTIO_NET_OK)
			N.ctrl_ok++;
		else if (a == VIRTIO_NET_ERR)
			N.ctrl_err++;
		if (a != (expect == C_OK ? VIRTIO_NET_OK : VIRTIO_NET_ERR))
			failf("ctrl %s: answer 0x%02x, expected %s", what, a,
			      expect == C_OK ? "OK" : "ERR");
	}
}

static void mq(struct dev *d, const char *what, uint32_t pairs, int expect)
{
	uint8_t c[4] = { VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET,
			 (uint8_t)pairs, (uint8_t)(pairs >> 8) };

	ctrl_one(d, what, c, 4, 1, expect);
}

static void phase_ctrl(struct dev *d)
{
	uint8_t c[64] = { 0 };
	uint64_t ok0 = N.ctrl_ok, err0 = N.ctrl_err, nr0 = N.needs_reset;
	bool has_mq;

	phase_begin("net-ctrl");
	net_up(d);
	has_mq = offered & F(VIRTIO_NET_F_MQ); /* read by net_up() */
	c[0] = 0x42;
	ctrl_one(d, "unknown class", c, 2, 1, C_ERR);
	c[0] = VIRTIO_NET_CTRL_MQ;
	c[1] = 7;
	ctrl_one(d, "unknown MQ command", c, 4, 1, C_ERR);
	c[0] = VIRTIO_NET_CTRL_RX;
	c[1] = 9;
	ctrl_one(d, "unknown RX command", c, 3, 1, C_ERR);
	ctrl_one(d, "one-byte command", c, 1, 1, C_ERR);
	ctrl_one(d, "empty command", c, 0, 1, C_ERR);
	mq(d, "MQ pairs 0", 0, C_ERR);
	mq(d, "MQ pairs max+1", max_pairs + 1u, C_ERR);
	mq(d, "MQ pairs 0xffff", 0xffff, C_ERR);
	c[0] = VIRTIO_NET_CTRL_MQ;
	c[1] = VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET;
	c[2] = 1;
	ctrl_one(d, "MQ with 3 bytes of data", c, 5, 1, C_ERR);
	ctrl_one(d, "MQ with 1 byte of data", c, 3, 1, C_ERR);
	mq(d, "MQ pairs max", max_pairs, has_mq ? C_OK : C_ERR);
	mq(d, "MQ pairs 1", 1, has_mq ? C_OK : C_ERR);
	c[0] = VIRTIO_NET_CTRL_RX;
	c[1] = VIRTIO_NET_CTRL_RX_PROMISC;
	c[2] = 1;
	ctrl_one(d, "RX promisc", c, 3, 1, C_OK);
	ctrl_one(d, "RX promisc, 2 bytes of data", c, 4, 1, C_ERR);
	ctrl_one(d, "RX promisc, status in the last of 16 bytes", c, 3, 16, C_OK);
	memset(c, 0, sizeof(c));
	c[0] = VIRTIO_NET_CTRL_MAC;
	c[1] = VIRTIO_NET_CTRL_MAC_TABLE_SET;
	ctrl_one(d, "empty MAC tables", c, 10, 1, C_OK);
	c[2] = 0xe8; /* 1000 unicast entries in 0 bytes */
	c[3] = 0x03;
	ctrl_one(d, "MAC table count beyond the data", c, 10, 1, C_ERR);
	c[2] = c[3] = 0;
	ctrl_one(d, "MAC tables with trailing bytes", c, 16, 1, C_ERR);
	ctrl_one(d, "3000-byte command", NULL, 3000, 1, C_ERR);
	/* No status byte: the device has nowhere to answer. */
	c[0] = VIRTIO_NET_CTRL_RX;
	c[1] = VIRTIO_NET_CTRL_RX_PROMISC;
	c[2] = 0;
	ctrl_one(d, "no status byte", c, 3, 0, C_RESET);
	/* A zero-length writable descriptor carries nothing either. */
	{
		struct vq *x = &q[Q_CTRL];

		memcpy(nva(NP_CMD, 0), c, 3);
		vq_desc(x, 0, npa(NP_CMD, 0), 3, VRING_DESC_F_NEXT, 1);
		vq_desc(x, 1, npa(NP_CMD, 3072), 0, VRING_DESC_F_WRITE, 0);
		vq_publish(x, 0);
		vq_kick(d, x);
		expect_reset(d, x, "ctrl zero-length status");
		/* A command byte after the status byte: a malformed chain. */
		vq_desc(x, 0, npa(NP_CMD, 0), 2, VRING_DESC_F_NEXT, 1);
		vq_desc(x, 1, npa(NP_CMD, 3072), 1, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
		vq_desc(x, 2, npa(NP_CMD, 2), 1, 0, 0);
		vq_publish(x, 0);
		vq_kick(d, x);
		expect_reset(d, x, "ctrl readable after the status byte");
	}
	/* Still answering after all that. */
	c[2] = 1;
	ctrl_one(d, "RX promisc after the resets", c, 3, 1, C_OK);
	phase_done("net-ctrl", "ok=%" PRIu64 " err=%" PRIu64 " needs_reset=%" PRIu64
		   " mq=%d max_pairs=%u", N.ctrl_ok - ok0, N.ctrl_err - err0,
		   N.needs_reset - nr0, has_mq, max_pairs);
}

/* ---- net-tx ------------------------------------------------------------ */

enum { T_PACKET, T_DROP, T_EITHER, T_RESET };

/* Each builds one chain at descriptor 0 of the TX ring (or breaks the
 * ring) and publishes it. */
static void t_zero(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), 0, 0, 0);
	vq_publish(x, 0);
}

static void t_hdr_only(struct vq *x)
{
	memset(nva(NP_TX, 0), 0, HDR);
	vq_desc(x, 0, npa(NP_TX, 0), HDR, 0, 0);
	vq_publish(x, 0);
}

static void t_short_hdr(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), HDR - 2, 0, 0);
	vq_publish(x, 0);
}

static void t_runt(struct vq *x)
{
	put_frame(nva(NP_TX, 0));
	vq_desc(x, 0, npa(NP_TX, 0), HDR + 8, 0, 0); /* under ETH_HLEN */
	vq_publish(x, 0);
}

static void t_bad_gso(struct vq *x)
{
	uint8_t *b = nva(NP_TX, 0);
	uint32_t len = put_frame(b);

	/* GSO with a header length beyond the frame: the tap's EINVAL. */
	b[1] = VIRTIO_NET_HDR_GSO_TCPV4;
	b[2] = 0xff; /* hdr_len 0xffff */
	b[3] = 0xff;
	b[4] = 0x40; /* gso_size 64 */
	vq_desc(x, 0, npa(NP_TX, 0), len, 0, 0);
	vq_publish(x, 0);
}

static void t_big(struct vq *x)
{
	uint8_t *b = nva(NP_TX, 0);

	put_frame(b);
	vq_desc(x, 0, npa(NP_TX, 0), HDR + 14, VRING_DESC_F_NEXT, 1);
	for (unsigned int i = 0; i < BIG_PAGES; i++)
		vq_desc(x, i + 1, npa(NP_BIG + i, 0), PAGE,
		      i + 1 < BIG_PAGES ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 2));
	vq_publish(x, 0);
}

static void t_wo_tail(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), put_frame(nva(NP_TX, 0)), VRING_DESC_F_NEXT, 1);
	vq_desc(x, 1, npa(NP_TX, 2048), 64, VRING_DESC_F_WRITE, 0);
	vq_publish(x, 0);
}

static void t_wo_only(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 2048), 64, VRING_DESC_F_WRITE, 0);
	vq_publish(x, 0);
}

static void t_good(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), put_frame(nva(NP_TX, 0)), 0, 0);
	vq_publish(x, 0);
}

static void t_loop(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), put_frame(nva(NP_TX, 0)), VRING_DESC_F_NEXT, 1);
	vq_desc(x, 1, npa(NP_TX, 0), 16, VRING_DESC_F_NEXT, 0);
	vq_publish(x, 0);
}

static void t_oob_addr(struct vq *x)
{
	vq_desc(x, 0, 1ull << 40, 64, 0, 0);
	vq_publish(x, 0);
}

static void t_next_oob(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), put_frame(nva(NP_TX, 0)), VRING_DESC_F_NEXT, 300);
	vq_publish(x, 0);
}

static void t_rd_after_wr(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 2048), 64, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	vq_desc(x, 1, npa(NP_TX, 0), put_frame(nva(NP_TX, 0)), 0, 0);
	vq_publish(x, 0);
}

static void t_indirect(struct vq *x)
{
	vq_desc(x, 0, npa(NP_TX, 0), 64, VRING_DESC_F_INDIRECT, 0);
	vq_publish(x, 0);
}

static void t_idx_jump(struct vq *x)
{
	t_good(x);
	x->avail_idx = (uint16_t)(x->avail_idx + 1000);
	__atomic_store_n(&x->avail->idx, x->avail_idx, __ATOMIC_RELEASE);
}

static void t_head_oob(struct vq *x)
{
	vq_publish(x, 999);
}

static const struct tx_case {
	const char *what;
	void (*put)(struct vq *);
	int expect;
} tx_cases[] = {
	{ "zero-length chain", t_zero, T_DROP },
	{ "header only", t_hdr_only, T_DROP },
	{ "header shorter than virtio_net_hdr", t_short_hdr, T_DROP },
	{ "runt frame", t_runt, T_DROP },
	{ "bad GSO header", t_bad_gso, T_DROP },
	{ "frame over 64 KiB", t_big, T_EITHER },
	{ "write-only descriptor after a frame", t_wo_tail, T_PACKET },
	{ "write-only descriptor only", t_wo_only, T_DROP },
	{ "good frame", t_good, T_PACKET },
	{ "descriptor loop", t_loop, T_RESET },
	{ "address outside guest RAM", t_oob_addr, T_RESET },
	{ "next out of range", t_next_oob, T_RESET },
	{ "readable after writable", t_rd_after_wr, T_RESET },
	{ "indirect, not negotiated", t_indirect, T_RESET },
	{ "avail index jump", t_idx_jump, T_RESET },
	{ "head out of range", t_head_oob, T_RESET },
	{ "good frame after the resets", t_good, T_PACKET },
};

static void phase_tx(struct dev *d)
{
	struct vq *x = &q[Q_TX];
	uint64_t done0 = N.tx_done, nr0 = N.needs_reset;
	unsigned int rounds = 0;
	double t0 = now();

	phase_begin("net-tx");
	net_up(d);
	/* Twice through the table at least, more while phase_s lasts. */
	for (; rounds < 2 || (rounds < 20 && now() - t0 < phase_s); rounds++) {
		for (unsigned int i = 0; i < sizeof(tx_cases) / sizeof(tx_cases[0]); i++) {
			const struct tx_case *c = &tx_cases[i];
			int r;

			c->put(x);
			vq_kick(d, x);
			if (c->expect == T_RESET) {
				expect_reset(d, x, c->what);
				continue;
			}
			r = vq_wait(d, x);
			if (r) {
				failf("TX %s: %s", c->what,
				      r == -1 ? "device needs reset" : "no answer");
				net_up(d);
				continue;
			}
			tx_reap(c->what);
			N.tx_drop_min += c->expect == T_DROP;
			N.tx_drop_max += c->expect != T_PACKET;
		}
	}
	phase_done("net-tx", "rounds=%u chains=%" PRIu64 " needs_reset=%" PRIu64,
		   rounds, N.tx_done - done0, N.needs_reset - nr0);
}

/* ---- net-rx ------------------------------------------------------------ */

/* Receive into NRX good buffers for @secs, reposting them. */
static unsigned int rx_window(struct dev *d, double secs, const char *what)
{
	unsigned int n = 0;
	double t0 = now();

	rx_post_all();
	vq_kick(d, &q[Q_RX]);
	while (now() - t0 < secs) {
		unsigned int k = rx_reap(what, NULL);

		n += k;
		if (k) {
			rx_post_all();
			vq_kick(d, &q[Q_RX]);
		} else {
			if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET) {
				failf("%s: device needs reset", what);
				net_up(d);
				return n;
			}
			pause_us(200);
		}
	}
	return n;
}

static void phase_rx(struct dev *d)
{
	static const char *const bad[] = { "zero-length RX buffer",
					   "read-only RX buffer",
					   "RX buffer smaller than the header" };
	struct vq *x = &q[Q_RX];
	uint64_t f0 = N.rx_frames, nr0 = N.needs_reset;
	unsigned int rounds = 0;
	double t0 = now(), waited;

	phase_begin("net-rx");
	net_up(d);
	/* The flood (abuse.sh) starts when it sees our start line: wait for
	 * its first datagram (up to 15 s: the L1 is slow) before the timed
	 * rounds (the L1's own frames, IPv6 neighbour discovery, come too). */
	while (!N.flood && now() - t0 < 15)
		rx_window(d, 0.1, "RX");
	waited = now() - t0;
	t0 = now();
	for (; rounds < 3 || (rounds < 100 && now() - t0 < phase_s); rounds++) {
		const char *what = bad[rounds % 3];

		rx_window(d, 0.2, "RX");
		net_up(d);
		/* The bad buffer first: the device pops it at the kick,
		 * whether a frame waits or not. */
		switch (rounds % 3) {
		case 0:
			vq_desc(x, 0, npa(NP_RX, 0), 0, VRING_DESC_F_WRITE, 0);
			break;
		case 1:
			vq_desc(x, 0, npa(NP_RX, 0), RXBUF, 0, 0);
			break;
		default:
			vq_desc(x, 0, npa(NP_RX, 0), HDR - 4, VRING_DESC_F_WRITE, 0);
			break;
		}
		vq_publish(x, 0);
		vq_kick(d, x);
		expect_reset(d, x, what);
	}
	phase_done("net-rx", "rounds=%u frames=%" PRIu64 " flood=%" PRIu64
		   " first_wait=%.1f needs_reset=%" PRIu64, rounds, N.rx_frames - f0,
		   N.flood, waited, N.needs_reset - nr0);
	if (!N.flood)
		failf("net-rx: no datagram of the flood from the L1 in 15 s");
}

/* ---- net-reset ----------------------------------------------------------- */

static void phase_reset_load(struct dev *d)
{
	struct vq *t = &q[Q_TX];
	uint64_t f0 = N.rx_frames, tx0 = N.tx_done, r0 = N.resets;
	double t0 = now();
	unsigned int n = 0;

	phase_begin("net-reset");
	/* At least 20 rounds and phase_s, and on until frames came in
	 * during them (up to 15 s): resets under load. */
	while (n < 20 || (n < 2000 && now() - t0 < phase_s) ||
	       (N.rx_frames == f0 && now() - t0 < 15)) {
		net_up(d);
		rx_post_all();
		vq_kick(d, &q[Q_RX]);
		/* 8 good frames at descriptors 0..7 (one frame buffer). */
		put_frame(nva(NP_TX, 0));
		for (unsigned int i = 0; i < 8; i++) {
			vq_desc(t, i, npa(NP_TX, 0), HDR + 60, 0, 0);
			vq_publish(t, (uint16_t)i);
		}
		vq_kick(d, t);
		pause_us((long)(n % 8) * 100);
		n++;
	}
	net_up(d); /* the last round's reset, and its reap */
	if (N.rx_frames == f0)
		failf("net-reset: no frame came in during the resets");
	phase_done("net-reset", "resets=%" PRIu64 " rx_frames=%" PRIu64 " tx_chains=%" PRIu64,
		   N.resets - r0, N.rx_frames - f0, N.tx_done - tx0);
}

/* ---- net-sanity -------------------------------------------------------- */

static int arp_ok;
static uint8_t l1_mac[6];

static void arp_seen(const uint8_t *f, uint32_t len)
{
	/* Ethernet + ARP reply, 198.18.0.1 is-at ..., to us. */
	if (len < 42 || f[12] != 0x08 || f[13] != 0x06 || f[20] != 0 || f[21] != 2 ||
	    memcmp(f + 28, ip_l1, 4) || memcmp(f + 38, ip_us, 4))
		return;
	memcpy(l1_mac, f + 22, 6);
	arp_ok = 1;
}

static void arp_send(struct dev *d)
{
	struct vq *x = &q[Q_TX];
	uint8_t *b = nva(NP_TX, 0), *f = b + HDR;

	memset(b, 0, HDR + 60);
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08, f[13] = 0x06;		 /* ARP */
	f[14] = 0, f[15] = 1, f[16] = 8, f[17] = 0; /* Ethernet, IPv4 */
	f[18] = 6, f[19] = 4, f[20] = 0, f[21] = 1; /* request */
	memcpy(f + 22, mac, 6);
	memcpy(f + 28, ip_us, 4);
	memcpy(f + 38, ip_l1, 4);
	vq_desc(x, 0, npa(NP_TX, 0), HDR + 60, 0, 0);
	vq_publish(x, 0);
	vq_kick(d, x);
	if (vq_wait(d, x))
		failf("sanity: the ARP request was not sent");
	tx_reap("sanity ARP");
}

static void phase_sanity(struct dev *d)
{
	double t0 = now(), last = 0;

	phase_begin("net-sanity");
	net_up(d);
	rx_post_all();
	vq_kick(d, &q[Q_RX]);
	while (!arp_ok && now() - t0 < WAIT_S) {
		if (now() - last > 1) {
			arp_send(d);
			last = now();
		}
		if (rx_reap("sanity", arp_seen)) {
			rx_post_all();
			vq_kick(d, &q[Q_RX]);
		} else {
			pause_us(200);
		}
	}
	if (!arp_ok)
		failf("sanity: no ARP reply from 198.18.0.1 in %.0f s", WAIT_S);
	phase_done("net-sanity", "ok=%d l1_mac=%02x:%02x:%02x:%02x:%02x:%02x seconds=%.1f",
		   arp_ok, l1_mac[0], l1_mac[1], l1_mac[2], l1_mac[3], l1_mac[4],
		   l1_mac[5], now() - t0);
}

int net_main(struct dev *d, const char *bdf)
{
	double t0 = now();

	for (unsigned int i = 0; i < 6; i++)
		mac[i] = rd8(d->devcfg, i);
	max_pairs = rd16(d->devcfg, 8);
	if (!max_pairs || 2u * max_pairs + 1 != d->nq)
		die("net %s: %u queue pairs, %u queues", bdf, max_pairs, d->nq);
	printf("ABUSE net device %s: mac %02x:%02x:%02x:%02x:%02x:%02x, %u pairs\n", bdf,
	       mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], max_pairs);
	dma_pages(np, NPG);
	msix_function(d, false, false);
	if (want("net-ctrl"))
		phase_ctrl(d);
	if (want("net-tx"))
		phase_tx(d);
	if (want("net-rx"))
		phase_rx(d);
	if (want("net-reset"))
		phase_reset_load(d);
	if (want("net-sanity"))
		phase_sanity(d);
	/* Leave it quiet: reset (and take what it returned). */
	net_up(d);
	dev_reset(d);
	printf("ABUSE net totals tx_chains=%" PRIu64 " tx_drop_min=%" PRIu64
	       " tx_drop_max=%" PRIu64 " rx_frames=%" PRIu64 " flood=%" PRIu64
	       " rx_bytes=%" PRIu64
	       " ctrl_ok=%" PRIu64 " ctrl_err=%" PRIu64 " needs_reset=%" PRIu64
	       " resets=%" PRIu64 " kicks=%" PRIu64 " seconds=%.1f\n",
	       N.tx_done, N.tx_drop_min, N.tx_drop_max, N.rx_frames, N.flood, N.rx_bytes,
	       N.ctrl_ok, N.ctrl_err, N.needs_reset, N.resets + 1, ring_kicks, now() - t0);
	if (failures()) {
		printf("ABUSE net RESULT FAIL %" PRIu64 "\n", failures());
		return 1;
	}
	printf("ABUSE net RESULT ok\n");
	return 0;
}
