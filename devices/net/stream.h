/* SPDX-License-Identifier: MIT */
/*
 * Stream back end of virtio-net: one queue pair on a connected Unix stream
 * socket speaking the framing of QEMU's "-netdev stream" and passt: each
 * Ethernet frame is preceded by its length, 4 bytes big-endian, and no
 * virtio-net header travels on the wire (so no checksum or TSO offload:
 * the device offers none on such a NIC, and the header given to the
 * guest is synthesized, all zero but num_buffers).
 *
 * A stream has no message boundaries, so both ways keep a bounded buffer
 * of one frame's size per pair:
 *  - RX: what the socket has is read into a reassembly buffer
 *    (NSTREAM_BUF bytes) and each complete frame is copied into the
 *    guest's chains; while the driver has too few buffers nothing more is
 *    read (the socket's queue holds, the peer's sends block or fail);
 *  - TX: a frame is sent as length + frame with one sendmsg
 *    (MSG_DONTWAIT | MSG_NOSIGNAL); when the socket takes only part of it,
 *    the rest is copied aside and sent before anything else; when it takes
 *    nothing, the chain goes back to the ring and the queue is served
 *    again later (never blocks the I/O thread, never drops silently).
 * A length over NSTREAM_MAX_FRAME is a broken peer; end of file or a
 * socket error is a peer gone: either way the socket is shut down and the
 * pair is dead (frames from the guest dropped and counted) until the NIC
 * is destroyed; the device takes its link down.
 *
 * Context: a pair's functions run on its RX or TX queue's serving thread;
 * both queues of a pair are served by the same thread (virtio-net.c), so
 * the dead flag needs no atomics.
 */
#ifndef VMM_DEVICES_NET_STREAM_H
#define VMM_DEVICES_NET_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "net/vnet.h"
#include "util/compiler.h"

/* The longest frame either way: what a tap hands over with GSO, more than
 * passt's largest (65520 bytes of MTU and the Ethernet header). */
#define NSTREAM_MAX_FRAME VNET_MAX_GSO_FRAME
#define NSTREAM_LEN_BYTES 4u
#define NSTREAM_BUF (NSTREAM_LEN_BYTES + NSTREAM_MAX_FRAME)
/* Shorter than an Ethernet header: dropped and counted, not fatal. */
#define NSTREAM_MIN_FRAME 14u

struct nstream {
	int fd;	   /* connected, non-blocking; owned by the caller */
	bool dead; /* peer gone or broken: shut down */
	int why;   /* then -EPIPE (gone) or -EMSGSIZE (a bad length) */
	/* RX: rx_buf[rx_off, rx_len) read and not yet delivered. */
	uint32_t rx_off, rx_len;
	/* TX: tx_buf[tx_off, tx_len) is the unsent tail of a frame. */
	uint32_t tx_off, tx_len;
	/* TX: since when (CLOCK_MONOTONIC, ns) the socket has taken nothing
	 * while a frame waits for it (0: not waiting).  A peer that stops
	 * reading shows here (nstream_blocked_since()), not as a drop. */
	uint64_t full_since;
	uint8_t rx_buf[NSTREAM_BUF];
	uint8_t tx_buf[NSTREAM_BUF];
};

/* For a connected stream socket: SOCK_STREAM checked, O_NONBLOCK set.
 * 0, -ENOTSOCK / -EINVAL (not a stream socket) or -errno. */
int nstream_adopt(int fd) __must_check;
/* Connect to the Unix socket at @path: a new non-blocking, close-on-exec
 * file in *@fd.  0, -ENAMETOOLONG or the kernel's -errno. */
int nstream_connect(const char *path, int *fd) __must_check;
/* 0 or -ENOMEM.  @fd stays the caller's. */
int nstream_create(int fd, struct nstream **out) __must_check;
void nstream_destroy(struct nstream *s);

/* ---- Framing, without rings (unit tests, fuzzing) ---- */

/*
 * Read what the socket has into the reassembly buffer.  Returns the bytes
 * read (> 0), 0 (nothing now, or the buffer holds a complete frame
 * already), or -EPIPE (end of file or error: the pair is dead).
 */
int nstream_fill(struct nstream *s);
/*
 * The first complete frame held: 1 with *@frame / *@len (valid until the
 * next nstream_consume() or nstream_fill()), 0 when none is complete, or
 * -EMSGSIZE (a length over NSTREAM_MAX_FRAME: the pair is dead).
 */
int nstream_frame(struct nstream *s, const uint8_t **frame, uint32_t *len);
/* Forget the frame nstream_frame() returned. */
void nstream_consume(struct nstream *s);
/*
 * Send the tail of a frame the socket took in part.  Returns 1 (nothing
 * pending any more), 0 (still pending: the socket is full) or -EPIPE.
 */
int nstream_flush(struct nstream *s);
/*
 * Send one frame of @len bytes (@iov, @n segments; n < VIRTQ_MAX_SEGS)
 * after its length.  Call only with nothing pending (nstream_flush() 1).
 * Returns 1 (sent, or its tail kept to send later), 0 (the socket is
 * full: nothing sent, try again later) or -EPIPE.
 */
int nstream_send(struct nstream *s, const struct iovec *iov, unsigned int n,
		 uint32_t len);

/* Since when (CLOCK_MONOTONIC, ns) TX has waited for a full socket, the
 * peer taking nothing since; 0 when it is not waiting. */
uint64_t nstream_blocked_since(const struct nstream *s);

/* ---- A queue pair's rings (vnet.h conventions) ---- */

/*
 * vnet_tx() on the stream: up to @budget TX chains; a chain shorter than
 * the header, with a header asking for an offload, or with a frame under
 * NSTREAM_MIN_FRAME or over NSTREAM_MAX_FRAME (or the pair dead) is
 * dropped and counted.  Returns the
 * chains used with *@more (work left: budget, or the socket full), or
 * -EPROTO (broken ring).  The peer found gone: s->dead set.
 */
int nstream_tx(struct nstream *s, struct virtq *vq, struct virtq_chain *ch,
	       unsigned int budget, struct vnet_pair_stats *st, bool *more);
/*
 * vnet_rx() on the stream: complete frames into @vq's chains (one, or with
 * @mergeable as many as the frame needs).  A frame the driver's buffers
 * cannot hold even when all are posted is dropped and counted.  Returns a
 * vnet_rx_stop with *@pushed (VNET_RX_DRAINED once the pair is dead: the
 * peer went away or broke the framing, s->dead and s->why set), or -EPROTO.
 */
int nstream_rx(struct nstream *s, struct vnet_rxq *rq, struct virtq *vq,
	       bool mergeable, unsigned int budget, struct vnet_pair_stats *st,
	       unsigned int *pushed);

#endif
