/* SPDX-License-Identifier: MIT */
/* Stream back end of virtio-net: passt / "-netdev stream" framing (stream.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_net.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net/net-backend.h"
#include "net/stream.h"
#include "virtio/vq-iov.h"

#define INC(x, n) __atomic_store_n(&(x), (x) + (n), __ATOMIC_RELAXED)

int nstream_adopt(int fd)
{
	int type = 0, fl;
	socklen_t tl = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl))
		return -errno;
	if (type != SOCK_STREAM)
		return -EINVAL;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	return 0;
}

int nstream_connect(const char *path, int *fd)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s, ret;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	/* Blocking connect (a local listener answers at once, or refuses),
	 * then non-blocking for the I/O thread. */
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		ret = -errno;
		close(s);
		return ret;
	}
	ret = nstream_adopt(s);
	if (ret) {
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int nstream_create(int fd, struct nstream **out)
{
	struct nstream *s = malloc(sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->fd = fd;
	s->dead = false;
	s->why = 0;
	s->rx_off = s->rx_len = s->tx_off = s->tx_len = 0;
	s->full_since = 0;
	*out = s;
	return 0;
}

void nstream_destroy(struct nstream *s)
{
	free(s);
}

/* The peer is gone or broken: it sees end of file now (the device's
 * registered copy of the file would keep a close() from reaching it), and
 * this pair moves nothing any more. */
static int die(struct nstream *s, int err)
{
	if (!s->dead) {
		(void)shutdown(s->fd, SHUT_RDWR);
		s->why = err;
	}
	s->dead = true;
	s->rx_off = s->rx_len = s->tx_off = s->tx_len = 0;
	return err;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int nstream_frame(struct nstream *s, const uint8_t **frame, uint32_t *len)
{
	uint32_t have = s->rx_len - s->rx_off, l;

	if (s->dead || have < NSTREAM_LEN_BYTES)
		return 0;
	l = be32(s->rx_buf + s->rx_off);
	if (l > NSTREAM_MAX_FRAME)
		return die(s, -EMSGSIZE);
	if (have - NSTREAM_LEN_BYTES < l)
		return 0;
	*frame = s->rx_buf + s->rx_off + NSTREAM_LEN_BYTES;
	*len = l;
	return 1;
}

void nstream_consume(struct nstream *s)
{
	s->rx_off += NSTREAM_LEN_BYTES + be32(s->rx_buf + s->rx_off);
	if (s->rx_off == s->rx_len)
		s->rx_off = s->rx_len = 0;
}

int nstream_fill(struct nstream *s)
{
	const uint8_t *f;
	uint32_t l;
	ssize_t r;

	if (s->dead || nstream_frame(s, &f, &l))
		return 0; /* nstream_frame() may have found the peer broken */
	if (s->dead)
		return -EMSGSIZE;
	/* The partial frame to the front: the buffer holds any one frame
	 * whole, and at most one partial frame is ever kept. */
	if (s->rx_off) {
		memmove(s->rx_buf, s->rx_buf + s->rx_off, s->rx_len - s->rx_off);
		s->rx_len -= s->rx_off;
		s->rx_off = 0;
	}
	do
		r = read(s->fd, s->rx_buf + s->rx_len, NSTREAM_BUF - s->rx_len);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (r <= 0)
		return die(s, -EPIPE);
	s->rx_len += (uint32_t)r;
	return (int)r;
}

/* sendmsg(MSG_DONTWAIT | MSG_NOSIGNAL): no SIGPIPE from a peer gone, no
 * wait.  Returns the bytes taken, 0 (full), or -EPIPE. */
static ssize_t send_iov(struct nstream *s, struct iovec *iov, size_t n)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = n };
	ssize_t w;

	do
		w = sendmsg(s->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
		return 0;
	if (w > 0)
		s->full_since = 0; /* the peer reads */
	return w < 0 ? die(s, -EPIPE) : w;
}

/* The socket is full with a frame, or a frame's tail, waiting (it took
 * nothing, or part): note since when.  Any byte taken clears it. */
static void note_full(struct nstream *s)
{
	struct timespec ts;

	if (s->full_since)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->full_since = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (!s->full_since)
		s->full_since = 1;
}

uint64_t nstream_blocked_since(const struct nstream *s)
{
	return s->dead ? 0 : s->full_since;
}

int nstream_flush(struct nstream *s)
{
	struct iovec v;
	ssize_t w;

	if (s->dead)
		return -EPIPE;
	if (s->tx_off == s->tx_len)
		return 1;
	v = (struct iovec){ s->tx_buf + s->tx_off, s->tx_len - s->tx_off };
	w = send_iov(s, &v, 1);
	if (w < 0)
		return (int)w;
	s->tx_off += (uint32_t)w;
	if (s->tx_off < s->tx_len)
		return 0;
	s->tx_off = s->tx_len = 0;
	return 1;
}

/* Keep what the socket did not take of the @total bytes of @iov (the
 * length word first): copied, so the chain can go back to the guest. */
static void keep_tail(struct nstream *s, const struct iovec *iov, size_t n,
		      size_t sent)
{
	s->tx_off = s->tx_len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = iov[i].iov_len;

		if (sent >= l) {
			sent -= l;
			continue;
		}
		memcpy(s->tx_buf + s->tx_len, (uint8_t *)iov[i].iov_base + sent,
		       l - sent);
		s->tx_len += (uint32_t)(l - sent);
		sent = 0;
	}
}

int nstream_send(struct nstream *s, const struct iovec *iov, unsigned int n,
		 uint32_t len)
{
	struct iovec v[VIRTQ_MAX_SEGS + 1];
	uint8_t hdr[NSTREAM_LEN_BYTES] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
					   (uint8_t)(len >> 8), (uint8_t)len };
	ssize_t w;

	if (s->dead)
		return -EPIPE;
	if (n >= VIRTQ_MAX_SEGS || len > NSTREAM_MAX_FRAME)
		return -EINVAL;
	v[0] = (struct iovec){ hdr, sizeof(hdr) };
	memcpy(&v[1], iov, n * sizeof(*iov));
	w = send_iov(s, v, n + 1);
	if (w <= 0)
		return (int)w;
	if ((size_t)w < NSTREAM_LEN_BYTES + (size_t)len)
		keep_tail(s, v, n + 1, (size_t)w);
	return 1;
}

/* The frame of a TX chain: its readable segments past the virtio-net
 * header, into @out (at most VIRTQ_MAX_SEGS - 1 segments).  Returns the
 * frame's length, or -1 for a chain to drop: shorter than the header,
 * a header asking for checksum or segmentation (not negotiated on this
 * NIC: the driver broke the feature contract), or a frame shorter than an
 * Ethernet header or too long. */
static int64_t tx_frame(const struct virtq_chain *ch, struct iovec *out,
			unsigned int *nout)
{
	struct virtio_net_hdr_v1 h;
	size_t got = vq_iov_to_buf(ch->iov, ch->nr_out, 0, &h, sizeof(h));
	uint64_t len;

	/* The frame after the header, one segment kept free for the caller. */
	*nout = vq_iov_slice(ch->iov, ch->nr_out, VNET_HDR_LEN, SIZE_MAX, out,
			     VIRTQ_MAX_SEGS - 1);
	len = vq_iov_len(out, *nout);
	if (got < sizeof(h) || (h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) ||
	    h.gso_type != VIRTIO_NET_HDR_GSO_NONE || len < NSTREAM_MIN_FRAME ||
	    len > NSTREAM_MAX_FRAME)
		return -1;
	return (int64_t)len;
}

int nstream_tx(struct nstream *s, struct virtq *vq, struct virtq_chain *ch,
	       unsigned int budget, struct vnet_pair_stats *st, bool *more)
{
	struct iovec f[VIRTQ_MAX_SEGS];
	unsigned int done = 0, nf;
	int r = 0, sent = s->dead ? -EPIPE : nstream_flush(s);

	*more = false;
	if (sent == 0) {
		*more = true; /* the tail of the last frame still waits */
		note_full(s);
		return 0;
	}
	while (done < budget && (r = virtq_pop(vq, ch)) > 0) {
		int64_t len = tx_frame(ch, f, &nf);

		if (len >= 0 && !s->dead) {
			sent = nstream_send(s, f, nf, (uint32_t)len);
			if (sent == 0) { /* full: the chain waits in the ring */
				virtq_unpop(vq);
				*more = true;
				note_full(s);
				return (int)done;
			}
		}
		if (len < 0 || s->dead) {
			INC(st->tx_drops, 1);
		} else {
			INC(st->tx_packets, 1);
			INC(st->tx_bytes, (uint64_t)len);
		}
		virtq_push(vq, ch->head, 0);
		done++;
		if (s->tx_off != s->tx_len) { /* taken in part: full */
			*more = true;
			note_full(s);
			return (int)done;
		}
	}
	if (r < 0)
		return -EPROTO;
	*more = *more || (done == budget && virtq_avail_count(vq));
	return (int)done;
}

/* The packet into the gathered chains' @niov segments: a header with no
 * offload (all zero; num_buffers comes with vnet_rx_deliver()), then the
 * frame.  The caller checked they hold it. */
static void rx_copy(struct vnet_rxq *rq, unsigned int niov, const uint8_t *f,
		    uint32_t len)
{
	vq_iov_from_buf(rq->iov, niov, 0, NULL, VNET_HDR_LEN);
	vq_iov_from_buf(rq->iov, niov, VNET_HDR_LEN, f, len);
}

/* The bytes the @nb chains gathered can take. */
static uint64_t rx_room(const struct vnet_rxq *rq, int nb)
{
	uint64_t room = 0;

	for (int i = 0; i < nb; i++)
		room += rq->len[i];
	return room;
}

/* One frame held whole (@f, @len) to the guest.  1 delivered or dropped,
 * 0 too few buffers now (nothing taken), -EPROTO. */
static int rx_one(struct vnet_rxq *rq, struct virtq *vq, bool mergeable,
		  const uint8_t *f, uint32_t len, struct vnet_pair_stats *st)
{
	uint32_t need = VNET_HDR_LEN + len;
	unsigned int niov;
	bool ready;
	int nb = vnet_rx_gather(rq, vq, mergeable, need, &niov, &ready);

	if (nb < 0)
		return -EPROTO;
	if (!nb || !ready || rx_room(rq, nb) < need) {
		for (int i = 0; i < nb; i++)
			virtq_unpop(vq);
		if (!nb || !ready)
			return 0;
		/* All the driver can post is too small for it (a frame over
		 * the MTU it was told): dropped, as a tap would. */
		INC(st->rx_drops, 1);
		return 1;
	}
	rx_copy(rq, niov, f, len);
	vnet_rx_deliver(rq, vq, (unsigned int)nb, need);
	INC(st->rx_packets, 1);
	INC(st->rx_bytes, len);
	return 1;
}

int nstream_rx(struct nstream *s, struct vnet_rxq *rq, struct virtq *vq,
	       bool mergeable, unsigned int budget, struct vnet_pair_stats *st,
	       unsigned int *pushed)
{
	*pushed = 0;
	/* @budget frames taken off the stream, delivered or dropped. */
	for (unsigned int n = 0; n < budget;) {
		const uint8_t *f;
		uint32_t len;
		int r = nstream_frame(s, &f, &len);

		if (!r) {
			/* Nothing whole: read on, until the socket is empty. */
			if (s->dead || nstream_fill(s) <= 0)
				return VNET_RX_DRAINED;
			continue;
		}
		if (r < 0)
			return VNET_RX_DRAINED;
		if (len < NSTREAM_MIN_FRAME) {
			INC(st->rx_drops, 1);
		} else {
			uint64_t before = st->rx_packets;

			r = rx_one(rq, vq, mergeable, f, len, st);
			if (r < 0)
				return -EPROTO;
			if (!r)
				return VNET_RX_NO_BUFS;
			*pushed += (unsigned int)(st->rx_packets - before);
		}
		nstream_consume(s);
		n++;
	}
	return VNET_RX_BUDGET;
}

static int stream_be_init(int fd, void **priv)
{
	return nstream_create(fd, (struct nstream **)priv);
}

static void stream_be_fini(void *priv)
{
	nstream_destroy(priv);
}

static int stream_be_tx(void *priv, int fd, struct virtq *vq,
			struct virtq_chain *ch, unsigned int budget,
			struct vnet_pair_stats *st, bool *more)
{
	(void)fd;
	return nstream_tx(priv, vq, ch, budget, st, more);
}

/* @max_frame is not needed: each frame says its own length. */
static int stream_be_rx(void *priv, int fd, struct vnet_rxq *rq,
			struct virtq *vq, bool mergeable, uint32_t max_frame,
			unsigned int budget, struct vnet_pair_stats *st,
			unsigned int *pushed)
{
	(void)fd;
	(void)max_frame;
	return nstream_rx(priv, rq, vq, mergeable, budget, st, pushed);
}

static uint64_t stream_be_blocked_since(void *priv)
{
	return nstream_blocked_since(priv);
}

static int stream_be_gone(void *priv)
{
	const struct nstream *s = priv;

	return s->dead ? s->why : 0;
}

const struct net_backend net_stream_backend = {
	.kind = "stream",
	.offloads = false,
	.tx_waits_writable = true,
	.pair_init = stream_be_init,
	.pair_fini = stream_be_fini,
	.tx = stream_be_tx,
	.rx = stream_be_rx,
	.gone = stream_be_gone,
	.blocked_since = stream_be_blocked_since,
};
