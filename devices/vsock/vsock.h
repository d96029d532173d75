/* SPDX-License-Identifier: MIT */
/*
 * The hybrid vsock: the virtio-vsock packet and connection layer between
 * a guest's stream sockets and host Unix sockets (vsock-host.h), without
 * threads, transport or device registration (virtio-vsock.h does those).
 *
 *  - Host to guest: a host program connects to PATH and writes
 *    "CONNECT <port>\n"; the device sends the guest a REQUEST to <port>
 *    from a host port of its choosing; the guest's RESPONSE gets the
 *    program "OK <hostport>\n", its RST a closed socket.
 *  - Guest to host: a guest REQUEST to host port P connects to "PATH_P";
 *    nobody listening there: RST.
 *  - Data: RW packets, with credit-based flow control both ways.  Towards
 *    the guest, a host socket is read only when the guest has credit and
 *    a receive buffer, straight into that buffer: a guest that never reads
 *    leaves the data in the host socket, whose writer then blocks.
 *    Towards the host, what a host socket does not take at once waits in
 *    a buffer of buf_alloc bytes per connection, the credit advertised to
 *    the guest: a guest that sends more than its credit is reset, a host
 *    that never reads stops the guest's credit.
 *  - Stream sockets only: SEQPACKET, packets with a wrong CID, an unknown
 *    operation, a bad length, for an unknown connection get an RST.
 *  - At most max_conns connections (open, being set up, or waiting to
 *    deliver their RST); beyond, host clients are closed at once and
 *    guest REQUESTs reset -- after the set-ups older than setup_timeout_ms
 *    (a client that never finished its CONNECT line, a REQUEST the guest
 *    never answered) have given their places back: such a client is
 *    closed, and the guest gets an RST for its REQUEST (counted as
 *    refused).  The reclaim runs only when a place is needed (there is no
 *    timer): a late set-up costs nothing until the table is full.
 *
 * The host sockets are non-blocking and sit in one epoll set
 * (vsock_epoll_fd()), edge-triggered: the device's I/O thread watches that
 * one fd and calls vsock_host_events().  Every function runs on that one
 * thread (Context: the device's I/O thread), except create/destroy and
 * vsock_get_stats().
 */
#ifndef VMM_DEVICES_VSOCK_VSOCK_H
#define VMM_DEVICES_VSOCK_VSOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/compiler.h"
#include "virtio/virtqueue.h"

#define VSOCK_MAX_CONNS 1024u	       /* default connection limit */
#define VSOCK_BUF_ALLOC (256u * 1024)  /* default buffer per connection */
#define VSOCK_SETUP_TIMEOUT_MS 5000u   /* default: CONNECT line, RESPONSE */
#define VSOCK_RST_QUEUE 64u	       /* RSTs for unknown connections
					  waiting for a receive buffer;
					  more are dropped (counted) */

struct vsock;

struct vsock_params {
	uint64_t guest_cid;   /* >= 3 */
	const char *path;     /* copied; "PATH_P" for guest connections */
	int listen_fd;	      /* listening on PATH, non-blocking; owned by
				 the vsock from create (-1: no host clients) */
	unsigned int max_conns; /* 0: VSOCK_MAX_CONNS */
	uint32_t buf_alloc;	/* 0: VSOCK_BUF_ALLOC */
	unsigned int setup_timeout_ms; /* 0: VSOCK_SETUP_TIMEOUT_MS */
};

/* Counters; written by the I/O thread, read relaxed by anyone. */
struct vsock_stats {
	uint64_t bytes_to_guest, bytes_from_guest; /* RW payload */
	uint64_t packets_to_guest, packets_from_guest;
	uint64_t conns_total;	 /* connections established, both ways */
	uint64_t conns_refused;	 /* host clients or guest REQUESTs refused,
				    set-ups reclaimed late */
	uint64_t resets;	 /* RSTs sent to the guest */
	uint64_t bad_packets;	 /* malformed or unexpected guest packets */
	uint64_t rst_dropped;	 /* RSTs dropped (VSOCK_RST_QUEUE full) */
	uint32_t conns_open;	 /* connections now */
};

int vsock_create(const struct vsock_params *p, struct vsock **out) __must_check;
/* Closes every host socket and the listener (unlinking nothing). */
void vsock_destroy(struct vsock *v);
int vsock_epoll_fd(const struct vsock *v);

/* The driver is ready (DRIVER_OK) or gone (reset): while inactive, host
 * clients vsock_host_events() accepts are closed at once (the device
 * does not call it then: clients wait in the listen backlog until the
 * next DRIVER_OK).  Going inactive closes every connection (the guest's
 * sockets are gone with its driver). */
void vsock_set_active(struct vsock *v, bool active);

/* Consume every packet the guest queued on its tx queue.  *@pushed: used
 * entries pushed.  Returns 0 or -EPROTO (malformed ring). */
int vsock_tx_process(struct vsock *v, struct virtq *tx, bool *pushed);
/* Fill the guest's receive buffers with what waits for it (control
 * packets, data the host sockets hold and the guest has credit for).
 * Returns 0 or -EPROTO (malformed ring, or a buffer too small for a
 * header). */
int vsock_rx_process(struct vsock *v, struct virtq *rx, bool *pushed);
/* Something waits for a receive buffer. */
bool vsock_rx_pending(const struct vsock *v);
/* Take what the epoll set reports: new host clients, readable and
 * writable host sockets (data to the host is written out). */
void vsock_host_events(struct vsock *v);

/*
 * One tx packet as the guest queued it: @iov (@n readable segments,
 * header then payload).  What vsock_tx_process() does per chain; the fuzz
 * target's entry.
 */
void vsock_tx_packet(struct vsock *v, const struct iovec *iov, unsigned int n);

void vsock_get_stats(const struct vsock *v, struct vsock_stats *st);

#endif
