/* SPDX-License-Identifier: MIT */
/*
 * hostile -v BDF: the virtio-vsock mode of the hostile driver (hostile.c
 * has the program and the PCI take-over, ring.c the rings).  The rig's
 * default guest has no vsock driver, so the function is free; we drive its
 * rx (0) and tx (1) queues, polling.  The host side (tests/e2e/abuse.sh)
 * is minivmm's hybrid one: guest connections to host port P go to the Unix
 * socket PATH_P; abuse.sh listens on port 5000 (accepts, keeps what it
 * reads) and on port 5001 (never accepts: connections wait in a backlog
 * of 2048); nothing on 5002.
 *
 * Phases, each answer checked against README.md "vsock" ("bad packets":
 * an RST, never for an RST; a bad packet on a connection resets it; a
 * malformed ring or a receive buffer too small for a header and data set
 * DEVICE_NEEDS_RESET):
 *   vsock-bad     one packet each, no connection: unknown operation,
 *                 operation 0, SEQPACKET, len beyond the chain and beyond
 *                 64 KiB, wrong src_cid, dst_cid neither the host nor
 *                 anything, RW / CREDIT_REQUEST / RESPONSE for no
 *                 connection (bad, RST); CREDIT_UPDATE and SHUTDOWN for no
 *                 connection (RST, not bad); a header of 20 bytes and a
 *                 zero-length chain (bad, no RST); an RST (nothing); then
 *                 a receive buffer of a header's size (NEEDS_RESET)
 *   vsock-credit  a connection to port 5000: CREDIT_UPDATEs with buf_alloc
 *                 and fwd_cnt at 2^32-1, then fwd_cnt going back to 0 (no
 *                 answer, not bad), CREDIT_REQUEST (a CREDIT_UPDATE back),
 *                 RW data (reaches the host), RW with len beyond its chain
 *                 (bad: the connection's RST); another connection and a
 *                 second REQUEST on it (bad: its RST); a REQUEST to port
 *                 5002 (refused: RST)
 *   vsock-flood   REQUESTs to port 5001, 32 per kick, beyond the device's
 *                 1024 connections: each answered, a RESPONSE while there
 *                 is room, then RSTs (refused); then an RST for each open
 *                 one
 *   vsock-sanity  after a reset: REQUEST to port 5000 answered by a
 *                 RESPONSE, RW "ABUSE-VSOCK-SANITY" delivered, RST
 *
 * "ABUSE vsock totals ..." gives what the device must have counted: every
 * packet we sent, the bad ones, the RSTs and other packets it sent us, the
 * connections and the refused REQUESTs (abuse.sh checks --stats-json).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "hostile.h"

#define VHDR 44u
#define NRXB 64u	    /* receive buffers, a page each */
#define NSLOT 256u	    /* packet slots of 64 bytes: header (+ data) */
#define HOST_CID 2ull
#define PORT_OK 5000u	    /* abuse.sh accepts here */
#define PORT_HOLD 5001u	    /* abuse.sh listens, never accepts */
#define PORT_NONE 5002u	    /* nobody listens */
#define FLOOD 1100u	    /* REQUESTs in the flood */
#define MAX_CONNS 1024u	    /* VMM_VSOCK_MAX_CONNECTIONS */
#define P_FLOOD 10000u	    /* our ports: the flood's */
#define P_CASE 20000u	    /* the bad-packet cases' */
#define P_CONN 21000u	    /* connections of the credit and sanity phases */
#define NPORTS 12000u	    /* answers recorded for ports P_FLOOD.. */

enum { OP_REQUEST = 1, OP_RESPONSE, OP_RST, OP_SHUTDOWN, OP_RW, OP_CREDIT_UPDATE,
       OP_CREDIT_REQUEST };

struct vhdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port, len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
} __attribute__((packed));
_Static_assert(sizeof(struct vhdr) == VHDR, "virtio_vsock_hdr");

enum {
	VP_RING = 0, /* rx 0-2, tx 3-5 */
	VP_SLOT = 6, /* NSLOT x 64 bytes */
	VP_RX = VP_SLOT + NSLOT * 64 / PAGE,
	VP_DATA = VP_RX + NRXB, /* a page of RW data */
	VPG,
};

static struct page vp[VPG];
static struct vq rxq, txq;
static uint64_t cid;
static bool rxb_busy[NRXB];
/* Per port of ours (from P_FLOOD): answers seen, by operation. */
static uint16_t got_rst[NPORTS], got_resp[NPORTS], got_credit[NPORTS];

static struct {
	uint64_t tx, bad, rx, rst, resp, credit, other, needs_reset, conns, refused;
	uint64_t rw_bytes;
} V;

static void rx_post_all(void)
{
	for (unsigned int i = 0; i < NRXB; i++) {
		if (rxb_busy[i])
			continue;
		vq_desc(&rxq, i, vp[VP_RX + i].pa, PAGE, VRING_DESC_F_WRITE, 0);
		rxb_busy[i] = true;
		vq_publish(&rxq, (uint16_t)i);
	}
}

/* Take what the device sent us; repost the buffers (kicked). */
static unsigned int rx_reap(struct dev *d)
{
	unsigned int n = 0;

	while (rxq.last_used != vq_used_idx(&rxq)) {
		struct used_elem e = rxq.used->ring[rxq.last_used % QSZ];
		struct vhdr h;
		uint32_t p;

		rxq.last_used++;
		if (e.id >= NRXB || !rxb_busy[e.id]) {
			failf("vsock: rx used entry for head %u, not posted", e.id);
			continue;
		}
		rxb_busy[e.id] = false;
		V.rx++;
		n++;
		memcpy(&h, vp[VP_RX + e.id].va, VHDR);
		if (e.len < VHDR || e.len != VHDR + h.len || h.src_cid != HOST_CID ||
		    h.dst_cid != cid || h.type != 1) {
			failf("vsock: rx packet len %u (hdr len %u) cid %" PRIu64 " -> %" PRIu64
			      " type %u", e.len, h.len, h.src_cid, h.dst_cid, h.type);
			continue;
		}
		p = h.dst_port - P_FLOOD;
		if (h.op == OP_RST)
			V.rst++;
		else if (h.op == OP_RESPONSE)
			V.resp++;
		else if (h.op == OP_CREDIT_UPDATE)
			V.credit++;
		else
			V.other++;
		if (h.dst_port < P_FLOOD || p >= NPORTS)
			continue;
		if (h.op == OP_RST)
			got_rst[p]++;
		else if (h.op == OP_RESPONSE)
			got_resp[p]++;
		else if (h.op == OP_CREDIT_UPDATE)
			got_credit[p]++;
	}
	if (n) {
		rx_post_all();
		vq_kick(d, &rxq);
	}
	return n;
}

/* Reset and bring up rx and tx (the event queue stays off), rx buffers
 * posted.  What the device returned before the reset is taken first. */
static void vs_up(struct dev *d)
{
	uint8_t s;

	dev_reset(d);
	if (rxq.used)
		rx_reap(d);
	memset(rxb_busy, 0, sizeof(rxb_busy));
	dev_negotiate(d, F(VIRTIO_F_VERSION_1));
	vq_setup(d, &rxq, &vp[VP_RING], 0);
	vq_setup(d, &txq, &vp[VP_RING + 3], 1);
	driver_ok(d);
	s = status(d);
	if (!(s & VIRTIO_CONFIG_S_DRIVER_OK) || (s & VIRTIO_CONFIG_S_NEEDS_RESET))
		die("vsock: bring-up failed: status 0x%02x", s);
	rx_post_all();
	vq_kick(d, &rxq);
}

/* A header in slot @s, filled as a good one from our port @sp. */
static struct vhdr *slot(unsigned int s, uint32_t sp, uint32_t dp, uint16_t op)
{
	struct vhdr *h = (struct vhdr *)(vp[VP_SLOT + s * 64 / PAGE].va + s * 64 % PAGE);

	*h = (struct vhdr){ .src_cid = cid, .dst_cid = HOST_CID, .src_port = sp,
			    .dst_port = dp, .type = 1, .op = op,
			    .buf_alloc = 65536 };
	return h;
}

static uint64_t slot_pa(unsigned int s)
{
	return vp[VP_SLOT + s * 64 / PAGE].pa + s * 64 % PAGE;
}

/* Publish slot @s's packet of @len header bytes (+ @data bytes from the
 * data page), not kicked. */
static void put(unsigned int s, uint32_t len, uint32_t data)
{
	vq_desc(&txq, s, slot_pa(s), len, data ? VRING_DESC_F_NEXT : 0,
		(uint16_t)((s + 1) % QSZ));
	if (data) /* the data descriptor: slot s + 1's, unused then */
		vq_desc(&txq, (s + 1) % QSZ, vp[VP_DATA].pa, data, 0, 0);
	vq_publish(&txq, (uint16_t)s);
	V.tx++;
}

/* Kick tx and wait until the device returned all of it, taking rx as it
 * comes; then rx until @quiet seconds pass with nothing new. */
static void flush(struct dev *d, double quiet)
{
	double t0 = now(), last;

	vq_kick(d, &txq);
	while (txq.last_used != txq.avail_idx) {
		while (txq.last_used != vq_used_idx(&txq)) {
			struct used_elem e = txq.used->ring[txq.last_used % QSZ];

			txq.last_used++;
			if (e.len)
				failf("vsock: tx used len %u, expected 0", e.len);
		}
		rx_reap(d);
		if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET) {
			failf("vsock: device needs reset");
			vs_up(d);
			return;
		}
		if (now() - t0 > WAIT_S) {
			failf("vsock: tx not returned in %.0f s", WAIT_S);
			return;
		}
		pause_us(50);
	}
	for (last = now(); now() - last < quiet;) {
		if (rx_reap(d))
			last = now();
		else
			pause_us(200);
	}
}

/* ---- vsock-bad --------------------------------------------------------- */

static void phase_bad(struct dev *d)
{
	/* Cases: what to break, whether it is bad, whether an RST answers. */
	static const struct {
		const char *what;
		int kind;
		bool bad, rst;
	} c[] = {
		{ "unknown operation", 0, true, true },
		{ "operation 0", 1, true, true },
		{ "SEQPACKET", 2, true, true },
		{ "len beyond the chain", 3, true, true },
		{ "len beyond 64 KiB", 4, true, true },
		{ "wrong src_cid", 5, true, true },
		{ "dst_cid 5", 6, true, true },
		{ "dst_cid our own", 7, true, true },
		{ "RW for no connection", 8, true, true },
		{ "CREDIT_REQUEST for no connection", 9, true, true },
		{ "RESPONSE for no connection", 10, true, true },
		{ "CREDIT_UPDATE for no connection", 11, false, true },
		{ "SHUTDOWN for no connection", 12, false, true },
		{ "20-byte header", 13, true, false },
		{ "zero-length chain", 14, true, false },
		{ "RST for no connection", 15, false, false },
	};
	const unsigned int n = sizeof(c) / sizeof(c[0]);
	uint64_t bad0 = V.bad, rst0 = V.rst, nr0 = V.needs_reset;

	phase_begin("vsock-bad");
	vs_up(d);
	for (unsigned int i = 0; i < n; i++) {
		struct vhdr *h = slot(i, P_CASE + i, 7, OP_RW);
		uint32_t len = VHDR;

		switch (c[i].kind) {
		case 0: h->op = 99; break;
		case 1: h->op = 0; break;
		case 2: h->type = 2; h->op = OP_REQUEST; break;
		case 3: h->len = 1000; break;
		case 4: h->len = 0x7fffffff; break;
		case 5: h->src_cid = cid + 1; break;
		case 6: h->dst_cid = 5; break;
		case 7: h->dst_cid = cid; break;
		case 8: h->len = 0; break;
		case 9: h->op = OP_CREDIT_REQUEST; break;
		case 10: h->op = OP_RESPONSE; break;
		case 11: h->op = OP_CREDIT_UPDATE; break;
		case 12: h->op = OP_SHUTDOWN; h->flags = 3; break;
		case 13: len = 20; break;
		case 14: len = 0; break;
		case 15: h->op = OP_RST; break;
		}
		put(i, len, 0);
		V.bad += c[i].bad;
	}
	flush(d, 0.5);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int r = got_rst[P_CASE - P_FLOOD + i];

		if (r != (c[i].rst ? 1u : 0u))
			failf("vsock %s: %u RSTs, expected %u", c[i].what, r, c[i].rst);
	}
	/* A receive buffer with room for a header only, first in a fresh
	 * ring, and something to send: the RST for an unknown operation. */
	dev_reset(d);
	rx_reap(d);
	memset(rxb_busy, 0, sizeof(rxb_busy));
	dev_negotiate(d, F(VIRTIO_F_VERSION_1));
	vq_setup(d, &rxq, &vp[VP_RING], 0);
	vq_setup(d, &txq, &vp[VP_RING + 3], 1);
	driver_ok(d);
	vq_desc(&rxq, 0, vp[VP_RX].pa, VHDR, VRING_DESC_F_WRITE, 0);
	vq_publish(&rxq, 0);
	vq_kick(d, &rxq);
	slot(0, P_CASE + 100, 7, 99);
	put(0, VHDR, 0);
	V.bad++;
	vq_kick(d, &txq);
	if (vq_wait(d, &rxq) == -1)
		V.needs_reset++;
	else
		failf("vsock: a %u-byte receive buffer did not set NEEDS_RESET", VHDR);
	/* The packet itself was taken (counted) before the RST found no
	 * room; that RST is gone with the reset. */
	if (vq_used_idx(&txq) != txq.avail_idx)
		failf("vsock: the packet before the bad receive buffer was not returned");
	txq.last_used = txq.avail_idx;
	rxq.last_used = vq_used_idx(&rxq);
	phase_done("vsock-bad", "cases=%u bad=%" PRIu64 " rsts=%" PRIu64 " needs_reset=%" PRIu64,
		   n + 1, V.bad - bad0, V.rst - rst0, V.needs_reset - nr0);
}

/* ---- vsock-credit ---------------------------------------------------- */

/* Connect our port @sp to host port @dp; true if a RESPONSE came. */
static bool connect_port(struct dev *d, uint32_t sp, uint32_t dp)
{
	unsigned int p = sp - P_FLOOD;

	slot(0, sp, dp, OP_REQUEST);
	put(0, VHDR, 0);
	flush(d, 0.2);
	return got_resp[p] == 1 && !got_rst[p];
}

static void phase_credit(struct dev *d)
{
	uint32_t sp = P_CONN, p = sp - P_FLOOD;
	struct vhdr *h;
	uint64_t bad0 = V.bad;

	phase_begin("vsock-credit");
	vs_up(d);
	if (!connect_port(d, sp, PORT_OK)) {
		failf("vsock: REQUEST to port %u not answered by a RESPONSE", PORT_OK);
	} else {
		V.conns++;
		h = slot(0, sp, PORT_OK, OP_CREDIT_UPDATE);
		h->buf_alloc = 0xffffffff;
		h->fwd_cnt = 0xffffffff;
		put(0, VHDR, 0);
		h = slot(2, sp, PORT_OK, OP_CREDIT_UPDATE);
		h->buf_alloc = 0xffffffff;
		h->fwd_cnt = 0; /* backwards */
		put(2, VHDR, 0);
		slot(4, sp, PORT_OK, OP_CREDIT_REQUEST);
		put(4, VHDR, 0);
		memcpy(vp[VP_DATA].va, "ABUSE-VSOCK-CREDIT\n", 19);
		h = slot(6, sp, PORT_OK, OP_RW);
		h->len = 19;
		put(6, VHDR, 19);
		V.rw_bytes += 19;
		flush(d, 0.3);
		/* The answer to CREDIT_REQUEST (and perhaps one as the host
		 * reads the data). */
		if (got_rst[p] || !got_credit[p])
			failf("vsock: credit updates: %u RSTs, %u CREDIT_UPDATEs (expected 0, >= 1)",
			      got_rst[p], got_credit[p]);
		/* RW whose len runs past its chain: bad, the connection reset. */
		h = slot(0, sp, PORT_OK, OP_RW);
		h->len = 4000;
		put(0, VHDR, 19);
		V.bad++;
		flush(d, 0.3);
		if (got_rst[p] != 1)
			failf("vsock: RW beyond its chain: %u RSTs, expected 1", got_rst[p]);
	}
	/* A second REQUEST on an open connection. */
	sp = P_CONN + 1;
	p = sp - P_FLOOD;
	if (!connect_port(d, sp, PORT_OK)) {
		failf("vsock: second REQUEST to port %u not answered", PORT_OK);
	} else {
		V.conns++;
		slot(0, sp, PORT_OK, OP_REQUEST);
		put(0, VHDR, 0);
		V.bad++;
		flush(d, 0.3);
		if (got_rst[p] != 1)
			failf("vsock: REQUEST on an open connection: %u RSTs, expected 1",
			      got_rst[p]);
	}
	/* Nobody on PORT_NONE: refused. */
	sp = P_CONN + 2;
	p = sp - P_FLOOD;
	connect_port(d, sp, PORT_NONE);
	V.refused++;
	if (got_rst[p] != 1 || got_resp[p])
		failf("vsock: REQUEST to port %u: %u RSTs, %u RESPONSEs (expected 1, 0)",
		      PORT_NONE, got_rst[p], got_resp[p]);
	phase_done("vsock-credit", "bad=%" PRIu64 " credit_updates=%u", V.bad - bad0,
		   got_credit[P_CONN - P_FLOOD]);
}

/* ---- vsock-flood ------------------------------------------------------- */

static void phase_flood(struct dev *d)
{
	unsigned int resp = 0, rst = 0, other = 0;
	double t0 = now();

	phase_begin("vsock-flood");
	vs_up(d);
	/* 32 per kick: the refused ones' RSTs wait in a queue of 64. */
	for (unsigned int i = 0; i < FLOOD; i += 32) {
		for (unsigned int k = 0; k < 32 && i + k < FLOOD; k++) {
			slot(k, P_FLOOD + i + k, PORT_HOLD, OP_REQUEST);
			put(k, VHDR, 0);
		}
		flush(d, 0);
	}
	flush(d, 0.5);
	for (unsigned int i = 0; i < FLOOD; i++) {
		unsigned int a = got_resp[i], r = got_rst[i];

		resp += a == 1 && !r;
		rst += r == 1 && !a;
		other += a + r != 1;
	}
	V.conns += resp;
	V.refused += rst;
	if (other || resp != MAX_CONNS || rst != FLOOD - MAX_CONNS)
		failf("vsock flood: %u RESPONSEs, %u RSTs, %u others or none; expected %u, %u, 0",
		      resp, rst, other, MAX_CONNS, FLOOD - MAX_CONNS);
	/* Close the open ones: an RST each (never answered). */
	for (unsigned int i = 0; i < FLOOD; i += 64) {
		unsigned int k = 0;

		for (unsigned int j = i; j < i + 64 && j < FLOOD; j++) {
			if (got_resp[j] != 1)
				continue;
			slot(k, P_FLOOD + j, PORT_HOLD, OP_RST);
			put(k++, VHDR, 0);
		}
		if (k)
			flush(d, 0);
	}
	flush(d, 0.3);
	phase_done("vsock-flood", "requests=%u responses=%u rsts=%u seconds=%.1f", FLOOD,
		   resp, rst, now() - t0);
}

/* ---- vsock-sanity ------------------------------------------------------ */

static void phase_sanity(struct dev *d)
{
	uint32_t sp = P_CONN + 3, p = sp - P_FLOOD;
	struct vhdr *h;
	bool ok;

	phase_begin("vsock-sanity");
	vs_up(d);
	ok = connect_port(d, sp, PORT_OK);
	if (ok) {
		V.conns++;
		memcpy(vp[VP_DATA].va, "ABUSE-VSOCK-SANITY\n", 19);
		h = slot(0, sp, PORT_OK, OP_RW);
		h->len = 19;
		put(0, VHDR, 19);
		V.rw_bytes += 19;
		slot(2, sp, PORT_OK, OP_RST);
		put(2, VHDR, 0);
		flush(d, 0.3);
		ok = !got_rst[p];
	}
	if (!ok)
		failf("vsock sanity: REQUEST %s", got_resp[p] ? "then an RST" : "not answered");
	phase_done("vsock-sanity", "ok=%d", ok);
}

int vsock_main(struct dev *d, const char *bdf)
{
	double t0 = now();

	cid = rd32(d->devcfg, 0) | (uint64_t)rd32(d->devcfg, 4) << 32;
	printf("ABUSE vsock device %s: cid %" PRIu64 ", %u queues\n", bdf, cid, d->nq);
	if (d->nq != 3 || cid < 3)
		die("vsock %s: %u queues, cid %" PRIu64, bdf, d->nq, cid);
	dma_pages(vp, VPG);
	msix_function(d, false, false);
	if (want("vsock-bad"))
		phase_bad(d);
	if (want("vsock-credit"))
		phase_credit(d);
	if (want("vsock-flood"))
		phase_flood(d);
	if (want("vsock-sanity"))
		phase_sanity(d);
	dev_reset(d);
	printf("ABUSE vsock totals tx_packets=%" PRIu64 " bad=%" PRIu64 " rx_packets=%" PRIu64
	       " rsts=%" PRIu64 " responses=%" PRIu64 " credit_updates=%" PRIu64
	       " other=%" PRIu64 " connections=%" PRIu64 " refused=%" PRIu64
	       " rw_bytes=%" PRIu64 " needs_reset=%" PRIu64 " seconds=%.1f\n",
	       V.tx, V.bad, V.rx, V.rst, V.resp, V.credit, V.other, V.conns, V.refused,
	       V.rw_bytes, V.needs_reset, now() - t0);
	if (failures()) {
		printf("ABUSE vsock RESULT FAIL %" PRIu64 "\n", failures());
		return 1;
	}
	printf("ABUSE vsock RESULT ok\n");
	return 0;
}
