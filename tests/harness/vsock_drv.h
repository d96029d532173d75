/* SPDX-License-Identifier: MIT */
/*
 * A virtio-vsock driver for unit tests of the packet and connection layer
 * (devices/vsock/vsock.h): fake guest RAM with an rx and a tx ring whose
 * device sides the test hands to vsock_rx_process()/vsock_tx_process(),
 * receive buffers of VD_RXBUF bytes (header and payload in one buffer, as
 * Linux posts them), and the host side in a temporary directory (PATH is
 * dir/v.sock; host listeners at dir/v.sock_P).
 */
#ifndef VMM_TESTS_HARNESS_VSOCK_DRV_H
#define VMM_TESTS_HARNESS_VSOCK_DRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_guest.h"
#include "vsock/vsock-proto.h"
#include "vsock/vsock.h"

#define VD_CID 3u
#define VD_QSIZE 256u
#define VD_RXBUF (4096u + 44u)
#define VD_MAX_LISTEN 16u

struct vsock_drv {
	struct fake_guest g;
	struct fg_vq rx, tx;
	struct virtq drx, dtx;
	struct vsock *v;
	char dir[64];
	char path[96];
	uint64_t pool[VD_QSIZE];    /* receive buffers */
	unsigned int free[VD_QSIZE], nr_free;
	unsigned int rx_buf[VD_QSIZE]; /* head -> pool index */
	uint64_t tx_gpa;
	unsigned int rx_posted; /* receive buffers the device has not used */
	uint32_t listen_port[VD_MAX_LISTEN]; /* vd_host_listen(): removed at fini */
	unsigned int nr_listen;
};

/* max_conns/buf_alloc 0: the defaults.  The device starts active. */
void vd_init(struct vsock_drv *d, unsigned int max_conns, uint32_t buf_alloc);
/* The same with the device's set-up timeout (0: its default). */
void vd_init_timeout(struct vsock_drv *d, unsigned int max_conns, uint32_t buf_alloc,
		     unsigned int setup_timeout_ms);
void vd_fini(struct vsock_drv *d);

/* Make @n more receive buffers available (not processed yet). */
void vd_post_rx(struct vsock_drv *d, unsigned int n);
/* Queue one tx packet (header, then payload in a second descriptor) and
 * have the device consume it.  Returns vsock_tx_process()'s value. */
int vd_send(struct vsock_drv *d, uint16_t op, uint32_t src_port,
	    uint32_t dst_port, const void *data, uint32_t len, uint32_t flags,
	    uint32_t buf_alloc, uint32_t fwd_cnt);
/* The same with every header field given (little-endian conversion done
 * here), e.g. a wrong CID or type. */
int vd_send_hdr(struct vsock_drv *d, const struct vsock_hdr *h,
		const void *data, uint32_t len);
/* Host events, then rx processing.  Returns vsock_rx_process()'s value. */
int vd_pump(struct vsock_drv *d);
/* The next packet the device wrote, header in host order: 1, or 0 if
 * none.  @data (may be NULL) gets up to @max payload bytes; the buffer is
 * not reposted. */
int vd_recv(struct vsock_drv *d, struct vsock_hdr *h, void *data, size_t max);

/* Host side: connect to PATH (blocking socket); listen on PATH_@port. */
int vd_host_connect(struct vsock_drv *d);
int vd_host_listen(struct vsock_drv *d, uint32_t port);

/*
 * Whole handshakes (receive buffers must be posted).  Guest to host: a
 * REQUEST from guest port @gport to host port @hport (listener @lfd),
 * advertising @buf_alloc; returns the host's accepted socket, or -1 if the
 * device answered with an RST.  Host to guest: a client that sends
 * "CONNECT @gport\n", answered by the guest with a RESPONSE advertising
 * @buf_alloc; returns the client socket (its "OK" line consumed) and the
 * device's host port in *@hport.
 */
int vd_guest_connect(struct vsock_drv *d, int lfd, uint32_t gport,
		     uint32_t hport, uint32_t buf_alloc);
int vd_host_open(struct vsock_drv *d, uint32_t gport, uint32_t buf_alloc,
		 uint32_t *hport);
/* Read on a host socket with a timeout of a second: bytes, 0 at EOF, -1. */
ssize_t vd_host_read(int fd, void *buf, size_t len);

#endif
