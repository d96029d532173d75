/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: virtio-console with VIRTIO_CONSOLE_F_MULTIPORT
 * (devices/console/vcon.c) as a hostile guest reaches it -- the control
 * messages it sends (DEVICE_READY, PORT_READY, PORT_OPEN, unknown events,
 * out-of-range and BAD_ID port ids, short, split and oversized buffers),
 * the port data it writes, the receive buffers it offers (control and
 * port, too small for a message, zero-length), raw descriptor chains on
 * any queue (loops, bad next/flags, indirect without the feature,
 * addresses outside RAM), avail index jumps, RAM scribbles and device
 * resets, with host input (data, then EOF) arriving on port 0.
 *
 * The machine is the one of tests/unit/check_vcon.c -- the real virtio-pci
 * transport over the fake KVM (tests/harness/fake_vpci.h), fake guest RAM,
 * the simulated driver's rings -- but the device runs without its threads:
 * vcon_poll() does one turn of every thread's loop on this thread, so each
 * input replays exactly.
 *
 * Ports (1, 2, 4 or 31 of them, from the setup byte): port 0 reads a pipe
 * the input writes (host -> guest) and writes a memfd; port 1 has an input
 * already at EOF and an output pipe nobody reads (EPIPE); the others have
 * no fds.  Names up to VCON_MAX_NAME bytes.
 *
 * Input: [setup u8][features u8] then action records [action u8][fields],
 * decoded as in fuzz.h (every byte string is a valid program).
 *
 * Checked beyond the sanitizers (abort()):
 *  - after every vcon_poll() and every stop, each started queue has
 *    completed every chain it took (used_idx == last_avail_idx: a chain is
 *    never lost or kept);
 *  - port 0: the bytes in its output memfd are its bytes_out counter; the
 *    bytes the guest received on its receive queue are exactly the host
 *    input, in order, never more than was written, and bytes_in counts
 *    them; a tracked buffer is never filled past its length;
 *  - every control message the guest receives in a tracked buffer is well
 *    formed: a known event (PORT_ADD, PORT_NAME, PORT_OPEN) for a port that
 *    exists, PORT_NAME carrying the port's name, and -- while the input
 *    cannot have forged guest messages (no RAM scribbles, raw chains
 *    that could make the device write anywhere, or raw control chains) --
 *    PORT_NAME and PORT_OPEN only for ports the guest declared ready, and
 *    port 0's PORT_OPEN 0 (host disconnected) only after its whole input;
 *  - no file descriptor is leaked across an input.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_console.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>

#include "console/vcon.h"
#include "fake_guest.h"
#include "fake_vpci.h"
#include "fuzz.h"
#include "pci/msix.h"

#define RAM_SIZE (128u << 10)
#define QSIZE 16u
#define MAX_CHAIN 12
#define MAX_ACTIONS 512
#define MAX_Q VCON_NUM_QUEUES(VCON_MAX_PORTS)
#define CTL_SLOT 128u  /* control tx area per ring slot: message + table */
#define RX_MAX 256u    /* a tracked receive buffer, at most */
#define IN_MAX 65536u  /* host input per input, at most (a pipe's size) */
#define Q_CTL_RX 2u
#define Q_CTL_TX 3u

enum {
	A_CTL,	     /* a control message from the guest, in some shape */
	A_RXBUF,     /* receive buffers for a receive queue */
	A_TX,	     /* port data from the guest */
	A_CHAIN,     /* raw descriptor chain on any queue */
	A_KICK,	     /* publish + vcon_poll() */
	A_HOST_IN,   /* host input on port 0, or its EOF */
	A_RESET,     /* device reset, renegotiation, rings anew */
	A_RAM,	     /* the driver scribbles on guest RAM */
	A_AVAIL_IDX, /* avail->idx jumps */
	A_CFG,	     /* device configuration access */
	A_NR,
};

/* A receive buffer whose contents the target checks (queues 0 and 2). */
struct track {
	uint64_t gpa;
	uint32_t cap;
	bool valid;
};

struct fz {
	struct fuzz_in in;
	struct fake_guest g;
	struct fv v;
	struct vcon *dev;
	unsigned int nports, nq;
	char names[VCON_MAX_PORTS][VCON_MAX_NAME + 1];
	struct fg_vq fvq[MAX_Q];
	uint16_t slot[MAX_Q];	  /* next raw descriptor slot per queue */
	struct virtio_queue *queues; /* from ops->start, NULL when stopped */
	unsigned int nr_queues;
	uint64_t rings_gpa, rings_end, ctl_gpa, rx_gpa, data_gpa, scratch;
	struct track trk[2][QSIZE]; /* [0]: queue 0, [1]: queue 2 */
	/* Port 0's host side. */
	int in_w, out_mem;
	uint8_t in_data[IN_MAX];
	size_t in_len, in_seen;
	/* The guest model. */
	bool said_ready[VCON_MAX_PORTS]; /* a PORT_READY 1 was built */
	bool unmodelled; /* guest messages may exist the model does not know */
	/* A raw chain on queue 0 / 2 may link to a tracked buffer and fill
	 * it under another head: its contents are not checked. */
	bool raw_rx[2];
};

/* ---- the device behind the transport: vcon, with start/stop observed ---- */

static struct fz *dev_fz(void *d)
{
	return d;
}

static uint64_t w_features(void *d)
{
	return vcon_dev_ops()->features(dev_fz(d)->dev);
}

static int w_set_features(void *d, uint64_t f)
{
	return vcon_dev_ops()->set_features(dev_fz(d)->dev, f);
}

static void w_config_read(void *d, uint32_t off, void *buf, uint32_t len)
{
	vcon_dev_ops()->config_read(dev_fz(d)->dev, off, buf, len);
}

static void w_config_write(void *d, uint32_t off, const void *buf, uint32_t len)
{
	vcon_dev_ops()->config_write(dev_fz(d)->dev, off, buf, len);
}

static void check_queues(struct fz *f);

static int w_start(void *d, struct virtio_queue *queues, unsigned int nr)
{
	struct fz *f = d;
	int ret = vcon_dev_ops()->start(f->dev, queues, nr);

	if (!ret) {
		f->queues = queues;
		f->nr_queues = nr;
	}
	return ret;
}

static void w_stop(void *d)
{
	struct fz *f = d;

	vcon_dev_ops()->stop(f->dev);
	/* The stop wrote out what the transmit queues held: completed. */
	check_queues(f);
	f->queues = NULL;
}

static const struct virtio_device_ops w_ops = {
	.device_id = VIRTIO_ID_CONSOLE,
	.config_size = sizeof(struct virtio_console_config),
	.features = w_features,
	.set_features = w_set_features,
	.config_read = w_config_read,
	.config_write = w_config_write,
	.start = w_start,
	.stop = w_stop,
};

/* ---- checks -------------------------------------------------------------- */

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_vcon: %s\n", what);
	abort();
}

/* Every chain a started queue took has been completed. */
static void check_queues(struct fz *f)
{
	for (unsigned int q = 0; f->queues && q < f->nr_queues; q++) {
		const struct virtq *vq = &f->queues[q].vq;

		if (vq->ready && vq->used_idx != vq->last_avail_idx)
			fail("a chain was taken and not completed");
	}
}

static void port0_used(struct fz *f, uint16_t head, uint32_t len, bool last)
{
	const struct track *t = head < QSIZE ? &f->trk[0][head] : NULL;

	if (f->unmodelled)
		return; /* the used ring itself may be scribbled on */
	if (len > f->in_len - f->in_seen)
		fail("port 0 received more bytes than the host wrote");
	if (t && t->valid) {
		if (len > t->cap)
			fail("port 0 buffer filled past its length");
		if (last && !f->raw_rx[0] && memcmp(fg_ptr(&f->g, t->gpa, len), f->in_data + f->in_seen, len))
			fail("port 0 received bytes the host did not write there");
	}
	f->in_seen += len;
}

static void ctl_used(struct fz *f, uint16_t head, uint32_t len, bool last)
{
	const struct track *t = head < QSIZE ? &f->trk[1][head] : NULL;
	struct virtio_console_control m;
	uint32_t id;
	uint16_t ev, val;
	const uint8_t *buf;

	if (!t || !t->valid || f->unmodelled)
		return;
	if (len > t->cap)
		fail("control buffer filled past its length");
	if (len < sizeof(m) || !last || f->raw_rx[1])
		return; /* a buffer too small: truncated (and logged) */
	buf = fg_ptr(&f->g, t->gpa, len);
	memcpy(&m, buf, sizeof(m));
	id = le32toh(m.id);
	ev = le16toh(m.event);
	val = le16toh(m.value);
	if (id >= f->nports)
		fail("control message for a port that does not exist");
	switch (ev) {
	case VIRTIO_CONSOLE_PORT_ADD:
		if (len != sizeof(m))
			fail("PORT_ADD of a wrong length");
		break;
	case VIRTIO_CONSOLE_PORT_NAME: {
		size_t nlen = strlen(f->names[id]);

		if (len - sizeof(m) > nlen ||
		    (len < t->cap && len - sizeof(m) != nlen) ||
		    memcmp(buf + sizeof(m), f->names[id], len - sizeof(m)))
			fail("PORT_NAME does not carry the port's name");
		if (!f->said_ready[id])
			fail("PORT_NAME before the guest's PORT_READY");
		break;
	}
	case VIRTIO_CONSOLE_PORT_OPEN:
		if (len != sizeof(m) || val > 1)
			fail("malformed PORT_OPEN");
		if (!f->said_ready[id])
			fail("PORT_OPEN before the guest's PORT_READY");
		if (id == 0 && !val && (f->in_w >= 0 || f->in_seen != f->in_len))
			fail("port 0 disconnected before its input was delivered");
		break;
	default:
		fail("unexpected control event from the device");
	}
}

/* The driver takes every used entry (Linux's virtqueue_get_buf). */
static void drain_used(struct fz *f)
{
	/* One batch per queue: the entries of one service.  A head can come
	 * back more than once in a batch (avail entries repeated by an index
	 * jump): its buffer then holds what the last fill wrote, so only
	 * the last entry of a head has its contents checked. */
	static uint32_t ids[65536], lens[65536];

	for (unsigned int q = 0; q < f->nq; q++) {
		unsigned int n = 0;

		while (n < 65536 && fg_vq_get_used(&f->fvq[q], &ids[n], &lens[n]) == 1)
			n++;
		if ((q != 0 && q != Q_CTL_RX) || f->unmodelled)
			continue; /* (unmodelled: the used ring may be scribbled on) */
		for (unsigned int i = 0; i < n; i++) {
			bool last = true;

			for (unsigned int j = i + 1; j < n && last; j++)
				last = ids[j] != ids[i];
			if (q == 0)
				port0_used(f, (uint16_t)ids[i], lens[i], last);
			else
				ctl_used(f, (uint16_t)ids[i], lens[i], last);
		}
	}
}

static void service(struct fz *f)
{
	if (vcon_poll(f->dev))
		abort();
	check_queues(f);
	drain_used(f);
}

/* ---- the driver ------------------------------------------------------------ */

static uint64_t norm_addr(uint32_t v)
{
	switch (v >> 30) {
	case 0:
	case 1:
		return v % RAM_SIZE;
	case 2:
		return RAM_SIZE - 64 + (v & 0x7f); /* around the end of RAM */
	default:
		return UINT64_MAX - (v & 0xffff); /* wraps on addr + len */
	}
}

static uint32_t norm_len(uint32_t v)
{
	switch (v >> 30) {
	case 0:
	case 1:
		return v % 4097;
	case 2:
		return v % (RAM_SIZE + 1024);
	default:
		return v; /* raw: up to 4 GiB */
	}
}

static uint64_t scratch(struct fz *f, uint32_t len)
{
	uint64_t gpa = (f->scratch + 15) & ~15ull;

	if (gpa + len > RAM_SIZE)
		gpa = f->data_gpa;
	f->scratch = gpa + len;
	return gpa;
}

static uint16_t next_slot(struct fz *f, unsigned int q)
{
	uint16_t s = f->slot[q];

	f->slot[q] = (uint16_t)((s + 1) & (QSIZE - 1));
	return s;
}

static void untrack(struct fz *f, unsigned int q, uint16_t s)
{
	if (q == 0)
		f->trk[0][s].valid = false;
	else if (q == Q_CTL_RX)
		f->trk[1][s].valid = false;
}

static void set_desc(struct fz *f, unsigned int q, uint16_t s, uint64_t addr,
		     uint32_t len, uint16_t flags, uint16_t next)
{
	untrack(f, q, s);
	fg_vq_set_desc(&f->fvq[q], s, addr, len, flags, next);
}

/* Transmit queue of port @p, receive queue = that - 1. */
static unsigned int port_txq(unsigned int p)
{
	return p ? 2 * p + 3 : 1;
}

static void do_ctl(struct fz *f)
{
	uint8_t isel = fi_u8(&f->in), esel = fi_u8(&f->in), vsel = fi_u8(&f->in);
	uint8_t shape = fi_u8(&f->in);
	uint32_t id;
	uint16_t ev, val, head = f->slot[Q_CTL_TX];
	uint64_t area = f->ctl_gpa + CTL_SLOT * head;
	struct virtio_console_control m;
	uint8_t *p = fg_ptr(&f->g, area, CTL_SLOT);
	uint32_t k;

	if (isel >= 0xf0)
		id = fi_u32(&f->in);
	else if (isel % (f->nports + 2) == f->nports)
		id = VIRTIO_CONSOLE_BAD_ID;
	else
		id = isel % (f->nports + 2); /* nports + 1: just past the end */
	ev = esel >= 0xf0 ? fi_u16(&f->in) : esel % 10;
	val = vsel & 0x80 ? fi_u16(&f->in) : vsel & 1;
	if (ev == VIRTIO_CONSOLE_PORT_READY && val == 1 && id < f->nports)
		f->said_ready[id] = true; /* whatever shape it arrives in */
	m = (struct virtio_console_control){ .id = htole32(id), .event = htole16(ev),
					     .value = htole16(val) };
	memset(p, 0xa5, 64);
	memcpy(p, &m, sizeof(m));
	/* Descriptors in this slot's own area: nothing else writes there, so
	 * the device reads what the model knows. */
	k = shape % 8;
	if (k == 7 && shape < 0xc0)
		k = 0; /* indirect breaks the queue: rarely */
	switch (k) {
	case 0: /* one buffer, the message */
	default:
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area, sizeof(m), 0, 0);
		break;
	case 1: /* split in two at 1..7 */
		k = 1 + (shape >> 3) % 7;
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area, k,
			 VRING_DESC_F_NEXT, f->slot[Q_CTL_TX]);
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area + k,
			 (uint32_t)sizeof(m) - k, 0, 0);
		break;
	case 2: /* short */
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area, (shape >> 3) % 8,
			 0, 0);
		break;
	case 3: /* oversized: trailing bytes */
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area,
			 sizeof(m) + 1 + (shape >> 3) % 56, 0, 0);
		break;
	case 4: /* followed by a writable buffer */
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area, sizeof(m),
			 VRING_DESC_F_NEXT, f->slot[Q_CTL_TX]);
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area + 64, 16,
			 VRING_DESC_F_WRITE, 0);
		break;
	case 5: /* writable only: no message */
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area + 64, 16,
			 VRING_DESC_F_WRITE, 0);
		break;
	case 6: /* three pieces, the last empty */
		k = 1 + (shape >> 3) % 7;
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area, k,
			 VRING_DESC_F_NEXT, f->slot[Q_CTL_TX]);
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area + k,
			 (uint32_t)sizeof(m) - k, VRING_DESC_F_NEXT, f->slot[Q_CTL_TX]);
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area + 8, 0, 0, 0);
		break;
	case 7: /* indirect (never negotiated: a protocol error) */
		fg_write_desc(&f->g, area + 64, 0, area, sizeof(m), 0, 0);
		set_desc(f, Q_CTL_TX, next_slot(f, Q_CTL_TX), area + 64, 16,
			 VRING_DESC_F_INDIRECT, 0);
		break;
	}
	fg_vq_add_raw_head(&f->fvq[Q_CTL_TX], head);
}

static void do_rxbuf(struct fz *f)
{
	static const uint32_t lens[] = { 0, 1, 4, 7, 8, 9, 12, 16, 64, 135, 136, RX_MAX };
	uint8_t qsel = fi_u8(&f->in), n = 1 + fi_u8(&f->in) % 4, l = fi_u8(&f->in);
	unsigned int q;

	/* Mostly control and port 0; any port's receive queue otherwise. */
	if (qsel < 0x80) {
		q = Q_CTL_RX;
	} else {
		unsigned int p = qsel < 0xc0 ? 0 : (qsel & 0x3f) % f->nports;

		q = port_txq(p) - 1;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t len = lens[(l + i) % (sizeof(lens) / sizeof(lens[0]))];
		uint16_t s = next_slot(f, q);
		uint64_t gpa;

		if (q == 0 || q == Q_CTL_RX) {
			struct track *t = &f->trk[q ? 1 : 0][s];

			gpa = f->rx_gpa + ((q ? QSIZE : 0) + s) * RX_MAX;
			memset(fg_ptr(&f->g, gpa, RX_MAX), 0x5a, RX_MAX);
			fg_vq_set_desc(&f->fvq[q], s, gpa, len, VRING_DESC_F_WRITE, 0);
			*t = (struct track){ .gpa = gpa, .cap = len, .valid = true };
		} else {
			gpa = scratch(f, len);
			fg_vq_set_desc(&f->fvq[q], s, gpa, len, VRING_DESC_F_WRITE, 0);
		}
		fg_vq_add_raw_head(&f->fvq[q], s);
	}
}

static void do_tx(struct fz *f)
{
	unsigned int q = port_txq(fi_u8(&f->in) % f->nports);
	unsigned int n = 1 + fi_u8(&f->in) % 4;
	uint16_t head = f->slot[q];

	for (unsigned int i = 0; i < n; i++) {
		uint8_t d = fi_u8(&f->in);
		uint32_t len = d & 0x80 ? norm_len(fi_u32(&f->in)) % (RAM_SIZE / 2)
					: d & 0x3f;
		uint64_t gpa = scratch(f, d & 0x80 ? 0 : len);
		uint16_t flags = i + 1 < n ? VRING_DESC_F_NEXT : 0;

		if (d & 0x80)
			gpa = norm_addr(fi_u32(&f->in)) % RAM_SIZE;
		else
			fi_bytes(&f->in, fg_ptr(&f->g, gpa, len), len);
		if (d & 0x40 && i + 1 == n)
			flags |= VRING_DESC_F_WRITE; /* trailing writable: ignored */
		set_desc(f, q, next_slot(f, q), gpa, len, flags, f->slot[q]);
	}
	fg_vq_add_raw_head(&f->fvq[q], head);
}

static void do_chain(struct fz *f)
{
	unsigned int q = fi_u8(&f->in) % f->nq;
	unsigned int n = 1 + fi_u8(&f->in) % MAX_CHAIN;
	uint16_t head = f->slot[q];

	if (q == Q_CTL_TX)
		f->unmodelled = true; /* may read any bytes as a message */
	if (q == 0 || q == Q_CTL_RX)
		f->raw_rx[q ? 1 : 0] = true;
	for (unsigned int i = 0; i < n; i++) {
		uint64_t addr = norm_addr(fi_u32(&f->in));
		uint32_t len = norm_len(fi_u32(&f->in));
		uint8_t fl = fi_u8(&f->in);
		uint16_t s = next_slot(f, q), flags, next;

		if (fl & 0x80) { /* raw flags and next */
			flags = fl & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
				      VRING_DESC_F_INDIRECT);
			next = fi_u8(&f->in);
		} else {
			flags = (uint16_t)((fl & 1 ? VRING_DESC_F_WRITE : 0) |
					   (i + 1 < n ? VRING_DESC_F_NEXT : 0));
			next = f->slot[q];
		}
		/* The device may now write anywhere in RAM (host input, a
		 * control message): the model's view of RAM is gone. */
		if (flags & (VRING_DESC_F_WRITE | VRING_DESC_F_INDIRECT))
			f->unmodelled = true;
		set_desc(f, q, s, addr, len, flags, next);
	}
	fg_vq_add_raw_head(&f->fvq[q], head);
}

static void do_kick(struct fz *f)
{
	uint8_t sel = fi_u8(&f->in);

	if (sel == 0xff) {
		for (unsigned int q = 0; q < f->nq; q++)
			fg_vq_publish(&f->fvq[q]);
	} else {
		fg_vq_publish(&f->fvq[sel % f->nq]);
	}
	service(f);
}

static void do_host_in(struct fz *f)
{
	uint8_t n = fi_u8(&f->in);
	uint8_t buf[256];
	size_t len;
	ssize_t w;

	if (f->in_w < 0)
		return;
	if (n == 0) { /* the host closes its side: EOF after the data */
		close(f->in_w);
		f->in_w = -1;
		return;
	}
	len = fi_bytes(&f->in, buf, n);
	if (len > IN_MAX - f->in_len)
		len = IN_MAX - f->in_len;
	if (!len)
		return;
	w = write(f->in_w, buf, len);
	if (w > 0) {
		memcpy(f->in_data + f->in_len, buf, (size_t)w);
		f->in_len += (size_t)w;
	}
}

/* Status 0 (the device stops), then what Linux does at probe, with the
 * feature and queue choices of @m. */
static void driver_init(struct fz *f, uint8_t m)
{
	uint64_t want = (1ull << VIRTIO_F_VERSION_1) |
			(m & 1 ? 0 : 1ull << VIRTIO_CONSOLE_F_MULTIPORT);
	unsigned int off = (m >> 3) % f->nq;

	FV_COMMON_WR(&f->v, STATUS, 0, 1);
	drain_used(f);
	memset(f->said_ready, 0, sizeof(f->said_ready));
	memset(f->trk, 0, sizeof(f->trk));
	memset(f->slot, 0, sizeof(f->slot));
	/* The rings anew, zeroed, at the same place. */
	memset(fg_ptr(&f->g, f->rings_gpa, f->rings_end - f->rings_gpa), 0,
	       f->rings_end - f->rings_gpa);
	f->g.bump = f->rings_gpa;
	for (unsigned int q = 0; q < f->nq; q++) {
		fg_vq_destroy(&f->fvq[q]);
		if (fg_vq_init(&f->g, &f->fvq[q], QSIZE, 0))
			abort();
	}
	f->g.bump = f->rings_end;
	if (fv_negotiate(&f->v, want, NULL))
		return; /* without MULTIPORT: FEATURES_OK refused, no start */
	for (unsigned int q = 0; q < f->nq; q++) {
		struct fg_vq *vq = &f->fvq[q];

		if ((m & 2) && q == off) /* one queue left disabled */
			continue;
		fv_queue_setup(&f->v, q, QSIZE, vq->desc_gpa, vq->avail_gpa,
			       vq->used_gpa, (uint16_t)(q + 1));
	}
	if (!(m & 4))
		fv_status_add(&f->v, VIRTIO_CONFIG_S_DRIVER_OK);
}

static void do_ram(struct fz *f)
{
	uint32_t off = fi_u16(&f->in) % RAM_SIZE;
	uint32_t len = fi_u8(&f->in) % 64;

	if (len > RAM_SIZE - off)
		len = RAM_SIZE - off;
	fi_bytes(&f->in, fg_ptr(&f->g, off, len), len);
	f->unmodelled = true;
}

static void do_cfg(struct fz *f)
{
	uint8_t off = fi_u8(&f->in), m = fi_u8(&f->in);
	uint64_t val = fi_u32(&f->in);
	unsigned int len = 1u << (m & 3);

	(void)iobus_dispatch(&f->v.mmio, f->v.bar + f->v.devcfg + off % 16, &val,
			     len, m & 4);
}

/* ---- the machine --------------------------------------------------------- */

static int probe_fd(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* Port 0's output: one memfd per process, emptied per input. */
static int out_memfd(void)
{
	static int fd = -1;

	if (fd < 0 && (fd = memfd_create("fuzz-vcon-out", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET))
		abort();
	return fd;
}

static void make_ports(struct fz *f, uint8_t setup, struct vcon_port_params *pp)
{
	int in[2], eof[2], dead[2];

	if (pipe2(in, O_CLOEXEC) || pipe2(eof, O_CLOEXEC) || pipe2(dead, O_CLOEXEC))
		abort();
	if (fcntl(in[1], F_SETFL, O_NONBLOCK))
		abort();
	close(eof[1]); /* port 1's input: at EOF from the start */
	close(dead[0]); /* port 1's output: nobody reads (EPIPE) */
	f->in_w = in[1];
	f->out_mem = out_memfd();
	for (unsigned int i = 0; i < f->nports; i++) {
		char *n = f->names[i];

		if (i == 0)
			snprintf(n, VCON_MAX_NAME + 1, "minivmm.ctl");
		else if (i == 1 && (setup & 0x10)) /* the longest name */
			memset(n, 'n', VCON_MAX_NAME);
		else
			snprintf(n, VCON_MAX_NAME + 1, "port.%u", i);
		pp[i] = (struct vcon_port_params){ .name = n, .in_fd = -1, .out_fd = -1 };
	}
	pp[0].in_fd = in[0];
	pp[0].out_fd = dup(f->out_mem);
	if (pp[0].out_fd < 0)
		abort();
	if (f->nports > 1) {
		pp[1].in_fd = eof[0];
		pp[1].out_fd = dead[1];
	} else {
		close(eof[0]);
		close(dead[1]);
	}
}

int fuzz_vcon(const uint8_t *data, size_t size)
{
	static const unsigned int nports[] = { 1, 2, 4, VCON_MAX_PORTS };
	static struct fz f; /* large: not on the stack */
	static bool sigpipe_ignored;
	struct vcon_port_params pp[VCON_MAX_PORTS];
	struct vcon_params cp = { .ports = pp };
	struct vpci_params vp = { .max_queue_size = QSIZE,
				  .ioeventfd_any_length = true };
	struct vcon_port_stats st;
	struct stat sb;
	uint8_t setup, init;
	int fd_before;

	fuzz_quiet_logs();
	if (!sigpipe_ignored) { /* vcon_poll()'s writes: EPIPE, not death */
		signal(SIGPIPE, SIG_IGN);
		sigpipe_ignored = true;
	}
	memset(&f, 0, sizeof(f));
	f.in = (struct fuzz_in){ data, size };
	setup = fi_u8(&f.in);
	init = fi_u8(&f.in);
	f.nports = nports[setup & 3];
	f.nq = VCON_NUM_QUEUES(f.nports);
	cp.nr_ports = f.nports;
	(void)out_memfd(); /* the cache's fd exists before the count */
	fd_before = probe_fd();
	make_ports(&f, setup, pp);
	if (vcon_create(&cp, &f.dev) || vcon_num_queues(f.dev) != f.nq)
		abort();

	if (fg_init(&f.g, RAM_SIZE) ||
	    fv_init(&f.v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &f.g.mem))
		abort();
	vp.bus = f.v.bus;
	vp.irq = f.v.irq;
	vp.mem = &f.g.mem;
	vp.ops = &w_ops;
	vp.dev = &f;
	vp.num_queues = f.nq;
	if (vpci_create(&vp, &f.v.t) || fv_probe(&f.v))
		abort();
	fv_msix_ctrl(&f.v, MSIX_CTRL_ENABLE);
	for (unsigned int v = 0; v < f.v.nr_vectors; v++) {
		fv_msix_write(&f.v, v, 0xfee00000ull, 0x4000u + v);
		fv_msix_mask(&f.v, v, false);
	}
	/* Layout: rings, control messages (per slot), tracked receive
	 * buffers, then scratch for everything else. */
	f.rings_gpa = f.g.bump;
	for (unsigned int q = 0; q < f.nq; q++)
		if (fg_vq_init(&f.g, &f.fvq[q], QSIZE, 0))
			abort();
	f.rings_end = f.g.bump;
	f.ctl_gpa = fg_alloc(&f.g, CTL_SLOT * QSIZE, 16);
	f.rx_gpa = fg_alloc(&f.g, 2 * QSIZE * RX_MAX, 16);
	f.data_gpa = fg_alloc(&f.g, 4096, 4096);
	if (!f.ctl_gpa || !f.rx_gpa || !f.data_gpa)
		abort();
	f.scratch = f.data_gpa;
	driver_init(&f, init);

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f.in); i++) {
		switch (fi_u8(&f.in) % A_NR) {
		case A_CTL:
			do_ctl(&f);
			break;
		case A_RXBUF:
			do_rxbuf(&f);
			break;
		case A_TX:
			do_tx(&f);
			break;
		case A_CHAIN:
			do_chain(&f);
			break;
		case A_KICK:
			do_kick(&f);
			break;
		case A_HOST_IN:
			do_host_in(&f);
			break;
		case A_RESET:
			driver_init(&f, fi_u8(&f.in));
			break;
		case A_RAM:
			do_ram(&f);
			break;
		case A_AVAIL_IDX: {
			struct fg_vq *vq = &f.fvq[fi_u8(&f.in) % f.nq];

			fg_vq_set_avail_idx(vq, (uint16_t)(vq->avail_idx + fi_u8(&f.in)));
			break;
		}
		case A_CFG:
			do_cfg(&f);
			break;
		}
	}
	/* Everything published is served once more, as the threads would. */
	for (unsigned int q = 0; q < f.nq; q++)
		fg_vq_publish(&f.fvq[q]);
	service(&f);

	if (vcon_port_stats(f.dev, 0, &st) || fstat(f.out_mem, &sb))
		abort();
	if ((uint64_t)sb.st_size != st.bytes_out)
		fail("port 0's output file does not hold bytes_out bytes");
	if (!f.unmodelled && st.bytes_in != f.in_seen)
		fail("port 0's bytes_in is not what the guest received");
	if (vcon_port_stats(f.dev, f.nports, &st) != -ENOENT)
		abort();

	vpci_destroy(f.v.t);
	f.v.t = NULL;
	check_queues(&f);
	vcon_destroy(f.dev);
	fv_destroy(&f.v);
	for (unsigned int q = 0; q < f.nq; q++)
		fg_vq_destroy(&f.fvq[q]);
	fg_destroy(&f.g);
	if (f.in_w >= 0)
		close(f.in_w);
	if (probe_fd() != fd_before)
		fail("a file descriptor leaked");
	return 0;
}

FUZZ_TARGET(fuzz_vcon)
