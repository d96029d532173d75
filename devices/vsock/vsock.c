/* SPDX-License-Identifier: MIT */
/* The hybrid vsock's packet and connection layer (vsock.h). */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "virtio/vq-iov.h"
#include "vsock/vsock-host.h"
#include "vsock/vsock-proto.h"
#include "vsock/vsock.h"

#define HASH_BUCKETS 2048u /* power of two, >= VSOCK_MAX_CONNS */
#define HDR_LEN ((uint32_t)sizeof(struct vsock_hdr))
/* Host-chosen ports of host-initiated connections start here, far from
 * the usual listening ports. */
#define EPHEMERAL_BASE 0x40000000u

enum conn_state {
	CONN_LINE,    /* host client accepted, its CONNECT line not read */
	CONN_REQUEST, /* REQUEST queued or sent to the guest, no answer yet */
	CONN_OPEN,    /* established */
	CONN_DEAD,    /* host socket closed; only its RST left to send */
};

/* Control packets waiting for a receive buffer (conn.pend). */
#define PEND_REQUEST 1u
#define PEND_RESPONSE 2u
#define PEND_CREDIT 4u
#define PEND_SHUTDOWN 8u
#define PEND_RST 16u

struct vsock_conn {
	struct vsock_conn *hnext;	    /* hash chain (not in CONN_LINE);
					       the graveyard once dead */
	struct vsock_conn *all_prev, *all_next; /* every connection */
	struct vsock_conn *rx_prev, *rx_next; /* rx work list */
	bool on_rx, hashed, freed;
	uint8_t state, pend;
	uint32_t lport, pport; /* host-side port, guest port */
	uint64_t setup_ns;     /* CONN_LINE/CONN_REQUEST since (monotonic) */
	int fd;		       /* host socket, -1 once closed */
	/* Edge-triggered readiness kept until a call says EAGAIN. */
	bool readable, writable;
	bool host_eof;	   /* read() said 0: SHUTDOWN(SEND) owed/sent */
	bool hup;	   /* epoll said the client hung up (CONN_LINE) */
	bool guest_no_send, guest_no_rcv, shut_wr;
	/* Towards the guest: its buffer as it last told us; what we sent. */
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	/* From the guest: received, written to the host, last advertised. */
	uint32_t rx_cnt, fwd_cnt, last_fwd_sent;
	/* Bytes received and not yet written: a ring of buf_alloc bytes,
	 * allocated when first needed. */
	uint8_t *buf;
	uint32_t buf_off, buf_len;
};

struct rst_entry {
	uint32_t src_port, dst_port; /* as the guest sent them */
};

struct vsock {
	uint64_t cid;
	char *path;
	int listen_fd, epfd;
	unsigned int max_conns, nr_conns;
	uint64_t setup_timeout_ns;
	uint32_t buf_alloc;
	uint32_t next_port;
	bool active;
	struct vsock_conn *buckets[HASH_BUCKETS];
	struct vsock_conn *rx_head, *rx_tail;
	struct vsock_conn *all;
	/* Ended connections, freed at the end of the entry point that ended
	 * them (vsock_reap()): no call below an entry point frees one. */
	struct vsock_conn *graveyard;
	struct rst_entry rst[VSOCK_RST_QUEUE];
	unsigned int rst_head, rst_len;
	struct vsock_stats st;
	struct virtq_chain chain; /* big: kept here, not on the stack */
	/* Guest-triggered messages, rate-limited (log.h). */
	struct log_limit bad_log;
};

#define STAT_ADD(v, f, n) \
	__atomic_store_n(&(v)->st.f, (v)->st.f + (n), __ATOMIC_RELAXED)

/* ---- iovec helpers ---------------------------------------------------- */

/* ---- connections ------------------------------------------------------ */

static unsigned int hash_of(uint32_t lport, uint32_t pport)
{
	return ((lport * 0x9e3779b1u) ^ (pport * 0x85ebca6bu)) & (HASH_BUCKETS - 1);
}

static struct vsock_conn *conn_find(struct vsock *v, uint32_t lport,
				    uint32_t pport)
{
	struct vsock_conn *c = v->buckets[hash_of(lport, pport)];

	while (c && (c->lport != lport || c->pport != pport))
		c = c->hnext;
	return c;
}

static void conn_hash(struct vsock *v, struct vsock_conn *c)
{
	unsigned int h = hash_of(c->lport, c->pport);

	c->hnext = v->buckets[h];
	v->buckets[h] = c;
	c->hashed = true;
}

static void conn_unhash(struct vsock *v, struct vsock_conn *c)
{
	struct vsock_conn **pp = &v->buckets[hash_of(c->lport, c->pport)];

	if (!c->hashed)
		return;
	while (*pp != c)
		pp = &(*pp)->hnext;
	*pp = c->hnext;
	c->hashed = false;
}

/* Credit the guest gives us: what its buffer holds minus what is on the
 * way.  A fwd_cnt ahead of what we sent (a broken or hostile driver)
 * makes the difference wrap: no credit, for this connection only. */
static uint32_t conn_credit(const struct vsock_conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;

	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

static bool conn_wants_rx(const struct vsock_conn *c)
{
	if (c->pend)
		return true;
	return c->state == CONN_OPEN && c->readable && !c->host_eof &&
	       !c->guest_no_rcv && conn_credit(c) > 0;
}

/* Put @c at the tail of the rx work list if it has work (round robin
 * among connections), or take it off. */
static void conn_rx_update(struct vsock *v, struct vsock_conn *c)
{
	if (c->on_rx) {
		if (c->rx_prev)
			c->rx_prev->rx_next = c->rx_next;
		else
			v->rx_head = c->rx_next;
		if (c->rx_next)
			c->rx_next->rx_prev = c->rx_prev;
		else
			v->rx_tail = c->rx_prev;
		c->on_rx = false;
	}
	if (!conn_wants_rx(c))
		return;
	c->rx_next = NULL;
	c->rx_prev = v->rx_tail;
	if (v->rx_tail)
		v->rx_tail->rx_next = c;
	else
		v->rx_head = c;
	v->rx_tail = c;
	c->on_rx = true;
}

static void conn_close_fd(struct vsock_conn *c)
{
	/* close() also takes the fd out of the epoll set (its only user). */
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* @c is gone: off every list, its socket closed; freed by vsock_reap(). */
static void conn_free(struct vsock *v, struct vsock_conn *c)
{
	if (c->freed)
		return;
	c->freed = true;
	c->pend = 0;
	c->state = CONN_DEAD;
	conn_rx_update(v, c);
	conn_unhash(v, c);
	conn_close_fd(c);
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		v->all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	c->all_prev = c->all_next = NULL;
	c->hnext = v->graveyard;
	v->graveyard = c;
	v->nr_conns--;
	__atomic_store_n(&v->st.conns_open, v->nr_conns, __ATOMIC_RELAXED);
}

static void vsock_reap(struct vsock *v)
{
	while (v->graveyard) {
		struct vsock_conn *c = v->graveyard;

		v->graveyard = c->hnext;
		free(c->buf);
		free(c);
	}
}

/* End @c: close the host socket now; the guest learns it by an RST, if it
 * knows the connection at all (a REQUEST still queued was never seen). */
static void conn_reset(struct vsock *v, struct vsock_conn *c)
{
	if (c->state == CONN_LINE || c->state == CONN_DEAD ||
	    (c->state == CONN_REQUEST && (c->pend & PEND_REQUEST))) {
		if (c->state != CONN_DEAD)
			conn_free(v, c);
		return;
	}
	conn_close_fd(c);
	c->state = CONN_DEAD;
	c->pend = PEND_RST;
	conn_rx_update(v, c);
	STAT_ADD(v, resets, 1);
}

static uint64_t vsock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct vsock_conn *conn_new(struct vsock *v, int fd)
{
	struct vsock_conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
	};

	if (!c)
		return NULL;
	c->fd = fd;
	c->setup_ns = vsock_now_ns();
	ev.data.ptr = c;
	if (epoll_ctl(v->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		free(c);
		return NULL;
	}
	c->all_next = v->all;
	if (v->all)
		v->all->all_prev = c;
	v->all = c;
	v->nr_conns++;
	__atomic_store_n(&v->st.conns_open, v->nr_conns, __ATOMIC_RELAXED);
	return c;
}

/* A host port for a host-initiated connection to guest port @pport, not
 * in use with it.  At most max_conns ports can be taken: a free one is
 * found within max_conns + 1 tries. */
static uint32_t conn_pick_port(struct vsock *v, uint32_t pport)
{
	for (unsigned int i = 0; i <= v->max_conns; i++) {
		uint32_t p = v->next_port++;

		if (v->next_port < EPHEMERAL_BASE)
			v->next_port = EPHEMERAL_BASE;
		if (!conn_find(v, p, pport))
			return p;
	}
	return v->next_port; /* unreachable: the table holds max_conns */
}

/* ---- guest -> host data ----------------------------------------------- */

/* Advertise our buffer again once the guest believes less than half of it
 * free and a quarter has been forwarded since the last time: about one
 * CREDIT_UPDATE per half buffer, and a guest waiting for credit always
 * gets one once the buffer drains. */
static void conn_credit_check(struct vsock *v, struct vsock_conn *c)
{
	uint32_t believed_free = v->buf_alloc - (c->rx_cnt - c->last_fwd_sent);

	if (c->state == CONN_OPEN && believed_free < v->buf_alloc / 2 &&
	    c->fwd_cnt - c->last_fwd_sent >= v->buf_alloc / 4)
		c->pend |= PEND_CREDIT;
}

/* Write out the buffered bytes.  Returns 0, or -errno (the host socket
 * failed: the caller resets). */
static int conn_flush(struct vsock *v, struct vsock_conn *c)
{
	while (c->buf_len && c->writable) {
		struct iovec iov[2];
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 1 };
		uint32_t first = MIN(c->buf_len, v->buf_alloc - c->buf_off);
		ssize_t n;

		iov[0] = (struct iovec){ c->buf + c->buf_off, first };
		if (first < c->buf_len) {
			iov[1] = (struct iovec){ c->buf, c->buf_len - first };
			msg.msg_iovlen = 2;
		}
		n = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			c->writable = false;
			break;
		}
		if (n < 0)
			return -errno;
		c->buf_off = (uint32_t)((c->buf_off + (uint32_t)n) % v->buf_alloc);
		c->buf_len -= (uint32_t)n;
		c->fwd_cnt += (uint32_t)n;
	}
	return 0;
}

/* Append @len bytes of @iov at @off to the ring.  Room is the caller's
 * check (the credit: rx_cnt - fwd_cnt never exceeds buf_alloc). */
static int conn_buffer(struct vsock *v, struct vsock_conn *c,
		       const struct iovec *iov, unsigned int n, size_t off,
		       uint32_t len)
{
	const uint32_t cap = v->buf_alloc;

	if (!c->buf && !(c->buf = malloc(cap)))
		return -ENOMEM;
	while (len && c->buf_len < cap) {
		uint32_t tail = (c->buf_off + c->buf_len) % cap;
		uint32_t room = tail >= c->buf_off ? cap - tail : c->buf_off - tail;
		uint32_t l = MIN(len, room);

		vq_iov_to_buf(iov, n, off, c->buf + tail, l);
		c->buf_len += l;
		off += l;
		len -= l;
	}
	return len ? -ENOBUFS : 0;
}

/* What follows the guest's last byte once the buffer is empty: a half
 * close towards the host, or the end of the connection. */
static void conn_guest_shutdown_done(struct vsock *v, struct vsock_conn *c)
{
	if (c->buf_len || !c->guest_no_send)
		return;
	if (!c->shut_wr) {
		shutdown(c->fd, SHUT_WR);
		c->shut_wr = true;
	}
	/* Both ways done (the guest closed, or the host did and the guest
	 * sent everything): the guest waits for our RST. */
	if (c->guest_no_rcv || c->host_eof)
		conn_reset(v, c);
}

/* An RW packet's payload, @len bytes at @off of @iov, to the host. */
static void conn_rw(struct vsock *v, struct vsock_conn *c,
		    const struct iovec *iov, unsigned int n, uint32_t len)
{
	struct iovec slice[64];
	size_t off = HDR_LEN;
	int ret = 0;

	if (c->state != CONN_OPEN || c->guest_no_send ||
	    c->rx_cnt - c->fwd_cnt + (uint64_t)len > v->buf_alloc) {
		/* Data outside a connection, after SHUTDOWN(SEND), or beyond
		 * the credit we gave. */
		STAT_ADD(v, bad_packets, 1);
		conn_reset(v, c);
		return;
	}
	c->rx_cnt += len;
	STAT_ADD(v, bytes_from_guest, len);
	if (!c->buf_len && c->writable && len) {
		struct msghdr msg = { .msg_iov = slice };
		ssize_t w;

		msg.msg_iovlen = vq_iov_slice(iov, n, off, len, slice, 64);
		w = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN)
				c->writable = false;
			else if (errno != EINTR)
				ret = -errno;
			w = 0;
		}
		c->fwd_cnt += (uint32_t)w;
		off += (size_t)w;
		len -= (uint32_t)w;
	}
	/* The rest waits in the buffer; a short write (socket full, or more
	 * segments than one call took) is retried at once, so the next
	 * EAGAIN, not a guess, says the socket is full. */
	if (!ret && len)
		ret = conn_buffer(v, c, iov, n, off, len);
	if (!ret)
		ret = conn_flush(v, c);
	if (ret) {
		conn_reset(v, c);
		return;
	}
	conn_credit_check(v, c);
}

/* ---- guest packets ---------------------------------------------------- */

/* An RST for a packet that has no connection: queued, or dropped when
 * VSOCK_RST_QUEUE are waiting already (the guest's own fault: it sends
 * bad packets faster than it gives receive buffers). */
static void queue_rst(struct vsock *v, const struct vsock_hdr *h)
{
	if (h->op == VSOCK_OP_RST) /* never answer an RST */
		return;
	if (v->rst_len == VSOCK_RST_QUEUE) {
		STAT_ADD(v, rst_dropped, 1);
		return;
	}
	v->rst[(v->rst_head + v->rst_len++) % VSOCK_RST_QUEUE] =
		(struct rst_entry){ h->src_port, h->dst_port };
}

static void bad_packet(struct vsock *v, const struct vsock_hdr *h,
		       const char *why, bool rst)
{
	STAT_ADD(v, bad_packets, 1);
	log_limited(&v->bad_log, VMM_LOG_WARN, "vsock",
		    "guest packet op %u type %u %u -> %u: %s", h->op, h->type,
		    h->src_port, h->dst_port, why);
	if (rst)
		queue_rst(v, h);
}

/* A place is needed and the table is full: every set-up older than the
 * timeout gives its place back (vsock.h).  A REQUEST the guest saw gets an
 * RST through the RST queue, not the connection: a guest that takes
 * nothing from its rx queue cannot keep the place that way.  True when a
 * place is free now. */
static bool conn_reclaim(struct vsock *v)
{
	uint64_t now = vsock_now_ns();
	struct vsock_conn *c = v->all, *next;

	for (; c; c = next) {
		next = c->all_next;
		if ((c->state != CONN_LINE && c->state != CONN_REQUEST) ||
		    now - c->setup_ns < v->setup_timeout_ns)
			continue;
		if (c->state == CONN_REQUEST && !(c->pend & PEND_REQUEST)) {
			struct vsock_hdr h = { .src_port = c->pport,
					       .dst_port = c->lport };

			queue_rst(v, &h);
			STAT_ADD(v, resets, 1);
		}
		STAT_ADD(v, conns_refused, 1);
		conn_free(v, c);
	}
	return v->nr_conns < v->max_conns;
}

/* A guest REQUEST to host port h->dst_port: connect to "PATH_P". */
static void guest_connect(struct vsock *v, const struct vsock_hdr *h)
{
	struct vsock_conn *c;
	int fd;

	if (!v->active ||
	    (v->nr_conns >= v->max_conns && !conn_reclaim(v)) ||
	    vsock_host_connect(v->path, h->dst_port, &fd)) {
		STAT_ADD(v, conns_refused, 1);
		queue_rst(v, h);
		return;
	}
	c = conn_new(v, fd);
	if (!c) {
		close(fd);
		STAT_ADD(v, conns_refused, 1);
		queue_rst(v, h);
		return;
	}
	c->lport = h->dst_port;
	c->pport = h->src_port;
	c->state = CONN_OPEN;
	c->writable = true;
	c->pend = PEND_RESPONSE;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	conn_hash(v, c);
	STAT_ADD(v, conns_total, 1);
	conn_rx_update(v, c);
}

/* The guest accepted a host client's connection: tell the client. */
static void conn_accepted(struct vsock *v, struct vsock_conn *c)
{
	char line[24];
	int n = snprintf(line, sizeof(line), "OK %u\n", c->lport);

	/* A fresh socket's buffer takes a few bytes: never EAGAIN. */
	if (send(c->fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) != n) {
		conn_reset(v, c);
		return;
	}
	c->state = CONN_OPEN;
	/* What the client sent after its line is already waiting, and the
	 * edge that announced it is spent. */
	c->readable = true;
	STAT_ADD(v, conns_total, 1);
}

static void conn_shutdown(struct vsock *v, struct vsock_conn *c, uint32_t flags)
{
	if (c->state != CONN_OPEN) {
		conn_reset(v, c);
		return;
	}
	c->guest_no_rcv |= !!(flags & VSOCK_SHUTDOWN_RCV);
	c->guest_no_send |= !!(flags & VSOCK_SHUTDOWN_SEND);
	conn_guest_shutdown_done(v, c);
}

/* A packet for connection @c (h->len checked against the chain). */
static void conn_packet(struct vsock *v, struct vsock_conn *c,
			const struct vsock_hdr *h, const struct iovec *iov,
			unsigned int n)
{
	if (c->state == CONN_DEAD)
		return; /* our RST is on its way */
	/* Every packet carries the sender's buffer state. */
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	switch (h->op) {
	case VSOCK_OP_RESPONSE:
		if (c->state == CONN_REQUEST && !(c->pend & PEND_REQUEST))
			conn_accepted(v, c);
		else
			conn_reset(v, c);
		break;
	case VSOCK_OP_RST:
		conn_free(v, c);
		return;
	case VSOCK_OP_SHUTDOWN:
		conn_shutdown(v, c, h->flags);
		break;
	case VSOCK_OP_RW:
		conn_rw(v, c, iov, n, h->len);
		break;
	case VSOCK_OP_CREDIT_UPDATE:
		break;
	case VSOCK_OP_CREDIT_REQUEST:
		if (c->state == CONN_OPEN)
			c->pend |= PEND_CREDIT;
		break;
	default: /* a second REQUEST, or no operation we know */
		STAT_ADD(v, bad_packets, 1);
		conn_reset(v, c);
		break;
	}
	conn_rx_update(v, c);
}

void vsock_tx_packet(struct vsock *v, const struct iovec *iov, unsigned int n)
{
	size_t total = vq_iov_len(iov, n);
	struct vsock_conn *c;
	struct vsock_hdr h;

	STAT_ADD(v, packets_from_guest, 1);
	/* Every field below is guest-controlled: checked here, before use. */
	if (vq_iov_to_buf(iov, n, 0, &h, HDR_LEN) < HDR_LEN) {
		STAT_ADD(v, bad_packets, 1);
		log_limited(&v->bad_log, VMM_LOG_WARN, "vsock",
			    "guest packet of %zu bytes: shorter than its header",
			    total);
		return;
	}
	vsock_hdr_from_le(&h);
	c = conn_find(v, h.dst_port, h.src_port);
	if (h.src_cid != v->cid || h.dst_cid != VSOCK_HOST_CID) {
		bad_packet(v, &h, "wrong CID", true);
	} else if (h.type != VSOCK_TYPE_STREAM) {
		bad_packet(v, &h, "not a stream socket", true);
	} else if (h.len > total - HDR_LEN || h.len > VSOCK_MAX_PKT_PAYLOAD ||
		   h.op == VSOCK_OP_INVALID || h.op > VSOCK_OP_CREDIT_REQUEST) {
		/* The connection's own RST answers, if there is one. */
		if (c) {
			bad_packet(v, &h, "bad length or operation", false);
			conn_reset(v, c);
		} else {
			bad_packet(v, &h, "bad length or operation", true);
		}
	} else if (c) {
		conn_packet(v, c, &h, iov, n);
	} else if (h.op == VSOCK_OP_REQUEST) {
		guest_connect(v, &h);
	} else if (h.op == VSOCK_OP_CREDIT_UPDATE || h.op == VSOCK_OP_SHUTDOWN) {
		/* The guest's answer to what ended the connection, crossing
		 * our RST: reset again (harmless), not a bad packet. */
		queue_rst(v, &h);
	} else if (h.op != VSOCK_OP_RST) {
		bad_packet(v, &h, "no such connection", true);
	}
}

int vsock_tx_process(struct vsock *v, struct virtq *tx, bool *pushed)
{
	int r;

	while ((r = virtq_pop(tx, &v->chain)) > 0) {
		/* Writable segments (none from a Linux driver) are ignored. */
		vsock_tx_packet(v, v->chain.iov, v->chain.nr_out);
		virtq_push(tx, v->chain.head, 0);
		*pushed = true;
	}
	vsock_reap(v);
	return r;
}

/* ---- host -> guest ---------------------------------------------------- */

static void hdr_to_guest(struct vsock *v, struct vsock_hdr *h, uint32_t lport,
			 uint32_t pport, uint16_t op, uint32_t flags,
			 uint32_t len, uint32_t fwd_cnt)
{
	*h = (struct vsock_hdr){
		.src_cid = htole64(VSOCK_HOST_CID),
		.dst_cid = htole64(v->cid),
		.src_port = htole32(lport),
		.dst_port = htole32(pport),
		.len = htole32(len),
		.type = htole16(VSOCK_TYPE_STREAM),
		.op = htole16(op),
		.flags = htole32(flags),
		.buf_alloc = htole32(v->buf_alloc),
		.fwd_cnt = htole32(fwd_cnt),
	};
}

/*
 * Read what @c's host socket holds into the receive buffer @in (@nin
 * segments), after the header: no more than the guest's credit, the
 * buffer's room or one packet.  Returns the bytes read, 0 at EOF, or
 * -errno (-EAGAIN: nothing there).
 */
static ssize_t conn_read(struct vsock_conn *c, const struct iovec *in,
			 unsigned int nin, size_t room)
{
	struct iovec slice[64];
	size_t want = MIN(MIN((size_t)conn_credit(c), room - HDR_LEN),
			  (size_t)VSOCK_MAX_PKT_PAYLOAD);
	unsigned int k = vq_iov_slice(in, nin, HDR_LEN, want, slice, 64);
	ssize_t n;

	do
		n = readv(c->fd, slice, (int)k);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Data for @c's receive buffer: a packet's op and length, or 0. */
static uint16_t conn_data(struct vsock *v, struct vsock_conn *c,
			  const struct iovec *in, unsigned int nin, size_t room,
			  uint32_t *len)
{
	ssize_t n = conn_read(c, in, nin, room);

	if (n > 0) {
		*len = (uint32_t)n;
		c->tx_cnt += (uint32_t)n;
		STAT_ADD(v, bytes_to_guest, (uint64_t)n);
		return VSOCK_OP_RW;
	}
	if (n == -EAGAIN) {
		c->readable = false;
		return 0;
	}
	if (n == 0) { /* the host will send no more */
		c->host_eof = true;
		c->pend |= PEND_SHUTDOWN;
		return 0;
	}
	conn_reset(v, c);
	return 0;
}

/*
 * The next packet of @c into the receive buffer @in of @room bytes: its
 * control packets first, then data, its SHUTDOWN, a credit update.
 * Returns the bytes written, 0 if @c had nothing after all.
 */
static uint32_t conn_fill(struct vsock *v, struct vsock_conn *c,
			  const struct iovec *in, unsigned int nin, size_t room)
{
	uint32_t flags = 0, len = 0;
	struct vsock_hdr h;
	uint16_t op = 0;

	if (c->pend & PEND_RST)
		op = VSOCK_OP_RST;
	else if (c->pend & PEND_REQUEST)
		op = VSOCK_OP_REQUEST;
	else if (c->pend & PEND_RESPONSE)
		op = VSOCK_OP_RESPONSE;
	else if (c->state == CONN_OPEN && c->readable && !c->host_eof &&
		 !c->guest_no_rcv && conn_credit(c))
		/* May also end in EOF (PEND_SHUTDOWN) or a reset (PEND_RST). */
		op = conn_data(v, c, in, nin, room, &len);
	if (op)
		;
	else if (c->pend & PEND_RST)
		op = VSOCK_OP_RST;
	else if (c->pend & PEND_SHUTDOWN)
		op = VSOCK_OP_SHUTDOWN, flags = VSOCK_SHUTDOWN_SEND;
	else if (c->pend & PEND_CREDIT)
		op = VSOCK_OP_CREDIT_UPDATE;
	if (!op) {
		conn_rx_update(v, c);
		return 0;
	}
	c->pend &= (uint8_t)~(PEND_REQUEST | PEND_RESPONSE | PEND_CREDIT |
			      (op == VSOCK_OP_SHUTDOWN ? PEND_SHUTDOWN : 0));
	/* Every packet tells the guest how much of our buffer is free. */
	c->last_fwd_sent = c->fwd_cnt;
	hdr_to_guest(v, &h, c->lport, c->pport, op, flags, len, c->fwd_cnt);
	vq_iov_from_buf(in, nin, 0, &h, HDR_LEN);
	if (op == VSOCK_OP_RST)
		conn_free(v, c);
	else if (op == VSOCK_OP_SHUTDOWN)
		conn_guest_shutdown_done(v, c);
	conn_rx_update(v, c);
	return HDR_LEN + len;
}

/* The RST for an unknown connection at the head of the queue. */
static uint32_t rst_fill(struct vsock *v, const struct iovec *in, unsigned int nin)
{
	struct rst_entry *e = &v->rst[v->rst_head];
	struct vsock_hdr h;

	hdr_to_guest(v, &h, e->dst_port, e->src_port, VSOCK_OP_RST, 0, 0, 0);
	vq_iov_from_buf(in, nin, 0, &h, HDR_LEN);
	v->rst_head = (v->rst_head + 1) % VSOCK_RST_QUEUE;
	v->rst_len--;
	STAT_ADD(v, resets, 1);
	return HDR_LEN;
}

bool vsock_rx_pending(const struct vsock *v)
{
	return v->rst_len || v->rx_head;
}

int vsock_rx_process(struct vsock *v, struct virtq *rx, bool *pushed)
{
	struct virtq_chain *ch = &v->chain;
	bool have = false;
	int r = 0;

	while (vsock_rx_pending(v)) {
		uint32_t len;

		if (!have) {
			r = virtq_pop(rx, ch);
			if (r <= 0)
				break;
			/* A receive buffer takes a header and some data. */
			if (ch->in_len <= HDR_LEN) {
				r = -EPROTO;
				break;
			}
			have = true;
		}
		if (v->rst_len)
			len = rst_fill(v, ch->iov + ch->nr_out, ch->nr_in);
		else
			len = conn_fill(v, v->rx_head, ch->iov + ch->nr_out,
					ch->nr_in, (size_t)ch->in_len);
		if (!len)
			continue; /* that connection had nothing: the next */
		virtq_push(rx, ch->head, len);
		STAT_ADD(v, packets_to_guest, 1);
		*pushed = true;
		have = false;
	}
	/* Popped for a connection that turned out to have nothing. */
	if (have)
		virtq_unpop(rx);
	vsock_reap(v);
	return r < 0 ? r : 0;
}

/* ---- host events ------------------------------------------------------ */

/* A host client's CONNECT line, peeked first so that its data stays in
 * the socket for the guest. */
static void conn_read_line(struct vsock *v, struct vsock_conn *c)
{
	char buf[VSOCK_LINE_MAX];
	size_t line_len;
	uint32_t port;
	ssize_t n;
	int r;

	n = recv(c->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		c->readable = false;
		return;
	}
	r = n > 0 ? vsock_parse_connect(buf, (size_t)n, &port, &line_len) : -EIO;
	if (r == 0 && !c->hup) {
		c->readable = false; /* the rest of the line will wake us */
		return;
	}
	if (r <= 0 || recv(c->fd, buf, line_len, MSG_DONTWAIT) != (ssize_t)line_len) {
		STAT_ADD(v, conns_refused, 1);
		conn_free(v, c); /* a bad line, or the client left */
		return;
	}
	c->pport = port;
	c->lport = conn_pick_port(v, port);
	conn_hash(v, c);
	c->state = CONN_REQUEST;
	c->pend = PEND_REQUEST;
	c->setup_ns = vsock_now_ns(); /* the guest's time to answer starts */
	conn_rx_update(v, c);
}

static void host_accept(struct vsock *v)
{
	for (;;) {
		int fd = accept4(v->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct vsock_conn *c = NULL;

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return; /* EAGAIN; or out of fds: the backlog waits */
		if (v->active && (v->nr_conns < v->max_conns || conn_reclaim(v)))
			c = conn_new(v, fd);
		if (!c) {
			/* Over the limit, or no driver: refused. */
			close(fd);
			STAT_ADD(v, conns_refused, 1);
			continue;
		}
		c->state = CONN_LINE;
		c->writable = true;
		conn_read_line(v, c);
	}
}

static void conn_event(struct vsock *v, struct vsock_conn *c, uint32_t events)
{
	if (c->state == CONN_DEAD)
		return;
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->readable = true;
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		c->writable = true;
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->hup = true;
	if (c->state == CONN_LINE) {
		if (c->readable)
			conn_read_line(v, c);
		return;
	}
	if (c->writable && c->buf_len) {
		if (conn_flush(v, c)) {
			conn_reset(v, c);
		} else {
			conn_credit_check(v, c);
			conn_guest_shutdown_done(v, c);
		}
	}
	conn_rx_update(v, c);
}

void vsock_host_events(struct vsock *v)
{
	struct epoll_event ev[64];
	int n;

	do {
		n = epoll_wait(v->epfd, ev, 64, 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr)
				conn_event(v, ev[i].data.ptr, ev[i].events);
			else
				host_accept(v);
		}
	} while (n == 64 || (n < 0 && errno == EINTR));
	vsock_reap(v);
}

/* ---- life ------------------------------------------------------------- */

void vsock_set_active(struct vsock *v, bool active)
{
	if (!active) {
		while (v->all)
			conn_free(v, v->all);
		v->rst_len = v->rst_head = 0;
		vsock_reap(v);
	}
	v->active = active;
}

int vsock_create(const struct vsock_params *p, struct vsock **out)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	struct vsock *v;

	if (p->guest_cid < VSOCK_MIN_GUEST_CID || p->guest_cid > UINT32_MAX ||
	    !p->path || p->max_conns > HASH_BUCKETS)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->cid = p->guest_cid;
	v->listen_fd = p->listen_fd;
	v->max_conns = p->max_conns ? p->max_conns : VSOCK_MAX_CONNS;
	v->buf_alloc = p->buf_alloc ? p->buf_alloc : VSOCK_BUF_ALLOC;
	v->setup_timeout_ns = (uint64_t)(p->setup_timeout_ms ? p->setup_timeout_ms :
					 VSOCK_SETUP_TIMEOUT_MS) * 1000000ull;
	v->next_port = EPHEMERAL_BASE;
	v->path = strdup(p->path);
	v->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.ptr = NULL; /* the listener */
	if (!v->path || v->epfd < 0 ||
	    (v->listen_fd >= 0 &&
	     epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->listen_fd, &ev))) {
		int ret = v->path ? -errno : -ENOMEM;

		v->listen_fd = -1; /* the caller's still */
		vsock_destroy(v);
		return ret;
	}
	log_limit_init(&v->bad_log, "bad packets");
	*out = v;
	return 0;
}

void vsock_destroy(struct vsock *v)
{
	if (!v)
		return;
	vsock_set_active(v, false);
	if (v->epfd >= 0)
		close(v->epfd);
	if (v->listen_fd >= 0)
		close(v->listen_fd);
	if (v->bad_log.noun)
		log_limit_destroy(&v->bad_log, "until the vsock device was removed");
	free(v->path);
	free(v);
}

int vsock_epoll_fd(const struct vsock *v)
{
	return v->epfd;
}

void vsock_get_stats(const struct vsock *v, struct vsock_stats *st)
{
#define GET(f) st->f = __atomic_load_n(&v->st.f, __ATOMIC_RELAXED)
	GET(bytes_to_guest);
	GET(bytes_from_guest);
	GET(packets_to_guest);
	GET(packets_from_guest);
	GET(conns_total);
	GET(conns_refused);
	GET(resets);
	GET(bad_packets);
	GET(rst_dropped);
	GET(conns_open);
#undef GET
}
